import { validateTemplateSyntax, renderTemplate } from './src/templates/render.ts';
for (const c of ['{{#each items}}{{/if}}', '{{{name}}', 'a\nb {{name}}}', 'x {{!-- unclosed', '{{#if a}}{{else}}{{else}}{{/if}}', '{{foo.[bar}}', 'hey {{ }}', '{{#if a b}}x{{/if}}', '{{#with}}{{/with}}', '{{this/foo}}', '{{../x}}', '{{{{raw}}}} {{x}} {{{{/raw}}}}', '{{name "x"}}', '{{"lit"}}', '{{@root.name}}', '{{lookup . "a"}}']) {
  try { validateTemplateSyntax({ content_type: 'handlebars', content: c }); console.log('OK', JSON.stringify(c)); } catch (e: any) { console.log(JSON.stringify(c), '=>', e.kind, e.message); }
}
for (const c of ['{{"lit"}}', '{{@root.name}}', '{{../x}}', '{{lookup . "a"}}', '{{this}}', '{{#each l}}{{.}}{{/each}}', '{{{{raw}}}} {{x}} {{{{/raw}}}}']) {
  try { console.log(JSON.stringify(c), '->', JSON.stringify(renderTemplate({ content_type: 'handlebars', content: c }, { name: 'N', a: 'A', lit: 'L', l: [1] }))); } catch (e: any) { console.log(JSON.stringify(c), '=> ERR', e.kind, e.message); }
}

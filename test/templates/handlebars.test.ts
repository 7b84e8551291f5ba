import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderTemplate, TemplateError, validateTemplateSyntax } from '../../src/templates/render.ts';

const hbs = (content: string, name = 'greeting') => ({ content_type: 'handlebars' as const, content, name });

function failure(content: string, data: unknown): TemplateError {
  try {
    renderTemplate(hbs(content), data);
  } catch (err) {
    assert.ok(err instanceof TemplateError, `expected a TemplateError, got ${String(err)}`);
    return err;
  }
  assert.fail(`expected ${JSON.stringify(content)} to fail`);
}

describe('handlebars rendering', () => {
  it('renders variables and nested paths', () => {
    assert.equal(renderTemplate(hbs('Hello {{name}}, from {{user.city}}.'), { name: 'Ada', user: { city: 'Paris' } }), 'Hello Ada, from Paris.');
  });

  it('does not HTML-escape, with two or three braces', () => {
    const data = { code: '<a href="x">&</a>', quote: `it's "fine"` };
    assert.equal(renderTemplate(hbs('{{code}} {{{code}}} {{quote}}'), data), '<a href="x">&</a> <a href="x">&</a> it\'s "fine"');
  });

  it('iterates with #each, @index, @key, this, block params and ../', () => {
    const data = { who: 'me', items: [{ title: 'a' }, { title: 'b' }], tags: ['x', 'y'], scores: { ann: 3, bob: 5 } };
    assert.equal(renderTemplate(hbs('{{#each items}}{{@index}}:{{title}}/{{../who}} {{/each}}'), data), '0:a/me 1:b/me ');
    assert.equal(renderTemplate(hbs('{{#each tags}}[{{this}}]{{/each}}'), data), '[x][y]');
    assert.equal(renderTemplate(hbs('{{#each scores}}{{@key}}={{this}};{{/each}}'), data), 'ann=3;bob=5;');
    assert.equal(renderTemplate(hbs('{{#each items as |item i|}}{{i}}{{item.title}}{{/each}}'), data), '0a1b');
    assert.equal(renderTemplate(hbs('{{#each none}}x{{else}}empty{{/each}}'), { none: [] }), 'empty');
  });

  it('supports #if/else, #unless, #with', () => {
    const t = hbs('{{#if vip}}Dear {{name}}{{else}}Hi {{name}}{{/if}}{{#unless quiet}}!{{/unless}}{{#with user}} ({{city}}){{/with}}');
    assert.equal(renderTemplate(t, { vip: true, name: 'Ada', user: { city: 'Oslo' } }), 'Dear Ada! (Oslo)');
    assert.equal(renderTemplate(t, { vip: false, name: 'Bo', quiet: true, user: { city: 'Rome' } }), 'Hi Bo (Rome)');
  });

  it('keeps escaped and raw mustaches literal', () => {
    assert.equal(renderTemplate(hbs('\\{{name}} is {{name}}'), { name: 'Ada' }), '{{name}} is Ada');
    assert.equal(renderTemplate(hbs('{{{{raw}}}}{{name}} {{#if}}{{{{/raw}}}}'), {}), '{{name}} {{#if}}');
  });

  it('outputs a data key even when a helper has its name', () => {
    assert.equal(renderTemplate(hbs('{{raw}} {{json}} {{join}} {{{upper}}}'), { raw: 'r', json: 'j', join: 'n', upper: 'u' }), 'r j n u');
    assert.equal(failure('{{json}}', {}).path, 'json');
  });

  it('renders objects as JSON, arrays of primitives like JavaScript, null as nothing', () => {
    assert.equal(renderTemplate(hbs('{{obj}}|{{list}}|{{none}}|{{zero}}|{{no}}'), { obj: { a: 1 }, list: [1, 'b'], none: null, zero: 0, no: false }),
      '{\n  "a": 1\n}|1,b||0|false');
  });
});

describe('handlebars missing data', () => {
  it('fails on a missing output variable, naming the path and line', () => {
    const err = failure('Hi\n  {{user.name}}!', { user: {} });
    assert.equal(err.kind, 'missing_data');
    assert.equal(err.path, 'user.name');
    assert.equal(err.message, 'template "greeting": data has no "user.name" (used at line 2, column 5)');
    assert.deepEqual(err.position, { line: 2, column: 5 });
  });

  it('fails on a missing intermediate object, a missing triple-stash and a missing field inside #each', () => {
    assert.equal(failure('{{user.address.city}}', {}).path, 'user.address.city');
    assert.equal(failure('{{{raw}}}', {}).path, 'raw');
    const inLoop = failure('{{#each items}}{{title}}{{/each}}', { items: [{ title: 'a' }, {}] });
    assert.equal(inLoop.path, 'title');
    assert.equal(inLoop.kind, 'missing_data');
  });

  it('fails when an output helper gets a missing argument', () => {
    const err = failure('{{upper nickname}}', {});
    assert.equal(err.kind, 'missing_data');
    assert.equal(err.path, 'nickname');
  });

  it('treats missing values in conditions and sections as falsy or empty', () => {
    const t = hbs('A{{#if user.nickname}}[{{user.nickname}}]{{/if}}{{#unless user.admin}}-{{/unless}}{{#each user.tags}}{{this}}{{/each}}{{#with user.address}}{{city}}{{/with}}{{#if (eq user.role "x")}}!{{/if}}{{#section}}S{{/section}}Z');
    assert.equal(renderTemplate(t, {}), 'A-Z');
    assert.equal(renderTemplate(t, { user: { nickname: 'N', tags: ['t'], address: { city: 'C' }, role: 'x' }, section: true }), 'A[N]-tC!SZ');
  });

  it('refuses prototype access as missing data', () => {
    const err = failure('{{constructor}}{{name.constructor}}', { name: 'x' });
    assert.equal(err.kind, 'missing_data');
    assert.equal(err.path, 'constructor');
    assert.equal(failure('{{__proto__}}', {}).path, '__proto__');
  });
});

describe('handlebars helpers', () => {
  it('json, upper, lower, join', () => {
    const data = { obj: { a: [1, 2] }, name: 'Ada', items: ['x', 'y', 'z'], people: [{ n: 1 }] };
    assert.equal(renderTemplate(hbs('{{json obj}}'), data), '{\n  "a": [\n    1,\n    2\n  ]\n}');
    assert.equal(renderTemplate(hbs('{{json obj 0}}'), data), '{"a":[1,2]}');
    assert.equal(renderTemplate(hbs('{{upper name}} {{lower name}}'), data), 'ADA ada');
    assert.equal(renderTemplate(hbs('{{join items}}|{{join items " / "}}|{{join people}}'), data), 'x, y, z|x / y / z|{\n  "n": 1\n}');
  });

  it('comparison and logic helpers, in conditions and as values', () => {
    const data = { a: 2, b: 3, s: 'x', empty: [] };
    const t = '{{#if (eq s "x")}}eq{{/if}} {{#if (ne a b)}}ne{{/if}} {{#if (gt b a)}}gt{{/if}} {{#if (lt b a)}}lt{{/if}} '
      + '{{#if (and a b)}}and{{/if}} {{#if (and a empty)}}x{{else}}!and{{/if}} {{#if (or missing b)}}or{{/if}} {{#if (not missing)}}not{{/if}}';
    assert.equal(renderTemplate(hbs(t), data), 'eq ne gt  and !and or not');
    assert.equal(renderTemplate(hbs('Hi {{or nickname "friend"}}, {{eq a 2}}'), data), 'Hi friend, true');
  });
});

describe('handlebars syntax errors', () => {
  const syntax = (content: string): TemplateError => {
    try {
      validateTemplateSyntax(hbs(content, 'x'));
    } catch (err) {
      assert.ok(err instanceof TemplateError);
      assert.equal(err.kind, 'syntax');
      return err;
    }
    assert.fail(`expected a syntax error for ${JSON.stringify(content)}`);
  };

  it('reports an unclosed block with its position', () => {
    const err = syntax('Hello\n{{#if x}}yes');
    assert.equal(err.message, 'template "x": syntax error at line 2, column 13: a block is never closed: add its {{/…}}');
    assert.deepEqual(err.position, { line: 2, column: 13 });
  });

  it('reports an unfinished mustache and a mismatched close', () => {
    assert.match(syntax('Hi {{name').message, /^template "x": syntax error at line 1, column \d+: unexpected /);
    assert.equal(syntax('{{#if a}}{{/each}}').message, 'template "x": syntax error at line 1, column 4: if doesn\'t match each');
  });

  it('refuses partials, decorators, unknown helpers and block helpers without their argument', () => {
    assert.match(syntax('{{> footer}}').message, /partials .* are not supported/);
    assert.match(syntax('{{* deco}}').message, /decorators .* are not supported/);
    assert.match(syntax('a {{shout name}}').message, /line 1, column 3: unknown helper "shout"/);
    assert.match(syntax('{{#if (shout name)}}x{{/if}}').message, /unknown helper "shout"/);
    assert.match(syntax('{{#each}}x{{/each}}').message, /\{\{#each\}\} takes exactly one argument/);
  });

  it('accepts valid templates', () => {
    assert.doesNotThrow(() => validateTemplateSyntax(hbs('{{#each items}}{{json this}}{{/each}}{{#if (and a b)}}{{upper c}}{{/if}}')));
  });
});

describe('handlebars limits', () => {
  it('stops nested loops that multiply the work', () => {
    const a = Array.from({ length: 40 }, (_, i) => i);
    const content = '{{#each a}}{{#each ../a}}{{#each ../../a}}{{#each ../../../a}}x{{/each}}{{/each}}{{/each}}{{/each}}';
    const err = failure(content, { a });
    assert.equal(err.kind, 'evaluation');
    assert.match(err.message, /too much work \(more than 1000000 block iterations\)/);
  });

  it('refuses output past the limit', () => {
    const err = (() => {
      try {
        renderTemplate(hbs('{{#each a}}{{../s}}{{/each}}'), { a: [1, 2, 3], s: 'x'.repeat(500) }, { maxOutput: 1000 });
      } catch (e) {
        return e as TemplateError;
      }
      assert.fail('expected the output limit');
    })();
    assert.equal(err.kind, 'evaluation');
    assert.match(err.message, /exceed the limit of 1000 characters/);
  });
});

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { LruCache } from '../../src/templates/lru-cache.ts';
import {
  clearTemplateCache, compileTemplate, renderTemplate, TemplateError, validateTemplateSyntax,
} from '../../src/templates/render.ts';

describe('text templates', () => {
  it('render verbatim, with no interpolation of either syntax', () => {
    const content = 'Hello {{name}} and ${name} \\n `x`';
    assert.equal(renderTemplate({ content_type: 'text', content }, { name: 'Ada' }), content);
    assert.doesNotThrow(() => validateTemplateSyntax({ content_type: 'text', content: '{{#if' }));
  });
});

describe('renderTemplate', () => {
  it('refuses an unknown content type as a syntax error naming the template', () => {
    const t = { content_type: 'mustache', content: 'x', name: 'p' } as unknown as Parameters<typeof renderTemplate>[0];
    assert.throws(() => renderTemplate(t, {}), (err: unknown) => {
      assert.ok(err instanceof TemplateError);
      assert.equal(err.kind, 'syntax');
      assert.equal(err.message, 'template "p": unknown content_type "mustache"; expected one of handlebars, jst, text');
      return true;
    });
  });

  it('labels errors of unnamed templates as "template"', () => {
    assert.throws(() => renderTemplate({ content_type: 'jst', content: '${x}' }, {}), { message: 'template: data has no "x" (used at line 1, column 1)' });
  });

  it('renders the same cached template with the name of each caller', () => {
    const content = 'Hi {{who}}';
    assert.throws(() => renderTemplate({ content_type: 'handlebars', content, name: 'first' }, {}), { name: 'TemplateError', message: /^template "first": / });
    assert.throws(() => renderTemplate({ content_type: 'handlebars', content, name: 'second' }, {}), { message: /^template "second": data has no "who"/ });
  });

  it('accepts missing data (undefined or null) when the template needs none', () => {
    assert.equal(renderTemplate({ content_type: 'handlebars', content: '{{#if a}}x{{/if}}plain' }, undefined), 'plain');
    assert.equal(renderTemplate({ content_type: 'jst', content: '${1 + 1}' }, null), '2');
  });
});

describe('template cache', () => {
  it('reuses the compiled template for the same content type and content', () => {
    clearTemplateCache();
    const a = compileTemplate({ content_type: 'jst', content: 'Hi ${name}', name: 'a' });
    const b = compileTemplate({ content_type: 'jst', content: 'Hi ${name}', name: 'b' });
    assert.equal(a, b);
    const h1 = compileTemplate({ content_type: 'handlebars', content: 'Hi {{name}}' });
    assert.equal(compileTemplate({ content_type: 'handlebars', content: 'Hi {{name}}' }), h1);
    assert.notEqual(compileTemplate({ content_type: 'text', content: 'Hi {{name}}' }), h1);
    assert.equal(h1.render({ name: 'Ada' }), 'Hi Ada');
    assert.equal(h1.render({ name: 'Bo' }), 'Hi Bo');
  });

  it('forgets compiled templates after clearTemplateCache', () => {
    const t = { content_type: 'jst' as const, content: 'x${1}' };
    const before = compileTemplate(t);
    clearTemplateCache();
    assert.notEqual(compileTemplate(t), before);
  });

  it('evicts the least recently used entry beyond its capacity', () => {
    const lru = new LruCache<string, number>(2);
    lru.set('a', 1);
    lru.set('b', 2);
    assert.equal(lru.get('a'), 1); // a is now the most recent
    lru.set('c', 3);
    assert.equal(lru.get('b'), undefined);
    assert.equal(lru.get('a'), 1);
    assert.equal(lru.get('c'), 3);
    assert.equal(lru.size, 2);
  });
});

describe('template sources', () => {
  const folder = join(fileURLToPath(new URL('.', import.meta.url)), '../../src/templates');
  const files = readdirSync(folder).filter((f) => f.endsWith('.ts'));

  it('exist', () => {
    assert.ok(files.includes('render.ts') && files.includes('jst-evaluator.ts'), files.join(', '));
  });

  it('never evaluate code with eval, Function or vm', () => {
    for (const file of files) {
      const source = readFileSync(join(folder, file), 'utf8');
      for (const banned of [/\beval\s*\(/, /new\s+Function\b/, /\bFunction\s*\(/, /node:vm/, /from\s+['"]vm['"]/, /require\(['"](node:)?vm['"]\)/]) {
        assert.ok(!banned.test(source), `${file} matches ${banned}`);
      }
    }
  });
});

/** The template engine's entry points: text, content types, names in errors, caching, sources. */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TemplateEngine, TemplateError } from '../../src/templates/render.ts';
import { LruCache } from '../../src/templates/lru-cache.ts';

const engine = new TemplateEngine();
after(() => engine.close());

describe('template engine', () => {
  it('renders text verbatim, with no interpolation of either syntax', async () => {
    const content = 'Hello {{name}} and ${name} and `return 1`';
    assert.equal(await engine.render({ content_type: 'text', content }, { name: 'Ada' }), content);
    await engine.validate({ content_type: 'text', content: '{{#if' });
  });

  it('refuses an unknown content type as a syntax error naming the template', async () => {
    await assert.rejects(
      engine.validate({ content_type: 'mustache' as never, content: 'x', name: 'intro' }),
      (err: unknown) => {
        assert.ok(err instanceof TemplateError);
        assert.equal(err.kind, 'syntax');
        assert.match(err.message, /^template "intro": unknown content_type "mustache"/);
        return true;
      },
    );
  });

  it('renders the same cached template with the name of each caller, and "template" without one', async () => {
    for (const name of ['first', 'second', undefined]) {
      await assert.rejects(
        engine.render({ content_type: 'jst', content: 'return missing.x', name }, {}),
        (err: Error) => {
          assert.match(err.message, name ? new RegExp(`^template "${name}": TypeError`) : /^template: TypeError/);
          return true;
        },
      );
    }
  });

  it('accepts missing data (undefined or null) when the template needs none', async () => {
    for (const data of [undefined, null]) {
      assert.equal(await engine.render({ content_type: 'handlebars', content: 'Hi' }, data), 'Hi');
      assert.equal(await engine.render({ content_type: 'jst', content: 'return "Hi"' }, data), 'Hi');
    }
  });

  it('compiles a handlebars template once, however many renders and validations', async () => {
    const t = { content_type: 'handlebars' as const, content: `cached {{n}} ${Math.random()}` };
    // Counts the compiles sent to the worker pool (the engine's only way to compile).
    const pool = (engine as unknown as { pool: { compileHandlebars: (...a: unknown[]) => Promise<unknown> } }).pool;
    const compile = pool.compileHandlebars;
    let compiles = 0;
    pool.compileHandlebars = (...a) => (compiles++, compile.apply(pool, a));
    try {
      await engine.validate(t);
      for (let i = 0; i < 200; i++)
        assert.equal(await engine.render(t, { n: i }), `cached ${i} ${t.content.slice(13)}`);
      await engine.validate(t);
    } finally {
      pool.compileHandlebars = compile;
    }
    assert.equal(compiles, 1, 'renders and validations reuse the compiled form');
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
    lru.delete('a');
    assert.equal(lru.get('a'), undefined);
  });
});

describe('template sources', () => {
  const folder = join(fileURLToPath(new URL('.', import.meta.url)), '../../src/templates');
  const files = readdirSync(folder, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.ts'));

  it("never evaluate template code on the server with eval or vm; the one Function evaluates Handlebars' own generated spec", () => {
    for (const file of files) {
      const source = readFileSync(join(folder, file), 'utf8');
      for (const banned of [/\beval\s*\(/, /node:vm/, /from\s+['"]vm['"]/, /require\(['"](node:)?vm['"]\)/]) {
        assert.ok(!banned.test(source), `${file} matches ${banned}`);
      }
      const fn = /new\s+Function\b|\bFunction\s*\(/.test(source);
      assert.equal(
        fn,
        file === 'handlebars-template.ts',
        `${file}: Function is used only to instantiate a precompiled Handlebars spec`,
      );
    }
  });
});

/**
 * Handlebars prompt templates as Vertesia renders them: the stock compiler, non-strict, HTML
 * escaping for `{{x}}`, Vertesia's `stringify` and `_now`, Orrery's helpers; compiled in the
 * template worker; errors with positions; rendering bounded.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import Handlebars from 'handlebars';
import { TemplateEngine, TemplateError } from '../../src/templates/render.ts';
import { env as helperEnv } from '../../src/templates/handlebars-env.ts';

const engine = new TemplateEngine({ limits: { maxOutput: 100_000 } });
after(() => engine.close());

const hbs = (content: string, name = 'greeting') => ({ content_type: 'handlebars' as const, content, name });
const render = (content: string, data: unknown) => engine.render(hbs(content), data);

async function failure(content: string, data: unknown, e = engine): Promise<TemplateError> {
  try {
    await e.render(hbs(content), data);
  } catch (err) {
    assert.ok(err instanceof TemplateError, `expected a TemplateError, got ${String(err)}`);
    return err;
  }
  assert.fail(`expected ${JSON.stringify(content)} to fail`);
}

describe('handlebars rendering (stock semantics)', () => {
  it('renders variables and nested paths', async () => {
    assert.equal(
      await render('Hello {{name}}, from {{user.city}}.', { name: 'Ada', user: { city: 'Paris' } }),
      'Hello Ada, from Paris.',
    );
  });

  it('renders a missing value as nothing, as Vertesia does (not strict)', async () => {
    assert.equal(await render('Hello {{name}}!', {}), 'Hello !');
    assert.equal(await render('{{user.address.city}}|{{#if user.vip}}vip{{/if}}|{{{missing}}}', { user: {} }), '||');
  });

  it('HTML-escapes {{x}} and not {{{x}}}, exactly as stock Handlebars does', async () => {
    const data = { code: '<a href="x">&</a>', quote: "it's `fine` =" };
    const stock = Handlebars.compile('{{code}} {{{code}}} {{quote}}')(data);
    assert.equal(await render('{{code}} {{{code}}} {{quote}}', data), stock);
    assert.equal(
      stock,
      '&lt;a href&#x3D;&quot;x&quot;&gt;&amp;&lt;/a&gt; <a href="x">&</a> it&#x27;s &#x60;fine&#x60; &#x3D;',
    );
  });

  it('renders values as stock Handlebars does', async () => {
    const data = { obj: { a: 1 }, list: [1, 'b'], none: null, zero: 0, no: false };
    const t = '{{obj}}|{{list}}|{{none}}|{{zero}}|{{no}}';
    assert.equal(await render(t, data), Handlebars.compile(t)(data));
  });

  it('iterates with #each, @index, @key, this, block params and ../', async () => {
    const data = { who: 'me', items: [{ title: 'a' }, { title: 'b' }], tags: ['x', 'y'], scores: { ann: 3, bob: 5 } };
    assert.equal(await render('{{#each items}}{{@index}}:{{title}}/{{../who}} {{/each}}', data), '0:a/me 1:b/me ');
    assert.equal(await render('{{#each tags}}[{{this}}]{{/each}}', data), '[x][y]');
    assert.equal(await render('{{#each scores}}{{@key}}={{this}};{{/each}}', data), 'ann=3;bob=5;');
    assert.equal(await render('{{#each items as |item i|}}{{i}}{{item.title}}{{/each}}', data), '0a1b');
    assert.equal(await render('{{#each none}}x{{else}}empty{{/each}}', { none: [] }), 'empty');
  });

  it('supports #if/else, #unless, #with, lookup, and escaped and raw mustaches', async () => {
    const t =
      '{{#if vip}}Dear {{name}}{{else}}Hi {{name}}{{/if}}{{#unless quiet}}!{{/unless}}{{#with user}} ({{city}}){{/with}}';
    assert.equal(await render(t, { vip: true, name: 'Ada', user: { city: 'Oslo' } }), 'Dear Ada! (Oslo)');
    assert.equal(await render(t, { vip: false, name: 'Bo', quiet: true, user: { city: 'Rome' } }), 'Hi Bo (Rome)');
    assert.equal(await render('{{lookup map key}}', { map: { a: 'A' }, key: 'a' }), 'A');
    assert.equal(await render('\\{{name}} is {{name}}', { name: 'Ada' }), '{{name}} is Ada');
  });

  it('keeps stock prototype guards: prototype members render as nothing', async () => {
    assert.equal(
      await render('[{{constructor}}][{{__proto__}}][{{obj.constructor.name}}][{{lookup obj "__proto__"}}]', {
        obj: {},
      }),
      '[][][][]',
    );
  });
});

describe('handlebars helpers', () => {
  it("stringify, as Vertesia's: null and undefined empty, a string as is, anything else compact JSON, unescaped", async () => {
    const data = { obj: { name: 'Foo', tags: ['<a>'] }, s: 'plain', n: null, num: 4 };
    assert.equal(
      await render('{{stringify obj}}|{{stringify s}}|{{stringify n}}|{{stringify missing}}|{{stringify num}}', data),
      '{"name":"Foo","tags":["<a>"]}|plain|||4',
    );
  });

  it('_now answers the current ISO time', async () => {
    const before = Date.now();
    const out = await render('{{_now}}', {});
    assert.match(out, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.ok(Date.parse(out) >= before - 1000);
  });

  it('json, upper, lower, join; comparison and logic helpers', async () => {
    const data = { obj: { a: [1, 2] }, name: 'Ada', items: ['x', 'y', 'z'], a: 2, b: 3, s: 'x', empty: [] };
    assert.equal(await render('{{json obj 0}}', data), '{"a":[1,2]}');
    assert.equal(await render('{{upper name}} {{lower name}}', data), 'ADA ada');
    assert.equal(await render('{{join items}}|{{join items " / "}}', data), 'x, y, z|x / y / z');
    const t =
      '{{#if (eq s "x")}}eq{{/if}} {{#if (ne a b)}}ne{{/if}} {{#if (gt b a)}}gt{{/if}} {{#if (lt b a)}}lt{{/if}} ' +
      '{{#if (and a b)}}and{{/if}} {{#if (and a empty)}}x{{else}}!and{{/if}} {{#if (or missing b)}}or{{/if}} {{#if (not missing)}}not{{/if}}';
    assert.equal(await render(t, data), 'eq ne gt  and !and or not');
    assert.equal(await render('Hi {{or nickname "friend"}}, {{eq a 2}}', data), 'Hi friend, true');
  });

  it('renders every helper as the whole environment does, in every form a template can reach it', async () => {
    // Each template renders in an environment holding only the helpers its compiled form names
    // (handlebars-template.ts); this renders the same templates in the whole environment and
    // compares. Data keys named like helpers check that a name resolves the same way in both.
    const data = {
      name: 'Ada',
      a: 2,
      b: 3,
      obj: { k: ['p', 'q'], x: 5 },
      items: ['x', 'Y'],
      list: [1, 2],
      empty: [],
      upper: 'data-upper',
      json: 'data-json',
      eq: 'data-eq',
      each: 'data-each',
      lookup: 'data-lookup',
    };
    const templates = [
      'Hello {{name}} and {{a}}',
      '{{upper}}|{{json}}|{{eq}}|{{lookup}}',
      '{{upper name}}{{lower name}}',
      '{{"upper"}}',
      '{{json obj}}|{{{json obj}}}|{{json obj 2}}',
      '{{stringify obj}}|{{stringify name}}',
      '{{raw name}}',
      '{{#if (eq a 2)}}same{{else if (gt a b)}}more{{else}}less{{/if}}',
      '{{#unless (lt a b)}}u{{else}}!u{{/unless}}',
      '{{#each items}}{{upper this}}{{@index}}{{/each}}',
      '{{#items}}{{lower .}}{{/items}}',
      '{{^empty}}none{{/empty}}',
      '{{#obj}}{{x}}{{/obj}}',
      '{{join list}}|{{join (lookup obj "k") "-"}}',
      '{{#with obj}}{{gt x 1}}{{gte x 5}}{{lte x 4}}{{ne x 5}}{{/with}}',
      '{{and a b}} {{or missing b}} {{not a}}',
      '{{#each obj}}{{@key}}={{json this}};{{/each}}',
      '{{lookup obj "x"}}{{lookup items 1}}',
    ];
    const outcome = async (f: () => string | Promise<string>) => {
      try {
        return { text: await f() };
      } catch {
        return { failed: true };
      }
    };
    for (const t of [...templates, '{{each}}', '{{#each}}x{{/each}}']) {
      const whole = await outcome(() => helperEnv.compile(t)(data));
      assert.deepEqual(await outcome(() => render(t, data)), whole, `template ${JSON.stringify(t)}`);
    }
    // The name that resolved to a helper did so in both: `{{each}}` is the helper (which fails without an iterator), not the data.
    assert.deepEqual(await outcome(() => render('{{each}}', data)), { failed: true });
  });

  it('takes the stock log helper, as Vertesia does, rendering nothing and writing nothing to the server console', async () => {
    await engine.validate(hbs('{{log "hello"}}', 'x'));
    const written: unknown[] = [];
    const original = { log: console.log, info: console.info, warn: console.warn, error: console.error };
    for (const k of ['log', 'info', 'warn', 'error'] as const) console[k] = (...a: unknown[]) => void written.push(a);
    try {
      assert.equal(await render('a{{log "hello" name level="error"}}b', { name: 'Ada' }), 'ab');
    } finally {
      Object.assign(console, original);
    }
    assert.deepEqual(written, []);
  });
});

describe('handlebars syntax errors (compiled in the template worker)', () => {
  const syntax = async (content: string): Promise<TemplateError> => {
    try {
      await engine.validate(hbs(content, 'x'));
    } catch (err) {
      assert.ok(err instanceof TemplateError);
      assert.equal(err.kind, 'syntax');
      return err;
    }
    assert.fail(`expected a syntax error for ${JSON.stringify(content)}`);
  };

  it('reports an unclosed block, an unfinished mustache and a mismatched close with their positions', async () => {
    const err = await syntax('Hello\n{{#if x}}yes');
    assert.equal(
      err.message,
      'template "x": syntax error at line 2, column 13: a block is never closed: add its {{/…}}',
    );
    assert.deepEqual(err.position, { line: 2, column: 13 });
    assert.match((await syntax('Hi {{name')).message, /^template "x": syntax error at line 1, column \d+: unexpected /);
    assert.equal(
      (await syntax('{{#if a}}{{/each}}')).message,
      'template "x": syntax error at line 1, column 4: if doesn\'t match each',
    );
  });

  it('refuses partials, decorators and unknown helpers', async () => {
    assert.match((await syntax('{{> footer}}')).message, /partials .* are not supported/);
    assert.match((await syntax('{{* deco}}')).message, /decorators .* are not supported/);
    assert.match((await syntax('a {{shout name}}')).message, /line 1, column 3: unknown helper "shout"/);
    assert.match((await syntax('{{#if (shout name)}}x{{/if}}')).message, /unknown helper "shout"/);
  });

  it('accepts valid templates', async () => {
    await engine.validate(
      hbs('{{#each items}}{{json this}}{{/each}}{{#if (and a b)}}{{upper c}}{{/if}}{{stringify x}}{{_now}}'),
    );
  });
});

describe('handlebars limits', () => {
  it('stops nested loops that multiply the work', async () => {
    const a = Array.from({ length: 40 }, (_, i) => i);
    const content =
      '{{#each a}}{{#each ../a}}{{#each ../../a}}{{#each ../../../a}}x{{/each}}{{/each}}{{/each}}{{/each}}';
    const err = await failure(content, { a });
    assert.equal(err.kind, 'output');
    assert.match(err.message, /too much work \(more than 1000000 block iterations\)/);
  });

  it('refuses output past the limit', async () => {
    const small = new TemplateEngine({ limits: { maxOutput: 1000 } });
    try {
      const err = await failure('{{#each a}}{{../s}}{{/each}}', { a: [1, 2, 3], s: 'x'.repeat(500) }, small);
      assert.equal(err.kind, 'output');
      assert.match(err.message, /more than 1000 characters/);
    } finally {
      await small.close();
    }
  });
});

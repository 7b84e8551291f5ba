/**
 * jst prompt templates as Vertesia renders them (`@vertesia/jst`): JavaScript function bodies
 * with the input schema's properties, `_model` and `_` as globals. Vertesia's own test templates
 * and their expected outputs (libraries/jst/test) are among the cases. The sandbox: no way out,
 * CPU, memory and output bounded, each hostile render failing alone.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { TemplateEngine, TemplateError } from '../../src/templates/render.ts';
import { rewriteJst } from '../../src/db/migrations/0008-jst-function-bodies.ts';

const engine = new TemplateEngine({ limits: { cpuMs: 500, memoryBytes: 32 * 1024 * 1024, maxOutput: 200_000 } });
after(() => engine.close());

const jst = (content: string, properties?: string[]) => ({
  content_type: 'jst' as const,
  content,
  name: 't',
  ...(properties
    ? { inputSchema: { type: 'object', properties: Object.fromEntries(properties.map((p) => [p, {}])) } }
    : {}),
});

async function failure(content: string, data: unknown = {}): Promise<TemplateError> {
  try {
    await engine.render(jst(content), data);
  } catch (err) {
    assert.ok(err instanceof TemplateError, `expected a TemplateError, got ${String(err)}`);
    return err;
  }
  assert.fail(`expected ${JSON.stringify(content)} to fail`);
}

/** Vertesia's comparison in libraries/jst/test/template.test.ts: lines equal once trimmed. */
const sameLines = (a: string, b: string) => {
  const x = a
    .trim()
    .split('\n')
    .map((l) => l.trim());
  const y = b
    .trim()
    .split('\n')
    .map((l) => l.trim());
  return x.length === y.length && x.every((l, i) => l === y[i]);
};

describe("jst: Vertesia's test templates", () => {
  it('template.jst with questions', async () => {
    const content =
      "\nconst questionLine = (question, index) => `${index+1}. ${question}`\n\nreturn `\nHello my name is Jack. \nGiven the following questions:\n${questions.map(questionLine).join('\\n')}\nI want you to generate a list of answers. \n`";
    const out = await engine.render(jst(content, ['questions']), { questions: ['Question 1', 'Question 2'] });
    assert.ok(
      sameLines(
        out,
        'Hello my name is Jack.\nGiven the following questions:\n    1. Question 1\n    2. Question 2\nI want you to generate a list of answers.',
      ),
      out,
    );
  });

  it('template-csv.jst (Papa Parse)', async () => {
    const content =
      "\nconst result = _.loadCsv(csv, options)\nreturn result.data.slice(1).map(line => line.join(',')).join('\\n');";
    const out = await engine.render(jst(content, ['csv', 'options']), {
      csv: 'name,age,sex\njohn,25,m\njane,24,f',
      options: { header: false },
    });
    assert.equal(out.trim(), 'john,25,m\njane,24,f');
  });

  it('template-stringify.jst', async () => {
    assert.equal(
      (await engine.render(jst('\nreturn _.stringify(object)', ['object']), { object: { name: 'Foo' } })).trim(),
      '{"name":"Foo"}',
    );
  });

  it('template-addLineNumbers.jst', async () => {
    const content =
      '\nlet content = `\nSome prompt content...\nThe content bellow has been instrumented with line numbers:\n\n` \n\ncontent += _.addLineNumbers(content)\n\nreturn content';
    const out = (
      await engine.render(jst(content, ['object']), { object: { content: '\nlorem ipsum\ndolor sit amet\n' } })
    ).trim();
    const lines = '\nSome prompt content...\nThe content bellow has been instrumented with line numbers:\n\n'.split(
      '\n',
    );
    // Exactly as Vertesia's: every line prefixed "{% N %} ", N padded to ceil(log10(line count)).
    const width = Math.ceil(Math.log10(lines.length));
    const numbered = lines.map((l, i) => `{% ${String(i + 1).padStart(width, ' ')} %} ${l}`).join('\n');
    assert.equal(
      out,
      `${'\nSome prompt content...\nThe content bellow has been instrumented with line numbers:\n\n'}${numbered}`.trim(),
    );
  });
});

describe('jst: the language', () => {
  it('is a function body: statements, loops, if, template literals, indexing, built-ins', async () => {
    assert.equal(await engine.render(jst('return `Hello ${name}`', ['name']), { name: 'Ada' }), 'Hello Ada');
    const body = `
      let out = [];
      for (let i = 0; i < items.length; i++) { if (items[i].n > 1) out.push(items[i]['label'].toUpperCase()); }
      const uniq = [...new Set(out)].sort();
      const total = items.reduce((s, x) => s + x.n, 0);
      const when = new Date(Date.UTC(2024, 0, 2)).toISOString().slice(0, 10);
      return uniq.join(',') + ' ' + Math.max(total, 0) + ' ' + JSON.stringify(Object.keys(items[0])) + ' ' + when + ' ' + String(Number('4') * 2);`;
    assert.equal(
      await engine.render(jst(body, ['items']), {
        items: [
          { n: 2, label: 'b' },
          { n: 3, label: 'a' },
          { n: 1, label: 'c' },
          { n: 5, label: 'a' },
        ],
      }),
      'A,B 11 ["n","label"] 2024-01-02 8',
    );
  });

  it('sees _model, _.dayjs, and the top-level keys of the data when the prompt has no schema', async () => {
    assert.equal(
      await engine.render(jst('return `${_model}: ${greeting}`'), { greeting: 'hi' }, 'gpt-4o'),
      'gpt-4o: hi',
    );
    assert.equal(
      await engine.render(jst("return _.dayjs('2024-03-05T10:00:00Z').format('YYYY/MM/DD')"), {}),
      '2024/03/05',
    );
    assert.equal(await engine.render(jst('return _.jsonToCsv([{a: 1, b: "x"}])'), {}), 'a,b\r\n1,x');
  });

  it('turns a value that is not a string into one', async () => {
    assert.equal(await engine.render(jst('return 42'), {}), '42');
    assert.equal(await engine.render(jst('return {a: 1}'), {}), '{"a":1}');
    assert.equal(await engine.render(jst('return null'), {}), '');
    assert.equal(await engine.render(jst('const x = 1'), {}), '');
  });

  it('keeps renders apart: one cannot change what the next sees', async () => {
    await failure('_.stringify = () => "hacked"; return "x"');
    await failure('Array.prototype.join = () => "hacked"; return "x"');
    await failure('globalThis.leak = 1; return "x"');
    assert.equal(await engine.render(jst('return _.stringify([1,2].join("-"))'), {}), '"1-2"');
    assert.equal(await engine.render(jst('return typeof globalThis.leak'), {}), 'undefined');
  });
});

describe('jst: errors a user can act on', () => {
  const refusal = async (content: string, properties?: string[]) => {
    try {
      await engine.validate(jst(content, properties));
    } catch (err) {
      assert.ok(err instanceof TemplateError);
      assert.equal(err.kind, 'syntax');
      return err;
    }
    assert.fail(`expected ${JSON.stringify(content)} to be refused`);
  };

  it('refuses a body that does not parse, with line and column', async () => {
    const err = await refusal('const a = 1;\nreturn `Hello ${name');
    assert.match(err.message, /^template "t": syntax error at line 2, column \d+: /);
    assert.equal(err.position?.line, 2);
  });

  it('refuses an identifier that is not a local, a schema property, _model, _ or a built-in', async () => {
    const err = await refusal('const greet = (x) => `Hi ${x}`;\nreturn greet(name) + nmae', ['name']);
    assert.match(err.message, /line 2, column 22: unknown identifier "nmae"/);
    await engine.validate(jst('return [name, _model, _.stringify(JSON.parse("1")), Math.PI].join()', ['name']));
  });

  it('fails a render with a runtime error, its message and position', async () => {
    const err = await failure('const a = 1;\nreturn user.name.first');
    assert.equal(err.kind, 'evaluation');
    assert.match(err.message, /TypeError: cannot read property 'name' of undefined \(at line 2, column \d+\)/i);
    assert.equal(err.position?.line, 2);
    const thrown = await failure('throw new Error("nope")');
    assert.match(thrown.message, /Error: nope/);
  });
});

describe('jst: a real sandbox', () => {
  it('has no process, require, import, fetch, timers, Buffer or host objects, and no way back', async () => {
    const probes = [
      'return typeof process',
      'return typeof require',
      'return typeof fetch',
      'return typeof setTimeout',
      'return typeof Buffer',
      'return typeof module',
      'return typeof __dirname',
      'return typeof WebAssembly',
      'return (function(){}).constructor("return typeof process")()',
      'return [].constructor.constructor("return typeof require")()',
      'return Object.getPrototypeOf(async function(){}).constructor("return 1") ? typeof globalThis.process : "x"',
      'return this === undefined ? "strict" : typeof this',
    ];
    for (const body of probes) {
      const out = await engine.render(jst(body), {});
      assert.ok(['undefined', 'strict'].includes(out), `${body} → ${out}`);
    }
    const imported = await failure('return import("node:fs")');
    assert.match(imported.message, /import\(\) is not available/);
    const required = await failure('return require("child_process")');
    assert.match(required.message, /TypeError: not a function/, 'require is only a missing value from the data');
  });

  it('stops an endless loop at its CPU budget, alone', async () => {
    const err = await failure('while (true) {}');
    assert.equal(err.kind, 'timeout');
    assert.match(err.message, /longer than 500 ms/);
    assert.equal(await engine.render(jst('return "still working"'), {}), 'still working');
  });

  it('stops a memory bomb at its memory budget, alone', async () => {
    const err = await failure('const a = []; while (true) a.push("x".repeat(1 << 20) + a.length); return ""');
    assert.ok(err.kind === 'memory' || err.kind === 'timeout', err.message);
    assert.equal(await engine.render(jst('return "still working"'), {}), 'still working');
  });

  it('refuses output past the limit', async () => {
    const err = await failure('return "x".repeat(300000)');
    assert.equal(err.kind, 'output');
    assert.match(err.message, /at most 200000/);
  });
});

describe('jst: the migration of stored template literals', () => {
  it('rewrites old template-literal content to a function body that renders the same text', async () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['Hello ${name}!', { name: 'Ada' }, 'Hello Ada!'],
      ['Summarize', {}, 'Summarize'],
      [
        'Use ```json``` fences and `code`: ${items.map((i) => `<${i}>`).join(", ")}\\n\\tdone',
        { items: ['a', 'b'] },
        'Use ```json``` fences and `code`: <a>, <b>\n\tdone',
      ],
      ['Price: ${"$" + price} {not an expression}', { price: 3 }, 'Price: $3 {not an expression}'],
    ];
    for (const [old, data, text] of cases) {
      const rewritten = rewriteJst(old);
      assert.ok(rewritten, old);
      assert.equal(await engine.render(jst(rewritten!), data), text, old);
    }
    assert.equal(rewriteJst('return `Hello ${name}`'), null, 'a function body that returns is left alone');
    assert.equal(rewriteJst('const a = 1;\nif (a) { return "x" }\nreturn "y"'), null);
  });
});

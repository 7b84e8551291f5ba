import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { ProviderError, type CompletionChunk, type CompletionRequest } from '../../src/providers/driver.ts';
import { getDriver } from '../../src/providers/registry.ts';
import { sampleFromSchema } from '../../src/providers/schema-sample.ts';
import { splitWords } from '../../src/providers/test-provider.ts';

// ajv-formats is CommonJS; under ESM its function sits on .default
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  a: Ajv2020,
) => Ajv2020;
const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));

const test = getDriver('test');
const conn = {};
const ask = (model: string, text: string, over: Partial<CompletionRequest> = {}): CompletionRequest => ({
  model,
  messages: [
    { role: 'system', content: 'be nice' },
    { role: 'user', content: 'first question' },
    { role: 'assistant', content: 'first answer' },
    { role: 'user', content: text },
  ],
  temperature: 0.7,
  ...over,
});

async function collect(it: AsyncIterable<CompletionChunk>): Promise<CompletionChunk[]> {
  const out: CompletionChunk[] = [];
  for await (const c of it) out.push(c);
  return out;
}

describe('test provider: echo', () => {
  const text = '  The quick\tbrown fox\n\njumps over   the lazy dog. ';

  it('answers the last user message verbatim, with word-count usage', async () => {
    const out = await test.complete(conn, ask('echo', text));
    assert.equal(out.text, text);
    assert.equal(out.finish_reason, 'stop');
    // prompt: 2 + 2 + 2 + 9 words; result: 9
    assert.deepEqual(out.token_use, { prompt: 15, result: 9, total: 24 });
  });

  it('streams word chunks that join back to the exact text, then stop + usage', async () => {
    const chunks = await collect(test.stream(conn, ask('echo', text)));
    const texts = chunks.filter((c) => c.text !== undefined).map((c) => c.text);
    assert.ok(texts.length >= 9, `expected one chunk per word, got ${texts.length}`);
    assert.equal(texts.join(''), text);
    assert.deepEqual(chunks.at(-1), { finish_reason: 'stop', token_use: { prompt: 15, result: 9, total: 24 } });
  });

  it('splitWords: two words give two chunks; one word one; empty none', () => {
    assert.deepEqual(splitWords('hello world'), ['hello ', 'world']);
    assert.deepEqual(splitWords('hello'), ['hello']);
    assert.deepEqual(splitWords(''), []);
    for (const s of [' a', 'a ', ' a  b\n', 'é ü 漢字 🙂 x']) assert.equal(splitWords(s).join(''), s);
  });

  it('chunk_delay_ms spaces the chunks out, so a stream can be watched live', async () => {
    const stamps: number[] = [];
    for await (const c of test.stream({ config: { chunk_delay_ms: 40 } }, ask('echo', 'a b c')))
      if (c.text) stamps.push(Date.now());
    assert.equal(stamps.length, 3);
    assert.ok(stamps[2] - stamps[0] >= 70, `chunks came ${stamps[2] - stamps[0]} ms apart in total`);
  });

  it('abort stops a delayed stream with AbortError', async () => {
    const ac = new AbortController();
    const seen: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const c of test.stream({ config: { chunk_delay_ms: 200 } }, ask('echo', 'a b c'), ac.signal)) {
          if (c.text) seen.push(c.text);
          setTimeout(() => ac.abort(), 10);
        }
      })(),
      { name: 'AbortError' },
    );
    assert.deepEqual(seen, ['a ']);
    await assert.rejects(test.complete(conn, ask('echo', 'x'), AbortSignal.abort()), { name: 'AbortError' });
  });
});

describe('test provider: json', () => {
  const schemas: Record<string, Record<string, unknown>> = {
    person: {
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 12 },
        email: { type: 'string', format: 'email' },
        born: { type: 'string', format: 'date-time' },
        site: { type: 'string', format: 'uri' },
        age: { type: 'integer', minimum: 18, maximum: 99 },
        score: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 },
        active: { type: 'boolean' },
        role: { enum: ['admin', 'user'] },
        kind: { const: 'person' },
      },
      required: ['name', 'email', 'age', 'role', 'kind', 'extra'],
      additionalProperties: true,
    },
    list: {
      type: 'object',
      properties: {
        tags: { type: 'array', items: { type: 'string' }, minItems: 3, uniqueItems: true },
        scores: {
          type: 'array',
          items: { type: 'integer', minimum: 5, multipleOf: 5 },
          minItems: 2,
          uniqueItems: true,
        },
        empty_ok: { type: 'array', items: { type: 'number' } },
      },
      required: ['tags', 'scores'],
    },
    unions: {
      type: 'object',
      properties: {
        id: { anyOf: [{ type: 'string', format: 'uuid' }, { type: 'integer' }] },
        value: { oneOf: [{ type: 'number', minimum: -10, maximum: -5 }, { type: 'string' }] },
        maybe: { type: ['null', 'string'], maxLength: 2 },
        nested: {
          type: 'object',
          properties: {
            deep: { type: 'array', items: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'] } },
          },
          required: ['deep'],
        },
      },
      required: ['id', 'value', 'maybe', 'nested'],
    },
    refs: {
      $defs: { point: { type: 'object', properties: { x: { type: 'integer', minimum: 3 } }, required: ['x'] } },
      type: 'object',
      properties: {
        a: { $ref: '#/$defs/point' },
        b: { allOf: [{ $ref: '#/$defs/point' }, { properties: { y: { type: 'string' } }, required: ['y'] }] },
      },
      required: ['a', 'b'],
    },
    scalar: { type: 'number', minimum: 0.5, maximum: 0.75 },
    array_top: { type: 'array', items: { type: 'string', enum: ['x', 'y', 'z'] }, minItems: 2, uniqueItems: true },
  };

  for (const [name, schema] of Object.entries(schemas)) {
    it(`answers JSON that conforms to the "${name}" schema`, async () => {
      const out = await test.complete(conn, ask('json', 'give me json', { result_schema: schema }));
      const value = JSON.parse(out.text);
      const validate = ajv.compile(schema);
      assert.ok(validate(value), `${out.text} fails: ${ajv.errorsText(validate.errors)}`);
      assert.equal(out.finish_reason, 'stop');
    });
  }

  it('makes concrete choices: bounds, enum first, const, required names', () => {
    const v = sampleFromSchema(schemas.person) as Record<string, unknown>;
    assert.equal(v.age, 18);
    assert.equal(v.role, 'admin');
    assert.equal(v.kind, 'person');
    assert.ok('extra' in v);
    assert.equal((v.name as string).length, 12);
    const l = sampleFromSchema(schemas.list) as { tags: string[]; scores: number[] };
    assert.equal(l.tags.length, 3);
    assert.deepEqual(l.scores, [5, 10]);
  });

  it('is deterministic, and streams chunks that join to the same JSON', async () => {
    const r = ask('json', 'x', { result_schema: schemas.unions });
    const a = await test.complete(conn, r);
    const b = await test.complete(conn, r);
    assert.equal(a.text, b.text);
    const chunks = await collect(test.stream(conn, r));
    const texts = chunks.filter((c) => c.text !== undefined).map((c) => c.text as string);
    assert.ok(texts.length >= 2);
    assert.equal(texts.join(''), a.text);
    assert.equal(chunks.at(-1)?.finish_reason, 'stop');
  });

  it('without a schema answers {"echo": <last user message>}', async () => {
    const out = await test.complete(conn, ask('json', 'say "hi"\nplease'));
    assert.deepEqual(JSON.parse(out.text), { echo: 'say "hi"\nplease' });
  });
});

describe('test provider: error and unknown models', () => {
  const isError = (code: string, status: number, message: string) => (e: unknown) => {
    assert.ok(e instanceof ProviderError);
    assert.equal(e.code, code);
    assert.equal(e.upstreamStatus, status);
    assert.equal(e.message, message);
    return true;
  };

  it('error model fails blocking, and streaming before the first chunk', async () => {
    const expected = isError('provider_error', 500, 'test provider: the error model always fails');
    await assert.rejects(test.complete(conn, ask('error', 'x')), expected);
    const seen: CompletionChunk[] = [];
    await assert.rejects(
      (async () => {
        for await (const c of test.stream(conn, ask('error', 'x'))) seen.push(c);
      })(),
      expected,
    );
    assert.equal(seen.length, 0);
  });

  it('an unknown model is provider_bad_request 404 naming the models', async () => {
    const expected = isError(
      'provider_bad_request',
      404,
      'test provider has no model "gpt-4"; its models are echo, json, error, tools, slow, flaky, rate_limit, error_mid_stream, stall',
    );
    await assert.rejects(test.complete(conn, ask('gpt-4', 'x')), expected);
    await assert.rejects(collect(test.stream(conn, ask('gpt-4', 'x'))), expected);
  });

  it('lists its four models and its five fault models, each described', async () => {
    const models = (await test.listModels!(conn)) ?? [];
    assert.deepEqual(
      models.map((m) => m.id),
      ['echo', 'json', 'error', 'tools', 'slow', 'flaky', 'rate_limit', 'error_mid_stream', 'stall'],
    );
    for (const m of models.slice(0, 4)) assert.match(m.description ?? '', /^Offline test model/);
    for (const m of models.slice(4)) assert.match(m.description ?? '', new RegExp(`^Fault model: ${m.id}`));
  });

  it('fault models fail as they say, then answer as echo', async () => {
    const flaky = ask('flaky:2', `flaky ${Math.random()}`);
    await assert.rejects(
      test.complete(conn, flaky),
      isError('provider_error', 503, 'test provider: the flaky model failed this call (503)'),
    );
    await assert.rejects(test.complete(conn, flaky), (e: { retryable?: boolean }) => e.retryable === true);
    assert.equal((await test.complete(conn, flaky)).text, flaky.messages.at(-1)!.content);
    const limited = ask('rate_limit:1:250', `limited ${Math.random()}`);
    await assert.rejects(
      test.complete(conn, limited),
      (e: { code?: string; upstreamStatus?: number; retryAfterMs?: number }) =>
        e.code === 'provider_rate_limited' && e.upstreamStatus === 429 && e.retryAfterMs === 250,
    );
    assert.equal((await test.complete(conn, limited)).text, limited.messages.at(-1)!.content);
    const started = performance.now();
    assert.equal((await test.complete(conn, ask('slow:120', 'patience'))).text, 'patience');
    assert.ok(performance.now() - started >= 120, `answered after ${performance.now() - started} ms`);
    await assert.rejects(
      test.complete(conn, ask('flaky:x', 'x')),
      isError(
        'provider_bad_request',
        400,
        'test provider: "flaky:x" takes non-negative numbers after its name (flaky:N)',
      ),
    );
  });
});

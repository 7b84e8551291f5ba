/**
 * What each evaluator type does with a candidate (an input, its output, the expected value, and the
 * run's latency and cost when there is a run): a verdict `{score, reason?}`, or an EvaluatorFailure
 * saying why none could be given. Configs are checked here, before any evaluation (checkConfig).
 * Code that a caller wrote (a `code` body, a `regex` pattern) runs only inside the jst sandbox,
 * bounded in CPU time and memory (src/templates).
 */
import { BadRequest } from '../util/errors.ts';
import { compileSchema, describeErrors } from '../interactions/json-schema.ts';
import type { TemplateEngine } from '../templates/render.ts';

const EVALUATOR_TYPES = [
  'judge',
  'code',
  'exact_match',
  'contains',
  'regex',
  'json_schema_valid',
  'latency_under',
  'cost_under',
  'embedding_similarity',
] as const;
export type EvaluatorType = (typeof EVALUATOR_TYPES)[number];

/** Bounds of an evaluator's config (docs/reference/limits.md). */
const CONFIG_BOUNDS = { configBytes: 64 * 1024, patternChars: 1000, containsChars: 10_000 };

export interface Candidate {
  input: Record<string, unknown>;
  /** The output as the run answered it: its JSON value, else its text. */
  output: unknown;
  expected?: unknown;
  run?: { execution_time?: number | null; cost?: number | null };
}

export interface Verdict {
  score: number | boolean;
  reason?: string;
}

/** An evaluation that could give no score: recorded as the error of the evaluation. */
export class EvaluatorFailure extends Error {}

export interface VerdictDeps {
  templates: TemplateEngine;
  /** Runs a judge interaction on `data`; answers its result value (the run's JSON answer, else its text). */
  judge(interaction: string, data: Record<string, unknown>): Promise<unknown>;
  /** Whether an interaction selector (an id, Name, Name@version) resolves in the caller's project. */
  interactionExists(selector: string): Promise<boolean>;
  /** The project's embeddings of texts (src/embeddings), null for a text with nothing to embed. */
  embed(texts: string[]): Promise<Array<Float32Array | null>>;
}

type Config = Record<string, unknown>;
const isObject = (v: unknown): v is Config => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The keys each type takes (required ones first); anything else is refused by name. */
const KEYS: Record<EvaluatorType, { required: string[]; optional: string[] }> = {
  judge: { required: ['interaction'], optional: [] },
  code: { required: ['body'], optional: [] },
  exact_match: { required: [], optional: [] },
  contains: { required: ['value'], optional: ['case_sensitive'] },
  regex: { required: ['pattern'], optional: ['flags'] },
  json_schema_valid: { required: ['schema'], optional: [] },
  latency_under: { required: ['ms'], optional: [] },
  cost_under: { required: ['usd'], optional: [] },
  embedding_similarity: { required: [], optional: [] },
};

const CODE_SCHEMA = { type: 'object', properties: { input: {}, output: {}, expected: {} } };
const REGEX_SCHEMA = { type: 'object', properties: { pattern: {}, flags: {}, text: {} } };
const REGEX_BODY = 'return new RegExp(pattern, flags).test(text);';

/** Refuses a config its type cannot use, with what to fix. */
export async function checkConfig(type: string, config: unknown, deps: VerdictDeps): Promise<Config> {
  if (!(EVALUATOR_TYPES as readonly string[]).includes(type))
    throw new BadRequest(`type must be one of ${EVALUATOR_TYPES.join(', ')}, got ${JSON.stringify(type)}`);
  const t = type as EvaluatorType;
  const c = config ?? {};
  if (!isObject(c)) throw new BadRequest('config must be an object');
  if (Buffer.byteLength(JSON.stringify(c)) > CONFIG_BOUNDS.configBytes)
    throw new BadRequest(`config is at most ${CONFIG_BOUNDS.configBytes} bytes of JSON`);
  const { required, optional } = KEYS[t];
  const extra = Object.keys(c).find((k) => !required.includes(k) && !optional.includes(k));
  if (extra !== undefined)
    throw new BadRequest(
      `config.${extra} is not a field of a ${t} evaluator${required.length + optional.length ? ` (it takes ${[...required, ...optional].join(', ')})` : ' (it takes none)'}`,
    );
  const missing = required.find((k) => c[k] === undefined);
  if (missing !== undefined) throw new BadRequest(`a ${t} evaluator needs config.${missing}`);
  switch (t) {
    case 'judge':
      if (typeof c.interaction !== 'string' || !c.interaction)
        throw new BadRequest('config.interaction is an interaction id or Name@version');
      if (!(await deps.interactionExists(c.interaction)))
        throw new BadRequest(
          `config.interaction ${JSON.stringify(c.interaction)} names no interaction of this project`,
        );
      break;
    case 'code':
      if (typeof c.body !== 'string' || !c.body.trim())
        throw new BadRequest('config.body is a jst function body returning a score');
      await deps.templates
        .validate({ content_type: 'jst', content: c.body, name: 'evaluator', inputSchema: CODE_SCHEMA })
        .catch((err: Error) => {
          throw new BadRequest(`config.body: ${err.message}`);
        });
      break;
    case 'contains':
      if (typeof c.value !== 'string' || !c.value || c.value.length > CONFIG_BOUNDS.containsChars)
        throw new BadRequest(`config.value is a string of 1 to ${CONFIG_BOUNDS.containsChars} characters`);
      if (c.case_sensitive !== undefined && typeof c.case_sensitive !== 'boolean')
        throw new BadRequest('config.case_sensitive is a boolean');
      break;
    case 'regex':
      if (typeof c.pattern !== 'string' || !c.pattern || c.pattern.length > CONFIG_BOUNDS.patternChars)
        throw new BadRequest(`config.pattern is a regular expression of 1 to ${CONFIG_BOUNDS.patternChars} characters`);
      if (c.flags !== undefined && (typeof c.flags !== 'string' || !/^[imsu]{0,4}$/.test(c.flags)))
        throw new BadRequest('config.flags are some of i, m, s and u');
      try {
        new RegExp(c.pattern, (c.flags as string | undefined) ?? '');
      } catch (err) {
        throw new BadRequest(`config.pattern: ${(err as Error).message}`);
      }
      break;
    case 'json_schema_valid':
      if (!isObject(c.schema)) throw new BadRequest('config.schema is a JSON Schema object');
      try {
        compileSchema(c.schema);
      } catch (err) {
        throw new BadRequest(`config.schema: ${(err as Error).message}`);
      }
      break;
    case 'latency_under':
      if (typeof c.ms !== 'number' || !(c.ms > 0))
        throw new BadRequest('config.ms is a number of milliseconds above 0');
      break;
    case 'cost_under':
      if (typeof c.usd !== 'number' || !(c.usd >= 0))
        throw new BadRequest('config.usd is a number of dollars, 0 or more');
      break;
    case 'exact_match':
    case 'embedding_similarity':
      break;
  }
  return c;
}

/** The output as text: a string as it is, anything else as JSON. */
const textOf = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));

/** Canonical JSON (sorted keys), so that equal values compare equal whatever their key order. */
const canonical = (v: unknown): string =>
  JSON.stringify(v, (_k, x: unknown) =>
    isObject(x)
      ? Object.fromEntries(
          Object.keys(x)
            .sort()
            .map((k) => [k, x[k]]),
        )
      : x,
  ) ?? '';

/** A returned value read as a verdict: a number, a boolean, or `{score, reason?}`. */
function verdictOf(value: unknown, what: string): Verdict {
  if (typeof value === 'number' && Number.isFinite(value)) return { score: value };
  if (typeof value === 'boolean') return { score: value };
  if (
    isObject(value) &&
    (typeof value.score === 'boolean' || (typeof value.score === 'number' && Number.isFinite(value.score)))
  )
    return { score: value.score, ...(typeof value.reason === 'string' ? { reason: value.reason.slice(0, 4000) } : {}) };
  throw new EvaluatorFailure(
    `${what} must give a number, a boolean or {score, reason}, got ${textOf(value).slice(0, 200)}`,
  );
}

/** Cosine similarity, rounded to 6 decimals so that equal texts score exactly 1. */
function cosine(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) throw new EvaluatorFailure('the two embeddings have different dimensions');
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  if (na === 0 || nb === 0) throw new EvaluatorFailure('a text gave an empty embedding: nothing to compare');
  return Math.round((dot / Math.sqrt(na * nb)) * 1e6) / 1e6;
}

const parsed = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

export async function verdict(type: EvaluatorType, config: Config, c: Candidate, deps: VerdictDeps): Promise<Verdict> {
  const out = textOf(c.output);
  switch (type) {
    case 'exact_match': {
      if (c.expected === undefined) throw new EvaluatorFailure('exact_match needs an expected value');
      const same = typeof c.expected === 'string' ? out === c.expected : canonical(c.output) === canonical(c.expected);
      return { score: same ? 1 : 0 };
    }
    case 'embedding_similarity': {
      if (c.expected === undefined) throw new EvaluatorFailure('embedding_similarity needs an expected value');
      const [a, b] = await deps.embed([out, textOf(c.expected)]).catch((err: Error) => {
        throw new EvaluatorFailure(`embedding_similarity: ${err.message}`);
      });
      if (!a || !b)
        throw new EvaluatorFailure('embedding_similarity: the output or the expected value has no text to embed');
      return { score: cosine(a, b) };
    }
    case 'contains': {
      const needle = config.value as string;
      const found =
        config.case_sensitive === false ? out.toLowerCase().includes(needle.toLowerCase()) : out.includes(needle);
      return { score: found ? 1 : 0 };
    }
    case 'regex': {
      const text = await deps.templates
        .render(
          { content_type: 'jst', content: REGEX_BODY, name: 'regex evaluator', inputSchema: REGEX_SCHEMA },
          { pattern: config.pattern, flags: config.flags ?? '', text: out },
        )
        .catch((err: Error) => {
          throw new EvaluatorFailure(`regex: ${err.message}`);
        });
      return { score: text === 'true' ? 1 : 0 };
    }
    case 'json_schema_valid': {
      const value = typeof c.output === 'string' ? parsed(c.output) : c.output;
      if (typeof c.output === 'string' && value === c.output) return { score: 0, reason: 'the output is not JSON' };
      const validate = compileSchema(config.schema as Config);
      return validate(value) ? { score: 1 } : { score: 0, reason: describeErrors('output', validate.errors) };
    }
    case 'latency_under': {
      const ms = c.run?.execution_time;
      if (typeof ms !== 'number') throw new EvaluatorFailure('latency_under needs a run with its execution time');
      return { score: ms < (config.ms as number) ? 1 : 0 };
    }
    case 'cost_under': {
      const usd = c.run?.cost;
      if (typeof usd !== 'number')
        throw new EvaluatorFailure("cost_under needs a run whose cost is known (its model's price)");
      return { score: usd < (config.usd as number) ? 1 : 0 };
    }
    case 'code': {
      const text = await deps.templates
        .render(
          { content_type: 'jst', content: config.body as string, name: 'evaluator', inputSchema: CODE_SCHEMA },
          {
            input: c.input,
            output: c.output,
            expected: c.expected ?? null,
          },
        )
        .catch((err: Error) => {
          throw new EvaluatorFailure(err.message);
        });
      return verdictOf(parsed(text), 'a code evaluator');
    }
    case 'judge': {
      const answer = await deps
        .judge(config.interaction as string, { input: c.input, output: c.output, expected: c.expected ?? null })
        .catch((err: Error) => {
          throw new EvaluatorFailure(`the judge's run failed: ${err.message}`);
        });
      return verdictOf(typeof answer === 'string' ? parsed(answer) : answer, "the judge's answer");
    }
  }
}

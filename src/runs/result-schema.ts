/**
 * A run's answer against its `result_schema` (issue 16): parsed as JSON, repaired once when it is
 * almost JSON (jsonrepair: a code fence, single quotes, trailing commas, a cut-off bracket), and
 * validated. What still fails is an InvalidResult, which the run service may answer with one
 * re-ask that quotes the validator's words (repairMessages).
 */
import sjson from 'secure-json-parse';
import { jsonrepair } from 'jsonrepair';
import type { ChatMessage } from '../providers/driver.ts';
import { compileSchema, describeErrors } from '../interactions/json-schema.ts';
import { MAX_JSON_DEPTH, tooDeep } from '../http/json-body.ts';

export class InvalidResult extends Error {}

/** jsonrepair is linear, but an answer this long is no structured result worth mending. */
const MAX_REPAIR_CHARS = 1_000_000;

export interface ParsedResult {
  value: unknown;
  /** True when the text was mended (jsonrepair) before it parsed. */
  repaired: boolean;
}

/**
 * An answer that did not match result_schema under `do_validate: false`: its JSON value when it
 * parses (mended if needed), else undefined (the text is kept as text).
 */
export function parseUnvalidated(text: string): unknown {
  try {
    return parseResult(text, undefined).value;
  } catch {
    return undefined;
  }
}

/** Parse (mending once if needed) and validate; throws InvalidResult with what is wrong. */
export function parseResult(text: string, schema: Record<string, unknown> | undefined): ParsedResult {
  const fenced = /^\s*```(?:json)?\s*([\s\S]*?)\s*```\s*$/.exec(text);
  const body = fenced ? fenced[1] : text;
  let value: unknown;
  let repaired = false;
  try {
    value = parseSafely(body);
  } catch {
    const mended = mend(body);
    if (mended === undefined) throw new InvalidResult(`the model's answer is not JSON: ${text.slice(0, 200)}`);
    value = mended;
    repaired = true;
  }
  // Stored results must stay searchable like any stored JSON (http/json-body.ts).
  const deep = tooDeep(value, MAX_JSON_DEPTH);
  if (deep) throw new InvalidResult(`the model's answer nests deeper than ${MAX_JSON_DEPTH} levels at ${deep}`);
  if (!schema) return { value, repaired };
  const validate = compileSchema(schema);
  if (!validate(value))
    throw new InvalidResult(
      `the model's answer does not match result_schema: ${describeErrors('result', validate.errors)}`,
    );
  return { value, repaired };
}

/** Prototype keys dropped, as for request bodies. */
const parseSafely = (text: string): unknown =>
  sjson.parse(text, undefined, { protoAction: 'remove', constructorAction: 'remove' });

function mend(text: string): unknown {
  if (text.length > MAX_REPAIR_CHARS || !/[[{"]/.test(text)) return undefined;
  try {
    return parseSafely(jsonrepair(text));
  } catch {
    return undefined;
  }
}

/**
 * The conversation for the one re-ask: what was asked, what the model answered, and the
 * validator's words, asking for the corrected JSON alone.
 */
export function repairMessages(messages: ChatMessage[], answer: string, problem: InvalidResult): ChatMessage[] {
  return [
    ...messages,
    { role: 'assistant', content: answer },
    {
      role: 'user',
      content:
        `Your answer cannot be used: ${problem.message}. ` +
        'Answer again with only the corrected JSON value that conforms to the JSON Schema you were given: no prose, no code fence.',
    },
  ];
}

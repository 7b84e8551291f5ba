/**
 * JSON Schema validation of run input (`interaction_schema`) and results (`result_schema`), with
 * compiled validators cached by schema text: compiling is slow, validating is fast.
 */
import { Ajv, type ValidateFunction, type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
const ajv = addFormats(new Ajv({ allErrors: true, strict: false, validateSchema: true }));
const cache = new Map<string, ValidateFunction>();

export function compileSchema(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  let fn = cache.get(key);
  if (!fn) {
    fn = ajv.compile(schema);
    if (cache.size > 1000) cache.clear();
    cache.set(key, fn);
  }
  return fn;
}

/** Human messages such as `data.customer.name must be string`, at most a few. */
export function describeErrors(root: string, errors: ErrorObject[] | null | undefined): string {
  return (errors ?? [])
    .slice(0, 5)
    .map((e) => {
      const path = root + e.instancePath.replace(/\//g, '.');
      if (e.keyword === 'required')
        return `${path} must have property "${(e.params as { missingProperty: string }).missingProperty}"`;
      if (e.keyword === 'additionalProperties')
        return `${path} must not have property "${(e.params as { additionalProperty: string }).additionalProperty}"`;
      if (e.keyword === 'enum')
        return `${path} must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
      return `${path} ${e.message}`;
    })
    .join('; ');
}

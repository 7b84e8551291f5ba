/**
 * Request validation with two Ajv instances: query strings, params and headers are text, so they
 * are coerced (`?limit=10`, a single `?tag=a` as an array); JSON bodies are not, so `{"name": 42}`
 * is a 400 instead of silently becoming "42".
 */
import type { FastifyInstance, FastifySchema } from 'fastify';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

const make = (coerceTypes: false | 'array') =>
  addFormats(new Ajv({ coerceTypes, useDefaults: true, removeAdditional: false, allErrors: false, strict: false }));

export function installValidation(app: FastifyInstance): void {
  const text = make('array');
  const json = make(false);
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? json : text).compile(schema as FastifySchema & object));
}

/**
 * Mongo-style match object → frozen AST (ast.ts), refusing with a FindQueryError anything the
 * compiler does not support or that would make the SQL unbounded. Input is whatever JSON the
 * client sent: only own enumerable keys are read, so `__proto__` and friends are plain names.
 */
import {
  FIELD_OPERATORS,
  FIND_LIMITS,
  LOGICAL_OPERATORS,
  REGEX_OPTIONS,
  type Comparison,
  type Cond,
  type FieldOperator,
  type FindValue,
  type LogicalOperator,
  type MatchNode,
} from './ast.ts';
import { FindQueryError, quoteName } from './errors.ts';
import { regexToGlob } from './regex.ts';
import { table } from '../../util/own.ts';

const isLogical = (k: string): k is LogicalOperator => (LOGICAL_OPERATORS as readonly string[]).includes(k);
const isFieldOperator = (k: string): k is FieldOperator => (FIELD_OPERATORS as readonly string[]).includes(k);

export const isPlainObject = (v: unknown): v is Record<string, unknown> => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
};

/** NUL cannot be stored in PostgreSQL text, and lone surrogates are not text at all. */
const BAD_TEXT = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const COMPARISONS: Record<string, Comparison> = table({ $gt: 'gt', $gte: 'gte', $lt: 'lt', $lte: 'lte' });

const freeze = <T extends object>(o: T): T => Object.freeze(o);

/** A field name split on dots, or a FindQueryError saying what is wrong with it. */
export function parseFieldPath(key: string, at: string): readonly string[] {
  if (key.length > FIND_LIMITS.fieldLength)
    throw new FindQueryError(`field names are at most ${FIND_LIMITS.fieldLength} characters`, at);
  if (BAD_TEXT.test(key)) throw new FindQueryError('field names may not contain NUL or unpaired surrogates', at);
  const path = key.split('.');
  if (path.some((s) => s === '')) throw new FindQueryError(`the field name ${quoteName(key)} has an empty segment`, at);
  if (path.length > FIND_LIMITS.pathSegments)
    throw new FindQueryError(`paths have at most ${FIND_LIMITS.pathSegments} segments`, at);
  return freeze(path);
}

class Parser {
  private clauses = 0;

  private count(n: number, at: string): void {
    this.clauses += n;
    if (this.clauses > FIND_LIMITS.clauses) {
      throw new FindQueryError(`the query has more than ${FIND_LIMITS.clauses} conditions; split it or use $in`, at);
    }
  }

  private deep(depth: number, at: string): void {
    if (depth > FIND_LIMITS.depth)
      throw new FindQueryError(`the query nests deeper than ${FIND_LIMITS.depth} levels`, at);
  }

  match(value: unknown, at: string, depth: number): MatchNode {
    this.deep(depth, at);
    if (!isPlainObject(value)) throw new FindQueryError('a match must be an object, e.g. {"status": "ready"}', at);
    const nodes: MatchNode[] = [];
    for (const [key, v] of Object.entries(value)) {
      const here = at ? `${at}.${key}` : key;
      if (key.startsWith('$')) {
        if (!isLogical(key)) {
          const hint = isFieldOperator(key) ? `; ${key} goes inside a field: {"field": {"${key}": …}}` : '';
          throw new FindQueryError(
            `unknown top-level operator ${quoteName(key)}; supported: ${LOGICAL_OPERATORS.join(', ')}${hint}`,
            at,
          );
        }
        if (!Array.isArray(v) || v.length === 0)
          throw new FindQueryError(`${key} needs a non-empty array of match objects`, here);
        this.count(1, here);
        nodes.push(
          freeze({
            kind: key.slice(1) as 'and' | 'or' | 'nor',
            nodes: freeze(v.map((m, i) => this.match(m, `${here}[${i}]`, depth + 1))),
          }),
        );
      } else {
        const path = parseFieldPath(key, at);
        nodes.push(freeze({ kind: 'field', field: key, path, cond: this.fieldValue(v, here, depth + 1) }));
      }
    }
    return nodes.length === 1 ? nodes[0] : freeze({ kind: 'and', nodes: freeze(nodes) });
  }

  /** The value of a field: an operator object, or a value to equal. */
  private fieldValue(v: unknown, at: string, depth: number): Cond {
    if (isPlainObject(v)) {
      const keys = Object.keys(v);
      if (keys.some((k) => k.startsWith('$'))) return this.operators(v, at, depth);
      throw new FindQueryError(
        'equality with an object is not supported; match its fields with dotted paths ({"a.b": 1}), or use $elemMatch for arrays of objects',
        at,
      );
    }
    this.count(1, at);
    return freeze({ kind: 'eq', value: this.operand(v, at, depth) });
  }

  /** `{$gt: 1, $lt: 5, …}`: every operator must hold. */
  private operators(obj: Record<string, unknown>, at: string, depth: number): Cond {
    this.deep(depth, at);
    const conds: Cond[] = [];
    for (const [op, v] of Object.entries(obj)) {
      const here = `${at}.${op}`;
      if (!op.startsWith('$')) {
        throw new FindQueryError(
          `cannot mix operators and field names in one object (${quoteName(op)}); use dotted paths`,
          at,
        );
      }
      if (!isFieldOperator(op)) {
        const hint = isLogical(op) ? `; ${op} goes at the level of fields: {"${op}": [{…}, {…}]}` : '';
        throw new FindQueryError(
          `unknown operator ${quoteName(op)}; supported: ${FIELD_OPERATORS.join(', ')}${hint}`,
          at,
        );
      }
      if (op === '$options') {
        if (!Object.hasOwn(obj, '$regex')) throw new FindQueryError('$options needs $regex', here);
        continue;
      }
      this.count(1, here);
      conds.push(this.operator(op, v, obj, here, depth));
    }
    return conds.length === 1 ? conds[0] : freeze({ kind: 'every', conds: freeze(conds) });
  }

  private operator(
    op: Exclude<FieldOperator, '$options'>,
    v: unknown,
    obj: Record<string, unknown>,
    at: string,
    depth: number,
  ): Cond {
    switch (op) {
      case '$eq':
        return freeze({ kind: 'eq', value: this.operand(v, at, depth + 1) });
      case '$ne':
        return freeze({ kind: 'not', cond: freeze({ kind: 'eq', value: this.operand(v, at, depth + 1) }) });
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte': {
        if (typeof v === 'string') this.text(v, at);
        else if (typeof v !== 'number' || !Number.isFinite(v)) {
          throw new FindQueryError(`${op} compares with a number or a string (dates as ISO 8601 strings)`, at);
        }
        return freeze({ kind: 'cmp', op: COMPARISONS[op], value: v });
      }
      case '$in':
      case '$nin': {
        if (!Array.isArray(v)) throw new FindQueryError(`${op} needs an array of values`, at);
        if (v.length > FIND_LIMITS.inValues)
          throw new FindQueryError(`${op} takes at most ${FIND_LIMITS.inValues} values`, at);
        // Scalars are one bound JSON array each; an array value (counted by `operand`) is a clause.
        const values = freeze(v.map((x, i) => this.operand(x, `${at}[${i}]`, depth + 1)));
        const cond: Cond = freeze({ kind: 'in', values });
        return op === '$in' ? cond : freeze({ kind: 'not', cond });
      }
      case '$exists':
        if (typeof v !== 'boolean') throw new FindQueryError('$exists takes true or false', at);
        return freeze({ kind: 'exists', exists: v });
      case '$regex': {
        if (typeof v !== 'string')
          throw new FindQueryError('$regex takes a string (a JavaScript regex source, without slashes)', at);
        this.text(v, at);
        if (v.length > FIND_LIMITS.regexLength)
          throw new FindQueryError(`$regex is at most ${FIND_LIMITS.regexLength} characters`, at);
        const options = Object.hasOwn(obj, '$options') ? obj.$options : '';
        if (
          typeof options !== 'string' ||
          [...options].some((o) => !(REGEX_OPTIONS as readonly string[]).includes(o))
        ) {
          throw new FindQueryError(`$options supports ${REGEX_OPTIONS.map((o) => `"${o}"`).join(' and ')} only`, at);
        }
        const fold = options.includes('i');
        return freeze({ kind: 'regex', source: v, glob: regexToGlob(v, fold, at), fold });
      }
      case '$not': {
        if (!isPlainObject(v) || Object.keys(v).length === 0 || !Object.keys(v).every((k) => k.startsWith('$'))) {
          throw new FindQueryError('$not takes an operator object, e.g. {"$not": {"$gt": 5}}', at);
        }
        return freeze({ kind: 'not', cond: this.operators(v, at, depth + 1) });
      }
      case '$all': {
        if (!Array.isArray(v)) throw new FindQueryError('$all needs an array of values', at);
        this.count(v.length, at);
        // Mongo: an empty $all matches nothing.
        if (v.length === 0) return freeze({ kind: 'in', values: freeze([]) });
        const conds = v.map((x, i) => {
          if (isPlainObject(x))
            throw new FindQueryError(
              '$all takes values; use $and with $elemMatch for conditions on elements',
              `${at}[${i}]`,
            );
          return freeze<Cond>({ kind: 'eq', value: this.operand(x, `${at}[${i}]`, depth + 1) });
        });
        return conds.length === 1 ? conds[0] : freeze({ kind: 'every', conds: freeze(conds) });
      }
      case '$size':
        if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
          throw new FindQueryError('$size takes a non-negative integer', at);
        return freeze({ kind: 'size', size: v });
      case '$elemMatch': {
        if (!isPlainObject(v) || Object.keys(v).length === 0) {
          throw new FindQueryError(
            '$elemMatch takes a non-empty object: operators ({"$gt": 1}) or fields ({"sku": "A"})',
            at,
          );
        }
        const keys = Object.keys(v);
        if (keys.some(isFieldOperator)) {
          if (!keys.every(isFieldOperator)) {
            throw new FindQueryError(
              '$elemMatch takes either operators on the elements or fields of the elements, not both',
              at,
            );
          }
          return freeze({ kind: 'elemMatch', cond: this.operators(v, at, depth + 1) });
        }
        return freeze({ kind: 'elemMatchDoc', match: this.match(v, at, depth + 1) });
      }
    }
  }

  /** A value to compare with: a scalar or an array of them (never an object). */
  private operand(v: unknown, at: string, depth: number): FindValue {
    if (v === null || typeof v === 'boolean') return v;
    if (typeof v === 'string') return this.text(v, at);
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw new FindQueryError('numbers must be finite', at);
      return v;
    }
    if (Array.isArray(v)) {
      this.deep(depth, at);
      this.count(v.length, at);
      return freeze(
        v.map((x, i) => {
          if (isPlainObject(x))
            throw new FindQueryError(
              'arrays compared by equality may hold scalars and arrays, not objects',
              `${at}[${i}]`,
            );
          return this.operand(x, `${at}[${i}]`, depth + 1);
        }),
      );
    }
    if (isPlainObject(v))
      throw new FindQueryError('an object is not a value here; operators go directly under the field', at);
    throw new FindQueryError(`unsupported value of type ${typeof v}`, at);
  }

  private text(v: string, at: string): string {
    if (BAD_TEXT.test(v)) throw new FindQueryError('strings may not contain NUL or unpaired surrogates', at);
    return v;
  }
}

/** Parse a match object; throws FindQueryError when it is malformed or unsupported. */
export function parseFind(match: unknown): MatchNode {
  if (match !== undefined && match !== null && !isPlainObject(match))
    throw new FindQueryError('the query must be an object');
  if (match === undefined || match === null || Object.keys(match).length === 0)
    return freeze({ kind: 'and', nodes: freeze([]) });
  return new Parser().match(match, '', 1);
}

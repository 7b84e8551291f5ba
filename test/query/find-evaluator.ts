/**
 * The independent evaluator of find queries: plain TypeScript that implements the semantics of
 * src/query/find/compile.ts again, without any of its code. The SQL tests compare every query's
 * ids with it.
 */
import { type FieldResolver, type SortSpec } from '../../src/query/find/index.ts';
import { type J, type Q, type Row, DOCS } from './find-documents.ts';

const TEXT_COLUMNS = ['id', 'name', 'status'];
const JSON_COLUMNS = ['tags', 'properties', 'metadata'];
export const COLUMNS = [...TEXT_COLUMNS, 'n', ...JSON_COLUMNS];
export const FIELD_LIST = ['id', 'name', 'status', 'n', 'tags[.<path>]', 'properties[.<path>]', 'metadata[.<path>]'];

export const resolve: FieldResolver = (path) => {
  const [head, ...rest] = path;
  if (TEXT_COLUMNS.includes(head) && rest.length === 0) return { kind: 'column', column: `d.${head}`, type: 'text' };
  if (head === 'n' && rest.length === 0) return { kind: 'column', column: 'd.n', type: 'number' };
  if (JSON_COLUMNS.includes(head))
    return rest.length
      ? { kind: 'json', column: `d.${head}`, path: rest }
      : { kind: 'column', column: `d.${head}`, type: 'json' };
  return null;
};

export const isObj = (v: unknown): v is Record<string, J> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isIndex = (k: string) => /^(0|[1-9][0-9]{0,8})$/.test(k);
const LOGICAL = ['$and', '$or', '$nor'];

/** The values a path reaches: object members; through arrays, members of object elements and indexed elements. */
function walk(roots: J[], path: readonly string[]): J[] {
  let cur = roots;
  for (const key of path) {
    const next: J[] = [];
    for (const v of cur) {
      if (isObj(v)) {
        if (Object.hasOwn(v, key)) next.push(v[key]);
      } else if (Array.isArray(v)) {
        for (const e of v) if (isObj(e) && Object.hasOwn(e, key)) next.push(e[key]);
        if (isIndex(key) && Number(key) < v.length) next.push(v[Number(key)]);
      }
    }
    cur = next;
  }
  return cur;
}

interface Subject {
  nodes: J[];
  items: J[];
}
export const subject = (nodes: J[]): Subject => ({
  nodes,
  items: nodes.flatMap((v) => (Array.isArray(v) ? [v, ...v] : [v])),
});

export function docNodes(doc: Row, field: string): J[] {
  const [head, ...rest] = field.split('.');
  if (TEXT_COLUMNS.includes(head) || head === 'n') {
    const v = (doc as unknown as Record<string, J>)[head];
    return v === null ? [] : [v];
  }
  const v = (doc as unknown as Record<string, J | undefined>)[head];
  return v === undefined ? [] : walk([v], rest);
}

const utf8Compare = (a: string, b: string) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
const deepEqual = (x: J, v: J): boolean =>
  Array.isArray(v) ? Array.isArray(x) && x.length === v.length && v.every((e, i) => deepEqual(x[i], e)) : x === v;
const asciiLower = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());
/** Lower-case the A-Z a pattern denotes (literals, range ends, \x41 and \u0041), leaving escapes like \D alone. */
const foldPattern = (src: string) =>
  src.replace(/\\x([0-9a-fA-F]{2})|\\u([0-9a-fA-F]{4})|\\.|[A-Z]/gs, (m, x, u) => {
    const code = x ? parseInt(x, 16) : u ? parseInt(u, 16) : null;
    if (code !== null) return code >= 0x41 && code <= 0x5a ? String.fromCharCode(code + 32) : m;
    return m.length === 1 ? m.toLowerCase() : m;
  });
function regexTest(src: string, options: string, value: string): boolean {
  const fold = options.includes('i');
  const pattern = fold ? foldPattern(src) : src;
  let re: RegExp;
  try {
    re = new RegExp(pattern, 'su');
  } catch {
    re = new RegExp(pattern, 's');
  }
  return re.test(fold ? asciiLower(value) : value);
}

function equals(s: Subject, v: J): boolean {
  if (v === null) return s.nodes.length === 0 || s.items.some((x) => x === null);
  return s.items.some((x) => deepEqual(x, v));
}

function compare(s: Subject, v: J, ok: (c: number) => boolean): boolean {
  return s.items.some((x) =>
    typeof v === 'number'
      ? typeof x === 'number' && ok(x - v)
      : typeof v === 'string' && typeof x === 'string' && ok(utf8Compare(x, v)),
  );
}

function matchOps(s: Subject, ops: Record<string, unknown>): boolean {
  return Object.entries(ops).every(([op, v]) => {
    switch (op) {
      case '$eq':
        return equals(s, v as J);
      case '$ne':
        return !equals(s, v as J);
      case '$gt':
        return compare(s, v as J, (c) => c > 0);
      case '$gte':
        return compare(s, v as J, (c) => c >= 0);
      case '$lt':
        return compare(s, v as J, (c) => c < 0);
      case '$lte':
        return compare(s, v as J, (c) => c <= 0);
      case '$in':
        return (v as J[]).some((x) => equals(s, x));
      case '$nin':
        return !(v as J[]).some((x) => equals(s, x));
      case '$all':
        return (v as J[]).length > 0 && (v as J[]).every((x) => equals(s, x));
      case '$exists':
        return s.nodes.length > 0 === v;
      case '$size':
        return s.nodes.some((x) => Array.isArray(x) && x.length === v);
      case '$regex':
        return s.items.some(
          (x) => typeof x === 'string' && regexTest(v as string, (ops.$options as string | undefined) ?? '', x),
        );
      case '$options':
        return true;
      case '$not':
        return !matchOps(s, v as Record<string, unknown>);
      case '$elemMatch': {
        const sub = v as Record<string, unknown>;
        const onValues = Object.keys(sub).some((k) => k.startsWith('$') && !LOGICAL.includes(k));
        return s.nodes.some(
          (node) =>
            Array.isArray(node) &&
            node.some((e) =>
              onValues
                ? matchOps({ nodes: [e], items: [e] }, sub)
                : isObj(e) && matchWith(sub, (field) => walk([e], field.split('.'))),
            ),
        );
      }
      default:
        throw new Error(`evaluator: unexpected operator ${op}`);
    }
  });
}

function matchWith(q: Record<string, unknown>, nodesOf: (field: string) => J[]): boolean {
  return Object.entries(q).every(([key, v]) => {
    if (key === '$and') return (v as Q[]).every((m) => matchWith(m, nodesOf));
    if (key === '$or') return (v as Q[]).some((m) => matchWith(m, nodesOf));
    if (key === '$nor') return !(v as Q[]).some((m) => matchWith(m, nodesOf));
    const s = subject(nodesOf(key));
    return isObj(v) && Object.keys(v).some((k) => k.startsWith('$')) ? matchOps(s, v) : equals(s, v as J);
  });
}

export const expectedIds = (q: Q): string[] =>
  DOCS.filter((d) => matchWith(q, (field) => docNodes(d, field)))
    .map((d) => d.id)
    .sort();

/** Sort evaluator: the value at a fixed path, Mongo's type order, code-point strings, then id. */
function sortValue(d: Row, field: string): J | undefined {
  const [head, ...rest] = field.split('.');
  let v = (d as unknown as Record<string, J | undefined>)[head];
  for (const key of rest) {
    if (isObj(v) && Object.hasOwn(v, key)) v = v[key];
    else if (Array.isArray(v) && isIndex(key) && Number(key) < v.length) v = v[Number(key)];
    else return undefined;
  }
  return v;
}
const rank = (v: J | undefined) =>
  v === undefined || v === null
    ? 0
    : typeof v === 'number'
      ? 1
      : typeof v === 'string'
        ? 2
        : Array.isArray(v)
          ? 4
          : typeof v === 'object'
            ? 3
            : 5;
function compareSortValues(a: J | undefined, b: J | undefined): number {
  const r = rank(a) - rank(b);
  if (r !== 0) return r;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return utf8Compare(a, b);
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  return 0;
}
export const expectedOrder = (sort: SortSpec[]): string[] =>
  [...DOCS]
    .sort((x, y) => {
      for (const { field, order } of sort) {
        const c = compareSortValues(sortValue(x, field), sortValue(y, field));
        if (c !== 0) return order === -1 || order === 'desc' || order === 'descending' ? -c : c;
      }
      return x.id < y.id ? -1 : 1;
    })
    .map((d) => d.id);

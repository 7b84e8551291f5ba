/**
 * What a jst template (a JavaScript function body, Vertesia's `@vertesia/jst`) is made of,
 * without running it: it must parse (acorn, `return` allowed at the top), and its free
 * identifiers (eslint-scope's unresolved references) are what it reads from the data. The
 * sandbox, not this check, is the security boundary: loops, indexing and the standard built-ins
 * are all allowed here, a superset of what Vertesia's validator accepts.
 */
import { parse, type Program } from 'acorn';
import { analyze } from 'eslint-scope';
import { syntaxErrorAtPosition, TemplateError } from './template-error.ts';

/** The standard ECMAScript globals a template may use without declaring them. */
const STANDARD_BUILTINS = new Set([
  'globalThis',
  'Infinity',
  'NaN',
  'undefined',
  'eval',
  'isFinite',
  'isNaN',
  'parseFloat',
  'parseInt',
  'decodeURI',
  'decodeURIComponent',
  'encodeURI',
  'encodeURIComponent',
  'escape',
  'unescape',
  'Array',
  'ArrayBuffer',
  'SharedArrayBuffer',
  'Atomics',
  'BigInt',
  'BigInt64Array',
  'BigUint64Array',
  'Boolean',
  'DataView',
  'Date',
  'Error',
  'AggregateError',
  'EvalError',
  'RangeError',
  'ReferenceError',
  'SyntaxError',
  'TypeError',
  'URIError',
  'Float32Array',
  'Float64Array',
  'Function',
  'Int8Array',
  'Int16Array',
  'Int32Array',
  'Uint8Array',
  'Uint8ClampedArray',
  'Uint16Array',
  'Uint32Array',
  'Map',
  'Set',
  'WeakMap',
  'WeakSet',
  'WeakRef',
  'FinalizationRegistry',
  'Math',
  'Number',
  'Object',
  'Promise',
  'Proxy',
  'Reflect',
  'RegExp',
  'String',
  'Symbol',
  'JSON',
]);

/** Names every template has: the run's model id and Vertesia's helpers. */
const TEMPLATE_GLOBALS = new Set(['_model', '_']);

/** Names a `const {…} =` binding cannot take in strict mode. */
const UNBINDABLE = new Set(['eval', 'arguments']);

interface FreeIdentifier {
  name: string;
  line: number;
  column: number;
}

export interface JstAnalysis {
  /** Identifiers the template reads but does not declare, first occurrence of each. */
  free: FreeIdentifier[];
}

export function analyzeJst(source: string): JstAnalysis {
  let program: Program;
  try {
    program = parse(source, {
      ecmaVersion: 'latest',
      sourceType: 'script',
      allowReturnOutsideFunction: true,
      locations: true,
      ranges: true,
    });
  } catch (err) {
    const e = err as Error & { loc?: { line: number; column: number } };
    const message = e.message.replace(/\s*\(\d+:\d+\)$/, '');
    if (e.loc) throw syntaxErrorAtPosition({ line: e.loc.line, column: e.loc.column + 1 }, message);
    throw new TemplateError(`syntax error: ${message}`, 'syntax');
  }
  const imported = findNode(program, 'ImportExpression') as
    { loc?: { start: { line: number; column: number } } } | undefined;
  if (imported) {
    throw syntaxErrorAtPosition(
      { line: imported.loc?.start.line ?? 1, column: (imported.loc?.start.column ?? 0) + 1 },
      'import() is not available in templates: they load nothing',
    );
  }
  const scopes = analyze(program as never, { ecmaVersion: 2022, sourceType: 'script' });
  const seen = new Map<string, FreeIdentifier>();
  for (const ref of scopes.globalScope!.through) {
    const id = ref.identifier as { name: string; loc?: { start: { line: number; column: number } } };
    if (!seen.has(id.name))
      seen.set(id.name, { name: id.name, line: id.loc?.start.line ?? 1, column: (id.loc?.start.column ?? 0) + 1 });
  }
  return { free: [...seen.values()] };
}

/** The first node of `type` in an ESTree AST. */
function findNode(node: unknown, type: string): unknown {
  const stack = [node];
  while (stack.length) {
    const n = stack.pop();
    if (!n || typeof n !== 'object') continue;
    if ((n as { type?: string }).type === type) return n;
    for (const [k, v] of Object.entries(n))
      if (k !== 'loc' && k !== 'range') stack.push(...(Array.isArray(v) ? v : [v]));
  }
  return undefined;
}

/**
 * Refuses an identifier that is neither declared, a property of the prompt's input schema,
 * `_model`, `_` nor a standard built-in, at its line and column. Without a schema (no property
 * names to check against), every free identifier is taken to come from the data.
 */
export function checkIdentifiers(analysis: JstAnalysis, schemaProperties: readonly string[] | undefined): void {
  if (!schemaProperties?.length) return;
  const known = new Set(schemaProperties);
  for (const id of analysis.free) {
    if (known.has(id.name) || TEMPLATE_GLOBALS.has(id.name) || STANDARD_BUILTINS.has(id.name)) continue;
    throw syntaxErrorAtPosition(
      { line: id.line, column: id.column },
      `unknown identifier "${id.name}": it is not declared in the template, not a property of the prompt's input schema (${schemaProperties.join(', ')}), not _model or _, and not a standard built-in`,
    );
  }
}

/**
 * The names the sandbox binds from the data: every free identifier that is not `_model`, `_` or
 * a standard built-in, and the schema's properties among the free identifiers even when they
 * shadow a built-in (as Vertesia binds its schema globals).
 */
export function dataBindings(analysis: JstAnalysis, schemaProperties: readonly string[] | undefined): string[] {
  const schema = new Set(schemaProperties ?? []);
  return analysis.free
    .map((id) => id.name)
    .filter(
      (name) =>
        !TEMPLATE_GLOBALS.has(name) && !UNBINDABLE.has(name) && (schema.has(name) || !STANDARD_BUILTINS.has(name)),
    );
}

/** The top-level property names of a JSON Schema that has them. */
export function schemaPropertyNames(schema: unknown): string[] | undefined {
  const props = (schema as { properties?: unknown } | null | undefined)?.properties;
  return props && typeof props === 'object' && !Array.isArray(props) ? Object.keys(props) : undefined;
}

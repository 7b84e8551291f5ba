/**
 * Handlebars prompt templates, in an isolated environment with no HTML escaping.
 *
 * Missing data: Handlebars' `strict` mode is not used, because it also throws inside `#if a.b`
 * when `a` is missing (its intermediate lookups are unguarded), which breaks optional sections,
 * and its messages ("x" not defined in [object Object]) do not name the path. Instead the parsed
 * AST is rewritten before compiling: every mustache that outputs a value (`{{user.name}}`,
 * `{{{html}}}`, and the arguments of output helpers such as `{{upper name}}`) becomes a call to
 * an internal `required` helper that throws TemplateError('missing_data') naming the path when
 * the value is undefined. Conditions and block parameters (`#if`, `#unless`, `#each`, `#with`,
 * `eq`, `or` …) are left alone, so a missing value there is simply falsy or empty.
 */
import Handlebars from 'handlebars';
import { OUTPUT_HELPERS, PROMPT_HELPERS } from './handlebars-helpers.ts';
import { DEFAULT_RENDER_LIMITS, type RenderLimits } from './render-limits.ts';
import { syntaxErrorAtPosition, TemplateError, type TemplatePosition } from './template-error.ts';
import { valueToText } from './value-text.ts';

type AST = hbs.AST.Program;
type Node = hbs.AST.Node;
type Expression = hbs.AST.Expression;
type PathExpression = hbs.AST.PathExpression;
type HelperOptions = Handlebars.HelperOptions;

/** Internal helpers (names no prompt would use): one renders a required value, one passes it on to an output helper. */
const REQUIRED = '__orrery_required';
const REQUIRED_ARGUMENT = '__orrery_required_argument';

/** Built-in block helpers that fail at render time unless given exactly one argument. */
const ONE_ARGUMENT_BLOCKS = new Set(['if', 'unless', 'each', 'with']);

/** Where an output mustache reads its value, for the missing-data message. */
interface OutputSite {
  readonly path: string;
  readonly position: TemplatePosition;
}

/** State of the render in progress. Rendering is synchronous, so one slot suffices. */
interface RenderState {
  readonly sites: readonly OutputSite[];
  readonly limits: RenderLimits;
  iterations: number;
}
let current: RenderState | null = null;

const env = Handlebars.create();
env.unregisterHelper('log'); // a template must not write to the server's console
for (const [name, helper] of Object.entries(PROMPT_HELPERS)) env.registerHelper(name, helper);
env.registerHelper(REQUIRED_ARGUMENT, (value: unknown, site: number) => {
  if (value === undefined) throw missingData(current?.sites[site]);
  return value;
});
env.registerHelper(REQUIRED, (value: unknown, site: number) => {
  if (value === undefined) throw missingData(current?.sites[site]);
  // null renders as nothing (Handlebars' own rule); objects as JSON, not [object Object].
  if (value === null || typeof value === 'function') return '';
  return typeof value === 'object' ? valueToText(value) : value;
});

// #each (and sections over arrays, which use it) counts iterations against the step budget:
// nested loops over the same data would otherwise multiply the work without bound.
const builtinEach = env.helpers.each;
env.registerHelper('each', function (this: unknown, context: unknown, options: HelperOptions) {
  const state = current;
  if (!state || typeof options?.fn !== 'function') return builtinEach.call(this, context, options);
  const body = options.fn;
  const counted = function (this: unknown, ...args: Parameters<typeof body>): string {
    if (++state.iterations > state.limits.maxSteps) {
      throw new TemplateError(`the template does too much work (more than ${state.limits.maxSteps} block iterations)`, 'evaluation');
    }
    const out = body.apply(this, args);
    checkOutput(out, state.limits);
    return out;
  };
  return builtinEach.call(this, context, { ...options, fn: counted as typeof body });
});

const KNOWN_HELPERS = Object.fromEntries(Object.keys(env.helpers).map((name) => [name, true]));
const COMPILE_OPTIONS: CompileOptions = { noEscape: true, knownHelpers: KNOWN_HELPERS, strict: false, assumeObjects: false };

export interface CompiledHandlebars {
  render(data: unknown, limits?: RenderLimits): string;
}

export function compileHandlebars(content: string): CompiledHandlebars {
  const sites: OutputSite[] = [];
  const ast = prepare(content, sites);
  const template = env.compile(ast, COMPILE_OPTIONS);
  return {
    render(data, limits = DEFAULT_RENDER_LIMITS) {
      const previous = current;
      current = { sites, limits, iterations: 0 };
      try {
        const out = template(data ?? {});
        checkOutput(out, limits);
        return out;
      } catch (err) {
        if (err instanceof TemplateError) throw err;
        throw runtimeError(err);
      } finally {
        current = previous;
      }
    },
  };
}

/** Everything compile-time: parse, rewrite, and generate code (which is then thrown away). */
export function checkHandlebarsSyntax(content: string): void {
  const ast = prepare(content, []);
  try {
    env.precompile(ast, COMPILE_OPTIONS);
  } catch (err) {
    throw handlebarsSyntaxError(err);
  }
}

function prepare(content: string, sites: OutputSite[]): AST {
  let ast: AST;
  try {
    ast = env.parse(content);
  } catch (err) {
    throw handlebarsSyntaxError(err);
  }
  rewriteProgram(ast, sites);
  return ast;
}

// ---- AST rewrite ----

function rewriteProgram(program: hbs.AST.Program | undefined, sites: OutputSite[]): void {
  if (!program) return;
  program.body = program.body.map((statement) => rewriteStatement(statement, sites));
}

function rewriteStatement(statement: hbs.AST.Statement, sites: OutputSite[]): hbs.AST.Statement {
  switch (statement.type) {
    case 'MustacheStatement':
      return rewriteMustache(statement as hbs.AST.MustacheStatement, sites);
    case 'BlockStatement': {
      const block = statement as hbs.AST.BlockStatement;
      checkCall(block, block.path, block.params, block.hash);
      const name = block.path.original;
      if (ONE_ARGUMENT_BLOCKS.has(name) && block.params.length !== 1) {
        throw unsupported(block, `{{#${name}}} takes exactly one argument, e.g. {{#${name} ${name === 'each' ? 'items' : 'value'}}}`);
      }
      rewriteProgram(block.program, sites);
      rewriteProgram(block.inverse, sites);
      return block;
    }
    case 'PartialStatement':
    case 'PartialBlockStatement':
      throw unsupported(statement, 'partials ({{> name}}) are not supported in prompt templates');
    case 'DecoratorBlock':
    case 'Decorator':
      throw unsupported(statement, 'decorators ({{* name}}) are not supported in prompt templates');
    default:
      return statement; // content and comments
  }
}

function rewriteMustache(mustache: hbs.AST.MustacheStatement, sites: OutputSite[]): hbs.AST.Statement {
  const path = mustache.path;
  const isCall = mustache.params.length > 0 || mustache.hash !== undefined;
  if (isCall) {
    checkCall(mustache, path, mustache.params, mustache.hash);
    const name = (path as PathExpression).original;
    if (OUTPUT_HELPERS.has(name)) {
      mustache.params = mustache.params.map((p) => (isPath(p) ? requiredCall('SubExpression', p, p, sites) : p));
    }
    return mustache;
  }
  // A bare `{{name}}` always outputs data, even when a helper has that name (`{{join}}`, `{{raw}}`):
  // every helper here needs arguments, and a data key must not be shadowed by a helper.
  if (!isPath(path)) return mustache;
  return requiredCall('MustacheStatement', path, mustache, sites);
}

/** `{{__orrery_required <path> <site>}}` (keeping the mustache's flags), or `(__orrery_required_argument <path> <site>)`. */
function requiredCall(type: 'MustacheStatement' | 'SubExpression', path: PathExpression, at: Node, sites: OutputSite[]) {
  const name = type === 'MustacheStatement' ? REQUIRED : REQUIRED_ARGUMENT;
  sites.push({ path: path.original, position: positionOf(path) });
  const site: hbs.AST.NumberLiteral = { type: 'NumberLiteral', value: sites.length - 1, original: sites.length - 1, loc: at.loc };
  const helper: PathExpression = { type: 'PathExpression', data: false, depth: 0, parts: [name], original: name, loc: at.loc };
  return { ...at, type, path: helper, params: [path, site], hash: undefined } as unknown as hbs.AST.MustacheStatement;
}

/** A helper call must name a registered helper; sub-expressions inside it are checked too. */
function checkCall(node: Node, path: PathExpression | hbs.AST.Literal, params: Expression[], hash: hbs.AST.Hash | undefined): void {
  const isCall = params.length > 0 || hash !== undefined;
  if (isCall) {
    if (!isPath(path) || !isHelperName(path)) {
      const name = isPath(path) ? path.original : 'a literal';
      const known = Object.keys(PROMPT_HELPERS).concat('if', 'unless', 'each', 'with', 'lookup').join(', ');
      throw unsupported(node, `unknown helper "${name}" (available: ${known})`);
    }
  }
  for (const p of [...params, ...(hash?.pairs.map((pair) => pair.value) ?? [])]) {
    if (p.type === 'SubExpression') {
      const sub = p as hbs.AST.SubExpression;
      checkCall(sub, sub.path, sub.params, sub.hash ?? { type: 'Hash', pairs: [], loc: sub.loc });
    }
  }
}

const isPath = (e: Node): e is PathExpression => e.type === 'PathExpression';

/** A simple name (no dots, `@`, `this.` or `../`) that names a registered helper. */
function isHelperName(path: PathExpression): boolean {
  return !path.data && path.depth === 0 && path.parts.length === 1 && Handlebars.AST.helpers.simpleId(path)
    && Object.prototype.hasOwnProperty.call(env.helpers, path.parts[0]) && !path.parts[0].startsWith('__orrery_');
}

// ---- errors ----

const positionOf = (node: Node): TemplatePosition => ({ line: node.loc.start.line, column: node.loc.start.column + 1 });

function missingData(site: OutputSite | undefined): TemplateError {
  if (!site) return new TemplateError('data is missing a value', 'missing_data');
  const { path, position } = site;
  return new TemplateError(`data has no "${path}" (used at line ${position.line}, column ${position.column})`, 'missing_data', path, position);
}

const unsupported = (node: Node, message: string) => syntaxErrorAtPosition(positionOf(node), message);

function checkOutput(out: string, limits: RenderLimits): void {
  if (out.length > limits.maxOutput) {
    throw new TemplateError(`the output would exceed the limit of ${limits.maxOutput} characters`, 'evaluation');
  }
}

/** A failure inside Handlebars while rendering (e.g. `{{#each}}` without a list), located if it says where. */
function runtimeError(err: unknown): TemplateError {
  const e = err as { message?: string; lineNumber?: number; column?: number };
  const message = (e.message ?? String(err)).replace(/ - \d+:\d+$/, '');
  if (err instanceof RangeError) return new TemplateError('the template is too deeply nested to render', 'evaluation');
  if (typeof e.lineNumber === 'number' && typeof e.column === 'number') {
    return new TemplateError(`${message} (at line ${e.lineNumber}, column ${e.column + 1})`, 'evaluation', undefined, { line: e.lineNumber, column: e.column + 1 });
  }
  return new TemplateError(message, 'evaluation');
}

/** Handlebars' parser errors carry no structured position; its lexer still holds the last token's. */
function handlebarsSyntaxError(err: unknown): TemplateError {
  if (err instanceof TemplateError) return err;
  const e = err as { message?: string; lineNumber?: number; column?: number };
  const message = e.message ?? String(err);
  if (typeof e.lineNumber === 'number' && typeof e.column === 'number') {
    return syntaxErrorAtPosition({ line: e.lineNumber, column: e.column + 1 }, message.replace(/ - \d+:\d+$/, ''));
  }
  const lexer = (env as unknown as { Parser: { lexer: JisonLexer } }).Parser.lexer;
  if (message.startsWith('Parse error')) {
    const loc = lexer.yylloc;
    return syntaxErrorAtPosition({ line: loc.first_line, column: loc.first_column + 1 }, describeParseError(message));
  }
  if (message.startsWith('Lexical error')) {
    const consumed = lexer.matched ?? '';
    const lines = consumed.split('\n');
    return syntaxErrorAtPosition({ line: lines.length, column: lines[lines.length - 1].length + 1 }, 'unrecognized text (an unclosed comment or mustache?)');
  }
  return new TemplateError(`syntax error: ${message}`, 'syntax');
}

interface JisonLexer {
  yylloc: { first_line: number; first_column: number };
  matched?: string;
}

const TOKEN_NAMES: Record<string, string> = {
  EOF: 'the end of the template', CLOSE: '"}}"', CLOSE_UNESCAPED: '"}}}"', CLOSE_RAW_BLOCK: '"}}}}"', OPEN_ENDBLOCK: '"{{/…}}"',
  INVERSE: '"{{else}}"', OPEN_INVERSE_CHAIN: '"{{else …}}"', OPEN_SEXPR: '"("', CLOSE_SEXPR: '")"', EQUALS: '"="',
  ID: 'a name', STRING: 'a string', NUMBER: 'a number', BOOLEAN: 'true/false', DATA: 'an @variable', INVALID: 'invalid characters',
  OPEN_BLOCK_PARAMS: '"as |…|"', CLOSE_BLOCK_PARAMS: '"|"', SEP: '"." or "/"',
};

/** Turns jison's "Expecting 'ID', 'STRING', …, got 'EOF'" into words a prompt author can act on. */
function describeParseError(message: string): string {
  const match = /Expecting (.*), got '([^']+)'/.exec(message);
  if (!match) return message.split('\n')[0];
  const expected = [...match[1].matchAll(/'([^']+)'/g)].map((m) => m[1]);
  const got = TOKEN_NAMES[match[2]] ?? `"${match[2]}"`;
  if (match[2] === 'EOF' && expected.includes('OPEN_ENDBLOCK')) return 'a block is never closed: add its {{/…}}';
  const wanted = expected.filter((t) => TOKEN_NAMES[t]).map((t) => TOKEN_NAMES[t]);
  return wanted.length > 0 && wanted.length <= 6 ? `unexpected ${got}, expected ${wanted.join(' or ')}` : `unexpected ${got}`;
}


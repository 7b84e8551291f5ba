/**
 * Compiling a handlebars prompt template (in the template worker, off the server's event loop:
 * Handlebars' parser and compiler take tens of microseconds per expression). The answer is
 * Handlebars' precompiled template spec, which the server's thread instantiates. Refused at
 * compile time, with a position: syntax errors, partials and decorators (no partials are
 * registered, so they can only fail), and a call of a helper that does not exist (Handlebars
 * would fail every render with "Missing helper").
 */
import { env, KNOWN_HELPERS } from './handlebars-env.ts';
import { syntaxErrorAtPosition, TemplateError, type TemplatePosition } from './template-error.ts';

type Node = hbs.AST.Node;
type Expression = hbs.AST.Expression;
type PathExpression = hbs.AST.PathExpression;

/** Precompiles `content` into a template spec (JavaScript source of an object). */
export function precompileHandlebars(content: string): string {
  let ast: hbs.AST.Program;
  try {
    ast = env.parse(content);
  } catch (err) {
    throw handlebarsSyntaxError(err);
  }
  checkProgram(ast);
  try {
    return env.precompile(ast, { strict: false }) as unknown as string;
  } catch (err) {
    throw handlebarsSyntaxError(err);
  }
}

function checkProgram(program: hbs.AST.Program | undefined): void {
  for (const statement of program?.body ?? []) {
    switch (statement.type) {
      case 'MustacheStatement': {
        const m = statement as hbs.AST.MustacheStatement;
        checkCall(m, m.path, m.params, m.hash);
        break;
      }
      case 'BlockStatement': {
        const b = statement as hbs.AST.BlockStatement;
        checkCall(b, b.path, b.params, b.hash);
        checkProgram(b.program);
        checkProgram(b.inverse);
        break;
      }
      case 'PartialStatement':
      case 'PartialBlockStatement':
        throw unsupported(statement, 'partials ({{> name}}) are not supported in prompt templates');
      case 'DecoratorBlock':
      case 'Decorator':
        throw unsupported(statement, 'decorators ({{* name}}) are not supported in prompt templates');
      default:
        break; // content and comments
    }
  }
}

/** A call with arguments must name a helper; sub-expressions inside it are checked too. */
function checkCall(
  node: Node,
  path: PathExpression | hbs.AST.Literal,
  params: Expression[],
  hash: hbs.AST.Hash | undefined,
): void {
  if (params.length > 0 || (hash && hash.pairs.length > 0)) {
    const name = path.type === 'PathExpression' ? (path as PathExpression).original : 'a literal';
    if (path.type !== 'PathExpression' || !KNOWN_HELPERS.includes(name)) {
      throw unsupported(node, `unknown helper "${name}" (available: ${KNOWN_HELPERS.join(', ')})`);
    }
  }
  for (const p of [...params, ...(hash?.pairs.map((pair) => pair.value) ?? [])]) {
    if (p.type === 'SubExpression') {
      const sub = p as hbs.AST.SubExpression;
      checkCall(sub, sub.path, sub.params, sub.hash);
    }
  }
}

const positionOf = (node: Node): TemplatePosition => ({ line: node.loc.start.line, column: node.loc.start.column + 1 });
const unsupported = (node: Node, message: string) => syntaxErrorAtPosition(positionOf(node), message);

/** Handlebars' parser errors carry no structured position; its lexer still holds the last token's. */
function handlebarsSyntaxError(err: unknown): TemplateError {
  if (err instanceof TemplateError) return err;
  const e = err as { message?: string; lineNumber?: number; column?: number };
  const message = e.message ?? String(err);
  if (err instanceof RangeError) return new TemplateError('the template is nested too deeply to compile', 'syntax');
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
    return syntaxErrorAtPosition(
      { line: lines.length, column: lines[lines.length - 1].length + 1 },
      'unrecognized text (an unclosed comment or mustache?)',
    );
  }
  return new TemplateError(`syntax error: ${message}`, 'syntax');
}

interface JisonLexer {
  yylloc: { first_line: number; first_column: number };
  matched?: string;
}

const TOKEN_NAMES: Record<string, string> = {
  EOF: 'the end of the template',
  CLOSE: '"}}"',
  CLOSE_UNESCAPED: '"}}}"',
  CLOSE_RAW_BLOCK: '"}}}}"',
  OPEN_ENDBLOCK: '"{{/…}}"',
  INVERSE: '"{{else}}"',
  OPEN_INVERSE_CHAIN: '"{{else …}}"',
  OPEN_SEXPR: '"("',
  CLOSE_SEXPR: '")"',
  EQUALS: '"="',
  ID: 'a name',
  STRING: 'a string',
  NUMBER: 'a number',
  BOOLEAN: 'true/false',
  DATA: 'an @variable',
  INVALID: 'invalid characters',
  OPEN_BLOCK_PARAMS: '"as |…|"',
  CLOSE_BLOCK_PARAMS: '"|"',
  SEP: '"." or "/"',
};

/** Turns jison's "Expecting 'ID', 'STRING', …, got 'EOF'" into words a prompt author can act on. */
function describeParseError(message: string): string {
  const match = /Expecting (.*), got '([^']+)'/.exec(message);
  if (!match) return message.split('\n')[0];
  const expected = [...match[1].matchAll(/'([^']+)'/g)].map((m) => m[1]);
  const got = Object.hasOwn(TOKEN_NAMES, match[2]) ? TOKEN_NAMES[match[2]] : `"${match[2]}"`;
  if (match[2] === 'EOF' && expected.includes('OPEN_ENDBLOCK')) return 'a block is never closed: add its {{/…}}';
  const wanted = expected.filter((t) => Object.hasOwn(TOKEN_NAMES, t)).map((t) => TOKEN_NAMES[t]);
  return wanted.length > 0 && wanted.length <= 6
    ? `unexpected ${got}, expected ${wanted.join(' or ')}`
    : `unexpected ${got}`;
}

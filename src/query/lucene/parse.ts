/**
 * Lucene query string → QueryNode (ast.ts). A scannerless recursive-descent parser, written here
 * rather than on the `lucene` package: that package's AST is lossy (runs of operators collapse, so
 * `a AND AND b` and `a AND` pass silently; `NOT NOT a` and `(a OR)` turn operators into terms),
 * it rejects valid Lucene (`-(a b)`, `(a b)^2`, `[a TO b]^2`, `f:>="…"`), misreads `a~2` as `a~0.5 2`
 * and has no positions on ranges. Each of those would need its own source check anyway.
 *
 * Grammar (precedence low → high; see ast.ts for the and/or/not mapping):
 *   query   := ws* [clauses] ws*                       empty → all
 *   clauses := or (ws* or)*                            juxtaposition: the +/- rule
 *   or      := and (('OR' | '||') and)*
 *   and     := unary (('AND' | '&&') unary)*
 *   unary   := ('NOT' | '!') unary | ('+' | '-') primary | primary   (+/- touch their clause)
 *   primary := group | phrase mods | term mods | field ':' value
 *   value   := group | range | ('>'|'>='|'<'|'<=') bound | phrase mods | term mods
 *   group   := '(' clauses ')' ['^' num]
 *   range   := ('['|'{') bound 'TO' bound (']'|'}') ['^' num]   a bound of `*` is an open end
 *   mods    := ('~' [num] | '^' num)*                  parsed and dropped
 * `\` escapes any character. `AND`, `OR`, `NOT`, `TO` are operators only in upper case.
 */
import { Q, type QueryNode } from './ast.ts';
import { LuceneSyntaxError, UnknownFieldError } from './errors.ts';

/** Parentheses and prefix operators nested deeper than this are refused (no stack overflow). */
export const MAX_QUERY_DEPTH = 64;
/**
 * Terms, phrases, ranges and `_exists_` tests in one query (Elasticsearch's max_clause_count is
 * 1,024): each becomes SQL conditions and bound values, so the count bounds the database's work.
 */
export const MAX_QUERY_TERMS = 256;
/** Characters of one query string. */
export const MAX_QUERY_LENGTH = 10_000;

export interface ParseOptions {
  /**
   * When given, every field the query names is checked as it is parsed, so the error carries a
   * position and clauses that the +/- rule drops are checked too. `_exists_:x` checks `x`.
   * Syntax errors win: the first unknown field is reported only when the query parses.
   */
  readonly isField?: (field: string) => boolean;
  /** The searchable fields as listed in an UnknownFieldError. */
  readonly fieldList?: readonly string[];
}

/** The special field names: `_exists_:f` and `*:*`. */
const EXISTS = '_exists_';
const STAR = '*';

/** `+x` is required, `-x` / `!x` / `NOT x` prohibited (its node is already the negation). */
type Mod = '+' | '-' | null;
interface Clause {
  readonly node: QueryNode;
  readonly mod: Mod;
}

/** A run of term characters, unescaped (`text`) and as a glob (`glob`, see ast.ts). */
interface Word {
  readonly raw: string;
  readonly text: string;
  readonly glob: string;
  readonly wildcard: boolean;
  readonly start: number;
}

const isWs = (c: string | undefined): boolean => c !== undefined && /\s/u.test(c);
/** Characters that end a term (besides whitespace and `&&`/`||`). */
const TERM_STOP = new Set(['(', ')', '[', ']', '{', '}', '"', '^', '~', ':']);
/** Characters that end a range bound (`:` and parentheses may appear in one, as in Lucene). */
const BOUND_STOP = new Set(['[', ']', '{', '}', '"']);
/** Characters that end a comparison value (`:` may appear: `updated_at:>2024-01-01T10:00Z`). */
const VALUE_STOP = new Set(['(', ')', '[', ']', '{', '}', '"', '^', '~']);
const KEYWORDS = new Set(['AND', 'OR', 'NOT']);

const combine = (clauses: readonly Clause[]): QueryNode => {
  if (clauses.length === 1) return clauses[0].node;
  const required = clauses.filter((c) => c.mod === '+').map((c) => c.node);
  const prohibited = clauses.filter((c) => c.mod === '-').map((c) => c.node);
  const optional = clauses.filter((c) => c.mod === null).map((c) => c.node);
  // Lucene: with a required clause present, optional clauses only score, so they do not filter.
  if (required.length > 0) return Q.and(...required, ...prohibited);
  if (optional.length > 0) return Q.and(Q.or(...optional), ...prohibited);
  return Q.and(...prohibited);
};

class Parser {
  private pos = 0;
  private depth = 0;
  private terms = 0;
  private unknown: { name: string; at: number } | null = null;

  constructor(
    private readonly src: string,
    private readonly opts: ParseOptions,
  ) {}

  parse(): QueryNode {
    if (this.src.length > MAX_QUERY_LENGTH)
      this.fail(MAX_QUERY_LENGTH, `the query is longer than ${MAX_QUERY_LENGTH} characters`);
    this.skipWs();
    if (this.atEnd()) return Q.all();
    if (this.peek() === ')') this.fail(this.pos, `unexpected ')' without a matching '('`);
    const node = this.clauses(null);
    if (!this.atEnd()) this.fail(this.pos, `unexpected ')' without a matching '('`);
    if (this.unknown !== null)
      throw new UnknownFieldError(this.unknown.name, this.opts.fieldList ?? [], this.unknown.at);
    return node;
  }

  // ---- structure -------------------------------------------------------------------------

  /** Clauses up to the end or a `)` (left for the caller). `ctx` is the field of an enclosing `f:(…)`. */
  private clauses(ctx: string | null): QueryNode {
    const list: Clause[] = [];
    for (;;) {
      this.skipWs();
      if (this.atEnd() || this.peek() === ')') break;
      list.push(this.or(ctx));
    }
    if (list.length === 0) this.fail(this.pos, 'expected a term');
    return combine(list);
  }

  private or(ctx: string | null): Clause {
    const first = this.and(ctx);
    const rest: QueryNode[] = [];
    for (;;) {
      this.skipWs();
      const op = this.binaryOp();
      if (op?.kind !== 'or') break;
      this.pos += op.text.length;
      rest.push(this.operand(op.text, () => this.and(ctx)).node);
    }
    return rest.length === 0 ? first : { node: Q.or(first.node, ...rest), mod: null };
  }

  private and(ctx: string | null): Clause {
    const first = this.unary(ctx);
    const rest: QueryNode[] = [];
    for (;;) {
      this.skipWs();
      const op = this.binaryOp();
      if (op?.kind !== 'and') break;
      this.pos += op.text.length;
      rest.push(this.operand(op.text, () => this.unary(ctx)).node);
    }
    return rest.length === 0 ? first : { node: Q.and(first.node, ...rest), mod: null };
  }

  /** The operand after a binary operator: something must follow it. */
  private operand(op: string, next: () => Clause): Clause {
    this.skipWs();
    if (this.atEnd() || this.peek() === ')' || this.binaryOp() !== null)
      this.fail(this.pos, `expected a term after '${op}'`);
    return next();
  }

  private unary(ctx: string | null): Clause {
    const at = this.pos;
    const bin = this.binaryOp();
    if (bin !== null) this.fail(at, `'${bin.text}' needs a term before it`);
    const c = this.peek();
    const notWord = this.keywordAt('NOT');
    if (notWord || c === '!') {
      const op = notWord ? 'NOT' : '!';
      this.pos += op.length;
      this.skipWs();
      if (this.atEnd() || this.peek() === ')' || this.binaryOp() !== null)
        this.fail(this.pos, `expected a term after '${op}'`);
      const inner = this.nested(at, () => this.unary(ctx));
      return { node: Q.not(inner.node), mod: '-' };
    }
    if (c === '+' || c === '-') {
      this.pos++;
      const next = this.peek();
      if (next === undefined || isWs(next) || next === ')') this.fail(this.pos, `expected a term right after '${c}'`);
      const inner = this.nested(at, () => this.primary(ctx));
      return c === '+' ? { node: inner, mod: '+' } : { node: Q.not(inner), mod: '-' };
    }
    return { node: this.primary(ctx), mod: null };
  }

  private primary(ctx: string | null): QueryNode {
    const at = this.pos;
    const c = this.peek();
    switch (c) {
      case '(':
        return this.group(ctx);
      case '"':
        return this.valueNode(ctx, this.phrase(), true);
      case '[':
      case '{':
        return this.range(this.rangeField(ctx, at));
      case '<':
      case '>':
        return this.comparison(this.rangeField(ctx, at));
      default:
        break; // a word, below
    }
    this.refuseStart(at);
    const word = this.word();
    if (this.peek() === ':') return this.fieldClause(word);
    return this.valueNode(ctx, word, false);
  }

  private group(ctx: string | null): QueryNode {
    const open = this.pos;
    return this.nested(open, () => {
      this.pos++;
      this.skipWs();
      if (this.peek() === ')') this.fail(this.pos, "empty group '()'");
      if (this.atEnd()) this.fail(open, "unclosed '(': expected ')'");
      const node = this.clauses(ctx);
      if (this.atEnd()) this.fail(open, "unclosed '(': expected ')'");
      this.pos++; // the ')'
      this.modifiers(false);
      return node;
    });
  }

  private fieldClause(field: Word): QueryNode {
    if (field.text === '') this.fail(field.start, "expected a field name before ':'");
    if (field.wildcard && field.raw !== STAR) this.fail(field.start, 'wildcards are not allowed in field names');
    const name = field.raw === STAR ? STAR : field.text;
    if (KEYWORDS.has(field.raw))
      this.fail(field.start, `'${field.raw}' is an operator; escape it to use it as a field name`);
    this.pos++; // the ':'
    this.skipWs();
    const at = this.pos;
    const c = this.peek();
    if (c === undefined) this.fail(at, `expected a value after '${name}:'`);
    if (name === STAR) {
      if (c === '*' && this.isBoundary(at + 1)) {
        this.pos++;
        this.modifiers(true);
        return Q.all();
      }
      this.fail(at, "the field '*' is only allowed in '*:*'");
    }
    if (name !== EXISTS) this.checkField(name, field.start);
    switch (c) {
      case '(':
        return this.group(name);
      case '[':
      case '{':
        return this.range(this.rangeField(name, at));
      case '<':
      case '>':
        return this.comparison(this.rangeField(name, at));
      case '"':
        return this.valueNode(name, this.phrase(), true);
    }
    if ((c === '+' || c === '-') && /^[0-9.]$/.test(this.peek(1) ?? ''))
      return this.valueNode(name, this.word(), false);
    if (c === '+' || c === '-' || c === '!') this.fail(at, `put '${c}' before the field name, as in ${c}${name}:value`);
    if (c === ')' || this.binaryOp() !== null) this.fail(at, `expected a value after '${name}:'`);
    this.refuseStart(at);
    const word = this.word();
    if (this.peek() === ':') this.fail(this.pos, "unexpected ':' (escape it as '\\:')");
    return this.valueNode(name, word, false);
  }

  /** A term or phrase in field context `ctx`, then its modifiers. */
  private valueNode(ctx: string | null, w: Word, phrase: boolean): QueryNode {
    if (!phrase && KEYWORDS.has(w.raw)) this.fail(w.start, `expected a term, found the operator '${w.raw}'`);
    this.countTerm(w.start);
    this.modifiers(true);
    if (ctx === EXISTS) {
      if (w.wildcard) this.fail(w.start, `${EXISTS} takes a field name, not a pattern`);
      if (w.text === '') this.fail(w.start, `${EXISTS} needs a field name`);
      this.checkField(w.text, w.start);
      return Q.exists(w.text);
    }
    if (!phrase && w.raw === '*') return ctx === null ? Q.all() : Q.exists(ctx);
    return Q.term(ctx, w.wildcard ? w.glob : w.text, { phrase, wildcard: w.wildcard });
  }

  /** The field a range or comparison applies to; it must be a real field. */
  private rangeField(ctx: string | null, at: number): string {
    if (ctx === null)
      this.fail(at, 'a range or comparison needs a field, as in token_use.total:>100 or updated_at:[2024-01-01 TO *]');
    if (ctx === EXISTS) this.fail(at, `${EXISTS} takes a field name, not a range`);
    return ctx;
  }

  private range(field: string): QueryNode {
    const open = this.pos;
    this.countTerm(open);
    const includeLower = this.src[open] === '[';
    this.pos++;
    this.skipWs();
    const lower = this.bound(open);
    if (!isWs(this.peek()) && this.peek() !== undefined) this.fail(this.pos, "expected ' TO ' after the lower bound");
    this.skipWs();
    if (this.atEnd() || this.src.slice(this.pos) === 'TO')
      this.fail(open, "unclosed range: expected 'TO', a bound and ']' or '}'");
    if (!this.src.startsWith('TO', this.pos) || !(isWs(this.peek(2)) || this.peek(2) === '"'))
      this.fail(this.pos, "expected 'TO'");
    this.pos += 2;
    this.skipWs();
    const upper = this.bound(open);
    this.skipWs();
    const close = this.peek();
    if (close === undefined) this.fail(open, "unclosed range: expected ']' or '}'");
    if (close !== ']' && close !== '}') this.fail(this.pos, "expected ']' or '}' to close the range");
    this.pos++;
    this.modifiers(false);
    return Q.range(field, lower, upper, includeLower, close === ']');
  }

  /** A range bound: a phrase, or characters up to whitespace or a bracket; a bare `*` is an open end. */
  private bound(open: number): string | null {
    if (this.atEnd()) this.fail(open, "unclosed range: expected a bound, 'TO' and ']' or '}'");
    if (this.peek() === '"') return this.phrase().text;
    const w = this.readChars((c) => isWs(c) || BOUND_STOP.has(c), false);
    if (w.raw === '') this.fail(this.pos, 'expected a range bound');
    return w.raw === '*' ? null : w.text;
  }

  private comparison(field: string): QueryNode {
    const at = this.pos;
    this.countTerm(at);
    const op = this.peek(1) === '=' ? this.src.slice(at, at + 2) : this.src[at];
    this.pos += op.length;
    let value: string;
    if (this.peek() === '"') value = this.phrase().text;
    else {
      const w = this.readChars((c) => isWs(c) || VALUE_STOP.has(c), false);
      if (w.raw === '' || w.raw === '*') this.fail(w.start, `expected a value after '${op}'`);
      value = w.text;
    }
    this.modifiers(false);
    return op[0] === '>'
      ? Q.range(field, value, null, op === '>=', false)
      : Q.range(field, null, value, false, op === '<=');
  }

  /** `~[num]` (fuzzy, proximity) and `^num` (boost), each at most once; both are dropped. */
  private modifiers(fuzzyAllowed: boolean): void {
    const start = this.pos;
    const seen = new Set<string>();
    for (;;) {
      const c = this.peek();
      if (c !== '^' && c !== '~') break;
      if (seen.has(c)) this.fail(this.pos, `'${c}' given twice`);
      if (c === '~' && !fuzzyAllowed) this.fail(this.pos, "'~' is only allowed after a term or a phrase");
      seen.add(c);
      this.pos++;
      const n = /^[0-9]+(\.[0-9]+)?/.exec(this.src.slice(this.pos, this.pos + 32));
      if (n) this.pos += n[0].length;
      else if (c === '^') this.fail(this.pos, "expected a number after '^'");
    }
    if (this.pos > start && !this.isAfterModifierBoundary())
      this.fail(this.pos, `unexpected '${this.peek()}' after '${this.src.slice(start, this.pos)}'`);
  }

  // ---- lexical ---------------------------------------------------------------------------

  private phrase(): Word {
    const open = this.pos;
    this.pos++;
    let text = '';
    for (;;) {
      const c = this.peek();
      if (c === undefined) this.fail(open, "unclosed quote '\"'");
      this.pos++;
      if (c === '"') break;
      if (c === '\\') {
        const e = this.peek();
        if (e === undefined) this.fail(open, "unclosed quote '\"'");
        text += e;
        this.pos++;
      } else text += c;
    }
    return { raw: this.src.slice(open, this.pos), text, glob: text, wildcard: false, start: open };
  }

  /** A term: characters up to whitespace, a special character, `&&` or `||`. */
  private word(): Word {
    const w = this.readChars((c, i) => isWs(c) || TERM_STOP.has(c) || this.isDoubleOp(i), true);
    if (w.raw === '') this.fail(this.pos, 'expected a term');
    return w;
  }

  private readChars(stop: (c: string, i: number) => boolean, wildcards: boolean): Word {
    const start = this.pos;
    let text = '';
    let glob = '';
    let wildcard = false;
    for (;;) {
      const c = this.peek();
      if (c === undefined || stop(c, this.pos)) break;
      if (c === '\\') {
        const e = this.peek(1);
        if (e === undefined) this.fail(this.pos, "nothing to escape after '\\' at the end of the query");
        text += e;
        glob += e === '*' || e === '?' || e === '\\' ? `\\${e}` : e;
        this.pos += 2;
        continue;
      }
      if (wildcards && (c === '*' || c === '?')) wildcard = true;
      text += c;
      glob += c;
      this.pos++;
    }
    return { raw: this.src.slice(start, this.pos), text, glob, wildcard, start };
  }

  /** Refuses characters that cannot start a term, with a message that says why. */
  private refuseStart(at: number): void {
    const c = this.peek();
    if (c === ']' || c === '}') this.fail(at, `unexpected '${c}' without a matching opening bracket`);
    if (c === ')') this.fail(at, "unexpected ')'");
    if (c === '^' || c === '~') this.fail(at, `'${c}' must follow a term`);
    if (c === ':') this.fail(at, "expected a field name before ':'");
    if (c === '/') this.fail(at, "regular expressions are not supported; escape the slash as '\\/'");
    if (c === '+' || c === '-' || c === '!') this.fail(at, `unexpected '${c}'`);
    if (this.isDoubleOp(at)) this.fail(at, `'${this.src.slice(at, at + 2)}' needs a term before it`);
  }

  private binaryOp(): { kind: 'and' | 'or'; text: string } | null {
    if (this.src.startsWith('&&', this.pos)) return { kind: 'and', text: '&&' };
    if (this.src.startsWith('||', this.pos)) return { kind: 'or', text: '||' };
    if (this.keywordAt('AND')) return { kind: 'and', text: 'AND' };
    if (this.keywordAt('OR')) return { kind: 'or', text: 'OR' };
    return null;
  }

  private keywordAt(word: string): boolean {
    return this.src.startsWith(word, this.pos) && this.isBoundary(this.pos + word.length);
  }

  /** Whether a term would end at `i`. */
  private isBoundary(i: number): boolean {
    const c = this.src[i];
    return c === undefined || isWs(c) || TERM_STOP.has(c) || this.isDoubleOp(i);
  }

  private isAfterModifierBoundary(): boolean {
    const c = this.peek();
    return c === undefined || isWs(c) || c === ')';
  }

  private isDoubleOp(i: number): boolean {
    return this.src.startsWith('&&', i) || this.src.startsWith('||', i);
  }

  private countTerm(at: number): void {
    if (++this.terms > MAX_QUERY_TERMS)
      this.fail(at, `the query has more than ${MAX_QUERY_TERMS} terms; combine values with a filter instead`);
  }

  private nested<T>(at: number, fn: () => T): T {
    if (++this.depth > MAX_QUERY_DEPTH) this.fail(at, `query nested too deeply (more than ${MAX_QUERY_DEPTH} levels)`);
    try {
      return fn();
    } finally {
      this.depth--;
    }
  }

  /** Remembers the first unknown field; it is reported once the whole query has parsed (syntax first). */
  private checkField(name: string, at: number): void {
    if (this.unknown === null && this.opts.isField && !this.opts.isField(name)) this.unknown = { name, at };
  }

  private skipWs(): void {
    while (isWs(this.peek())) this.pos++;
  }

  private peek(ahead = 0): string | undefined {
    return this.src[this.pos + ahead];
  }

  private atEnd(): boolean {
    return this.pos >= this.src.length;
  }

  private fail(position: number, detail: string): never {
    throw new LuceneSyntaxError(this.src, position, detail);
  }
}

/**
 * Parses a Lucene query into a frozen QueryNode. An empty or blank query is `all`.
 * Throws LuceneSyntaxError (with a 0-based position), or UnknownFieldError when `opts.isField` is
 * given and refuses a field.
 */
export const parseLucene = (query: string, opts: ParseOptions = {}): QueryNode => new Parser(query, opts).parse();

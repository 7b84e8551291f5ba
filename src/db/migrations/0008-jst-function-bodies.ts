/**
 * jst templates are JavaScript function bodies (`return \`Hello ${name}\``), as Vertesia renders
 * them; Orrery used to read them as the body of a template literal (`Hello ${name}`). Stored jst
 * that is not a function body that returns something, but reads as such a template literal, is
 * rewritten to `return \`…\`` so that it renders the same text: prompts, and the inline segments
 * of interactions (drafts and published versions alike). Bare backticks in the text, which the
 * old reader kept as text, are escaped.
 *
 * Frozen in time (style K7): this file uses acorn and its own helpers only.
 */
import type { Kysely } from 'kysely';
import { parse, type Node } from 'acorn';
import type { DialectName } from '../dialect.ts';

const parses = (source: string): Node | null => {
  try {
    return parse(source, { ecmaVersion: 'latest', sourceType: 'script', allowReturnOutsideFunction: true });
  } catch {
    return null;
  }
};

/** A `return` of the body itself (not of a function inside it). */
function returns(node: unknown): boolean {
  if (!node || typeof node !== 'object') return false;
  const n = node as { type?: string };
  if (n.type === 'ReturnStatement') return true;
  if (
    n.type === 'FunctionDeclaration' ||
    n.type === 'FunctionExpression' ||
    n.type === 'ArrowFunctionExpression' ||
    n.type === 'ClassBody'
  )
    return false;
  return Object.values(n).some((v) => (Array.isArray(v) ? v.some(returns) : returns(v)));
}

/** Skips a string literal starting at `i` (a quote); answers the index after it. */
function skipString(src: string, i: number): number {
  const quote = src[i];
  for (let j = i + 1; j < src.length; j++) {
    if (src[j] === '\\') j++;
    else if (src[j] === quote) return j + 1;
  }
  return src.length;
}

/** Skips a nested template literal starting at `i` (a backtick); answers the index after it. */
function skipTemplate(src: string, i: number): number {
  for (let j = i + 1; j < src.length; j++) {
    if (src[j] === '\\') j++;
    else if (src[j] === '`') return j + 1;
    else if (src[j] === '$' && src[j + 1] === '{') j = skipExpression(src, j + 2) - 1;
  }
  return src.length;
}

/** Skips the expression of `${…}` starting at `i`; answers the index after its `}`. */
function skipExpression(src: string, i: number): number {
  let depth = 0;
  for (let j = i; j < src.length;) {
    const c = src[j];
    if (c === '"' || c === "'") j = skipString(src, j);
    else if (c === '`') j = skipTemplate(src, j);
    else if (c === '{') {
      depth++;
      j++;
    } else if (c === '}') {
      if (depth === 0) return j + 1;
      depth--;
      j++;
    } else j++;
  }
  return src.length;
}

/** The old template-literal content as a function body, or null when it is not one. */
export function rewriteJst(content: string): string | null {
  const body = parses(content);
  if (body && returns(body)) return null; // already a function body
  let out = '';
  for (let i = 0; i < content.length;) {
    const c = content[i];
    if (c === '\\') {
      out += content.slice(i, i + 2);
      i += 2;
    } else if (c === '$' && content[i + 1] === '{') {
      const end = skipExpression(content, i + 2);
      out += content.slice(i, end);
      i = end;
    } else if (c === '`') {
      out += '\\`';
      i++;
    } else {
      out += c;
      i++;
    }
  }
  const rewritten = `return \`${out}\`;`;
  return parses(rewritten) ? rewritten : null;
}

export async function up(db: Kysely<any>, _dialect: DialectName): Promise<void> {
  const prompts = await db.selectFrom('prompts').select(['id', 'content']).where('content_type', '=', 'jst').execute();
  for (const p of prompts) {
    const next = rewriteJst(p.content as string);
    if (next !== null) await db.updateTable('prompts').set({ content: next }).where('id', '=', p.id).execute();
  }
  const interactions = await db.selectFrom('interactions').select(['id', 'prompts']).execute();
  for (const r of interactions) {
    const segments = (typeof r.prompts === 'string' ? JSON.parse(r.prompts) : r.prompts) as Array<{
      inline?: { content_type?: string; content?: string };
    }> | null;
    let changed = false;
    for (const s of segments ?? []) {
      if (s.inline?.content_type !== 'jst' || typeof s.inline.content !== 'string') continue;
      const next = rewriteJst(s.inline.content);
      if (next !== null) {
        s.inline.content = next;
        changed = true;
      }
    }
    if (changed)
      await db
        .updateTable('interactions')
        .set({ prompts: JSON.stringify(segments) })
        .where('id', '=', r.id)
        .execute();
  }
}

/**
 * Bounds of a prompt template, checked on the raw text before anything parses or compiles it:
 * Handlebars' parser and compiler take tens of microseconds per expression and recurse per
 * block, so an unbounded template froze the server for seconds (issue 14).
 */
import { TemplateError } from './template-error.ts';

/** Characters of one template. */
const MAX_TEMPLATE_LENGTH = 256 * 1024;
/** `{{…}}` expressions of one Handlebars template. */
const MAX_TEMPLATE_EXPRESSIONS = 1000;
/** Blocks (`{{#…}}`, `{{^…}}`) open inside one another. */
const MAX_TEMPLATE_NESTING = 32;

export function checkTemplateBounds(contentType: string, content: string): void {
  if (content.length > MAX_TEMPLATE_LENGTH) {
    throw new TemplateError(`the template has ${content.length} characters; at most ${MAX_TEMPLATE_LENGTH}`, 'syntax');
  }
  if (contentType !== 'handlebars') return;
  let expressions = 0;
  let depth = 0;
  // `{{`, an optional `~` (whitespace control), then the sigil: # or ^ opens a block
  // (`{{^}}` alone is an else), / closes one.
  const mustache = /\{\{~?\s*([#^/]?)(\s*\}\})?/g;
  for (let m = mustache.exec(content); m; m = mustache.exec(content)) {
    if (++expressions > MAX_TEMPLATE_EXPRESSIONS) {
      throw new TemplateError(`the template has more than ${MAX_TEMPLATE_EXPRESSIONS} {{…}} expressions`, 'syntax');
    }
    const sigil = m[1];
    if (sigil === '#' || (sigil === '^' && !m[2])) {
      if (++depth > MAX_TEMPLATE_NESTING) {
        throw new TemplateError(`blocks are nested more than ${MAX_TEMPLATE_NESTING} deep`, 'syntax');
      }
    } else if (sigil === '/') depth = Math.max(0, depth - 1);
  }
}

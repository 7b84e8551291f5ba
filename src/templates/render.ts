/**
 * Prompt template rendering: the entry point the run service and the prompt routes use.
 *
 * - `handlebars`: see handlebars-template.ts (no HTML escaping; a missing output value is an error,
 *   a missing condition is falsy).
 * - `jst`: the body of a JavaScript template literal, evaluated by our own interpreter (no eval).
 * - `text`: the content verbatim.
 *
 * Compiled templates are cached by content type and content (LRU, 500 per type), so a hot prompt
 * is parsed once.
 */
import { compileHandlebars, checkHandlebarsSyntax } from './handlebars-template.ts';
import { compileJst } from './jst-template.ts';
import { LruCache } from './lru-cache.ts';
import { checkTemplateBounds } from './bounds.ts';
import { DEFAULT_RENDER_LIMITS, type RenderLimits } from './render-limits.ts';
import { inTemplate, TemplateError } from './template-error.ts';

export { TemplateError } from './template-error.ts';
export type { TemplateErrorKind, TemplatePosition } from './template-error.ts';
export type { RenderLimits } from './render-limits.ts';
export { DEFAULT_RENDER_LIMITS } from './render-limits.ts';

export const TEMPLATE_CONTENT_TYPES = ['handlebars', 'jst', 'text'] as const;
export type TemplateContentType = (typeof TEMPLATE_CONTENT_TYPES)[number];

export interface PromptTemplateSource {
  content_type: TemplateContentType;
  content: string;
  /** Used in error messages: `template "greeting": …`. */
  name?: string;
}

export interface CompiledTemplate {
  render(data: unknown, limits?: RenderLimits): string;
}

const CACHE_CAPACITY = 500;
// One cache per content type, keyed by the content itself: no concatenated key to build (and
// hash) on every render.
const caches = new Map<string, LruCache<string, CompiledTemplate>>(
  TEMPLATE_CONTENT_TYPES.map((type) => [type, new LruCache<string, CompiledTemplate>(CACHE_CAPACITY)]),
);

/** Renders a template with the caller's data. Throws TemplateError (an HTTP 400 for the caller). */
export function renderTemplate(t: PromptTemplateSource, data: unknown, limits?: Partial<RenderLimits>): string {
  const compiled = compileTemplate(t);
  try {
    return compiled.render(data, limits ? { ...DEFAULT_RENDER_LIMITS, ...limits } : DEFAULT_RENDER_LIMITS);
  } catch (err) {
    throw err instanceof TemplateError ? inTemplate(t.name, err) : err;
  }
}

/** Refuses a template that cannot compile, when a prompt is created or updated. */
export function validateTemplateSyntax(t: PromptTemplateSource): void {
  compileTemplate(t);
  if (t.content_type === 'handlebars') {
    try {
      checkHandlebarsSyntax(t.content);
    } catch (err) {
      throw err instanceof TemplateError ? inTemplate(t.name, err) : err;
    }
  }
}

/** The compiled form of a template, from the cache when the same content was compiled before. */
export function compileTemplate(t: PromptTemplateSource): CompiledTemplate {
  const cache = caches.get(t.content_type);
  const cached = cache?.get(t.content);
  if (cached) return cached;
  let compiled: CompiledTemplate;
  try {
    compiled = compileUncached(t);
  } catch (err) {
    throw err instanceof TemplateError ? inTemplate(t.name, err) : err;
  }
  cache?.set(t.content, compiled); // an unknown content type threw above
  return compiled;
}

function compileUncached(t: PromptTemplateSource): CompiledTemplate {
  if (typeof t.content !== 'string') throw new TemplateError('content must be a string', 'syntax');
  checkTemplateBounds(t.content_type, t.content);
  switch (t.content_type) {
    case 'handlebars':
      return compileHandlebars(t.content);
    case 'jst':
      return compileJst(t.content);
    case 'text': {
      const content = t.content;
      return { render: () => content };
    }
    default:
      throw new TemplateError(
        `unknown content_type ${JSON.stringify(t.content_type)}; expected one of ${TEMPLATE_CONTENT_TYPES.join(', ')}`,
        'syntax',
      );
  }
}

/** For tests and for freeing memory: forgets every compiled template. */
export function clearTemplateCache(): void {
  for (const cache of caches.values()) cache.clear();
}

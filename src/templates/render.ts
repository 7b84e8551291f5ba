/**
 * Prompt templates, rendered as Vertesia renders them (`packages/studio-utils/src/prompts/render.ts`
 * and `libraries/jst` in vertesia/composableai):
 *
 * - `jst`: a JavaScript function body that returns the prompt text. Its globals are the
 *   top-level properties of the prompt's input schema (Orrery also binds the other top-level
 *   keys of the data the template reads, so a prompt without a schema works), `_model` and
 *   Vertesia's `_` helpers. It runs in a QuickJS sandbox in a worker thread, bounded in CPU time,
 *   memory and output (worker/jst-sandbox.ts).
 * - `handlebars`: stock Handlebars, non-strict and HTML-escaping, with Vertesia's `stringify` and
 *   `_now` helpers and Orrery's own; compiled in the worker, rendered here with bounds.
 * - `text`: the content verbatim.
 *
 * Compiled templates are cached by content (and, for jst, the schema's property names), so a
 * prompt is compiled once per revision.
 */
import { createHash } from 'node:crypto';
import { checkTemplateBounds } from './bounds.ts';
import { instantiateHandlebars, type CompiledHandlebars } from './handlebars-template.ts';
import { analyzeJst, checkIdentifiers, dataBindings, schemaPropertyNames } from './jst-analyze.ts';
import { LruCache } from './lru-cache.ts';
import { DEFAULT_RENDER_LIMITS, type RenderLimits } from './render-limits.ts';
import { inTemplate, TemplateError, type TemplateErrorKind } from './template-error.ts';
import { TemplatePool } from './worker/pool.ts';
import type { CompileRequest, RenderOutcome } from './worker/jst-sandbox.ts';

export { TemplateError } from './template-error.ts';

const TEMPLATE_CONTENT_TYPES = ['handlebars', 'jst', 'text'] as const;
type TemplateContentType = (typeof TEMPLATE_CONTENT_TYPES)[number];

export interface PromptTemplateSource {
  content_type: TemplateContentType;
  content: string;
  /** Used in error messages: `template "greeting": …`. */
  name?: string;
  /** The prompt's input schema: its top-level properties are the jst globals. */
  inputSchema?: Record<string, unknown> | null;
}

export interface TemplateLimits extends RenderLimits {
  /** jst: CPU time of one render. */
  readonly cpuMs: number;
  /** jst: memory one render may use. */
  readonly memoryBytes: number;
}

export const DEFAULT_TEMPLATE_LIMITS: TemplateLimits = {
  ...DEFAULT_RENDER_LIMITS,
  cpuMs: 1000,
  memoryBytes: 64 * 1024 * 1024,
};

export interface TemplateEngineOptions {
  limits?: Partial<TemplateLimits>;
  /** Worker threads that compile handlebars and run jst (started on first use). */
  workers?: number;
}

const CACHE_CAPACITY = 500;

export class TemplateEngine {
  readonly limits: TemplateLimits;
  private readonly pool: TemplatePool;
  private readonly handlebars = new LruCache<string, Promise<CompiledHandlebars>>(CACHE_CAPACITY);
  private readonly jst = new LruCache<string, CompileRequest>(CACHE_CAPACITY);

  constructor(opts: TemplateEngineOptions = {}) {
    this.limits = { ...DEFAULT_TEMPLATE_LIMITS, ...opts.limits };
    this.pool = new TemplatePool({
      size: opts.workers ?? 1,
      limits: { cpuMs: this.limits.cpuMs, memoryBytes: this.limits.memoryBytes, maxOutput: this.limits.maxOutput },
    });
  }

  /** Refuses a template that cannot compile (a 400 when a prompt is written), with its position. */
  async validate(t: PromptTemplateSource): Promise<void> {
    await this.named(t, async () => {
      checkTemplateBounds(t.content_type, t.content);
      // Compiles are short and bounded by size: writes of every project share one turn.
      if (t.content_type === 'handlebars') await this.compiledHandlebars(t.content, '');
      else if (t.content_type === 'jst') checkIdentifiers(analyzeJst(t.content), schemaPropertyNames(t.inputSchema));
      else if (t.content_type !== 'text') throw unknownType(t.content_type);
    });
  }

  /** The prompt text for `data`; a TemplateError names the template, the kind and the position. */
  async render(t: PromptTemplateSource, data: unknown, model = '', tenant = ''): Promise<string> {
    return this.named(t, async () => {
      switch (t.content_type) {
        case 'text':
          return t.content;
        case 'handlebars':
          return (await this.compiledHandlebars(t.content, tenant)).render(data ?? {}, this.limits);
        case 'jst':
          return fromOutcome(await this.pool.render(this.compiledJst(t), isObject(data) ? data : {}, model, tenant));
        default:
          throw unknownType(t.content_type);
      }
    });
  }

  /** Stops the worker threads (server shutdown). */
  close(): Promise<void> {
    return this.pool.close();
  }

  private async named<T>(t: PromptTemplateSource, fn: () => Promise<T>): Promise<T> {
    if (typeof t.content !== 'string') throw new TemplateError('content must be a string', 'syntax');
    try {
      return await fn();
    } catch (err) {
      throw err instanceof TemplateError ? inTemplate(t.name, err) : err;
    }
  }

  private compiledHandlebars(content: string, tenant: string): Promise<CompiledHandlebars> {
    let compiled = this.handlebars.get(content);
    if (!compiled) {
      checkTemplateBounds('handlebars', content);
      compiled = this.pool
        .compileHandlebars(content, tenant)
        .then((outcome) => instantiateHandlebars(fromOutcome(outcome)));
      // A failed compile is not kept: the next use reports it again (and a worker failure heals).
      compiled.catch(() => this.handlebars.delete(content));
      this.handlebars.set(content, compiled);
    }
    return compiled;
  }

  private compiledJst(t: PromptTemplateSource): CompileRequest {
    const properties = schemaPropertyNames(t.inputSchema);
    const key = createHash('sha256')
      .update(t.content)
      .update('\0')
      .update((properties ?? []).join('\0'))
      .digest('base64url');
    let request = this.jst.get(key);
    if (!request) {
      checkTemplateBounds('jst', t.content);
      request = { key, source: t.content, bindings: dataBindings(analyzeJst(t.content), properties) };
      this.jst.set(key, request);
    }
    return request;
  }
}

const KIND: Record<Exclude<RenderOutcome, { ok: true }>['kind'], TemplateErrorKind> = {
  error: 'evaluation',
  syntax: 'syntax',
  timeout: 'timeout',
  memory: 'memory',
  output: 'output',
};

function fromOutcome(outcome: RenderOutcome): string {
  if (outcome.ok) return outcome.text;
  const position = outcome.line !== undefined ? { line: outcome.line, column: outcome.column ?? 1 } : undefined;
  const where = position && outcome.kind !== 'syntax' ? ` (at line ${position.line}, column ${position.column})` : '';
  throw new TemplateError(`${outcome.message}${where}`, KIND[outcome.kind], undefined, position);
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

const unknownType = (type: unknown) =>
  new TemplateError(
    `unknown content_type ${JSON.stringify(type)}; expected one of ${TEMPLATE_CONTENT_TYPES.join(', ')}`,
    'syntax',
  );

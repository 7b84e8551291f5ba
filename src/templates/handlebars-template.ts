/**
 * Handlebars prompt templates render as Vertesia renders them (`renderHandlebarsTemplate` of
 * `@vertesia/jst`): the stock compiler, non-strict (`Hello {{name}}!` with `{}` is `Hello !`),
 * `{{x}}` HTML-escaped and `{{{x}}}` not. The compiled form comes from the template worker
 * (handlebars-compile.ts) as a spec that this thread instantiates; rendering happens here,
 * bounded: block iterations count against a step budget and the output against a size limit.
 */
import { env } from './handlebars-env.ts';
import { DEFAULT_RENDER_LIMITS, type RenderLimits } from './render-limits.ts';
import { TemplateError } from './template-error.ts';

type HelperOptions = Handlebars.HelperOptions;

/** State of the render in progress. Rendering is synchronous, so one slot suffices. */
interface RenderState {
  readonly limits: RenderLimits;
  iterations: number;
}
let current: RenderState | null = null;

// #each (and sections over arrays, which use it) counts iterations against the step budget:
// nested loops over the same data would otherwise multiply the work without bound.
const builtinEach = env.helpers.each;
env.registerHelper('each', function (this: unknown, context: unknown, options: HelperOptions) {
  const state = current;
  if (!state || typeof options?.fn !== 'function') return builtinEach.call(this, context, options);
  const body = options.fn;
  const counted = function (this: unknown, ...args: Parameters<typeof body>): string {
    if (++state.iterations > state.limits.maxSteps) {
      throw new TemplateError(
        `the template does too much work (more than ${state.limits.maxSteps} block iterations)`,
        'output',
      );
    }
    const out = body.apply(this, args);
    checkOutput(out, state.limits);
    return out;
  };
  return builtinEach.call(this, context, { ...options, fn: counted as typeof body });
});

export interface CompiledHandlebars {
  render(data: unknown, limits?: RenderLimits): string;
}

/** Helpers every template's environment keeps: Handlebars calls them without the template naming them. */
const IMPLICIT_HELPERS = new Set(['helperMissing', 'blockHelperMissing', 'each']);

/**
 * The environment a template renders in: `env` with only the helpers its spec names, plus the
 * implicit ones. On every render Handlebars' runtime wraps each helper of the environment in a
 * new function (`_setup`), 23 of them for a prompt that calls none: about 6 KB of garbage per run
 * (bench/README.md, issue 17, eighth pass). A helper is reached only by its name, which the
 * generated code spells out (`lookupProperty(helpers, "eq")`, `helpers.eq`), so a helper whose
 * name is nowhere in the spec cannot be called by it; a name that is there for another reason
 * (a word of the text) only keeps a helper that was not needed.
 */
function environmentFor(spec: string): typeof env {
  const named = new Set(spec.match(/[A-Za-z_$][\w$]*/g));
  const helpers: Record<string, unknown> = {};
  for (const [name, helper] of Object.entries(env.helpers))
    if (IMPLICIT_HELPERS.has(name) || named.has(name)) helpers[name] = helper;
  return Object.create(env, { helpers: { value: helpers } }) as typeof env;
}

/** A template from its precompiled spec (JavaScript source that Handlebars itself generated). */
export function instantiateHandlebars(spec: string): CompiledHandlebars {
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- Handlebars' own generated code, as Handlebars.compile evaluates it
  const specObject = new Function(`return ${spec}`)() as TemplateSpecification;
  // `env.template(spec)` is `env.VM.template(spec, env)`; the same runtime, with the template's environment.
  const vm = (
    env as unknown as {
      VM: { template(spec: TemplateSpecification, environment: typeof env): HandlebarsTemplateDelegate };
    }
  ).VM;
  const template = vm.template(specObject, environmentFor(spec));
  return {
    render(data, limits = DEFAULT_RENDER_LIMITS) {
      const previous = current;
      current = { limits, iterations: 0 };
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

function checkOutput(out: string, limits: RenderLimits): void {
  if (out.length > limits.maxOutput) {
    throw new TemplateError(`the template rendered more than ${limits.maxOutput} characters`, 'output');
  }
}

/** A failure inside Handlebars while rendering (`{{#each}}` over a number, say), located if it says where. */
function runtimeError(err: unknown): TemplateError {
  const e = err as { message?: string; lineNumber?: number; column?: number };
  const message = (e.message ?? String(err)).replace(/ - \d+:\d+$/, '');
  if (err instanceof RangeError) return new TemplateError('the template is too deeply nested to render', 'evaluation');
  if (typeof e.lineNumber === 'number' && typeof e.column === 'number') {
    return new TemplateError(`${message} (at line ${e.lineNumber}, column ${e.column + 1})`, 'evaluation', undefined, {
      line: e.lineNumber,
      column: e.column + 1,
    });
  }
  return new TemplateError(message, 'evaluation');
}

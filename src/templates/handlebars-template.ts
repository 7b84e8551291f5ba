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
      throw new TemplateError(`the template does too much work (more than ${state.limits.maxSteps} block iterations)`, 'output');
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

/** A template from its precompiled spec (JavaScript source that Handlebars itself generated). */
export function instantiateHandlebars(spec: string): CompiledHandlebars {
  // eslint-disable-next-line no-new-func -- Handlebars' own generated code, as Handlebars.compile evaluates it
  const template = env.template(new Function(`return ${spec}`)() as TemplateSpecification);
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
    return new TemplateError(`${message} (at line ${e.lineNumber}, column ${e.column + 1})`, 'evaluation', undefined, { line: e.lineNumber, column: e.column + 1 });
  }
  return new TemplateError(message, 'evaluation');
}

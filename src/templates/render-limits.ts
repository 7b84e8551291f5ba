/**
 * Work bounds for one render, so that a hostile template or data cannot hang the server or
 * exhaust its memory. Rendering is synchronous and on the hot path of every run.
 */
export interface RenderLimits {
  /** jst: evaluation steps (AST nodes, callback iterations, elements copied). handlebars: block iterations. */
  readonly maxSteps: number;
  /** Characters in the output, and in any single string built on the way. */
  readonly maxOutput: number;
  /** jst: nested arrow-function calls. */
  readonly maxCallDepth: number;
}

export const DEFAULT_RENDER_LIMITS: RenderLimits = { maxSteps: 1_000_000, maxOutput: 1_048_576, maxCallDepth: 100 };

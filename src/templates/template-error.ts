/**
 * The one error a template can raise, so every message says what to change: which template,
 * where in it. `syntax` is a 400 when a prompt is written; while a run renders, every kind fails
 * the run: `syntax` and `evaluation` as `template_error`, `timeout` (the CPU budget), `memory`
 * and `output` (the output or work budget) as `template_timeout`, `template_memory` and
 * `template_output_too_large`.
 */
export type TemplateErrorKind = 'syntax' | 'evaluation' | 'timeout' | 'memory' | 'output';

export interface TemplatePosition {
  /** 1-based line in the template content. */
  readonly line: number;
  /** 1-based column in that line. */
  readonly column: number;
}

export class TemplateError extends Error {
  constructor(
    message: string,
    readonly kind: TemplateErrorKind,
    /** The data path involved (e.g. `user.address.city`), when there is one. */
    readonly path?: string,
    readonly position?: TemplatePosition,
  ) {
    super(message);
    this.name = 'TemplateError';
  }
}

/** Prefixes an error raised while compiling or rendering with the template's name. */
export function inTemplate(name: string | undefined, err: TemplateError): TemplateError {
  const label = name ? `template ${JSON.stringify(name)}` : 'template';
  return new TemplateError(`${label}: ${err.message}`, err.kind, err.path, err.position);
}

export function syntaxErrorAtPosition(position: TemplatePosition, message: string): TemplateError {
  return new TemplateError(
    `syntax error at line ${position.line}, column ${position.column}: ${message}`,
    'syntax',
    undefined,
    position,
  );
}

/**
 * A compiled jst template: literal text and parsed `${…}` expressions, ready to render many
 * times. Compiling is the costly part (splitting and jsep parsing) and happens once per content.
 */
import { JstEvaluator } from './jst-evaluator.ts';
import { JstParseError, parseJstExpression, type JstNode } from './jst-parser.ts';
import { splitTemplateLiteral } from './jst-splitter.ts';
import { DEFAULT_RENDER_LIMITS, type RenderLimits } from './render-limits.ts';
import { positionAt, syntaxErrorAt, TemplateError, type TemplatePosition } from './template-error.ts';

type CompiledPart = string | { readonly node: JstNode; readonly position: TemplatePosition };

export interface CompiledJst {
  render(data: unknown, limits?: RenderLimits): string;
}

export function compileJst(content: string): CompiledJst {
  const parts: CompiledPart[] = splitTemplateLiteral(content).map((part) => {
    if (part.kind === 'text') return part.text;
    try {
      return { node: parseJstExpression(part.source), position: positionAt(content, part.offset - 2) };
    } catch (err) {
      if (!(err instanceof JstParseError)) throw err;
      throw syntaxErrorAt(content, part.offset + err.index, stripCharacterIndex(err.message));
    }
  });
  return { render: (data, limits = DEFAULT_RENDER_LIMITS) => render(parts, data, limits) };
}

function render(parts: readonly CompiledPart[], data: unknown, limits: RenderLimits): string {
  const evaluator = new JstEvaluator(data, limits);
  let out = '';
  for (const part of parts) {
    if (typeof part === 'string') {
      out += part;
    } else {
      out += evaluate(evaluator, part.node, part.position);
    }
    evaluator.checkLength(out.length);
  }
  return out;
}

function evaluate(evaluator: JstEvaluator, node: JstNode, position: TemplatePosition): string {
  try {
    return evaluator.interpolate(node);
  } catch (err) {
    const where = `line ${position.line}, column ${position.column}`;
    if (err instanceof TemplateError) {
      const suffix = err.kind === 'missing_data' ? `(used at ${where})` : `(at ${where})`;
      throw new TemplateError(`${err.message} ${suffix}`, err.kind, err.path, position);
    }
    // Stack exhaustion on a pathological expression, or a host error we did not foresee.
    const reason = err instanceof RangeError ? 'the expression is too deeply nested' : (err as Error).message;
    throw new TemplateError(`${reason} (at ${where})`, 'evaluation', undefined, position);
  }
}

// jsep says 'Unexpected "=" at character 2'; the position is reported as line and column instead.
const stripCharacterIndex = (message: string) => message.replace(/ at character \d+$/, '');

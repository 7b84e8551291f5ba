/**
 * Parses one `${ … }` expression with jsep into an AST, and refuses at parse time the constructs
 * the evaluator does not support, so a broken template is rejected when it is saved.
 */
import jsep from 'jsep';
import jsepArrow from '@jsep-plugin/arrow';
import jsepObject from '@jsep-plugin/object';
import jsepTemplate from '@jsep-plugin/template';

// jsep is a process-wide singleton; registering is idempotent (it skips known plugin names).
jsep.plugins.register(jsepArrow, jsepObject, jsepTemplate);
jsep.addUnaryOp('typeof');

export type JstNode = jsep.Expression;

/** A parse failure, with the offset inside the expression source. */
export class JstParseError extends Error {
  constructor(message: string, readonly index: number) {
    super(message);
  }
}

const SUPPORTED = new Set([
  'Literal', 'Identifier', 'ThisExpression', 'MemberExpression', 'CallExpression', 'UnaryExpression',
  'BinaryExpression', 'ConditionalExpression', 'ArrayExpression', 'ObjectExpression', 'Property',
  'ArrowFunctionExpression', 'TemplateLiteral', 'TemplateElement', 'SequenceExpression',
]);

export function parseJstExpression(source: string): JstNode {
  try {
    const node = jsep(source);
    if (node.type === 'Compound') {
      throw new JstParseError('expected one expression inside ${…}, found several (a missing operator or comma?)', 0);
    }
    checkSupported(node);
    return node;
  } catch (err) {
    if (err instanceof JstParseError) throw err;
    // jsep and the check above recurse per nesting level; a pathological expression runs out of stack.
    if (err instanceof RangeError) throw new JstParseError('the expression is nested too deeply', 0);
    const e = err as { description?: string; index?: number; message?: string };
    throw new JstParseError(e.description ?? e.message ?? String(err), e.index ?? 0);
  }
}

function checkSupported(node: JstNode): void {
  if (!SUPPORTED.has(node.type)) {
    const what = node.type === 'TaggedTemplateExpression' ? 'tagged template literals' : `"${node.type}"`;
    throw new JstParseError(`${what} are not supported in templates`, 0);
  }
  if (node.type === 'ArrowFunctionExpression') {
    const params = (node.params as JstNode[] | null) ?? [];
    if (params.some((p) => p.type !== 'Identifier')) {
      throw new JstParseError('arrow function parameters must be plain names (no destructuring or defaults)', 0);
    }
  }
  if (node.type === 'ObjectExpression') {
    for (const p of node.properties as JstNode[]) {
      if (p.type !== 'Property') throw new JstParseError('object literals support only "key: value" and shorthand properties', 0);
    }
  }
  for (const key in node) {
    const child = node[key];
    if (Array.isArray(child)) {
      for (const c of child) if (isNode(c)) checkSupported(c);
    } else if (isNode(child)) {
      checkSupported(child);
    }
  }
}

const isNode = (v: unknown): v is JstNode =>
  typeof v === 'object' && v !== null && typeof (v as { type?: unknown }).type === 'string';

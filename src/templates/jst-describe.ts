/** Source-like names for jst AST nodes, for error messages that say which path is missing. */
import type { JstNode } from './jst-parser.ts';

/** Whether a node reads data by name: `a`, `a.b`, `a[0].c`. */
export function isPath(node: JstNode): boolean {
  if (node.type === 'Identifier') return true;
  return node.type === 'MemberExpression' && isPath(node.object as JstNode);
}

/** Short source-like text for a node, for error messages. */
export function describe(node: JstNode): string {
  switch (node.type) {
    case 'Identifier':
      return node.name as string;
    case 'Literal':
      return node.raw as string;
    case 'ThisExpression':
      return 'this';
    case 'MemberExpression': {
      const object = describe(node.object as JstNode);
      const dot = node.optional ? '?.' : '';
      const property = node.property as JstNode;
      return node.computed ? `${object}${dot}[${describe(property)}]` : `${object}${dot || '.'}${property.name as string}`;
    }
    case 'CallExpression':
      return `${describe(node.callee as JstNode)}${node.optional ? '?.' : ''}(…)`;
    default:
      return '…';
  }
}

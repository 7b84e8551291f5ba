/**
 * Evaluates a jsep AST over the caller's data, without eval, Function or vm. The evaluator only
 * reads: identifiers are the data's top-level keys, arrow-function parameters and a few
 * allow-listed globals; member access reads own data properties only; calls reach only the
 * allow-listed methods in jst-methods.ts. Every node costs a step, so a hostile template runs out
 * of budget instead of hanging the server.
 *
 * Errors are TemplateErrors without a position; jst-template.ts adds where the `${…}` is.
 */
import { FORBIDDEN_NAMES, forbidden, NOT_FOUND, readOwn, readProperty } from './jst-access.ts';
import { describe, isPath } from './jst-describe.ts';
import { JST_GLOBALS, NAMESPACE_NAMES } from './jst-globals.ts';
import { ARRAY_METHODS, NUMBER_METHODS, STRING_METHODS, truthy, type JstMethod } from './jst-methods.ts';
import type { JstNode } from './jst-parser.ts';
import {
  evaluationError, isCallable, JstClosure, JstNative, type JstRuntime, type JstScope, kindOf, primitiveArg,
} from './jst-values.ts';
import type { RenderLimits } from './render-limits.ts';
import { TemplateError } from './template-error.ts';
import { valueToText } from './value-text.ts';

/** An optional chain (`a?.b`) met null or undefined: the rest of the chain is skipped. */
const SHORT_CIRCUIT = Symbol('short-circuit');

const MAX_RENDER_DEPTH = 100;

/** Host names that are not on globalThis in an ES module but that a template author may try. */
const HOST_NAMES = new Set(['require', 'module', 'exports', 'window', 'document', 'global', 'self', '__dirname', '__filename']);

export class JstEvaluator implements JstRuntime {
  #steps = 0;
  #callDepth = 0;

  constructor(private readonly data: unknown, readonly limits: RenderLimits) {}

  /** The value of one expression. */
  evaluate(node: JstNode, scope: JstScope | null = null): unknown {
    const v = this.#evaluateNode(node, scope);
    return v === SHORT_CIRCUIT ? undefined : v;
  }

  /** An interpolated expression as text, as `${…}` renders it. `undefined` is missing data. */
  interpolate(node: JstNode, scope: JstScope | null = null): string {
    const v = this.evaluate(node, scope);
    if (v === undefined) {
      const path = describe(node);
      throw new TemplateError(isPath(node) ? `data has no "${path}"` : `"${path}" is undefined`, 'missing_data', path);
    }
    return this.text(v);
  }

  // ---- JstRuntime ----

  charge(steps: number): void {
    this.#steps += steps;
    if (this.#steps > this.limits.maxSteps) {
      throw evaluationError(`the template does too much work (more than ${this.limits.maxSteps} evaluation steps)`);
    }
  }

  checkLength(length: number): void {
    if (length > this.limits.maxOutput) {
      throw evaluationError(`the text would exceed the output limit of ${this.limits.maxOutput} characters`);
    }
  }

  text(value: unknown): string {
    if (typeof value === 'string') return value;
    if (isCallable(value)) throw evaluationError('a function cannot be rendered as text (did you forget to call it?)');
    if (value !== null && typeof value === 'object') this.measure(value);
    const s = valueToText(value);
    this.checkLength(s.length);
    return s;
  }

  measure(value: unknown): void {
    let size = 0;
    const walk = (v: unknown, depth: number): void => {
      if (depth > MAX_RENDER_DEPTH) throw evaluationError(`the value is nested more than ${MAX_RENDER_DEPTH} levels deep`);
      this.charge(1);
      if (typeof v === 'string') size += v.length + 2;
      else if (v === null || typeof v !== 'object' || isCallable(v)) size += 24;
      else {
        // Pretty JSON spends about a key, quotes, a colon and an indent on each entry.
        for (const key of Object.keys(v)) {
          size += key.length + 6 + 2 * depth;
          walk((v as Record<string, unknown>)[key], depth + 1);
        }
      }
      this.checkLength(size);
    };
    walk(value, 0);
  }

  invoke(fn: unknown, args: unknown[], what: string): unknown {
    if (fn instanceof JstNative) {
      this.charge(1);
      return fn.impl(args, this);
    }
    if (typeof fn === 'function') throw evaluationError(`${what} is a function from the data; templates cannot call those`);
    if (!(fn instanceof JstClosure)) throw evaluationError(`${what} is not a function (it is ${kindOf(fn)})`);
    if (this.#callDepth >= this.limits.maxCallDepth) {
      throw evaluationError(`functions are nested more than ${this.limits.maxCallDepth} calls deep`);
    }
    this.#callDepth++;
    try {
      return this.evaluate(fn.body, { names: fn.params, values: args, parent: fn.scope });
    } finally {
      this.#callDepth--;
    }
  }

  // ---- nodes ----

  #evaluateNode(node: JstNode, scope: JstScope | null): unknown {
    this.charge(1);
    switch (node.type) {
      case 'Literal':
        return node.value;
      case 'Identifier':
        return this.#identifier(node.name as string, scope, node);
      case 'ThisExpression':
        throw evaluationError('"this" is not available in templates: refer to data fields by name');
      case 'MemberExpression':
        return this.#member(node, scope, node);
      case 'CallExpression':
        return this.#call(node, scope);
      case 'UnaryExpression':
        return this.#unary(node, scope);
      case 'BinaryExpression':
        return this.#binary(node, scope);
      case 'ConditionalExpression':
        return truthy(this.evaluate(node.test as JstNode, scope))
          ? this.evaluate(node.consequent as JstNode, scope)
          : this.evaluate(node.alternate as JstNode, scope);
      case 'ArrayExpression':
        return (node.elements as (JstNode | null)[]).map((e) => (e ? this.evaluate(e, scope) : undefined));
      case 'ObjectExpression':
        return this.#object(node, scope);
      case 'ArrowFunctionExpression':
        return new JstClosure(((node.params as JstNode[] | null) ?? []).map((p) => p.name as string), node.body as JstNode, scope);
      case 'TemplateLiteral': {
        const quasis = node.quasis as JstNode[];
        const expressions = node.expressions as JstNode[];
        let out = '';
        for (let i = 0; i < quasis.length; i++) {
          out += (quasis[i].value as { cooked: string }).cooked;
          if (i < expressions.length) out += this.interpolate(expressions[i], scope);
          this.checkLength(out.length);
        }
        return out;
      }
      case 'SequenceExpression': {
        let last: unknown;
        for (const e of node.expressions as JstNode[]) last = this.evaluate(e, scope);
        return last;
      }
      default:
        throw evaluationError(`"${node.type}" expressions are not supported`);
    }
  }

  /** `chain` is the outermost member expression being read, for naming the path in errors. */
  #identifier(name: string, scope: JstScope | null, chain: JstNode, lenient = false): unknown {
    const v = this.#resolve(name, scope);
    if (v !== NOT_FOUND || lenient) return v === NOT_FOUND ? undefined : v;
    const path = describe(chain);
    const hint = name in globalThis || HOST_NAMES.has(name)
      ? ` (JavaScript globals are not available in templates; only data fields, JSON, Math, String, Number, Boolean, Array.isArray and Object.keys/values/entries)`
      : '';
    const message = path === name ? `data has no "${name}"${hint}` : `data has no "${path}": "${name}" is not defined${hint}`;
    throw new TemplateError(message, 'missing_data', path);
  }

  #resolve(name: string, scope: JstScope | null): unknown {
    if (FORBIDDEN_NAMES.has(name)) throw evaluationError(`"${name}" cannot be used in templates`);
    for (let s = scope; s; s = s.parent) {
      const i = s.names.indexOf(name);
      if (i !== -1) return s.values[i];
    }
    if (this.data !== null && typeof this.data === 'object') {
      const v = readOwn(this.data, name);
      if (v !== NOT_FOUND) return v;
    }
    return JST_GLOBALS.has(name) ? JST_GLOBALS.get(name) : NOT_FOUND;
  }

  /** Evaluates the object of a member or call, keeping a short-circuited optional chain. */
  #chainObject(node: JstNode, scope: JstScope | null, chain: JstNode, optional: boolean): unknown {
    if (node.type === 'Identifier') {
      this.charge(1);
      // `user?.name` with no `user` at all reads as undefined, like a missing optional field.
      return this.#identifier(node.name as string, scope, chain, optional);
    }
    if (node.type === 'MemberExpression') {
      this.charge(1);
      return this.#member(node, scope, chain);
    }
    if (node.type === 'CallExpression') {
      this.charge(1);
      return this.#call(node, scope);
    }
    return this.#evaluateNode(node, scope);
  }

  #member(node: JstNode, scope: JstScope | null, chain: JstNode): unknown {
    const object = node.object as JstNode;
    const target = this.#chainObject(object, scope, chain, node.optional === true);
    if (target === SHORT_CIRCUIT) return SHORT_CIRCUIT;
    if (target === null || target === undefined) {
      if (node.optional) return SHORT_CIRCUIT;
      const path = describe(chain);
      throw new TemplateError(`data has no "${path}": "${describe(object)}" is ${target}`, 'missing_data', path);
    }
    return readProperty(target, this.#key(node, scope));
  }

  #key(node: JstNode, scope: JstScope | null): string {
    const property = node.property as JstNode;
    return node.computed ? this.#computedKey(property, scope) : (property.name as string);
  }

  #computedKey(node: JstNode, scope: JstScope | null): string {
    const key = this.evaluate(node, scope);
    if (typeof key === 'string') return key;
    if (typeof key === 'number') return String(key);
    throw evaluationError(`a property name must be a string or a number, not ${kindOf(key)}`);
  }

  #call(node: JstNode, scope: JstScope | null): unknown {
    const callee = node.callee as JstNode;
    let receiver: unknown;
    let name: string | undefined;
    let fn: unknown;
    if (callee.type === 'MemberExpression') {
      receiver = this.#chainObject(callee.object as JstNode, scope, callee.object as JstNode, callee.optional === true);
      if (receiver === SHORT_CIRCUIT) return SHORT_CIRCUIT;
      if (receiver === null || receiver === undefined) {
        if (callee.optional) return SHORT_CIRCUIT;
        const path = describe(callee.object as JstNode);
        throw new TemplateError(`data has no "${path}": cannot call ${describe(callee)}() on ${receiver}`, 'missing_data', path);
      }
      name = this.#key(callee, scope);
      if (FORBIDDEN_NAMES.has(name)) throw forbidden(name);
    } else {
      fn = this.#chainObject(callee, scope, callee, false);
      if (fn === SHORT_CIRCUIT) return SHORT_CIRCUIT;
    }
    if (node.optional && name === undefined && (fn === null || fn === undefined)) return SHORT_CIRCUIT;
    const args = (node.arguments as JstNode[]).map((a) => this.evaluate(a, scope));
    try {
      return name === undefined ? this.invoke(fn, args, describe(callee)) : this.#callMethod(receiver, name, args);
    } catch (err) {
      if (err instanceof TemplateError) throw err;
      // A native method rejected its arguments (RangeError, TypeError …): say which call failed.
      throw evaluationError(`${describe(callee)}() failed: ${(err as Error).message}`);
    }
  }

  #callMethod(receiver: unknown, name: string, args: unknown[]): unknown {
    if (typeof receiver === 'string') return this.#builtin(STRING_METHODS, 'strings', receiver, name, args);
    if (typeof receiver === 'number') return this.#builtin(NUMBER_METHODS, 'numbers', receiver, name, args);
    if (Array.isArray(receiver) && ARRAY_METHODS.has(name)) return this.#builtin(ARRAY_METHODS, 'arrays', receiver, name, args);
    if (receiver !== null && typeof receiver === 'object' && !isCallable(receiver)) {
      // A function stored in an object: a namespace (Math.round) or an object literal of closures.
      const member = readOwn(receiver, name);
      if (isCallable(member)) return this.invoke(member, args, name);
      if (Array.isArray(receiver)) return this.#builtin(ARRAY_METHODS, 'arrays', receiver, name, args);
      const namespace = NAMESPACE_NAMES.get(receiver);
      if (namespace) throw evaluationError(`${namespace}.${name} is not allowed; allowed: ${Object.keys(receiver).map((k) => `${namespace}.${k}`).join(', ')}`);
    }
    throw evaluationError(`method "${name}" is not allowed on ${kindOf(receiver)}`);
  }

  #builtin<R>(methods: ReadonlyMap<string, JstMethod<R>>, kind: string, receiver: R, name: string, args: unknown[]): unknown {
    const method = methods.get(name);
    if (!method) {
      throw evaluationError(`method "${name}" is not allowed on ${kind}; allowed: ${[...methods.keys()].join(', ')}`);
    }
    return method(receiver, args, this);
  }

  #unary(node: JstNode, scope: JstScope | null): unknown {
    const argument = node.argument as JstNode;
    if (node.operator === 'typeof') {
      // As in JavaScript, `typeof missing` is "undefined" rather than an error.
      const v = argument.type === 'Identifier' ? this.#identifier(argument.name as string, scope, argument, true) : this.evaluate(argument, scope);
      return isCallable(v) ? 'function' : typeof v;
    }
    const v = this.evaluate(argument, scope);
    switch (node.operator) {
      case '!': return !truthy(v);
      case '-': return -(primitiveArg(v, 'unary -') as number);
      case '+': return +(primitiveArg(v, 'unary +') as number);
      case '~': return ~(primitiveArg(v, '~') as number);
      default: throw evaluationError(`operator "${node.operator}" is not supported`);
    }
  }

  #binary(node: JstNode, scope: JstScope | null): unknown {
    const op = node.operator as string;
    const left = this.evaluate(node.left as JstNode, scope);
    // Short-circuit operators evaluate their right side only when needed.
    if (op === '&&') return truthy(left) ? this.evaluate(node.right as JstNode, scope) : left;
    if (op === '||') return truthy(left) ? left : this.evaluate(node.right as JstNode, scope);
    if (op === '??') return left ?? this.evaluate(node.right as JstNode, scope);
    const right = this.evaluate(node.right as JstNode, scope);
    switch (op) {
      case '+': return this.#plus(left, right);
      // Objects compare by identity only: no implicit conversion of objects to primitives.
      case '===': return left === right;
      case '!==': return left !== right;
      case '==': return isObject(left) || isObject(right) ? left === right : left == right;
      case '!=': return isObject(left) || isObject(right) ? left !== right : left != right;
    }
    const a = primitiveArg(left, `operator ${op}`) as number;
    const b = primitiveArg(right, `operator ${op}`) as number;
    switch (op) {
      case '-': return a - b;
      case '*': return a * b;
      case '/': return a / b;
      case '%': return a % b;
      case '**': return a ** b;
      case '<': return a < b;
      case '>': return a > b;
      case '<=': return a <= b;
      case '>=': return a >= b;
      case '|': return a | b;
      case '&': return a & b;
      case '^': return a ^ b;
      case '<<': return a << b;
      case '>>': return a >> b;
      case '>>>': return a >>> b;
      default: throw evaluationError(`operator "${op}" is not supported`);
    }
  }

  #plus(left: unknown, right: unknown): unknown {
    if (typeof left === 'number' && typeof right === 'number') return left + right;
    // Objects join a string as they render (JSON), not as "[object Object]".
    const s = isObject(left) || isObject(right)
      ? this.text(left) + this.text(right)
      : (left as string) + (right as string);
    if (typeof s === 'string') {
      this.checkLength(s.length);
      this.charge(s.length >> 8);
    }
    return s;
  }

  #object(node: JstNode, scope: JstScope | null): object {
    const out: Record<string, unknown> = {};
    for (const p of node.properties as JstNode[]) {
      const keyNode = p.key as JstNode;
      let key: string;
      if (p.computed) key = this.#computedKey(keyNode, scope);
      else if (keyNode.type === 'Identifier') key = keyNode.name as string;
      else key = String(keyNode.value);
      if (FORBIDDEN_NAMES.has(key)) throw forbidden(key);
      // defineProperty, not assignment: a key can never reach a setter on the prototype.
      Object.defineProperty(out, key, { value: this.evaluate(p.value as JstNode, scope), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
}

const isObject = (v: unknown): boolean => v !== null && typeof v === 'object';

/**
 * The jst sandbox: QuickJS compiled to WebAssembly, with nothing of the host in it (no process,
 * require, import, fetch, timers, Buffer, file system or network). One realm per worker thread
 * holds Vertesia's `_` helpers (Papa Parse and dayjs run inside it) and is frozen once set up, so
 * a template cannot change what another template sees. Each template is compiled once (an LRU
 * by source) into a function that takes the data as JSON; each render is bounded in CPU time
 * (an interrupt at the deadline), memory (the runtime's limit) and output size.
 *
 * Runs inside a worker thread (jst-worker.ts): never on the server's event loop.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import {
  newQuickJSWASMModuleFromVariant,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSWASMModule,
} from 'quickjs-emscripten-core';
import releaseSync from '@jitl/quickjs-wasmfile-release-sync';

const require = createRequire(import.meta.url);
const library = (name: string) => readFileSync(require.resolve(name), 'utf8');
/** The package's types describe its CommonJS shape; its ESM default export is the variant itself. */
const variant = releaseSync as unknown as Parameters<typeof newQuickJSWASMModuleFromVariant>[0];

export interface SandboxLimits {
  cpuMs: number;
  memoryBytes: number;
  maxOutput: number;
}

export interface CompileRequest {
  /** The cache key: the source and the names it binds. */
  key: string;
  source: string;
  /** Free identifiers of the template that come from the data (`const {a, b} = data`). */
  bindings: string[];
}

export type RenderOutcome =
  | { ok: true; text: string }
  | {
      ok: false;
      kind: 'error' | 'syntax' | 'timeout' | 'memory' | 'output';
      message: string;
      line?: number;
      column?: number;
    };

/** Vertesia's `_` (libraries/jst/src/template.ts), built inside the realm. */
const HELPERS = `
globalThis.__orrery_helpers = {
  stringify: JSON.stringify,
  loadCsv: (content, options) => Papa.parse(content, options || {}),
  jsonToCsv: (rows, options) => Papa.unparse(rows, options || {}),
  addLineNumbers: (content) => {
    const lines = content.split('\\n');
    const width = Math.ceil(Math.log10(lines.length));
    return lines.map((line, index) => '{% ' + (index + 1).toString().padStart(width, ' ') + ' %} ' + line).join('\\n');
  },
  dayjs: globalThis.dayjs,
};
`;

/** Freezes every object reachable from the global object: intrinsics, helpers, libraries. */
const LOCKDOWN = `
(() => {
  const seen = new Set();
  const stack = [globalThis];
  while (stack.length) {
    const o = stack.pop();
    if ((typeof o !== 'object' && typeof o !== 'function') || o === null || seen.has(o)) continue;
    seen.add(o);
    Object.freeze(o);
    stack.push(Object.getPrototypeOf(o));
    for (const k of Reflect.ownKeys(o)) {
      const d = Object.getOwnPropertyDescriptor(o, k);
      if (d) stack.push(d.value, d.get, d.set);
    }
  }
})();
`;

/** Lines of the wrapper before the template's first line (positions are reported in the template). */
const WRAPPER_LINES = 1;

let quickjs: Promise<QuickJSWASMModule> | undefined;

export class Sandbox {
  private runtime!: QuickJSRuntime;
  private vm!: QuickJSContext;
  private baseline = 0;
  private deadline = 0;
  private readonly compiled = new Map<string, QuickJSHandle>();

  private constructor(
    private readonly limits: SandboxLimits,
    private readonly capacity: number,
  ) {}

  static async create(limits: SandboxLimits, capacity = 200): Promise<Sandbox> {
    const sandbox = new Sandbox(limits, capacity);
    await sandbox.reset();
    return sandbox;
  }

  /** A fresh realm: after a render that ran out of memory, nothing of it is trusted. */
  private async reset(): Promise<void> {
    for (const h of this.compiled.values()) h.alive && h.dispose();
    this.compiled.clear();
    if (this.vm?.alive) this.vm.dispose();
    if (this.runtime?.alive) this.runtime.dispose();
    const module = await (quickjs ??= newQuickJSWASMModuleFromVariant(variant));
    this.runtime = module.newRuntime();
    this.runtime.setMaxStackSize(1024 * 1024);
    this.runtime.setInterruptHandler(() => Date.now() > this.deadline);
    this.vm = this.runtime.newContext();
    this.deadline = Date.now() + 10_000;
    for (const [name, code] of [
      ['dayjs.js', library('dayjs/dayjs.min.js')],
      ['papaparse.js', library('papaparse/papaparse.min.js')],
      ['helpers.js', HELPERS],
      ['lockdown.js', LOCKDOWN],
    ]) {
      this.dispose(this.evaluate(code, name));
    }
    this.baseline = this.memoryUsed();
    this.runtime.setMemoryLimit(this.baseline + this.limits.memoryBytes);
  }

  async render(request: CompileRequest, dataJson: string, model: string): Promise<RenderOutcome> {
    let fn: QuickJSHandle;
    try {
      fn = this.compile(request);
    } catch (err) {
      return this.failure(err);
    }
    this.deadline = Date.now() + this.limits.cpuMs;
    const json = this.vm.newString(dataJson);
    const modelId = this.vm.newString(model);
    let outcome: RenderOutcome;
    try {
      const result = this.vm.callFunction(fn, this.vm.undefined, json, modelId);
      if (result.error) {
        outcome = this.failure(this.vm.dump(result.error));
        result.error.dispose();
      } else {
        const text = this.vm.getString(result.value);
        result.value.dispose();
        outcome =
          text.length > this.limits.maxOutput
            ? {
                ok: false,
                kind: 'output',
                message: `the template rendered ${text.length} characters; at most ${this.limits.maxOutput}`,
              }
            : { ok: true, text };
      }
    } catch (err) {
      outcome = this.failure(err);
    } finally {
      if (json.alive) json.dispose();
      if (modelId.alive) modelId.dispose();
    }
    if (!outcome.ok && (outcome.kind === 'memory' || outcome.kind === 'timeout')) await this.reset();
    return outcome;
  }

  /**
   * The template as a function `(dataJson, model) => text`: the data's bindings are destructured
   * from it, `_model` and `_` are in scope, the body runs in strict mode, and a value that is not
   * a string becomes one (undefined and null: empty; objects: JSON; others: String).
   */
  private compile(request: CompileRequest): QuickJSHandle {
    const cached = this.compiled.get(request.key);
    if (cached) {
      this.compiled.delete(request.key);
      this.compiled.set(request.key, cached);
      return cached;
    }
    const bind = request.bindings.length ? `const {${request.bindings.join(',')}} = __orrery_data;` : '';
    const code = `(function (__orrery_json, _model) { "use strict"; const __orrery_data = JSON.parse(__orrery_json); ${bind} const _ = globalThis.__orrery_helpers; const __orrery_value = (function () { "use strict";\n${request.source}\n})(); return typeof __orrery_value === 'string' ? __orrery_value : __orrery_value === undefined || __orrery_value === null ? '' : typeof __orrery_value === 'object' ? JSON.stringify(__orrery_value) : String(__orrery_value); })`;
    this.deadline = Date.now() + this.limits.cpuMs;
    const fn = this.evaluate(code, 'template.js');
    this.compiled.set(request.key, fn);
    if (this.compiled.size > this.capacity) {
      const [oldest, handle] = this.compiled.entries().next().value as [string, QuickJSHandle];
      this.compiled.delete(oldest);
      handle.dispose();
    }
    return fn;
  }

  private evaluate(code: string, name: string): QuickJSHandle {
    const r = this.vm.evalCode(code, name, { strict: true });
    if (r.error) {
      const err = this.vm.dump(r.error);
      r.error.dispose();
      throw err;
    }
    return r.value;
  }

  private dispose(h: QuickJSHandle): void {
    if (h.alive) h.dispose();
  }

  private memoryUsed(): number {
    const usage = this.runtime.computeMemoryUsage();
    const dumped = this.vm.dump(usage) as { memory_used_size?: number };
    usage.dispose();
    return dumped.memory_used_size ?? 0;
  }

  private failure(err: unknown): RenderOutcome {
    const e = (err ?? {}) as { name?: string; message?: string; stack?: string };
    const message = String(e.message ?? err);
    if (e.name === 'InternalError' && /interrupted/.test(message)) {
      return { ok: false, kind: 'timeout', message: `the template ran longer than ${this.limits.cpuMs} ms` };
    }
    if (/out of memory/i.test(message) || (e.name === 'InternalError' && /memory/.test(message))) {
      return {
        ok: false,
        kind: 'memory',
        message: `the template used more than ${Math.round(this.limits.memoryBytes / 1048576)} MiB of memory`,
      };
    }
    const at = /template\.js:(\d+):(\d+)/.exec(e.stack ?? '');
    const line = at ? Number(at[1]) - WRAPPER_LINES : undefined;
    const position = at && line! >= 1 ? { line, column: Number(at[2]) } : {};
    return { ok: false, kind: 'error', message: `${e.name ? `${e.name}: ` : ''}${message}`, ...position };
  }
}

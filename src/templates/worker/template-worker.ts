/**
 * A template worker thread: compiles handlebars templates (into Handlebars' precompiled spec) and
 * renders jst templates in its sandbox (jst-sandbox.ts, made on the first jst render), one task
 * at a time in the order they come. The server's event loop never runs template code.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Sandbox } from './jst-sandbox.ts';
import { precompileHandlebars } from '../handlebars-compile.ts';
import { TemplateError } from '../template-error.ts';
import type { RenderOutcome } from './jst-sandbox.ts';
import type { TemplateTask, TemplateWorkerData, WorkerMessage } from './protocol.ts';

const { limits } = workerData as TemplateWorkerData;
let sandbox: Promise<Sandbox> | undefined;
const port = parentPort!;

async function run(task: TemplateTask): Promise<RenderOutcome> {
  if ('handlebars' in task) {
    try {
      return { ok: true, text: precompileHandlebars(task.handlebars) };
    } catch (err) {
      if (err instanceof TemplateError)
        return {
          ok: false,
          kind: 'syntax',
          message: err.message,
          line: err.position?.line,
          column: err.position?.column,
        };
      return { ok: false, kind: 'error', message: (err as Error).message ?? String(err) };
    }
  }
  return (await (sandbox ??= Sandbox.create(limits))).render(task.jst, task.data, task.model);
}

let queue = Promise.resolve();
port.on('message', (task: TemplateTask) => {
  queue = queue.then(async () => {
    const outcome = await run(task).catch((err: Error): RenderOutcome => ({
      ok: false,
      kind: 'error',
      message: err?.message ?? String(err),
    }));
    port.postMessage({ id: task.id, outcome } satisfies WorkerMessage);
  });
});
port.postMessage({ ready: true } satisfies WorkerMessage);

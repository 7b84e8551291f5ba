/** Messages between the server and a template worker thread. */
import type { CompileRequest, RenderOutcome, SandboxLimits } from './jst-sandbox.ts';

export interface TemplateWorkerData {
  entry: string;
  limits: SandboxLimits;
}

export type TemplateTask =
  { id: number; jst: CompileRequest; data: string; model: string } | { id: number; handlebars: string };

export type WorkerMessage = { ready: true } | { id: number; outcome: RenderOutcome };

/**
 * A local server that speaks Replicate's HTTP API as documented: predictions created at
 * `POST /v1/models/{owner}/{name}/predictions` or `POST /v1/predictions` (with `version`), sync
 * mode with `Prefer: wait` (the finished prediction in the answer) or async (status `starting`,
 * later `processing`, then `succeeded` at `GET /v1/predictions/{id}`), `POST …/cancel`, the
 * prediction's `urls.stream` as SSE (`event: output` text pieces, `event: error` `{detail}`,
 * `event: done` `{}` / `{"reason":"canceled"}`), bearer tokens, and `{title, detail, status}`
 * error bodies. Knobs script the answer and failures; every request is recorded.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { listenOnLoopback, readBody, words, writeJson } from './wire-scaffold.ts';

export interface ReplicateWireOptions {
  /** The accepted API token. Default 'r8_test'. */
  token?: string;
  /** Answer text. Default "Hello from Replicate." */
  text?: string;
  /** Exact output pieces (also the `output` array); default: the text split after each space. */
  chunks?: string[];
  metrics?: { input_token_count: number; output_token_count: number };
  /** Models that exist as `owner/name`; each has version `VERSION`. */
  models?: string[];
  /** Predictions finish only after this many GETs (even with Prefer: wait). Default 0: sync mode finishes them at once. */
  pollsBeforeDone?: number;
  /** The prediction fails with this error. */
  predictionError?: string;
  /** Stream: an `error` event with this detail after `afterChunks` pieces. */
  streamError?: { afterChunks: number; detail: string };
  /** Stream: `done` with `{"reason":"canceled"}` after the pieces. */
  streamCanceled?: boolean;
  /** Answer prediction creation with this status and a Replicate error body; `times` limits it. */
  fail?: { status: number; title?: string; detail?: string; headers?: Record<string, string>; times?: number };
}

interface ReplicateRecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

export interface ReplicateWireServer {
  origin: string;
  requests: ReplicateRecordedRequest[];
  options: ReplicateWireOptions;
  close(): Promise<void>;
}

export const REPLICATE_VERSION = '5a6809ca6288247d06daf6365557e5e429063f32a21146b2a807c682652136b8';
const DEFAULT_MODELS = ['meta/meta-llama-3-8b-instruct', 'meta/meta-llama-3-70b-instruct'];

interface Prediction {
  id: string;
  model: string;
  version: string;
  input: Record<string, unknown>;
  status: string;
  output: string[] | null;
  error: string | null;
  pollsLeft: number;
  stream: boolean;
  created_at: string;
  completed_at?: string;
}

export async function startReplicateWireServer(options: ReplicateWireOptions = {}): Promise<ReplicateWireServer> {
  const requests: ReplicateRecordedRequest[] = [];
  const predictions = new Map<string, Prediction>();
  let n = 0;
  const state: ReplicateWireServer = { origin: '', requests, options, close: async () => {} };

  const pieces = () => {
    const o = state.options;
    return o.chunks ?? (o.text ?? 'Hello from Replicate.').split(/(?<= )/).filter((p) => p !== '');
  };

  const finish = (p: Prediction) => {
    const o = state.options;
    p.completed_at = new Date().toISOString();
    if (o.predictionError) {
      p.status = 'failed';
      p.error = o.predictionError;
    } else {
      p.status = 'succeeded';
      p.output = pieces();
    }
  };

  const view = (p: Prediction) => {
    const o = state.options;
    const done = p.status === 'succeeded';
    const promptWords = words(String(p.input.prompt ?? '')) + words(String(p.input.system_prompt ?? ''));
    return {
      id: p.id,
      model: p.model,
      version: p.version,
      input: p.input,
      logs: '',
      output: p.output,
      data_removed: false,
      error: p.error,
      status: p.status,
      source: 'api',
      created_at: p.created_at,
      ...(p.status !== 'starting' ? { started_at: p.created_at } : {}),
      ...(p.completed_at ? { completed_at: p.completed_at } : {}),
      urls: {
        cancel: `${state.origin}/v1/predictions/${p.id}/cancel`,
        get: `${state.origin}/v1/predictions/${p.id}`,
        web: `https://replicate.com/p/${p.id}`,
        ...(p.stream ? { stream: `${state.origin}/stream/${p.id}` } : {}),
      },
      metrics: done
        ? {
            predict_time: 0.42,
            total_time: 0.5,
            ...(o.metrics ?? { input_token_count: promptWords, output_token_count: pieces().length }),
          }
        : {},
    };
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const [path, search = ''] = (req.url ?? '/').split('?');
    let body: any = raw;
    let parsed = false;
    try {
      body = raw === '' ? undefined : JSON.parse(raw);
      parsed = true;
    } catch {
      // kept as text
    }
    requests.push({
      method: req.method ?? '',
      path,
      query: Object.fromEntries(new URLSearchParams(search)),
      headers: { ...req.headers },
      body,
    });
    const o = state.options;

    // The stream URL is a capability URL: no token needed.
    const streamed = req.method === 'GET' ? /^\/stream\/([\w-]+)$/.exec(path)?.[1] : undefined;
    if (streamed) return stream(res, streamed);

    const auth = String(req.headers.authorization ?? '');
    if (auth !== `Bearer ${o.token ?? 'r8_test'}`) {
      return sendJson(res, 401, {
        title: 'Unauthenticated',
        detail: 'You did not pass a valid authentication token',
        status: 401,
      });
    }

    const byModel = req.method === 'POST' ? /^\/v1\/models\/([^/]+)\/([^/]+)\/predictions$/.exec(path) : undefined;
    if (byModel || (req.method === 'POST' && path === '/v1/predictions')) {
      if (!parsed || typeof body !== 'object' || body === null)
        return sendJson(res, 400, problem(400, 'Invalid JSON', 'The request body is not valid JSON'));
      if (o.fail && (o.fail.times === undefined || o.fail.times-- > 0)) {
        return sendJson(
          res,
          o.fail.status,
          problem(o.fail.status, o.fail.title ?? 'Internal server error', o.fail.detail ?? 'Something went wrong'),
          o.fail.headers,
        );
      }
      const models = o.models ?? DEFAULT_MODELS;
      let model: string;
      if (byModel) {
        model = `${decodeURIComponent(byModel[1])}/${decodeURIComponent(byModel[2])}`;
        if (!models.includes(model))
          return sendJson(res, 404, problem(404, 'Not found', 'The requested resource could not be found.'));
        if (body.version !== undefined)
          return sendJson(
            res,
            422,
            problem(422, 'Input validation failed', '- Additional property version is not allowed\n'),
          );
      } else {
        if (body.version !== REPLICATE_VERSION)
          return sendJson(
            res,
            422,
            problem(
              422,
              'Invalid version or not permitted',
              "The specified version does not exist (or perhaps you don't have permission to use it?)",
            ),
          );
        model = models[0];
      }
      if (typeof body.input !== 'object' || body.input === null || typeof body.input.prompt !== 'string') {
        return sendJson(res, 422, problem(422, 'Input validation failed', '- input: prompt is required\n'));
      }
      const p: Prediction = {
        id: `wire${(++n).toString().padStart(4, '0')}pred`,
        model,
        version: REPLICATE_VERSION,
        input: body.input,
        status: 'starting',
        output: null,
        error: null,
        pollsLeft: o.pollsBeforeDone ?? 0,
        stream: body.stream === true,
        created_at: new Date().toISOString(),
      };
      predictions.set(p.id, p);
      const wait = /^wait(=\d+)?$/.test(String(req.headers.prefer ?? '').trim());
      if (wait && p.pollsLeft === 0) finish(p);
      return sendJson(res, 201, view(p));
    }

    const get = req.method === 'GET' ? /^\/v1\/predictions\/([\w-]+)$/.exec(path)?.[1] : undefined;
    if (get) {
      const p = predictions.get(get);
      if (!p) return sendJson(res, 404, problem(404, 'Not found', 'The requested resource could not be found.'));
      if (p.status === 'starting' || p.status === 'processing') {
        if (p.pollsLeft > 0) {
          p.pollsLeft--;
          p.status = 'processing';
        } else finish(p);
      }
      return sendJson(res, 200, view(p));
    }

    const cancel = req.method === 'POST' ? /^\/v1\/predictions\/([\w-]+)\/cancel$/.exec(path)?.[1] : undefined;
    if (cancel) {
      const p = predictions.get(cancel);
      if (!p) return sendJson(res, 404, problem(404, 'Not found', 'The requested resource could not be found.'));
      if (p.status === 'starting' || p.status === 'processing') {
        p.status = 'canceled';
        p.completed_at = new Date().toISOString();
      }
      return sendJson(res, 200, view(p));
    }
    return sendJson(res, 404, problem(404, 'Not found', 'The requested resource could not be found.'));
  }

  function stream(res: ServerResponse, id: string): void {
    const p = predictions.get(id);
    if (!p || !p.stream)
      return sendJson(res, 404, problem(404, 'Not found', 'The requested resource could not be found.'));
    const o = state.options;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
    let seq = 0;
    // A piece with newlines is several data lines, as SSE requires.
    const send = (event: string, data: string) =>
      res.write(
        `event: ${event}\nid: ${Date.now()}:${seq++}\n${data
          .split('\n')
          .map((l) => `data: ${l}`)
          .join('\n')}\n\n`,
      );
    const all = pieces();
    for (const [i, piece] of all.entries()) {
      if (o.streamError?.afterChunks === i) break;
      send('output', piece);
    }
    if (o.streamError) {
      p.status = 'failed';
      p.error = o.streamError.detail;
      send('error', JSON.stringify({ detail: o.streamError.detail }));
      send('done', JSON.stringify({ reason: 'error' }));
      return void res.end();
    }
    if (o.streamCanceled) {
      p.status = 'canceled';
      send('done', JSON.stringify({ reason: 'canceled' }));
      return void res.end();
    }
    finish(p);
    send('done', '{}');
    res.end();
  }

  const listening = await listenOnLoopback(handle, (res, message) =>
    sendJson(res, 500, problem(500, 'Internal server error', message)),
  );
  state.origin = listening.origin;
  state.close = listening.close;
  return state;
}

const problem = (status: number, title: string, detail: string) => ({ title, detail, status });

const sendJson = writeJson;

/**
 * A Server-Sent-Events writer on the raw response. Written by hand because the stream must
 * outlive Fastify's reply cycle (chunks arrive from the run executor) and honour backpressure.
 */
import type { FastifyReply } from 'fastify';

interface SseEvent {
  id?: string | number;
  event?: string;
  /** Already-serialised data; newlines are split into several `data:` lines as the spec says. */
  data: string;
}

export interface SseStream {
  send(e: SseEvent): boolean;
  comment(text?: string): void;
  end(): void;
  readonly closed: boolean;
  onClose(fn: () => void): void;
}

export function openSse(reply: FastifyReply, keepAliveMs = 15_000, headers: Record<string, string> = {}): SseStream {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    ...headers,
  });
  res.flushHeaders?.();
  let closed = false;
  const closers: Array<() => void> = [];
  const finish = () => {
    if (closed) return;
    closed = true;
    clearInterval(timer);
    for (const fn of closers) fn();
  };
  res.on('close', finish);
  const timer = setInterval(() => {
    if (!closed) res.write(':keep-alive\n\n');
  }, keepAliveMs);
  timer.unref();

  return {
    send(e) {
      if (closed) return false;
      let frame = '';
      if (e.id !== undefined) frame += `id: ${e.id}\n`;
      if (e.event) frame += `event: ${e.event}\n`;
      for (const line of e.data.split(/\r\n|\r|\n/)) frame += `data: ${line}\n`;
      return res.write(frame + '\n');
    },
    comment(text = '') {
      if (!closed) res.write(`:${text}\n\n`);
    },
    end() {
      if (!closed) res.end();
      finish();
    },
    get closed() {
      return closed;
    },
    onClose(fn) {
      if (closed) fn();
      else closers.push(fn);
    },
  };
}

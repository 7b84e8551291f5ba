/** Messages between the main thread and a content worker thread. */
import type { ContentLimits } from '../limits.ts';
import type { ContentFamily } from '../sniff.ts';

export type WorkerTask =
  | { op: 'extract'; family: ContentFamily; mime: string; bytes: Uint8Array; limits: ContentLimits }
  | { op: 'probe'; family: ContentFamily; mime: string; bytes: Uint8Array; limits: ContentLimits }
  | { op: 'renderPdfPage'; bytes: Uint8Array; page: number; maxSide: number; limits: ContentLimits }
  | { op: 'countTokens'; text: string };

export type WorkerRequest = WorkerTask & { id: number };

export type WorkerReply =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: { name: string; code?: string; message: string } };

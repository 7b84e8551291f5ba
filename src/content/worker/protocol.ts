/** Messages between the server and a content worker process (worker/pool.ts, worker/content-worker.ts). */
import type { ContentLimits } from '../limits.ts';
import type { ContentFamily } from '../sniff.ts';

/** One rendition to draw: fitted in `maxHw` × `maxHw` (never enlarged), encoded as `format`. */
export interface DrawSpec {
  format: 'jpeg' | 'png' | 'webp';
  maxHw: number;
}

/** A drawn rendition: the encoded bytes and their size in pixels. */
export interface Drawn {
  data: Uint8Array;
  width: number;
  height: number;
}

/** How an image input of a run is converted (worker/convert.ts). */
export interface ConvertSpec {
  /** Longest side of the result, in pixels. */
  maxSide: number;
  /** Encoded size of the result at most, in bytes. */
  maxBytes: number;
  /** Pixels (width × height) of the source at most: more is refused before decoding. */
  maxPixels: number;
  /** The source is an SVG: refused when it names an external resource. */
  svg?: boolean;
}

/** A converted image: JPEG bytes, their size in pixels, and the format sharp read. */
export interface Converted {
  data: Uint8Array;
  width: number;
  height: number;
  source: string;
}

export type WorkerTask =
  | { op: 'extract'; family: ContentFamily; mime: string; bytes: Uint8Array; limits: ContentLimits }
  | { op: 'probe'; family: ContentFamily; mime: string; bytes: Uint8Array; limits: ContentLimits }
  /**
   * Renditions of an image, or of a PDF's first page: each phase (drawing the page, fitting the
   * source, each encoding) gets its own deadline, through `lap` messages.
   */
  | { op: 'renditions'; family: 'image' | 'pdf'; bytes: Uint8Array; specs: DrawSpec[]; limits: ContentLimits }
  | { op: 'countTokens'; text: string }
  /** An image input of a run in a form its provider takes (worker/convert.ts). */
  | { op: 'convertImage'; bytes: Uint8Array; spec: ConvertSpec };

/**
 * A task as sent: `held` names the task's input bytes; when the process already holds that input
 * (an earlier step of the same object gave it), `bytes` is left out and the held copy is used.
 */
export type WorkerRequest = WorkerTask & { id: number; held?: number };

export type WorkerReply =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: { name: string; code?: string; message: string } }
  /** A phase of a task is done: its deadline starts again. */
  | { id: number; lap: true };

/** The first message of a process: its libraries are loaded, task deadlines start from here. */
export interface WorkerReady {
  ready: true;
}

/**
 * What the run service asks of embeddings (an optional dependency, passed by server.ts): the
 * vectors of a run's prompt and result, for the answer of the run's creation. The run service
 * only sees this interface.
 */
import type { Scope } from '../auth/principal.ts';
import type { ContentPart } from '../providers/driver.ts';

export interface RunEmbeddingInput {
  id: string;
  prompt: ReadonlyArray<{ role: string; content: string | ContentPart[] }>;
  /** The result parts (`{type: 'text', value}` or `{type: 'json', value}`). */
  result: ReadonlyArray<{ type: string; value: unknown }>;
}

export interface RunVectors {
  input_embedding?: number[];
  result_embedding?: number[];
}

export interface RunEmbeddingHook {
  /**
   * The run's vectors, or null when run embeddings are off for the project. Stored in the
   * background (not awaited by the caller); never throws: an embedding failure leaves the run
   * without vectors and is logged.
   */
  embedRun(scope: Scope, run: RunEmbeddingInput): Promise<RunVectors | null>;
}

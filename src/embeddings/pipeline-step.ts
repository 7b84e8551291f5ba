/**
 * The `embeddings` step of content processing (src/content/steps.ts): after text extraction, the
 * object's text embedding is computed from the extracted text, and its properties embedding from
 * its properties, with the project's embedder. A provider failure is an ordinary error: the
 * content job is retried, and the object fails (`internal`, step `embeddings`) only once the
 * retries run out.
 */
import type { PipelineStep } from '../content/steps.ts';
import type { EmbeddingService } from './service.ts';

export const embeddingsStep = (embeddings: EmbeddingService): PipelineStep => ({
  name: 'embeddings',
  async run(ctx) {
    const o = ctx.object;
    await embeddings.embedObject(
      ctx.scope,
      {
        id: ctx.objectId,
        name: o.name,
        description: o.description,
        properties: o.properties,
        text: ctx.result.text ?? o.text,
      },
      { signal: ctx.signal },
    );
  },
});

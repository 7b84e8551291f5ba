/**
 * Where the content pipeline (text, metadata, renditions, tokens, embeddings: a later issue)
 * plugs in. The object service calls it after the write has committed, whenever an object's
 * content is set or changes; the pipeline enqueues work and moves the status along
 * (`created` → `processing` → `ready` | `failed`, decisions.md). Until then nothing happens.
 */
import type { Scope } from '../auth/principal.ts';
import type { ContentSource } from './model.ts';

export interface ContentChange {
  objectId: string;
  content: ContentSource | null;
  previous: ContentSource | null;
  reason: 'created' | 'replaced' | 'updated';
}

export interface ObjectProcessingHook {
  contentChanged(scope: Scope, change: ContentChange): Promise<void>;
  /** After an object's deletion committed: what processing made from it (renditions) goes too. */
  objectDeleted?(scope: Scope, objectId: string): Promise<void>;
}

export const noProcessing: ObjectProcessingHook = {
  contentChanged: async () => {},
};

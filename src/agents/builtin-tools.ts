/**
 * The built-in tools of an agent, over Orrery's own data in the agent's project: search and read
 * content objects, similarity, search runs. Each answers JSON text, bounded (MAX_TOOL_RESULT).
 */
import type { Principal } from '../auth/principal.ts';
import type { ToolRef } from './spec.ts';

/** The largest text a tool answers to the model, in characters (longer is cut, with a marker). */
const MAX_TOOL_RESULT = 32_000;
const MAX_HITS = 20;

/** What a built-in tool reads through: the features' services, as the routes call them. */
export interface BuiltinSources {
  searchObjects(p: Principal, text: string, limit: number): Promise<unknown[]>;
  similarObjects?(p: Principal, text: string, limit: number): Promise<unknown[]>;
  readObject(p: Principal, id: string): Promise<unknown>;
  searchRuns(
    p: Principal,
    query: string | undefined,
    interaction: string | undefined,
    limit: number,
  ): Promise<unknown[]>;
}

export interface ToolAnswer {
  content: string;
  is_error?: boolean;
}

const limitSchema = { type: 'integer', minimum: 1, maximum: MAX_HITS, description: `At most ${MAX_HITS}` };

const BUILTINS: ReadonlyArray<Omit<ToolRef, 'kind'> & { needsSimilarity?: true }> = [
  {
    name: 'search_objects',
    description: 'Full-text search of the content objects of the project: their ids, names, types and descriptions.',
    input_schema: {
      type: 'object',
      properties: { query: { type: 'string', description: 'Words to find' }, limit: limitSchema },
      required: ['query'],
    },
  },
  {
    name: 'similar_objects',
    description: 'The content objects of the project most similar in meaning to a text.',
    input_schema: {
      type: 'object',
      properties: { text: { type: 'string' }, limit: limitSchema },
      required: ['text'],
    },
    needsSimilarity: true,
  },
  {
    name: 'read_object',
    description: 'Reads one content object of the project by id: its name, properties and extracted text.',
    input_schema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  },
  {
    name: 'search_runs',
    description: 'Searches the runs of the project (a Lucene-style query over their fields), newest first.',
    input_schema: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'e.g. status:failed, or words of the result' },
        interaction: { type: 'string', description: 'Only runs of this interaction (its name)' },
        limit: limitSchema,
      },
    },
  },
];

/** The built-in tools a server offers (similar_objects only where similarity search is on). */
export function builtinTools(sources: BuiltinSources): ToolRef[] {
  return BUILTINS.filter((t) => !t.needsSimilarity || sources.similarObjects).map(({ needsSimilarity: _, ...t }) => ({
    kind: 'builtin',
    ...t,
  }));
}

export async function callBuiltin(
  sources: BuiltinSources,
  p: Principal,
  name: string,
  input: Record<string, unknown>,
): Promise<ToolAnswer> {
  const limit = typeof input.limit === 'number' ? Math.max(1, Math.min(MAX_HITS, Math.floor(input.limit))) : 10;
  const text = (k: string) => (typeof input[k] === 'string' ? (input[k] as string) : undefined);
  switch (name) {
    case 'search_objects': {
      const q = text('query');
      if (!q) return refuse('query is required: the words to find');
      return answer(await sources.searchObjects(p, q, limit));
    }
    case 'similar_objects': {
      const t = text('text');
      if (!t || !sources.similarObjects) return refuse('text is required: the text to compare with');
      return answer(await sources.similarObjects(p, t, limit));
    }
    case 'read_object': {
      const id = text('id');
      if (!id) return refuse('id is required: the id of an object (from search_objects)');
      return answer(await sources.readObject(p, id));
    }
    case 'search_runs':
      return answer(await sources.searchRuns(p, text('query'), text('interaction'), limit));
    default:
      return refuse(`there is no built-in tool ${name}`);
  }
}

const refuse = (content: string): ToolAnswer => ({ content, is_error: true });

/** A tool's answer as text for the model, cut to MAX_TOOL_RESULT. */
export function boundedText(text: string): string {
  return text.length <= MAX_TOOL_RESULT ? text : `${text.slice(0, MAX_TOOL_RESULT)}\n[truncated]`;
}

const answer = (value: unknown): ToolAnswer => ({ content: boundedText(JSON.stringify(value)) });

/**
 * Tool results sent back for a run's calls, checked against those calls before any provider call:
 * every call answered once, nothing answered that was not asked.
 */
import type { ChatMessage, ToolResultPart, ToolUse } from '../providers/driver.ts';
import { InvalidConversation } from './errors.ts';

/** Vertesia's `ToolResult` (the fields Orrery reads). */
export interface ToolResultInput {
  tool_use_id: string;
  content: string;
  is_error: boolean;
}

/** The tool calls an answer message asked for. */
export function callsOf(answer: ChatMessage | undefined): ToolUse[] {
  if (!answer || typeof answer.content === 'string') return [];
  return answer.content.filter((p) => p.type === 'tool_use');
}

/** The results as one tool message, in the order of the calls; a 400 naming any id that does not fit. */
export function matchToolResults(runId: string, calls: ToolUse[], results: ToolResultInput[]): ChatMessage {
  if (calls.length === 0) {
    throw new InvalidConversation(
      `run ${runId} asked for no tool calls, so it takes no tool results; continue it with a user message`,
    );
  }
  const byId = new Map<string, ToolResultInput>();
  for (const [i, r] of results.entries()) {
    if (!calls.some((c) => c.id === r.tool_use_id)) {
      throw new InvalidConversation(
        `results[${i}].tool_use_id ${JSON.stringify(r.tool_use_id)} names no call of run ${runId}; its calls are ${calls.map((c) => c.id).join(', ')}`,
      );
    }
    if (byId.has(r.tool_use_id)) {
      throw new InvalidConversation(
        `results[${i}] answers call ${r.tool_use_id} a second time; send one result per call`,
      );
    }
    byId.set(r.tool_use_id, r);
  }
  const missing = calls.filter((c) => !byId.has(c.id));
  if (missing.length > 0) {
    throw new InvalidConversation(
      `no result for ${missing.map((c) => `call ${c.id} (${c.tool_name})`).join(', ')} of run ${runId}: every call needs a result (is_error: true for one that failed)`,
    );
  }
  const parts: ToolResultPart[] = calls.map((c) => {
    const r = byId.get(c.id)!;
    return { type: 'tool_result', tool_use_id: c.id, content: r.content, ...(r.is_error ? { is_error: true } : {}) };
  });
  return { role: 'tool', content: parts };
}

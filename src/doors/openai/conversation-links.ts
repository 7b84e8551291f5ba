/**
 * An SDK chat app sends the whole conversation on every turn. A request whose messages extend
 * those of a stored door run (its messages and its answer, with the same key, environment and
 * model) is matched by a hash of that prefix: its run stores only the new turn and links the
 * earlier run (`previous_run`), so the history is not stored again on every turn. The provider is
 * still sent the whole conversation.
 */
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import { scopeOf, type Principal } from '../../auth/principal.ts';
import { toolInputOf, type ChatMessage, type ContentPart } from '../../providers/driver.ts';
import type { Run } from '../../runs/model.ts';
import type { RunWrites } from '../../runs/run-writer.ts';
import { contentOf } from './answers.ts';
import { longestTurn, putTurn, turnsOf, type TurnsDb } from './store.ts';

/** Prefixes tried per request: those ending at its last few assistant messages. */
const MAX_CANDIDATES = 8;

export interface Link {
  runId: string;
  /** How many of the request's messages the linked run's conversation covers. */
  length: number;
}

export class ConversationLinks {
  private readonly db: Kysely<TurnsDb>;
  /**
   * Turns of this process not yet committed, by project and hash: a client's next request may
   * arrive before its previous answer's turn is stored (it is written along with the run writes).
   */
  private readonly writing = new Map<string, Link>();

  constructor(
    db: object,
    private readonly writer: RunWrites,
    private readonly onError: (err: unknown) => void,
  ) {
    this.db = turnsOf(db);
  }

  /** The stored door run whose conversation the longest prefix of `messages` is, if any. */
  async find(p: Principal, env: string, model: string, messages: ChatMessage[]): Promise<Link | undefined> {
    const hashes: string[] = [];
    const hash = new Hashing(p, env, model);
    const ends: number[] = [];
    for (let i = 0; i < messages.length - 1; i++) if (messages[i].role === 'assistant') ends.push(i + 1);
    if (ends.length === 0) return undefined; // a first turn: nothing to extend (no query)
    const wanted = new Set(ends.slice(-MAX_CANDIDATES));
    for (let i = 0; i < messages.length; i++) {
      hash.add(messages[i]);
      if (wanted.has(i + 1)) {
        hashes.push(hash.digest());
      }
    }
    for (let i = hashes.length - 1; i >= 0; i--) {
      const pending = this.writing.get(`${p.project.id}|${hashes[i]}`);
      if (pending) return pending;
    }
    const found = await longestTurn(this.db, scopeOf(p), hashes);
    return found ? { runId: found.run_id, length: found.length } : undefined;
  }

  /** Records a completed run's conversation (its messages and its answer), along with the run writes. */
  remember(p: Principal, env: string, model: string, messages: ChatMessage[], run: Run): void {
    if (run.status !== 'completed') return;
    const hash = new Hashing(p, env, model);
    for (const m of messages) hash.add(m);
    hash.add(answerOf(run));
    const turn = { hash: hash.digest(), run_id: run.id, length: messages.length + 1 };
    const s = scopeOf(p);
    const key = `${p.project.id}|${turn.hash}`;
    this.writing.set(key, { runId: run.id, length: turn.length });
    this.writer
      .run((trx) => putTurn(turnsOf(trx), s, turn).then(() => true))
      .catch(this.onError)
      .finally(() => this.writing.delete(key));
  }
}

/** The assistant message a client sends back for a run's answer, as the door reads it (messages.ts). */
function answerOf(run: Run): ChatMessage {
  const text = contentOf(run.result);
  if (!run.tool_use?.length && !run.thinking?.length) return { role: 'assistant', content: text };
  // Signed reasoning first, as the Anthropic door answered it and reads it back.
  const parts: ContentPart[] = [...(run.thinking ?? []), ...(text ? [{ type: 'text' as const, text }] : [])];
  for (const c of run.tool_use ?? []) {
    const args =
      c.tool_input_invalid && c.tool_input_text !== undefined ? c.tool_input_text : JSON.stringify(c.tool_input ?? {});
    parts.push({ type: 'tool_use', id: c.id, tool_name: c.tool_name, ...toolInputOf(args) });
  }
  return { role: 'assistant', content: parts };
}

/** A running hash of a conversation, scoped to a key, environment and model; digests of its prefixes. */
class Hashing {
  private readonly h = createHash('sha256');

  constructor(p: Principal, env: string, model: string) {
    this.h.update(JSON.stringify([p.keyId, env, model]));
  }

  add(m: ChatMessage): void {
    this.h.update('\n');
    this.h.update(JSON.stringify(m));
  }

  digest(): string {
    return this.h.copy().digest('base64url');
  }
}

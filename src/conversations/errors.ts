/** The errors a conversation can answer, each with its own code so callers can tell them apart. */
import { OrreryError } from '../util/errors.ts';

const define = (code: string, status: number) =>
  class extends OrreryError {
    constructor(message: string, details?: unknown) {
      super(code, status, message, details);
    }
  };

/** A history past ORRERY_CONVERSATION_MAX_TURNS or ORRERY_CONVERSATION_MAX_BYTES. */
export const ConversationTooLong = define('conversation_too_long', 413);
/** A `conversation` that names another run than the request's `run`. */
export const ConversationMismatch = define('conversation_mismatch', 409);
/** A run of the history is gone (deleted, expired): the history cannot be rebuilt. */
export const ConversationTurnLost = define('conversation_turn_lost', 409);
/** A `conversation` value, tool result or strip option the server cannot use as sent. */
export const InvalidConversation = define('bad_request', 400);

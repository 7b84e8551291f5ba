/**
 * Error text comes from code we do not control (a template's `throw`, a provider's body, a tool),
 * and every run stores and answers it: one bound keeps a small request from making a huge answer.
 */

/** The most characters of an error message Orrery stores or answers. */
export const MAX_ERROR_MESSAGE_CHARS = 4096;

/** `message` cut to MAX_ERROR_MESSAGE_CHARS, marker included, when longer; the marker says how much was cut. */
export function boundErrorMessage(message: string): string {
  if (message.length <= MAX_ERROR_MESSAGE_CHARS) return message;
  const cut = (kept: number) => ` … [error message cut: ${message.length - kept} more characters]`;
  // The marker's length depends on the count it prints, which barely depends on where we cut.
  const kept = MAX_ERROR_MESSAGE_CHARS - cut(MAX_ERROR_MESSAGE_CHARS).length;
  return message.slice(0, kept) + cut(kept);
}

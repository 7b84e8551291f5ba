/** URL search params of the keys/project screen (owned by that screen; the router imports these). */
export type KeysSearch = Record<string, unknown>;
export const validateKeysSearch = (raw: Record<string, unknown>): KeysSearch => raw;

/** The encoding token counts use (tokens.ts), apart from the tokenizer: naming it does not load its 60 MB of tables. */
export const TOKEN_ENCODING = 'o200k_base';

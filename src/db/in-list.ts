/** Bound parameters per IN list: far below SQLite's 32,766 and PostgreSQL's 65,535 (style I2). */
export const IN_LIST_CHUNK = 500;

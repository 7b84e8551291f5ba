/**
 * CSV that is safe to open in a spreadsheet (formula injection) and that no reader can split
 * differently from how it was written. Used by every CSV export.
 */
import type { Options } from 'csv-stringify/sync';

/**
 * A cell, or any line inside a cell, that starts with = + - @ tab or carriage return would be
 * read as a formula by spreadsheets: prefix that line with `'`.
 */
export const escapeFormula = (v: string): string => v.replace(/(^|\r\n|\r|\n)(?=[=+\-@\t\r])/g, "$1'");

/**
 * Records end with CRLF (RFC 4180); every field that holds a CR or LF is quoted, not only those
 * holding a full record delimiter, so a bare line feed can never start a new row.
 */
export const CSV_OPTIONS: Options = { record_delimiter: 'windows', quoted_match: /[\r\n]/ };

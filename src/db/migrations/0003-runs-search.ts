/**
 * 0003: run search. Frozen (style K7): the backfill below carries its own copy of the word and
 * path rules of src/runs/lucene-sql/search-doc.ts as they were when this was written; the
 * runtime writes the same data through runs/search-index.ts for every run from then on.
 *
 * Columns (derived from `doc`, written with the row):
 * - `search_fields`: the values of every `parameters.*`, `config.*`, `source.*` path (arrays
 *   flattened), and the words of parameter strings, so nested paths need no JSON walking per row.
 * - `interaction_name`, `environment_name`: `interaction:X` / `environment:X` match the id or the
 *   name; a real column keeps that check inside an index.
 * - SQLite: `search_rowid`, the rowid of the run's row in the contentless FTS5 table `runs_fts`
 *   (own integer key: VACUUM may renumber the implicit rowid of a table with a text primary key),
 *   plus the `fts5vocab` tables used for wildcards that are not a prefix.
 * - PostgreSQL: `search_tsv`, a tsvector built in JavaScript (weights: prompt A, result B), with a
 *   lexeme for every pair of consecutive words so phrases are GIN lookups.
 *
 * Indexes: the newest-first index becomes covering for every column GET /runs and the facets
 * filter or group on (SQLite: all key columns; PostgreSQL: INCLUDE), so a filtered page or a facet
 * over a filtered set reads the index, not the wide rows; model and environment get their own
 * newest-first index for selective filters; PostgreSQL gets GIN on the tsvector and on `tags`.
 * SQLite also gets the same columns keyed by `search_rowid` (counts and facets of a full-text
 * query, and of a tag, whose rows now carry `search_rowid` too). See bench/README.md.
 */
import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../dialect.ts';

export async function up(db: Kysely<any>, d: DialectName): Promise<void> {
  if (d === 'sqlite') {
    await sql`ALTER TABLE runs ADD COLUMN search_rowid INTEGER NOT NULL DEFAULT 0`.execute(db);
    await sql`ALTER TABLE runs ADD COLUMN search_fields TEXT NOT NULL DEFAULT '{}'`.execute(db);
    await sql`CREATE VIRTUAL TABLE runs_fts USING fts5(body, prompt, result, content='', contentless_delete=1,
      tokenize="unicode61 remove_diacritics 0 categories 'L* N* M*'")`.execute(db);
    await sql`CREATE VIRTUAL TABLE runs_fts_terms USING fts5vocab(runs_fts, 'row')`.execute(db);
    await sql`CREATE VIRTUAL TABLE runs_fts_instances USING fts5vocab(runs_fts, 'instance')`.execute(db);
  } else {
    await sql`ALTER TABLE runs ADD COLUMN search_tsv tsvector NOT NULL DEFAULT ''::tsvector`.execute(db);
    await sql`ALTER TABLE runs ADD COLUMN search_fields jsonb NOT NULL DEFAULT '{}'::jsonb`.execute(db);
    // Keep the tsvector in the row (compressed) and let the document go to TOAST first: a query
    // that walks the newest-first index tests the tsvector of every row it passes, and a TOAST
    // fetch per row made that several times slower (measured at 1M runs).
    await sql`ALTER TABLE runs ALTER COLUMN search_tsv SET STORAGE MAIN`.execute(db);
  }
  await sql`ALTER TABLE runs ADD COLUMN interaction_name text`.execute(db);
  await sql`ALTER TABLE runs ADD COLUMN environment_name text`.execute(db);
  // SQLite: a tag row knows its run's search_rowid, so counting a tag's runs reads indexes only.
  if (d === 'sqlite') await sql`ALTER TABLE run_tags ADD COLUMN search_rowid INTEGER`.execute(db);

  await backfill(db, d);

  await sql`DROP INDEX IF EXISTS runs_recent`.execute(db);
  const cover =
    'status, model_id, interaction_id, environment_id, finish_reason, execution_time, parent_id, interaction_name, environment_name';
  if (d === 'sqlite') {
    await sql`CREATE UNIQUE INDEX runs_search_rowid ON runs (search_rowid)`.execute(db);
    // Pages walk this one newest first; every filter column is in it, so only the page's rows are read.
    await sql
      .raw(`CREATE INDEX runs_recent_cover ON runs (project_id, updated_at DESC, id DESC, ${cover}, search_rowid)`)
      .execute(db);
    // Counts and facets of a full-text query start from the FTS5 matches and look each run up here.
    await sql
      .raw(`CREATE INDEX runs_search_cover ON runs (search_rowid, project_id, updated_at, id, ${cover})`)
      .execute(db);
    await sql`DROP INDEX IF EXISTS run_tags_tag`.execute(db);
    await sql`CREATE INDEX run_tags_tag_rowid ON run_tags (tag, search_rowid)`.execute(db);
  } else {
    await sql
      .raw(`CREATE INDEX runs_recent_cover ON runs (project_id, updated_at DESC, id DESC) INCLUDE (${cover}, tags)`)
      .execute(db);
    await sql`CREATE INDEX runs_search_tsv ON runs USING gin (search_tsv)`.execute(db);
    await sql`CREATE INDEX runs_tags_gin ON runs USING gin (tags)`.execute(db);
  }
  await sql`CREATE INDEX runs_model ON runs (project_id, model_id, updated_at DESC, id DESC)`.execute(db);
  await sql`CREATE INDEX runs_environment ON runs (project_id, environment_id, updated_at DESC, id DESC)`.execute(db);
}

// ---- backfill of runs written before 0003 (frozen copies of the rules) ----------------------

const WORD = /[\p{L}\p{N}\p{M}]+/gu;
const SEGMENT = /^[\p{L}\p{N}_-]+$/u;
const tokenize = (text: string): string[] => text.toLowerCase().match(WORD) ?? [];
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const resultText = (result: unknown): string => {
  if (typeof result === 'string') return result;
  if (!Array.isArray(result)) return '';
  return result
    .flatMap((p) =>
      typeof p === 'string'
        ? [p]
        : isObject(p) && (p.type === 'text' || p.type === undefined) && typeof p.value === 'string'
          ? [p.value]
          : [],
    )
    .join('\n');
};
const promptText = (prompt: unknown): string => {
  if (typeof prompt === 'string') return prompt;
  if (!Array.isArray(prompt)) return '';
  return prompt
    .flatMap((m) => (typeof m === 'string' ? [m] : isObject(m) && typeof m.content === 'string' ? [m.content] : []))
    .join('\n');
};
const stringLeaves = (v: unknown, out: string[] = []): string[] => {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) stringLeaves(x, out);
  else if (isObject(v)) for (const k of Object.keys(v)) stringLeaves(v[k], out);
  return out;
};
const flatten = (v: unknown, out: unknown[]): void => {
  if (v === null || v === undefined) return;
  if (Array.isArray(v)) for (const x of v) flatten(x, out);
  else out.push(v);
};
function addPath(fields: Record<string, unknown[]>, key: string, value: unknown, text: boolean): void {
  const values: unknown[] = [];
  flatten(value, values);
  if (!values.length) return;
  const list = (fields[key] ??= []);
  for (const v of values) {
    if (isObject(v)) {
      list.push({});
      for (const k of Object.keys(v)) if (SEGMENT.test(k)) addPath(fields, `${key}.${k}`, v[k], text);
    } else {
      list.push(v);
      if (text && typeof v === 'string') (fields[`w:${key}`] ??= []).push(` ${tokenize(v).join(' ')} `);
    }
  }
}

function searchData(doc: Record<string, unknown>) {
  const fields: Record<string, unknown[]> = Object.create(null);
  addPath(fields, 'parameters', doc.parameters, true);
  addPath(fields, 'config', doc.config, false);
  addPath(fields, 'source', doc.source, false);
  const prompt = tokenize(promptText(doc.prompt));
  const result = tokenize(resultText(doc.result));
  const params = stringLeaves(doc.parameters).flatMap(tokenize);
  return { fields: JSON.stringify({ ...fields }), prompt, result, all: [...prompt, ...result, ...params] };
}

function tsvector(s: ReturnType<typeof searchData>): string {
  const positions = new Map<string, string[]>();
  let bytes = 0;
  const weightAt = (i: number) => (i < s.prompt.length ? 'A' : i < s.prompt.length + s.result.length ? 'B' : '');
  const add = (lexeme: string, i: number, weight: string) => {
    let list = positions.get(lexeme);
    if (!list) {
      const size = Buffer.byteLength(lexeme, 'utf8');
      if (size > 2046 || bytes + size + 8 > 1_000_000) return;
      bytes += size + 8;
      positions.set(lexeme, (list = []));
    }
    if (list.length >= 256) return;
    const pos = Math.min(i + 1, 16_383);
    if (pos === 16_383 && list.some((e) => e.startsWith('16383'))) return;
    list.push(`${pos}${weight}`);
    bytes += 2;
  };
  s.all.forEach((w, i) => add(w, i, weightAt(i)));
  for (let i = 0; i + 1 < s.all.length; i++)
    add(`${s.all[i]} ${s.all[i + 1]}`, i, weightAt(i) === weightAt(i + 1) ? weightAt(i) : '');
  return [...positions]
    .map(([w, list]) => `'${w.replace(/\\/g, '\\\\').replace(/'/g, "''")}':${list.join(',')}`)
    .join(' ');
}

const nameOf = (ref: unknown): string | null => (isObject(ref) && typeof ref.name === 'string' ? ref.name : null);

async function backfill(db: Kysely<any>, d: DialectName): Promise<void> {
  let after = '';
  let rowid = 0;
  for (;;) {
    const rows = await db
      .selectFrom('runs')
      .select(['id', 'doc', 'status'])
      .where('id', '>', after)
      .orderBy('id')
      .limit(500)
      .execute();
    if (!rows.length) break;
    for (const row of rows) {
      const doc = (typeof row.doc === 'string' ? JSON.parse(row.doc) : row.doc) as Record<string, unknown>;
      const s = searchData(doc);
      const names = { interaction_name: nameOf(doc.interaction), environment_name: nameOf(doc.environment) };
      // Full text only for runs that ended (a run still executing gets it with its final update).
      const ended = row.status === 'completed' || row.status === 'failed';
      if (d === 'sqlite') {
        rowid++;
        await db
          .updateTable('runs')
          .set({ search_rowid: rowid, search_fields: s.fields, ...names })
          .where('id', '=', row.id)
          .execute();
        if (ended)
          await sql`INSERT INTO runs_fts (rowid, body, prompt, result) VALUES (${rowid}, ${s.all.join(' ')}, ${s.prompt.join(' ')}, ${s.result.join(' ')})`.execute(
            db,
          );
      } else {
        await db
          .updateTable('runs')
          .set({ search_tsv: sql`CAST(${ended ? tsvector(s) : ''} AS tsvector)`, search_fields: s.fields, ...names })
          .where('id', '=', row.id)
          .execute();
      }
    }
    after = rows[rows.length - 1].id;
  }
  if (d === 'sqlite')
    await sql`UPDATE run_tags SET search_rowid = (SELECT r.search_rowid FROM runs AS r WHERE r.id = run_tags.run_id)`.execute(
      db,
    );
}

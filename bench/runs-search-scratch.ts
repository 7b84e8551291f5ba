import pg from 'pg';
const c = new pg.Client({ connectionString: process.env.PG! });
await c.connect();
const p = (await c.query('select id from projects')).rows[0].id;
const ex = async (name: string, where: string, params: unknown[]) => {
  const q = `SELECT runs.id FROM runs WHERE runs.project_id = $1 AND ${where} ORDER BY runs.updated_at DESC, runs.id DESC LIMIT 100`;
  await c.query(q, [p, ...params]);
  const s = performance.now(); await c.query(q, [p, ...params]); const ms = performance.now() - s;
  const r = await c.query('EXPLAIN ' + q, [p, ...params]);
  console.log('==', name, ms.toFixed(1)); console.log(r.rows.map((x: any) => x['QUERY PLAN']).slice(0, 6).join('\n'));
};
await ex('status+model', `runs.status = $2 AND runs.model_id IN ($3)`, ['completed', 'o1-mini']);
await ex('tag', `COALESCE(runs.tags @> CAST($2 AS jsonb), FALSE)`, ['["tag-29"]']);
await ex('tag plain', `runs.tags @> CAST($2 AS jsonb)`, ['["tag-29"]']);
await ex('interaction+status', `runs.interaction_id IN ($2) AND runs.status IN ($3)`, ['ix-033', 'failed']);
await ex('status+model+tag', `runs.status IN ($2) AND runs.model_id IN ($3) AND COALESCE(runs.tags @> CAST($4 AS jsonb), FALSE)`, ['completed', 'o1-mini', '["tag-25"]']);
await ex('env+2tags', `runs.environment_id IN ($2) AND (COALESCE(runs.tags @> CAST($3 AS jsonb), FALSE) OR COALESCE(runs.tags @> CAST($4 AS jsonb), FALSE))`, ['env-2', '["tag-3"]', '["tag-28"]']);
await c.end();

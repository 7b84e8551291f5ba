/**
 * The command lines of the import feature: `orrery import …` and `orrery environments set-key …`.
 * cli.ts parses the flags and calls these; they print, and answer the process exit code.
 */
import { sourceKey } from './service.ts';
import { DEFAULT_KINDS, Importer, KINDS, messageOf, type ImportSummary, type Kind } from './importer.ts';
import { SourceReader } from './source.ts';
import { HttpTarget } from './target.ts';
import { formatBytes, PlainProgress, TtyProgress } from './progress.ts';
import type { Config } from '../config.ts';

export { IMPORT_USAGE } from './usage.ts';

export interface ImportFlags {
  from?: string;
  key?: string;
  to?: string;
  'to-key'?: string;
  project?: string;
  include?: string;
  since?: string;
  'dry-run'?: boolean;
}

function kindsOf(include: string | undefined): Kind[] {
  if (!include) return DEFAULT_KINDS;
  const kinds = include
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean);
  const bad = kinds.filter((k) => !(KINDS as readonly string[]).includes(k));
  if (bad.length) throw new Error(`--include: unknown ${bad.join(', ')}; choose among ${KINDS.join(', ')}`);
  return kinds as Kind[];
}

export interface LocalTarget {
  target: HttpTarget;
  /** The admin key created for the default project of a new database (shown once). */
  createdAdminKey?: string;
}

/**
 * Opens this machine's own database as the target (src/local-target.ts), passed in by the CLI: it
 * builds the whole server, which mounts import/ itself.
 */
export type OpenLocalTarget = (config: Config, project: string | undefined, dryRun: boolean) => Promise<LocalTarget>;

export async function importCommand(
  config: Config,
  flags: ImportFlags,
  openLocalTarget: OpenLocalTarget,
  out: NodeJS.WriteStream = process.stdout,
): Promise<number> {
  if (!flags.from || !flags.key)
    throw new Error('import needs --from <source URL> and --key <API key or JWT of the source>');
  const from = sourceKey(flags.from);
  const include = kindsOf(flags.include);
  let since: Date | undefined;
  if (flags.since !== undefined) {
    since = new Date(flags.since);
    if (Number.isNaN(since.getTime()))
      throw new Error(`--since must be an ISO 8601 date, got ${JSON.stringify(flags.since)}`);
  }
  if (!!flags.to !== !!flags['to-key']) throw new Error('--to and --to-key go together');
  const dryRun = !!flags['dry-run'];
  let target: HttpTarget;
  if (flags.to) {
    target = new HttpTarget(flags.to, flags['to-key']!);
    if (flags.project) {
      const p = await target.project();
      if (p.id !== flags.project && p.name !== flags.project)
        throw new Error(
          `--to-key belongs to project "${p.name}" (${p.id}), not ${flags.project}: use a key of the target project`,
        );
    }
  } else {
    const local = await openLocalTarget(config, flags.project, dryRun);
    if (local.createdAdminKey)
      out.write(`Created the default account and project; admin API key (shown once): ${local.createdAdminKey}\n\n`);
    target = local.target;
  }
  try {
    const source = new SourceReader(from, flags.key);
    const progress = out.isTTY ? new TtyProgress(out) : new PlainProgress(out);
    out.write(
      `${dryRun ? 'Dry run: nothing is changed. ' : ''}Importing ${include.join(', ')} from ${from} into ${target.describe}\n`,
    );
    const summary = await new Importer(source, target, { include, since, dryRun }, progress).run();
    out.write(renderSummary(summary));
    return summary.failures.length ? 1 : 0;
  } finally {
    await target.close();
  }
}

export function renderSummary(s: ImportSummary): string {
  const lines: string[] = [
    '',
    `${s.dryRun ? 'Would import' : 'Imported'} into project "${s.project.name}" (${s.project.id}):`,
  ];
  for (const [kind, p] of Object.entries(s.kinds)) {
    lines.push(
      `  ${kind.padEnd(13)} ${s.dryRun ? 'to copy' : 'copied'} ${p.copied}, skipped ${p.skipped} (unchanged), failed ${p.failed}${p.bytes ? `, ${formatBytes(p.bytes)}` : ''}`,
    );
  }
  if (s.dryRun && s.planned.length) {
    lines.push('', 'Would copy:');
    for (const x of s.planned)
      lines.push(`  ${x.action.padEnd(6)} ${x.kind.replace(/s$/, '')} ${x.name ? `"${x.name}" ` : ''}(${x.id})`);
  }
  if (s.failures.length) {
    lines.push('', 'Failed:');
    for (const f of s.failures)
      lines.push(`  ${f.kind.replace(/s$/, '')} ${f.name ? `"${f.name}" ` : ''}(${f.id}): ${f.reason}`);
  }
  if (s.keysNeeded.length) {
    lines.push(
      '',
      'Key needed: API keys cannot be read from the source. Set each one with',
      '  orrery environments set-key <id> [--project <project>] < key-file',
    );
    for (const k of s.keysNeeded) lines.push(`  ${k.id}  "${k.name}" (${k.provider})`);
  }
  if (s.notes.length) {
    lines.push('', 'Notes:');
    for (const n of s.notes) lines.push(`  ${n}`);
  }
  if (s.failures.length) lines.push('', 'Run the same command again to retry what failed: what was copied is skipped.');
  return `${lines.join('\n')}\n`;
}

export interface SetKeyFlags {
  project?: string;
  'api-key'?: string;
  to?: string;
  'to-key'?: string;
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('API key (then Enter and Ctrl-D): ');
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8').trim();
}

export async function setKeyCommand(
  config: Config,
  env: string | undefined,
  flags: SetKeyFlags,
  openLocalTarget: OpenLocalTarget,
): Promise<void> {
  if (!env) throw new Error('environments set-key needs the environment id or name');
  if (!!flags.to !== !!flags['to-key']) throw new Error('--to and --to-key go together');
  const apiKey = flags['api-key'] ?? (await readStdin());
  if (!apiKey) throw new Error('no API key given (--api-key, or on standard input)');
  const target = flags.to
    ? new HttpTarget(flags.to, flags['to-key']!)
    : (await openLocalTarget(config, flags.project, false)).target;
  try {
    const envs = await target.list('environments');
    const matches = envs.filter((e) => e.id === env || e.name === env);
    if (!matches.length)
      throw new Error(`environment ${JSON.stringify(env)} was not found in project "${(await target.project()).name}"`);
    if (matches.length > 1)
      throw new Error(
        `${matches.length} environments are named ${JSON.stringify(env)}: give the id (${matches.map((e) => e.id).join(', ')})`,
      );
    const updated = await target.update('environments', matches[0].id, { apiKey });
    console.log(`environment ${updated.id} "${updated.name}": API key set (${updated.apikey_hint ?? 'hidden'})`);
  } catch (err) {
    throw new Error(messageOf(err), { cause: err });
  } finally {
    await target.close();
  }
}

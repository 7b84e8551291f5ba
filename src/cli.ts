/**
 * `orrery serve | migrate | keys create | keys list | keys delete | projects create | projects list |
 * import | environments set-key` (the last two: src/import/command.ts).
 * Management commands work on the database directly, as the account admin, with no server running.
 */
import { parseArgs } from 'node:util';
import { loadConfig, type Config } from './config.ts';
import { buildServer } from './server.ts';
import { openDatabase } from './db/open.ts';
import { deriveKeys, resolveSecret } from './auth/secret.ts';
import { AuthService } from './auth/service.ts';
import { AuditLog } from './audit/log.ts';
import {
  KEY_ROLE_INPUTS,
  KEY_ROLES,
  keyRoleOf,
  type KeyRole,
  type KeyRoleInput,
  type Principal,
} from './auth/principal.ts';
import { OrreryError } from './util/errors.ts';
import { installProcessGuards } from './process-guards.ts';
import { startYoungGenerationTrim } from './util/young-generation.ts';
import { IMPORT_USAGE } from './import/usage.ts';
import type { OpenLocalTarget } from './import/command.ts';

const USAGE = `Usage: orrery <command> [options]

Commands:
  serve                         start the server (default)
  migrate                       create or upgrade the database, then exit
  keys create --name N [--role admin|developer|executor|reader|auditor] [--project ID] [--expires-at ISO]
                                create an API key and print it with the variables for the vertesia CLI
  keys list                     list API keys (never their secret)
  keys delete ID                revoke an API key
  projects create --name N [--namespace NS]
  projects list
${IMPORT_USAGE}
Options (override the ORRERY_* environment variables):
  --port N  --host H  --data-dir DIR  --public-url URL  --database-url URL
`;

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'data-dir': { type: 'string' },
      'public-url': { type: 'string' },
      'database-url': { type: 'string' },
      name: { type: 'string' },
      role: { type: 'string' },
      project: { type: 'string' },
      'expires-at': { type: 'string' },
      namespace: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      // orrery import / environments set-key (src/import/command.ts)
      from: { type: 'string' },
      key: { type: 'string' },
      to: { type: 'string' },
      'to-key': { type: 'string' },
      include: { type: 'string' },
      since: { type: 'string' },
      'dry-run': { type: 'boolean' },
      'api-key': { type: 'string' },
    },
  });
  if (values.help) return void process.stdout.write(USAGE);
  const config = loadConfig(process.env, {
    ...(values.port !== undefined ? { port: Number(values.port) } : {}),
    ...(values.host ? { host: values.host } : {}),
    ...(values['data-dir'] ? { dataDir: values['data-dir'] } : {}),
    ...(values['public-url'] ? { publicUrl: values['public-url'] } : {}),
    ...(values['database-url'] ? { databaseUrl: values['database-url'] } : {}),
  });
  const [command = 'serve', sub, arg] = positionals;
  if (command === 'serve') return serve(config, values['public-url'] !== undefined || !!process.env.ORRERY_PUBLIC_URL);
  if (command === 'migrate') return withAdmin(config, async () => console.log('database is up to date'));
  if (command === 'keys' && sub === 'create') {
    return withAdmin(config, async (auth, admin) => {
      if (!values.name) throw new Error('keys create needs --name');
      const input = (values.role ?? 'developer') as KeyRoleInput;
      if (!KEY_ROLE_INPUTS.includes(input)) throw new Error(`--role must be one of ${KEY_ROLES.join(', ')}`);
      const role: KeyRole = keyRoleOf(input);
      const key = await auth.createKey(admin, {
        name: values.name,
        role,
        project: values.project,
        expires_at: values['expires-at'],
      });
      const token = await auth.issueToken({ ...admin, keyId: key.id, role, project: key.project });
      const tokenUrl = `${config.publicUrl}/api/v1/token/issue`;
      console.log(`API key ${key.id} (${role}) for project "${key.project.name}":\n\n  ${key.value}\n`);
      console.log('For the official vertesia CLI, export the lines below. Give it a token, never the sk- key:');
      console.log("with VERTESIA_APIKEY=sk-… it sends the key to Vertesia's hosted token server.\n");
      console.log(`export VERTESIA_SERVER_URL=${config.publicUrl}`);
      console.log(`export VERTESIA_STORE_URL=${config.publicUrl}`);
      console.log(`export VERTESIA_TOKEN_SERVER_URL=${config.publicUrl}/api/v1`);
      console.log(`export VERTESIA_TOKEN=${token.token}`);
      // The key goes to curl on its standard input (printf is a shell builtin), never on a command line that `ps` shows.
      console.log(
        `\nThe token expires in ${token.expires_in} s (ORRERY_JWT_TTL); get a new one with the key in ORRERY_API_KEY:\n`,
      );
      console.log(
        `export VERTESIA_TOKEN=$(printf 'Authorization: Bearer %s' "\${ORRERY_API_KEY:?set it to the sk- key}" | curl -s -X POST -H @- ${tokenUrl} | jq -r .token)`,
      );
    });
  }
  if (command === 'keys' && sub === 'list')
    return withAdmin(config, async (auth, admin) =>
      printTable(await auth.listKeys(admin), ['id', 'name', 'role', 'hint', 'expires_at'], (k) => ({
        ...k,
        project: k.project.name,
      })),
    );
  if (command === 'keys' && sub === 'delete') {
    return withAdmin(config, async (auth, admin) => {
      if (!arg) throw new Error('keys delete needs the key id');
      await auth.deleteKey(admin, arg);
      console.log(`deleted ${arg}`);
    });
  }
  if (command === 'projects' && sub === 'create') {
    return withAdmin(config, async (auth, admin) => {
      if (!values.name) throw new Error('projects create needs --name');
      const project = await auth.createProject(admin, { name: values.name, namespace: values.namespace });
      console.log(`project ${project.id} "${project.name}" (namespace ${project.namespace})`);
    });
  }
  // Loaded only when used: the local mode opens the whole server, --to needs none of it.
  const openLocalTarget: OpenLocalTarget = async (c, project, dryRun) =>
    (await import('./local-target.ts')).openLocalTarget(c, project, dryRun);
  if (command === 'import') {
    if (sub) throw new Error(`import takes no argument ${JSON.stringify(sub)}: did you mean --from ${sub}?`);
    // Loaded here: the official client and undici are not the server's to load at start-up.
    const { importCommand } = await import('./import/command.ts');
    process.exitCode = await importCommand(config, values, openLocalTarget);
    return;
  }
  if (command === 'environments' && sub === 'set-key')
    return (await import('./import/command.ts')).setKeyCommand(config, arg, values, openLocalTarget);
  if (command === 'projects' && sub === 'list')
    return withAdmin(config, async (auth, admin) =>
      printTable(await auth.listProjects(admin), ['id', 'name', 'namespace', 'created_at']),
    );
  process.stderr.write(USAGE);
  process.exitCode = 2;
}

async function serve(config: Config, publicUrlGiven: boolean): Promise<void> {
  const orrery = await buildServer(config);
  installProcessGuards(orrery.app.log, orrery.metrics);
  const stopTrim = startYoungGenerationTrim();
  const address = await orrery.app.listen({ port: config.port, host: config.host });
  if (!publicUrlGiven && config.port === 0) config.publicUrl = address.replace('0.0.0.0', '127.0.0.1');
  const { bootstrap } = orrery;
  const lines = [
    `Orrery listening on ${address} (public URL ${config.publicUrl}, database ${orrery.database.describe})`,
    `Web console: ${config.publicUrl}/ (sign in with your account or an API key)`,
  ];
  if (bootstrap.key) {
    lines.push(
      bootstrap.created
        ? `Created account "${bootstrap.account.name}" and project "${bootstrap.project.name}".`
        : 'Added the admin key from ORRERY_ADMIN_KEY.',
      `Admin API key (shown once${config.adminKey ? ', from ORRERY_ADMIN_KEY' : ''}): ${bootstrap.key}`,
      `Try: curl -H "Authorization: Bearer ${bootstrap.key}" ${config.publicUrl}/api/v1/projects`,
    );
  }
  console.log(lines.join('\n'));
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    orrery.app.log.info(`${signal}: shutting down`);
    stopTrim();
    await orrery.app.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

/** Runs a management command as the account admin of the default project. */
async function withAdmin(config: Config, fn: (auth: AuthService, admin: Principal) => Promise<void>): Promise<void> {
  const { db, dialect } = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  try {
    const keys = deriveKeys(await resolveSecret(config, db, dialect));
    // Keys made here are in the audit trail too, as made by `cli` from the host.
    const auth = new AuthService(db, dialect, config, keys.jwt, new AuditLog(db, dialect));
    const boot = await auth.bootstrap();
    if (boot.created && boot.key)
      console.log(`Created the default account and project; admin API key (shown once): ${boot.key}\n`);
    await fn(auth, {
      account: boot.account,
      project: boot.project,
      keyId: 'cli',
      role: 'admin',
      via: 'apikey',
      ip: 'cli',
    });
  } finally {
    await db.destroy();
  }
}

function printTable<T extends object>(
  rows: T[],
  columns: string[],
  map: (r: T) => Record<string, unknown> = (r) => r as Record<string, unknown>,
): void {
  if (!rows.length) return void console.log('(none)');
  const cells = rows.map((r) => columns.map((c) => String(map(r)[c] ?? '')));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i].length)));
  console.log(columns.map((c, i) => c.padEnd(widths[i])).join('  '));
  for (const row of cells) console.log(row.map((v, i) => v.padEnd(widths[i])).join('  '));
}

main(process.argv.slice(2)).catch((err) => {
  console.error(`orrery: ${err instanceof OrreryError || err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});

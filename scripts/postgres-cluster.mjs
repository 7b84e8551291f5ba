// A throwaway PostgreSQL cluster for the tests: initdb in a temporary folder, a free loopback
// port, the socket in that folder. initdb refuses root, so as root it runs as `postgres`.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { freePort } from './free-port.mjs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function findPgBin() {
  const fromPath = spawnSync('sh', ['-c', 'command -v pg_ctl'], { encoding: 'utf8' }).stdout.trim();
  if (fromPath) return fromPath.replace(/\/pg_ctl$/, '');
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length ? join(root, versions[0], 'bin') : undefined;
}

/** Starts a throwaway cluster; `settings` are extra server settings (name to value) for its start. */
export async function startCluster(settings = {}) {
  const bin = findPgBin();
  if (!bin)
    throw new Error(
      'PostgreSQL binaries (initdb, pg_ctl) not found: apt-get install postgresql, or set ORRERY_TEST_DIALECTS=sqlite',
    );
  const dir = mkdtempSync(join(tmpdir(), 'orrery-pg-'));
  const data = join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  let uid;
  if (asRoot) {
    uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
    chmodSync(dir, 0o700);
  }
  const run = (cmd, args) => {
    const full = join(bin, cmd);
    const r = asRoot
      ? spawnSync('runuser', ['-u', 'postgres', '--', full, ...args], { encoding: 'utf8' })
      : spawnSync(full, args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr || r.stdout}`);
    return r.stdout;
  };
  run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C']);
  const port = await freePort();
  const server = {
    listen_addresses: '127.0.0.1',
    fsync: 'off',
    synchronous_commit: 'off',
    full_page_writes: 'off',
    max_connections: 300,
    ...settings,
  };
  const opts = [`-p ${port} -k ${dir}`, ...Object.entries(server).map(([name, value]) => `-c ${name}=${value}`)].join(
    ' ',
  );
  run('pg_ctl', ['-D', data, '-o', opts, '-l', join(dir, 'log'), '-w', 'start']);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    dir,
    stop() {
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/**
 * The local mode of `orrery import`: the target is the database (and blob store) this machine's
 * configuration names, like `orrery keys create`. It is opened in-process as a server on a
 * loopback port of its own, which the importer reaches like any `--to` target: one code path
 * for both modes, and every copy goes through the same rules as an API write (validation, blob
 * temporary name and rename, permissions). Nothing listens outside 127.0.0.1, and the token is
 * never printed. It lives beside the composition root, not in import/, which the server itself
 * mounts: cli.ts passes it to the import commands.
 */
import type { Config } from './config.ts';
import { buildServer } from './server.ts';
import { deriveKeys, resolveSecret } from './auth/secret.ts';
import { signToken } from './auth/jwt.ts';
import { authReads } from './auth/reads.ts';
import type { Principal } from './auth/principal.ts';
import { HttpTarget } from './import/target.ts';
import type { LocalTarget } from './import/command.ts';

export async function openLocalTarget(
  config: Config,
  project: string | undefined,
  dryRun: boolean,
): Promise<LocalTarget> {
  // No content processing here: the copies' jobs wait in the durable queue for the server(s) of
  // this database, so the import neither holds parsed files in memory nor waits for them at exit.
  const local: Config = { ...config, port: 0, host: '127.0.0.1', contentWorkers: 0 };
  const orrery = await buildServer(local, { logger: false });
  try {
    const address = await orrery.app.listen({ port: 0, host: '127.0.0.1' });
    // Signed upload URLs must point at this process's server.
    local.publicUrl = address;
    const { db } = orrery.database;
    const boot = orrery.bootstrap;
    const admin: Principal = {
      account: boot.account,
      project: boot.project,
      keyId: 'cli',
      role: 'admin',
      via: 'apikey',
      ip: 'cli',
    };
    const reads = authReads(db, orrery.database.dialect);
    const target = project ? await reads.projectByIdOrName(boot.account.id, project) : boot.project;
    if (!target) throw new Error(`project ${JSON.stringify(project)} was not found (orrery projects list shows them)`);
    // The import acts as an admin key in the target project (the routes of the links need
    // project:admin): a JWT issued for that project to an admin key of the account, as
    // `POST /token/issue {project}` would issue it, so no key is made for the import. Only an
    // account without any admin key (none made by hand or at bootstrap) gets one, "orrery import".
    let key = await reads.adminKeyOf(boot.account.id, target.id);
    if (!key) {
      if (dryRun)
        throw new Error(
          `this account has no admin key; a dry run changes nothing, so create one first: orrery keys create --name import --role admin --project ${target.id}`,
        );
      key = await orrery.services.auth.createKey(admin, { name: 'orrery import', role: 'admin', project: target.id });
    }
    const keys = deriveKeys(await resolveSecret(local, db, orrery.database.dialect));
    const token = await signToken(
      keys.jwt,
      {
        account: boot.account,
        project: { id: target.id, name: target.name },
        keyId: key.id,
        role: 'admin',
        via: 'jwt',
      },
      address,
      24 * 3600,
    );
    const describe = `${orrery.database.describe}${local.blobUrl ? ` + ${local.blobUrl.split('?')[0]}` : ''}`;
    return {
      target: new HttpTarget(address, token, () => orrery.app.close(), describe),
      ...(boot.created && boot.key ? { createdAdminKey: boot.key } : {}),
    };
  } catch (err) {
    await orrery.app.close();
    throw err;
  }
}

/**
 * Migrations are frozen in time (style K7): each file takes `Kysely<any>` and the dialect name,
 * never today's types or helpers. Add a file for every change and list it here, in order; never
 * edit a shipped one.
 */
import type { Kysely, Migration, MigrationProvider } from 'kysely';
import type { DialectName } from './dialect.ts';
import * as m0001 from './migrations/0001-initial.ts';

type Step = { up: (db: Kysely<any>, dialect: DialectName) => Promise<void> };

const steps: Record<string, Step> = {
  '0001_initial': m0001,
};

export class OrreryMigrations implements MigrationProvider {
  constructor(private readonly dialect: DialectName) {}
  async getMigrations(): Promise<Record<string, Migration>> {
    return Object.fromEntries(
      Object.entries(steps).map(([name, step]) => [name, { up: (db: Kysely<any>) => step.up(db, this.dialect) }]),
    );
  }
}

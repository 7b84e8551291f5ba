/** The help text of `orrery import` and `orrery environments set-key`, apart: `orrery serve` prints it without loading the importer. */
import { KINDS } from './importer.ts';

export const IMPORT_USAGE = `  import --from URL --key KEY [--project ID|NAME] [--include KINDS] [--since ISO] [--dry-run]
         [--to URL --to-key KEY]
                                copy a project from Vertesia (or another Orrery) into this one: environments,
                                prompts, interactions (draft, published versions, tags), types, objects with
                                their content, and runs (as records) with --include …,runs. KEY is an API key
                                or a JWT of the source. Without --to it writes to the database configured here
                                (ORRERY_DATA_DIR / ORRERY_DATABASE_URL / ORRERY_BLOB_URL); with --to, to a running
                                server, as the admin key --to-key. Run it again to copy only what is new or
                                changed, or to finish an interrupted import. Exit code 1 when anything failed.
                                KINDS: ${KINDS.join(',')} (default: all but runs)
  environments set-key ENV [--project ID|NAME] [--api-key KEY] [--to URL --to-key KEY]
                                set the provider API key of environment ENV (id or name); without --api-key
                                it is read from standard input (keep it out of the shell history)
`;

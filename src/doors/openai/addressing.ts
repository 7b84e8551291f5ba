/**
 * Model addressing on the door: `model: "<environment name or id>/<model id>"`, split at the
 * first `/` (a model id may hold more); a bare model id, or one whose first segment names no
 * environment, runs on the project's default environment. The project's environments are read
 * once per change of its configuration (interactions/change-clock.ts), not on every call.
 */
import type { Principal } from '../../auth/principal.ts';
import type { ChangeClock } from '../../interactions/change-clock.ts';
import type { EnvironmentDto, EnvironmentService } from '../../interactions/environments.ts';
import { OpenAIRequestError } from './errors.ts';

export interface Addressed {
  env: EnvironmentDto;
  model: string;
}

/** The project's default environment (its configuration's `default_environment`), by id or name. */
export type DefaultEnvironment = (p: Principal) => Promise<string | undefined>;

/** How long a project's default environment is taken as read (it changes with its configuration, not the clock). */
const DEFAULT_TTL_MS = 1000;
/** Projects whose environments are kept at most; past this the cache starts over. */
const MAX_PROJECTS = 10_000;
/** A model address longer than this is refused (OpenAI's model ids are short). */
const MAX_MODEL_LENGTH = 512;

export class ModelAddressing {
  private readonly byProject = new Map<
    string,
    { version: number; byKey: Map<string, EnvironmentDto>; all: EnvironmentDto[]; until: number }
  >();
  /** Projects' default environments as last read (only those that have one: a missing one is read again). */
  private readonly defaults = new Map<string, { id: string; until: number }>();

  constructor(
    private readonly environments: EnvironmentService,
    private readonly changes: ChangeClock,
    private readonly defaultEnvironment: DefaultEnvironment,
  ) {}

  /** The project's environments (list order), from the cache while nothing changed. */
  async list(p: Principal): Promise<EnvironmentDto[]> {
    return (await this.project(p)).all;
  }

  async resolve(p: Principal, address: unknown): Promise<Addressed> {
    if (typeof address !== 'string' || !address.trim())
      throw new OpenAIRequestError("Missing required parameter: 'model'.", 'model', 'missing_required_parameter');
    if (address.length > MAX_MODEL_LENGTH)
      throw new OpenAIRequestError(
        `Invalid 'model': longer than ${MAX_MODEL_LENGTH} characters.`,
        'model',
        'invalid_value',
      );
    const known = await this.project(p);
    const slash = address.indexOf('/');
    if (slash > 0) {
      const env = known.byKey.get(address.slice(0, slash));
      const model = address.slice(slash + 1);
      if (env && model) return { env, model };
    }
    const defaultId = await this.defaultOf(p);
    const defaultEnv = defaultId && known.byKey.get(defaultId);
    if (defaultEnv) return { env: defaultEnv, model: address };
    const names = known.all
      .slice(0, 20)
      .map((e) => e.name)
      .join(', ');
    throw new OpenAIRequestError(
      `The model \`${address}\` does not exist or you do not have access to it: address a model as "<environment>/<model id>"` +
        (slash > 0 ? ` (no environment "${address.slice(0, slash)}" in this project` : ' (') +
        `${defaultId ? '' : '; the project has no default_environment for a bare model id'}); environments: ${names || 'none'}.`,
      'model',
      'model_not_found',
      404,
    );
  }

  /** The project's default environment, read when a bare model id needs it. */
  private async defaultOf(p: Principal): Promise<string | undefined> {
    const now = Date.now();
    const hit = this.defaults.get(p.project.id);
    if (hit && hit.until > now) return hit.id;
    const id = await this.defaultEnvironment(p);
    if (this.defaults.size > MAX_PROJECTS) this.defaults.clear();
    if (id) this.defaults.set(p.project.id, { id, until: now + DEFAULT_TTL_MS });
    else this.defaults.delete(p.project.id);
    return id;
  }

  private async project(p: Principal) {
    const version = this.changes.version(p.project.id);
    const now = Date.now();
    const hit = this.byProject.get(p.project.id);
    if (hit && hit.version === version && hit.until > now) return hit;
    const all = await this.environments.list(p);
    const byKey = new Map<string, EnvironmentDto>();
    // Ids first, then names: a name never hides an id.
    for (const e of all) if (!byKey.has(e.name)) byKey.set(e.name, e);
    for (const e of all) byKey.set(e.id, e);
    const entry = { version, byKey, all, until: now + DEFAULT_TTL_MS };
    if (this.byProject.size > MAX_PROJECTS) this.byProject.clear();
    this.byProject.set(p.project.id, entry);
    return entry;
  }
}

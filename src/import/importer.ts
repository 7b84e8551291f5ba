/**
 * `orrery import`: copies a project kind by kind, references first (environments, prompts,
 * interactions, types, runs, objects), each item matched to its earlier copy by the import
 * links (source id → copy id, with the source version copied). An item whose link names the
 * version it has now is skipped; a changed one is updated in place; a new one is created and
 * linked right after. So a second run copies nothing, and an interrupted one resumes.
 */
import { createHash } from 'node:crypto';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ImportLink } from './links-store.ts';
import type { ImportedRun } from './service.ts';
import type { ImportTarget, Json } from './target.ts';
import type { SourceReader } from './source.ts';
import { SILENT, type KindProgress, type ProgressSink } from './progress.ts';

export const KINDS = ['environments', 'prompts', 'interactions', 'types', 'runs', 'objects'] as const;
export type Kind = (typeof KINDS)[number];
/** What `--include` defaults to: everything but runs (history, asked for explicitly). */
export const DEFAULT_KINDS: Kind[] = ['environments', 'prompts', 'interactions', 'types', 'objects'];

type LinkKind = ImportLink['kind'];
const LINK_KIND: Record<Kind, LinkKind> = {
  environments: 'environment',
  prompts: 'prompt',
  interactions: 'interaction',
  types: 'type',
  runs: 'run',
  objects: 'object',
};

export interface ImportOptions {
  include: Kind[];
  since?: Date;
  dryRun: boolean;
}

export interface Failure {
  kind: Kind;
  id: string;
  name?: string;
  reason: string;
}

interface Planned {
  kind: Kind;
  id: string;
  name?: string;
  action: 'create' | 'update';
}

export interface ImportSummary {
  source: string;
  target: string;
  project: { id: string; name: string };
  dryRun: boolean;
  kinds: Partial<Record<Kind, KindProgress>>;
  failures: Failure[];
  /** Environments whose copy has no API key: `orrery environments set-key` them. */
  keysNeeded: Array<{ id: string; name: string; provider: string }>;
  /** Dry run: what would be copied. */
  planned: Planned[];
  /** Things that need a look but are not failures. */
  notes: string[];
}

const KEYLESS = new Set(['test', 'virtual_lb', 'virtual_mediator']);
/** What changes when the source item changes. */
const versionOf = (x: Json) => String(x.updated_at ?? x.edit_revision ?? '');

export class Importer {
  private readonly links = new Map<string, ImportLink>();
  private readonly summary: ImportSummary;
  private sourceKey = '';

  constructor(
    private readonly source: SourceReader,
    private readonly target: ImportTarget,
    private readonly opts: ImportOptions,
    private readonly progress: ProgressSink = SILENT,
  ) {
    this.summary = {
      source: source.url,
      target: target.describe,
      project: { id: '', name: '' },
      dryRun: opts.dryRun,
      kinds: {},
      failures: [],
      keysNeeded: [],
      planned: [],
      notes: [],
    };
  }

  async run(): Promise<ImportSummary> {
    this.sourceKey = this.source.url;
    this.summary.project = await this.target.project();
    for (const l of await this.target.links(this.sourceKey)) this.links.set(`${l.kind}:${l.source_id}`, l);
    for (const kind of KINDS) {
      if (!this.opts.include.includes(kind)) continue;
      const p: KindProgress = { kind, done: 0, copied: 0, skipped: 0, failed: 0, bytes: 0, finished: false };
      this.summary.kinds[kind] = p;
      this.progress.update(p);
      try {
        await this[kind](p);
      } catch (err) {
        // Listing the source failed: the kind stops here; what was copied stays linked.
        this.fail(p, { kind, id: '*', reason: `could not list the source's ${kind}: ${messageOf(err)}` });
      }
      p.finished = true;
      this.progress.update(p);
    }
    this.progress.end();
    return this.summary;
  }

  // ---- helpers ----

  private link(kind: LinkKind, sourceId: string): ImportLink | undefined {
    return this.links.get(`${kind}:${sourceId}`);
  }

  private mapped(kind: LinkKind, sourceId: string | undefined | null): string | undefined {
    return sourceId ? this.link(kind, sourceId)?.target_id : undefined;
  }

  private async remember(kind: LinkKind, sourceId: string, targetId: string, version: string | null): Promise<void> {
    const link: ImportLink = { kind, source_id: sourceId, target_id: targetId, source_version: version };
    await this.target.putLink(this.sourceKey, link);
    this.links.set(`${kind}:${sourceId}`, link);
  }

  private fail(p: KindProgress, f: Failure): void {
    p.failed++;
    this.summary.failures.push(f);
    this.progress.note(`failed: ${f.kind} ${f.name ? `"${f.name}" ` : ''}(${f.id}): ${f.reason}`);
  }

  private selected(item: Json): boolean {
    return !this.opts.since || !item.updated_at || Date.parse(item.updated_at) >= this.opts.since.getTime();
  }

  /**
   * The common step: skip when the link names this version and the copy still exists; plan it
   * on a dry run; otherwise update the copy (or create it when it is gone) and link it.
   */
  private async copyOne(
    p: KindProgress,
    kind: Kind,
    item: Json,
    version: string,
    collection: string | null,
    write: (existing: string | undefined) => Promise<string>,
  ): Promise<string | undefined> {
    const lk = LINK_KIND[kind];
    const link = this.link(lk, item.id);
    try {
      const exists = link && (collection === null || (await this.target.get(collection, link.target_id)) !== undefined);
      if (exists && link.source_version === version) {
        p.skipped++;
        return link.target_id;
      }
      if (this.opts.dryRun) {
        this.summary.planned.push({ kind, id: item.id, name: item.name, action: exists ? 'update' : 'create' });
        p.copied++;
        return link?.target_id;
      }
      const targetId = await write(exists ? link.target_id : undefined);
      await this.remember(lk, item.id, targetId, version);
      p.copied++;
      return targetId;
    } catch (err) {
      this.fail(p, { kind, id: item.id, name: item.name, reason: messageOf(err) });
      return undefined;
    } finally {
      p.done++;
      this.progress.update(p);
    }
  }

  // ---- kinds ----

  private async environments(p: KindProgress): Promise<void> {
    const all = (await this.source.environments()).filter((e) => this.selected(e));
    p.total = all.length;
    // Virtual environments name other environments in their config: those go first.
    const ordered = [
      ...all.filter((e) => !String(e.provider).startsWith('virtual_')),
      ...all.filter((e) => String(e.provider).startsWith('virtual_')),
    ];
    for (const env of ordered) {
      const envIds = new Map(
        [...this.links.values()].filter((l) => l.kind === 'environment').map((l) => [l.source_id, l.target_id]),
      );
      const body: Json = {
        name: env.name,
        provider: env.provider,
        description: env.description ?? null,
        endpoint_url: env.endpoint_url ?? null,
        default_model: env.default_model ?? null,
        enabled_models: env.enabled_models ?? [],
        config: replaceIds(env.config ?? {}, envIds),
      };
      const id = await this.copyOne(
        p,
        'environments',
        env,
        versionOf(env),
        'environments',
        async (existing) =>
          (existing
            ? await this.target.update('environments', existing, body)
            : await this.target.create('environments', body)
          ).id,
      );
      if (!KEYLESS.has(env.provider)) {
        const copy = id ? await this.target.get('environments', id).catch(() => undefined) : undefined;
        if (!copy?.has_api_key)
          this.summary.keysNeeded.push({
            id: id ?? `(not copied yet: source ${env.id})`,
            name: env.name,
            provider: env.provider,
          });
      }
    }
  }

  private async prompts(p: KindProgress): Promise<void> {
    const all = (await this.source.prompts()).filter((x) => this.selected(x));
    p.total = all.length;
    for (const t of all) {
      const body: Json = {
        name: t.name,
        role: t.role,
        content: t.content,
        content_type: t.content_type,
        description: t.description ?? null,
        ...(t.inputSchema ? { inputSchema: t.inputSchema } : {}),
        tags: t.tags ?? [],
        ...(t.test_data !== undefined ? { test_data: t.test_data } : {}),
      };
      await this.copyOne(
        p,
        'prompts',
        t,
        versionOf(t),
        'prompts',
        async (existing) =>
          (existing ? await this.target.update('prompts', existing, body) : await this.target.create('prompts', body))
            .id,
      );
    }
  }

  /** The segments of a draft: templates that were copied become references to the copies, the rest inline templates. */
  private segments(prompts: Json[] | undefined, inlineAll: boolean): Json[] {
    return (prompts ?? []).map((s) => {
      const t = s.template;
      const seg: Json = {
        type: s.type ?? 'template',
        ...(s.configuration !== undefined ? { configuration: s.configuration } : {}),
      };
      if (typeof t === 'string') {
        const id = this.mapped('prompt', t);
        if (!id) throw new Error(`its prompt template ${t} was not copied (not in --include, or it failed)`);
        seg.template = id;
      } else if (t && typeof t === 'object') {
        const id = this.mapped('prompt', t.id);
        if (id && !inlineAll) seg.template = id;
        else if (t.content !== undefined) {
          seg.template = {
            name: t.name,
            role: t.role,
            content: t.content,
            content_type: t.content_type,
            ...(t.inputSchema ? { inputSchema: t.inputSchema } : {}),
          };
        } else if (id) seg.template = id;
        else throw new Error(`its prompt template ${t.id} was not copied (not in --include, or it failed)`);
      }
      return seg;
    });
  }

  private interactionBody(x: Json, inlineAll: boolean): Json {
    const environment = x.environment
      ? this.mapped('environment', typeof x.environment === 'object' ? x.environment.id : x.environment)
      : null;
    if (x.environment && !environment)
      throw new Error(
        `its environment ${typeof x.environment === 'object' ? x.environment.id : x.environment} was not copied`,
      );
    return {
      name: x.name,
      description: x.description ?? null,
      prompts: this.segments(x.prompts, inlineAll),
      environment: environment ?? null,
      model: x.model ?? null,
      model_options: x.model_options ?? null,
      result_schema: x.result_schema ?? null,
      interaction_schema: x.interaction_schema ?? null,
      cache_policy: x.cache_policy ?? null,
      temperature: x.temperature ?? null,
      max_tokens: x.max_tokens ?? null,
      restriction: x.restriction ?? null,
      ...(x.test_data !== undefined ? { test_data: x.test_data } : {}),
      tags: x.tags ?? [],
      visibility: x.visibility ?? 'private',
    };
  }

  private async interactions(p: KindProgress): Promise<void> {
    const all = (await this.source.interactions()).filter(
      (x) => this.selected(x.draft) || x.versions.some((v) => this.selected(v)),
    );
    p.total = all.length;
    for (const { draft, versions } of all) {
      // The version: the draft's, and every published version's id (a new version changes it).
      const version = [versionOf(draft), ...versions.map((v) => v.id)].join('|');
      await this.copyOne(p, 'interactions', draft, version, 'interactions', async (existing) => {
        const id =
          existing ??
          (
            await this.target.create('interactions', {
              ...this.interactionBody(draft, false),
              endpoint: draft.endpoint,
              status: 'draft',
            })
          ).id;
        // Published versions, oldest first: the draft takes each version's content (its
        // templates inline, as a published version holds them), then is published with its tags.
        const have = new Map((await this.target.versions(id)).map((v) => [v.version, v.id]));
        for (const v of versions) {
          if (this.link('interaction_version', v.id)) continue;
          let copy = have.get(v.version);
          if (!copy) {
            await this.target.update('interactions', id, this.interactionBody(v, true));
            copy = (await this.target.publish(id, { tags: v.tags ?? [], visibility: v.visibility })).id as string;
            if ((await this.target.get('interactions', copy))?.version !== v.version) {
              this.summary.notes.push(
                `interaction "${draft.name}": source version ${v.version} became version ${(await this.target.get('interactions', copy))?.version} (the source skips numbers)`,
              );
            }
          }
          await this.remember('interaction_version', v.id, copy, v.updated_at ?? null);
        }
        await this.target.update('interactions', id, {
          ...this.interactionBody(draft, false),
          ...(draft.status === 'archived' ? { status: 'archived' } : {}),
        });
        return id;
      });
    }
  }

  private async types(p: KindProgress): Promise<void> {
    const all = (await this.source.types()).filter((x) => this.selected(x));
    p.total = all.length;
    for (const t of all) {
      const body: Json = {
        name: t.name,
        description: t.description ?? null,
        tags: t.tags ?? [],
        object_schema: t.object_schema ?? null,
        table_layout: t.table_layout ?? null,
        ...pick(t, ['is_chunkable', 'strict_mode', 'status', 'intake', 'editing']),
      };
      await this.copyOne(
        p,
        'types',
        t,
        versionOf(t),
        'types',
        async (existing) =>
          (existing ? await this.target.update('types', existing, body) : await this.target.create('types', body)).id,
      );
    }
  }

  private async runs(p: KindProgress): Promise<void> {
    for await (const ref of this.source.runRefs(this.opts.since)) await this.copyRun(p, ref, 0);
  }

  /**
   * One source run. A run that continues another (`previous_run`, a turn of a conversation) is
   * copied after the run it continues, so that the copy's chain is whole: the source lists runs
   * newest first, so the earlier turns are fetched and copied first, at most MAX_CHAIN of them.
   */
  private async copyRun(p: KindProgress, ref: Json, depth: number, fetched?: Json): Promise<void> {
    const version = String(ref.updated_at ?? '');
    if (this.link('run', ref.id)?.source_version === version) {
      p.skipped++;
      p.done++;
      this.progress.update(p);
      return;
    }
    if (ref.status !== 'completed' && ref.status !== 'failed') {
      p.done++;
      this.summary.notes.push(`run ${ref.id} is "${ref.status}", not ended: not copied`);
      return;
    }
    await this.copyOne(p, 'runs', { ...ref, name: undefined }, version, null, async () => {
      const run = fetched ?? (await this.source.run(ref.id));
      const previous = await this.previousOf(p, run, depth);
      const interactionId = idOf(run.interaction);
      const interaction =
        this.mapped('interaction', interactionId) ?? this.mapped('interaction_version', interactionId);
      if (!interaction) throw new Error(`its interaction ${interactionId} was not copied`);
      const envId = idOf(run.environment);
      const environment = envId ? this.mapped('environment', envId) : undefined;
      if (envId && !environment) throw new Error(`its environment ${envId} was not copied`);
      if (run.conversation !== undefined && !previous && !isOrreryConversation(run.conversation)) {
        // A Vertesia run's conversation is its driver's own state; Orrery rebuilds a history from
        // its runs, so the copy starts a conversation at this run's prompt and answer.
        this.summary.notes.push(
          `run ${ref.id}: its conversation state is not copied; continuing the copy starts from its prompt and answer`,
        );
      }
      const imported: ImportedRun = {
        status: run.status,
        interaction: { id: interaction },
        environment: environment ? { id: environment } : null,
        modelId: run.modelId ?? run.model ?? null,
        parent: this.mapped('run', run.parent) ?? null,
        finish_reason: run.finish_reason ?? null,
        execution_time: run.execution_time ?? null,
        token_use: run.token_use ?? null,
        tags: run.tags ?? [],
        result: run.result,
        parameters: run.parameters,
        prompt: run.prompt,
        config: run.config ?? {},
        error: run.error ?? null,
        source: run.source ?? null,
        ttl: run.ttl ?? null,
        result_schema: run.result_schema ?? null,
        cost: run.cost ?? null,
        ...(Array.isArray(run.tool_use) && run.tool_use.length ? { tool_use: run.tool_use } : {}),
        ...(previous ? { previous_run: previous } : {}),
        created_by: run.created_by,
        created_at: run.created_at,
        updated_at: run.updated_at,
      };
      return (await this.target.importRun(this.sourceKey, ref.id, version, imported)).id;
    });
  }

  /** The copy of the run `run` continues, copied first when it is not yet; undefined for a first run. */
  private async previousOf(p: KindProgress, run: Json, depth: number): Promise<string | undefined> {
    const prevId = idOf(run.previous_run);
    if (!prevId) return undefined;
    if (!this.mapped('run', prevId)) {
      if (depth >= MAX_CHAIN)
        throw new Error(`its conversation has more than ${MAX_CHAIN} turns before it that are not copied yet`);
      const prev = await this.source.run(prevId).catch((err) => {
        throw new Error(`it continues run ${prevId}, which the source could not give: ${messageOf(err)}`);
      });
      await this.copyRun(p, prev, depth + 1, prev);
    }
    const copy = this.mapped('run', prevId);
    if (!copy) throw new Error(`it continues run ${prevId}, which was not copied`);
    return copy;
  }

  private async objects(p: KindProgress): Promise<void> {
    // Oldest first, so that a parent is copied before its children.
    const refs: Json[] = [];
    for await (const r of this.source.objectRefs()) if (this.selected(r)) refs.push(r);
    refs.sort((a, b) => String(a.created_at).localeCompare(String(b.created_at)));
    p.total = refs.length;
    for (const ref of refs) {
      const known = this.link('object', ref.id);
      // Trust the link for unchanged objects (no request per object on a second run).
      if (known && ref.updated_at && known.source_version?.split('|')[0] === String(ref.updated_at)) {
        p.skipped++;
        p.done++;
        this.progress.update(p);
        continue;
      }
      const obj = await this.source.object(ref.id).catch((err) => ({ id: ref.id, name: ref.name, error: err }) as Json);
      if (obj.error instanceof Error) {
        this.fail(p, { kind: 'objects', id: ref.id, name: ref.name, reason: messageOf(obj.error) });
        p.done++;
        continue;
      }
      const version = objectVersion(obj);
      await this.copyOne(p, 'objects', obj, version, 'objects', async (existing) => {
        const body: Json = {
          name: obj.name,
          description: obj.description ?? null,
          tags: obj.tags ?? [],
          properties: obj.properties ?? {},
          ...(obj.metadata ? { metadata: obj.metadata } : {}),
          external_id: obj.external_id ?? null,
          location: obj.location ?? '/',
          ...(obj.tokens ? { tokens: obj.tokens } : {}),
        };
        const typeId = idOf(obj.type);
        if (typeId) {
          const t = this.mapped('type', typeId);
          if (t) body.type = t;
          else
            this.summary.notes.push(
              `object "${obj.name}" (${obj.id}): its type ${typeId} was not copied; the copy has no type`,
            );
        }
        const parent = this.mapped('object', idOf(obj.parent));
        if (parent) body.parent = parent;
        const run = this.mapped('run', idOf(obj.run));
        if (run) body.run = run;
        const content = obj.content as Json | undefined;
        if (content?.source) {
          const previous = known?.source_version?.split('|')[1];
          // Same bytes as the copy already holds: keep its content as it is.
          if (!(existing && previous !== undefined && previous === String(content.etag ?? ''))) {
            body.content = {
              source: await this.copyContent(p, obj, content),
              type: content.type,
              name: content.name ?? obj.name,
            };
          }
        } else if (existing) body.content = null;
        return (
          existing ? await this.target.update('objects', existing, body) : await this.target.create('objects', body)
        ).id;
      });
    }
  }

  /** Streams one object's content from the source's signed URL into the target's store. */
  private async copyContent(p: KindProgress, obj: Json, content: Json): Promise<string> {
    const download = await this.source.download(content.source, content.name);
    const counted = new Transform({
      transform: (chunk: Buffer, _enc, done) => {
        p.bytes += chunk.byteLength;
        this.progress.update(p);
        done(null, chunk);
      },
    });
    // A source that fails mid-object fails the upload too (the target then keeps nothing); the
    // error is reported by the upload, so the streams' own error events are expected, not thrown.
    download.body.on('error', () => {});
    counted.on('error', () => {});
    const piping = pipeline(download.body, counted).catch(() => {});
    // One key per source object and content version: a resumed upload overwrites its own
    // earlier attempt instead of leaving a second file.
    const key = `imported-${createHash('sha256')
      .update(`${this.sourceKey}\n${obj.id}\n${content.etag ?? obj.updated_at ?? ''}`)
      .digest('hex')
      .slice(0, 32)}`;
    try {
      return await this.target.upload(
        key,
        content.name ?? obj.name,
        content.type ?? 'application/octet-stream',
        download.size,
        counted,
      );
    } finally {
      // The upload failed first: let go of the source's connection.
      download.body.destroy();
      await piping;
    }
  }
}

/** The most earlier turns of one conversation an import copies ahead of a run. */
const MAX_CHAIN = 100_000;

/** An answer's conversation made by an Orrery server: its history is the chain of runs, copied through previous_run. */
const isOrreryConversation = (c: unknown): boolean =>
  c === null || (typeof c === 'object' && (c as Json).orrery_conversation !== undefined);

const objectVersion = (o: Json) => `${o.updated_at ?? ''}|${o.content?.etag ?? ''}`;

const idOf = (v: unknown): string | undefined =>
  typeof v === 'string'
    ? v
    : v && typeof v === 'object' && typeof (v as Json).id === 'string'
      ? (v as Json).id
      : undefined;

const pick = (o: Json, keys: string[]): Json =>
  Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]]));

/** Every string of `value` that is a source id in `ids`, replaced by its copy's id. */
function replaceIds(value: unknown, ids: Map<string, string>): any {
  if (typeof value === 'string') return ids.get(value) ?? value;
  if (Array.isArray(value)) return value.map((v) => replaceIds(v, ids));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replaceIds(v, ids)]));
  return value;
}

export const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

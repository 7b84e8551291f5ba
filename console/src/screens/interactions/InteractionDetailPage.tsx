/**
 * One interaction (issue 19, point 4): its prompt segments (stored or inline templates:
 * handlebars, jst, text) in code editors, its input schema and result_schema as JSON editors
 * (checked before saving), its environment and model; save the draft, publish a version with
 * tags, the versions; and the playground beside the editor (Playground.tsx).
 */
import { useEffect, useMemo, useRef, useState } from 'react';
import { getRouteApi, Link } from '@tanstack/react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Page, Loading } from '../../components/Page.tsx';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import { DataTable, columnHelper } from '../../components/DataTable.tsx';
import { CodeEditor } from '../../components/CodeEditor.tsx';
import {
  api,
  CONTENT_TYPES,
  formatDate,
  languageOf,
  parseSchema,
  pretty,
  ROLES,
  tagList,
  type ContentType,
  type Interaction,
  type InteractionRef,
  type Role,
} from './model.ts';
import { Playground } from './Playground.tsx';
import './forms.css';
import './interactions.css';
import { EnvironmentOptions } from './EnvironmentOptions.tsx';

const route = getRouteApi('/_app/interactions/$interactionId');

/** A segment being edited: a stored prompt template (saved with PUT /prompts/:id) or an inline one. */
export interface EditSegment {
  key: string;
  kind: 'stored' | 'inline';
  /** The stored prompt template's id. */
  promptId?: string;
  type: 'template' | 'chat';
  name: string;
  role: Role;
  content_type: ContentType;
  content: string;
  configuration?: unknown;
  inputSchema?: Record<string, unknown>;
}

interface EditState {
  name: string;
  environment: string;
  model: string;
  segments: EditSegment[];
  inputSchema: string;
  resultSchema: string;
}

let keySeq = 0;
const nextKey = () => `seg-${++keySeq}`;

/**
 * Orrery expands a stored reference with the prompt's own id, and an inline template with the
 * segment's id (or the id it was given): a template id other than the segment's is a stored one.
 */
function stateOf(i: Interaction): EditState {
  return {
    name: i.name,
    environment: i.environment ?? '',
    model: i.model ?? '',
    segments: i.prompts
      .filter((s) => s.template)
      .map((s) => {
        const t = s.template!;
        const stored = i.status !== 'published' && t.id !== s.id;
        return {
          key: nextKey(),
          kind: stored ? 'stored' : 'inline',
          ...(stored ? { promptId: t.id } : {}),
          type: s.type,
          name: t.name,
          role: t.role,
          content_type: t.content_type,
          content: t.content,
          ...(s.configuration !== undefined ? { configuration: s.configuration } : {}),
          ...(t.inputSchema ? { inputSchema: t.inputSchema } : {}),
        } satisfies EditSegment;
      }),
    inputSchema: pretty(i.interaction_schema),
    resultSchema: pretty(i.result_schema),
  };
}

const comparable = (s: EditState) =>
  JSON.stringify({ ...s, segments: s.segments.map(({ key: _key, ...rest }) => rest) });

export function InteractionDetailPage() {
  const { interactionId } = route.useParams();
  // A fresh editor (and playground) per interaction or version.
  return <InteractionDetail key={interactionId} interactionId={interactionId} />;
}

function InteractionDetail({ interactionId }: { interactionId: string }) {
  const qc = useQueryClient();
  const ix = useQuery({ queryKey: ['interaction', interactionId], queryFn: () => api.interaction(interactionId) });
  const [base, setBase] = useState<{ rev: string; state: EditState } | null>(null);
  const [edit, setEdit] = useState<EditState | null>(null);
  const [saveTried, setSaveTried] = useState(false);

  // (Re)load the editor from the server when the interaction first arrives or changes on the server.
  // Edits in progress are kept when it changed elsewhere: a notice offers to load the new one.
  const rev = ix.data ? `${ix.data.id}:${ix.data.edit_revision}:${ix.data.updated_at}` : '';
  const ownSave = useRef(false);
  const [changedElsewhere, setChangedElsewhere] = useState(false);
  const load = () => {
    if (!ix.data) return;
    const s = stateOf(ix.data);
    setBase({ rev, state: s });
    setEdit(s);
    setSaveTried(false);
    setChangedElsewhere(false);
  };
  useEffect(() => {
    if (!ix.data || base?.rev === rev) return;
    const mine = ownSave.current;
    ownSave.current = false;
    if (base && edit && !mine && comparable(edit) !== comparable(base.state)) setChangedElsewhere(true);
    else load();
  }, [rev]); // deps chosen on purpose: not every value read

  const inputSchema = useMemo(() => parseSchema(edit?.inputSchema ?? ''), [edit?.inputSchema]);
  const resultSchema = useMemo(() => parseSchema(edit?.resultSchema ?? ''), [edit?.resultSchema]);
  const dirty = !!edit && !!base && comparable(edit) !== comparable(base.state);
  const readOnly = ix.data?.status === 'published';
  // Leaving the page (reload, close) with unsaved edits asks first.
  useEffect(() => {
    if (!dirty) return;
    const warn = (e: BeforeUnloadEvent) => e.preventDefault();
    window.addEventListener('beforeunload', warn);
    return () => window.removeEventListener('beforeunload', warn);
  }, [dirty]);

  const save = useMutation({
    mutationFn: async () => {
      const i = ix.data!;
      const s = edit!;
      const before = new Map(base!.state.segments.filter((x) => x.promptId).map((x) => [x.promptId!, x]));
      // Stored templates first (their syntax is checked on save), then the interaction.
      for (const seg of s.segments) {
        if (seg.kind !== 'stored' || !seg.promptId) continue;
        const old = before.get(seg.promptId);
        if (
          old &&
          old.content === seg.content &&
          old.role === seg.role &&
          old.content_type === seg.content_type &&
          old.name === seg.name
        )
          continue;
        await api.updatePrompt(seg.promptId, {
          name: seg.name,
          role: seg.role,
          content_type: seg.content_type,
          content: seg.content,
        });
      }
      return api.updateInteraction(i.id, {
        name: s.name.trim(),
        environment: s.environment || null,
        model: s.model || null,
        interaction_schema: inputSchema.value ?? null,
        result_schema: resultSchema.value ?? null,
        prompts: s.segments.map((seg) => ({
          type: seg.type,
          ...(seg.configuration !== undefined ? { configuration: seg.configuration } : {}),
          template:
            seg.kind === 'stored'
              ? seg.promptId
              : {
                  name: seg.name,
                  role: seg.role,
                  content_type: seg.content_type,
                  content: seg.content,
                  ...(seg.inputSchema ? { inputSchema: seg.inputSchema } : {}),
                },
        })),
        expected_edit_revision: i.edit_revision,
      });
    },
    onSuccess: (saved) => {
      ownSave.current = true;
      qc.setQueryData(['interaction', saved.id], saved);
      void qc.invalidateQueries({ queryKey: ['interactions'] });
      void qc.invalidateQueries({ queryKey: ['prompts'] });
      void qc.invalidateQueries({ queryKey: ['render'] });
    },
  });

  /** Checks, then saves; answers whether the draft is saved. */
  const saveDraft = async (): Promise<boolean> => {
    setSaveTried(true);
    if (!edit || inputSchema.error || resultSchema.error || !edit.name.trim()) return false;
    save.reset();
    try {
      await save.mutateAsync();
      return true;
    } catch {
      return false;
    }
  };

  if (ix.error)
    return (
      <Page title="Interaction">
        <ErrorBanner error={ix.error} onRetry={() => void ix.refetch()} />
      </Page>
    );
  if (ix.isPending || !edit)
    return (
      <Page title="Interaction">
        <Loading />
      </Page>
    );
  const i = ix.data;
  const set = (patch: Partial<EditState>) => setEdit((s) => (s ? { ...s, ...patch } : s));
  const setSegment = (key: string, patch: Partial<EditSegment>) =>
    setEdit((s) => (s ? { ...s, segments: s.segments.map((x) => (x.key === key ? { ...x, ...patch } : x)) } : s));
  const invalid = !!(inputSchema.error || resultSchema.error);

  return (
    <Page
      title={i.status === 'published' ? `${i.name} v${i.version}` : i.name}
      wide
      actions={
        readOnly ? undefined : (
          <>
            <span className="muted save-state" role="status">
              {save.isPending
                ? 'Saving…'
                : dirty
                  ? 'Unsaved changes'
                  : save.isSuccess
                    ? 'Saved'
                    : `Draft · revision ${i.edit_revision}`}
            </span>
            <button type="button" onClick={() => void saveDraft()} disabled={save.isPending || !dirty}>
              Save draft
            </button>
          </>
        )
      }
    >
      <p className="muted ix-meta">
        <Link to="/interactions">Interactions</Link> · endpoint <span className="mono">{i.endpoint}</span> · {i.status}
        {readOnly && (
          <>
            {' '}
            · a published version is read-only
            {(i as { parent?: string }).parent && (
              <>
                :{' '}
                <Link to="/interactions/$interactionId" params={{ interactionId: (i as { parent?: string }).parent! }}>
                  edit the draft
                </Link>
              </>
            )}
          </>
        )}
      </p>
      {saveTried && invalid && (
        <div className="error-banner" role="alert">
          Not saved: {inputSchema.error ? 'the input schema' : 'the result schema'} is invalid (see below).
        </div>
      )}
      {save.error && <ErrorBanner error={save.error} title="Not saved" />}
      {changedElsewhere && (
        <div className="error-banner" role="alert">
          This interaction was changed elsewhere; saving would be refused.{' '}
          <button type="button" className="link" onClick={load}>
            Load the new version (drops your edits)
          </button>
        </div>
      )}
      <div className="ix-layout">
        <div className="ix-editor">
          <section className="card" aria-labelledby="ix-settings-title">
            <h2 id="ix-settings-title">Settings</h2>
            <Settings edit={edit} set={set} readOnly={readOnly} />
          </section>
          <section className="card" aria-labelledby="ix-prompt-title">
            <h2 id="ix-prompt-title">Prompt</h2>
            {edit.segments.length === 0 && <p className="muted">No segment: add a template.</p>}
            {edit.segments.map((seg, n) => (
              <SegmentEditor
                key={seg.key}
                seg={seg}
                index={n}
                readOnly={readOnly}
                onChange={(patch) => setSegment(seg.key, patch)}
                onRemove={() => set({ segments: edit.segments.filter((x) => x.key !== seg.key) })}
                onMove={(d) => {
                  const list = [...edit.segments];
                  const [x] = list.splice(n, 1);
                  list.splice(Math.max(0, Math.min(list.length, n + d)), 0, x);
                  set({ segments: list });
                }}
                last={n === edit.segments.length - 1}
              />
            ))}
            {!readOnly && (
              <AddSegment interactionName={i.name} onAdd={(seg) => set({ segments: [...edit.segments, seg] })} />
            )}
          </section>
          <section className="card" aria-labelledby="ix-schemas-title">
            <h2 id="ix-schemas-title">Schemas</h2>
            <SchemaEditor
              label="Input schema"
              help="JSON schema of the data a run gets (empty: none)."
              value={edit.inputSchema}
              error={inputSchema.error}
              readOnly={readOnly}
              onChange={(v) => set({ inputSchema: v })}
            />
            <SchemaEditor
              label="Result schema"
              help="JSON schema of the answer (result_schema; empty: free text)."
              value={edit.resultSchema}
              error={resultSchema.error}
              readOnly={readOnly}
              onChange={(v) => set({ resultSchema: v })}
            />
          </section>
          <Versions interaction={i} dirty={dirty} />
        </div>
        <Playground
          key={i.id}
          interaction={i}
          segments={edit.segments}
          dirty={dirty && !readOnly}
          saveFirst={saveDraft}
        />
      </div>
    </Page>
  );
}

function Settings({
  edit,
  set,
  readOnly,
}: {
  edit: EditState;
  set: (p: Partial<EditState>) => void;
  readOnly: boolean;
}) {
  const envs = useQuery({ queryKey: ['environments'], queryFn: api.environments });
  const models = useQuery({
    queryKey: ['environment-models', edit.environment],
    queryFn: () => api.models(edit.environment),
    enabled: !!edit.environment,
    retry: false,
  });
  const modelIds = models.data?.map((m) => m.id) ?? [];
  return (
    <div className="settings-grid">
      <label>
        Name <input value={edit.name} onChange={(e) => set({ name: e.target.value })} readOnly={readOnly} required />
      </label>
      <label>
        Environment{' '}
        <select
          value={edit.environment}
          onChange={(e) => set({ environment: e.target.value, model: '' })}
          disabled={readOnly}
        >
          <option value="">(none)</option>
          <EnvironmentOptions environments={envs.data} />
        </select>
      </label>
      <label>
        Model{' '}
        <select
          value={edit.model}
          onChange={(e) => set({ model: e.target.value })}
          disabled={readOnly || !edit.environment}
        >
          <option value="">(the environment's default)</option>
          {edit.model && !modelIds.includes(edit.model) && <option value={edit.model}>{edit.model}</option>}
          {models.data?.map((m) => (
            <option key={m.id} value={m.id}>
              {m.id}
            </option>
          ))}
        </select>
      </label>
    </div>
  );
}

function SegmentEditor({
  seg,
  index,
  readOnly,
  onChange,
  onRemove,
  onMove,
  last,
}: {
  seg: EditSegment;
  index: number;
  readOnly: boolean;
  onChange: (p: Partial<EditSegment>) => void;
  onRemove: () => void;
  onMove: (d: number) => void;
  last: boolean;
}) {
  const n = index + 1;
  return (
    <fieldset className="segment">
      <legend>
        Segment {n} · {seg.kind === 'stored' ? 'stored template' : 'inline template'} “{seg.name}”
      </legend>
      <div className="segment-fields">
        <label>
          Role{' '}
          <select
            value={seg.role}
            onChange={(e) => onChange({ role: e.target.value as Role })}
            disabled={readOnly}
            aria-label={`Role of segment ${n}`}
          >
            {ROLES.map((r) => (
              <option key={r}>{r}</option>
            ))}
          </select>
        </label>
        <label>
          Content type{' '}
          <select
            value={seg.content_type}
            onChange={(e) => onChange({ content_type: e.target.value as ContentType })}
            disabled={readOnly}
            aria-label={`Content type of segment ${n}`}
          >
            {CONTENT_TYPES.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </label>
        {!readOnly && (
          <span className="segment-actions">
            <button
              type="button"
              className="link"
              onClick={() => onMove(-1)}
              disabled={index === 0}
              aria-label={`Move segment ${n} up`}
            >
              Up
            </button>
            <button
              type="button"
              className="link"
              onClick={() => onMove(1)}
              disabled={last}
              aria-label={`Move segment ${n} down`}
            >
              Down
            </button>
            <button type="button" className="link" onClick={onRemove} aria-label={`Remove segment ${n}`}>
              Remove
            </button>
          </span>
        )}
      </div>
      <CodeEditor
        label={`Template ${n}`}
        value={seg.content}
        onChange={(content) => onChange({ content })}
        language={languageOf(seg.content_type)}
        readOnly={readOnly}
        minHeight="5rem"
      />
      {seg.kind === 'stored' && (
        <p className="muted hint">
          Saving the draft saves this template too (other interactions using it see the change).
        </p>
      )}
    </fieldset>
  );
}

function AddSegment({ interactionName, onAdd }: { interactionName: string; onAdd: (s: EditSegment) => void }) {
  const prompts = useQuery({ queryKey: ['prompts'], queryFn: api.prompts });
  const [pick, setPick] = useState('');
  const create = useMutation({
    mutationFn: () =>
      api.createPrompt({
        name: `${interactionName} ${new Date().toISOString().slice(11, 19)}`,
        role: 'user',
        content_type: 'handlebars',
        content: '{{question}}',
      }),
    onSuccess: (p) =>
      onAdd({
        key: nextKey(),
        kind: 'stored',
        promptId: p.id,
        type: 'template',
        name: p.name,
        role: p.role,
        content_type: p.content_type,
        content: p.content,
      }),
  });
  const existing = prompts.data?.find((p) => p.id === pick);
  return (
    <div className="add-segment">
      <button type="button" className="secondary" onClick={() => create.mutate()} disabled={create.isPending}>
        Add a new template
      </button>
      <span className="inline-row">
        <label htmlFor="ix-add-existing">or an existing one</label>
        <select id="ix-add-existing" value={pick} onChange={(e) => setPick(e.target.value)}>
          <option value="">(choose)</option>
          {prompts.data?.map((p) => (
            <option key={p.id} value={p.id}>
              {p.name} ({p.role}, {p.content_type})
            </option>
          ))}
        </select>
        <button
          type="button"
          className="secondary"
          disabled={!existing}
          onClick={() => {
            if (!existing) return;
            onAdd({
              key: nextKey(),
              kind: 'stored',
              promptId: existing.id,
              type: 'template',
              name: existing.name,
              role: existing.role,
              content_type: existing.content_type,
              content: existing.content,
            });
            setPick('');
          }}
        >
          Add
        </button>
      </span>
      {create.error && <ErrorBanner error={create.error} />}
    </div>
  );
}

function SchemaEditor({
  label,
  help,
  value,
  error,
  readOnly,
  onChange,
}: {
  label: string;
  help: string;
  value: string;
  error?: string;
  readOnly: boolean;
  onChange: (v: string) => void;
}) {
  const id = label.toLowerCase().replace(/\W+/g, '-');
  return (
    <div className="schema-editor">
      <h3 id={`${id}-title`}>{label}</h3>
      <p className="muted hint">{help}</p>
      <CodeEditor
        label={label}
        value={value}
        onChange={onChange}
        language="json"
        readOnly={readOnly}
        minHeight="6rem"
      />
      {error && (
        <p className="field-error" id={`${id}-error`}>
          {label}: {error}
        </p>
      )}
    </div>
  );
}

const vcol = columnHelper<InteractionRef>();
const versionColumns = [
  vcol.accessor('version', {
    header: 'Version',
    cell: (c) => (
      <Link to="/interactions/$interactionId" params={{ interactionId: c.row.original.id }}>
        v{c.getValue()}
      </Link>
    ),
  }),
  vcol.accessor((r) => r.tags.join(', '), {
    id: 'tags',
    header: 'Tags',
    cell: (c) =>
      c.row.original.tags.map((t) => (
        <span key={t} className="tag">
          {t}
        </span>
      )),
  }),
  vcol.accessor('updated_at', { header: 'Published', cell: (c) => formatDate(c.getValue()) }),
];

function Versions({ interaction, dirty }: { interaction: Interaction; dirty: boolean }) {
  const qc = useQueryClient();
  const versions = useQuery({
    queryKey: ['interaction-versions', interaction.id],
    queryFn: () => api.versions(interaction.id),
  });
  const [tags, setTags] = useState('');
  const publish = useMutation({
    mutationFn: () => api.publish(interaction.id, tagList(tags).length ? { tags: tagList(tags) } : {}),
    onSuccess: () => {
      setTags('');
      void qc.invalidateQueries({ queryKey: ['interaction-versions', interaction.id] });
      void qc.invalidateQueries({ queryKey: ['interactions'] });
      void qc.invalidateQueries({ queryKey: ['interactions-catalog'] });
    },
  });
  const isDraft = interaction.status !== 'published';
  return (
    <section className="card" aria-labelledby="ix-versions-title">
      <h2 id="ix-versions-title">Versions</h2>
      {isDraft && (
        <form
          className="inline-row publish-form"
          onSubmit={(e) => {
            e.preventDefault();
            publish.mutate();
          }}
        >
          <label htmlFor="ix-publish-tags">Version tags</label>
          <input
            id="ix-publish-tags"
            value={tags}
            onChange={(e) => setTags(e.target.value)}
            placeholder="production, v2 (comma-separated)"
            autoComplete="off"
          />
          <button type="submit" disabled={publish.isPending || dirty}>
            Publish version
          </button>
        </form>
      )}
      {isDraft && dirty && <p className="muted hint">Save the draft before publishing it.</p>}
      {publish.error && <ErrorBanner error={publish.error} title="Not published" />}
      {publish.isSuccess && <p role="status">Published version {publish.data.version}.</p>}
      {versions.error ? (
        <ErrorBanner error={versions.error} onRetry={() => void versions.refetch()} />
      ) : versions.isPending ? (
        <Loading />
      ) : (
        <DataTable
          label="Versions"
          data={versions.data}
          columns={versionColumns}
          getRowId={(v) => v.id}
          height="16rem"
          empty="Not published yet."
        />
      )}
    </section>
  );
}

/**
 * Interactions (issue 19, point 4): the list (name, version and status, tags, updated), creating
 * one (name, environment, model: it gets a stored prompt template and an input schema to start
 * from), and the project's prompt templates (list, create, edit).
 */
import { useEffect, useMemo, useState, type FormEvent } from 'react';
import { getRouteApi, Link, useNavigate } from '@tanstack/react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { apiFetch } from '../../api/client.ts';
import { Page, Loading } from '../../components/Page.tsx';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import { DataTable, columnHelper } from '../../components/DataTable.tsx';
import { CodeEditor } from '../../components/CodeEditor.tsx';
import {
  api,
  CONTENT_TYPES,
  formatDate,
  languageOf,
  ROLES,
  type ContentType,
  type InteractionRef,
  type PromptTemplate,
  type Role,
} from './model.ts';
import './forms.css';
import './interactions.css';
import { EnvironmentOptions } from './EnvironmentOptions.tsx';

const route = getRouteApi('/_app/interactions');

interface Row extends InteractionRef {
  published?: number;
}

const col = columnHelper<Row>();
const columns = [
  col.accessor('name', {
    header: 'Name',
    cell: (c) => (
      <Link to="/interactions/$interactionId" params={{ interactionId: c.row.original.id }}>
        {c.getValue()}
      </Link>
    ),
  }),
  col.accessor((r) => (r.published ? `v${r.published} published` : r.status), {
    id: 'version',
    header: 'Version / status',
    cell: (c) => (
      <span className={c.row.original.published ? 'status-published' : `status-${c.row.original.status}`}>
        {c.getValue()}
      </span>
    ),
  }),
  col.accessor((r) => r.tags.join(', '), {
    id: 'tags',
    header: 'Tags',
    cell: (c) =>
      c.row.original.tags.map((t) => (
        <span key={t} className="tag">
          {t}
        </span>
      )),
  }),
  col.accessor('updated_at', { header: 'Updated', cell: (c) => formatDate(c.getValue()) }),
];

export function InteractionsPage() {
  const search = route.useSearch();
  const navigate = route.useNavigate();
  const list = useQuery({ queryKey: ['interactions'], queryFn: api.interactions });
  const catalog = useQuery({
    queryKey: ['interactions-catalog'],
    queryFn: () =>
      apiFetch<{ id: string; name: string; version: number; published: boolean }[]>('/interactions/catalog'),
  });
  const rows = useMemo<Row[]>(() => {
    const published = new Map((catalog.data ?? []).filter((e) => e.published).map((e) => [e.name, e.version]));
    const q = search.q?.toLowerCase();
    return (list.data ?? [])
      .filter((i) => !q || i.name.toLowerCase().includes(q) || i.endpoint.toLowerCase().includes(q))
      .map((i) => ({ ...i, published: published.get(i.endpoint) }));
  }, [list.data, catalog.data, search.q]);

  return (
    <Page title="Interactions" wide>
      <div className="ix-list-layout">
        <div className="ix-list-main">
          <div className="inline-row">
            <label htmlFor="ix-filter">Filter</label>
            <input
              id="ix-filter"
              type="search"
              placeholder="Name"
              value={search.q ?? ''}
              onChange={(e) =>
                void navigate({ search: (s) => ({ ...s, q: e.target.value || undefined }), replace: true })
              }
            />
          </div>
          {list.error ? (
            <ErrorBanner error={list.error} onRetry={() => void list.refetch()} />
          ) : list.isPending ? (
            <Loading />
          ) : (
            <DataTable
              label="Interactions"
              data={rows}
              columns={columns}
              getRowId={(r) => r.id}
              height="min(50vh, 520px)"
              empty="No interaction yet: create one."
            />
          )}
        </div>
        <CreateInteraction />
      </div>
      <PromptTemplates
        selected={search.prompt}
        onSelect={(prompt) => void navigate({ search: (s) => ({ ...s, prompt }) })}
      />
    </Page>
  );
}

const STARTER_TEMPLATE = 'Answer this question in one sentence: {{question}}';
const STARTER_SCHEMA = {
  type: 'object',
  properties: { question: { type: 'string', description: 'What to answer', examples: ['Why is the sky blue?'] } },
  required: ['question'],
};

function CreateInteraction() {
  const qc = useQueryClient();
  const navigate = useNavigate();
  const envs = useQuery({ queryKey: ['environments'], queryFn: api.environments });
  const [name, setName] = useState('');
  const [env, setEnv] = useState('');
  const [model, setModel] = useState('');
  const envId = env || envs.data?.[0]?.id || '';
  const models = useQuery({
    queryKey: ['environment-models', envId],
    queryFn: () => api.models(envId),
    enabled: !!envId,
    retry: false,
  });
  useEffect(() => setModel(''), [envId]);

  const create = useMutation({
    mutationFn: async () => {
      const prompt = await api.createPrompt({
        name: `${name.trim()} prompt`,
        role: 'user',
        content_type: 'handlebars',
        content: STARTER_TEMPLATE,
      });
      return api.createInteraction({
        name: name.trim(),
        ...(envId ? { environment: envId } : {}),
        ...(model ? { model } : {}),
        prompts: [{ type: 'template', template: prompt.id }],
        interaction_schema: STARTER_SCHEMA,
      });
    },
    onSuccess: (ix) => {
      void qc.invalidateQueries({ queryKey: ['interactions'] });
      void qc.invalidateQueries({ queryKey: ['prompts'] });
      void navigate({ to: '/interactions/$interactionId', params: { interactionId: ix.id } });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };

  return (
    <section className="card" aria-labelledby="ix-create-title">
      <h2 id="ix-create-title">New interaction</h2>
      <form className="form-grid" onSubmit={submit}>
        <label htmlFor="ix-name">Name</label>
        <input id="ix-name" required value={name} onChange={(e) => setName(e.target.value)} autoComplete="off" />
        <label htmlFor="ix-env">Environment</label>
        <select id="ix-env" value={envId} onChange={(e) => setEnv(e.target.value)}>
          {!envs.data?.length && <option value="">(none: create one under Environments)</option>}
          <EnvironmentOptions environments={envs.data} />
        </select>
        <label htmlFor="ix-model">Model</label>
        <select id="ix-model" value={model} onChange={(e) => setModel(e.target.value)} disabled={!envId}>
          <option value="">(the environment's default)</option>
          {models.data?.map((m) => (
            <option key={m.id} value={m.id}>
              {m.name && m.name !== m.id ? `${m.name} (${m.id})` : m.id}
            </option>
          ))}
        </select>
        {models.error && <p className="field-error">Models: {String((models.error as Error).message)}</p>}
        <p className="muted hint">It starts with a prompt template and an input schema you can edit.</p>
        <div className="form-actions">
          <button type="submit" disabled={!name.trim() || create.isPending}>
            Create interaction
          </button>
        </div>
      </form>
      {create.error && <ErrorBanner error={create.error} title="Not created" />}
    </section>
  );
}

const pcol = columnHelper<PromptTemplate>();

function PromptTemplates({ selected, onSelect }: { selected?: string; onSelect: (id: string | undefined) => void }) {
  const qc = useQueryClient();
  const prompts = useQuery({ queryKey: ['prompts'], queryFn: api.prompts });
  const columns = useMemo(
    () => [
      pcol.accessor('name', {
        header: 'Name',
        cell: (c) => (
          <Link to="/interactions" search={(s: Record<string, unknown>) => ({ ...s, prompt: c.row.original.id })}>
            {c.getValue()}
          </Link>
        ),
      }),
      pcol.accessor('role', { header: 'Role' }),
      pcol.accessor('content_type', { header: 'Type' }),
      pcol.accessor('updated_at', { header: 'Updated', cell: (c) => formatDate(c.getValue()) }),
    ],
    [],
  );
  const create = useMutation({
    mutationFn: () =>
      api.createPrompt({
        name: `New template ${new Date().toISOString().slice(0, 19).replace('T', ' ')}`,
        role: 'user',
        content_type: 'handlebars',
        content: 'Hello {{name}}',
      }),
    onSuccess: (p) => {
      void qc.invalidateQueries({ queryKey: ['prompts'] });
      onSelect(p.id);
    },
  });
  const current = prompts.data?.find((p) => p.id === selected);
  const [saved, setSaved] = useState<string | null>(null);
  useEffect(() => setSaved(null), [selected]);

  return (
    <section className="card ix-prompts" aria-labelledby="ix-prompts-title">
      <header className="page-header">
        <h2 id="ix-prompts-title">Prompt templates</h2>
        <button type="button" className="secondary" onClick={() => create.mutate()} disabled={create.isPending}>
          New prompt template
        </button>
      </header>
      {create.error && <ErrorBanner error={create.error} />}
      {prompts.error ? (
        <ErrorBanner error={prompts.error} onRetry={() => void prompts.refetch()} />
      ) : prompts.isPending ? (
        <Loading />
      ) : (
        <DataTable
          label="Prompt templates"
          data={prompts.data}
          columns={columns}
          getRowId={(p) => p.id}
          selectedId={selected}
          height="min(40vh, 360px)"
          empty="No prompt template yet."
        />
      )}
      {current && (
        <PromptEditor
          key={`${current.id}:${current.edit_revision}`}
          prompt={current}
          onSaved={(p) => setSaved(p.name)}
          onClose={() => {
            setSaved(null);
            onSelect(undefined);
          }}
        />
      )}
      {saved && <p role="status">Saved “{saved}”.</p>}
    </section>
  );
}

/** Edits a stored prompt template (name, role, content type, content). */
export function PromptEditor({
  prompt,
  onClose,
  onSaved,
}: {
  prompt: PromptTemplate;
  onClose?: () => void;
  onSaved?: (p: PromptTemplate) => void;
}) {
  const qc = useQueryClient();
  const [name, setName] = useState(prompt.name);
  const [role, setRole] = useState<Role>(prompt.role);
  const [type, setType] = useState<ContentType>(prompt.content_type);
  const [content, setContent] = useState(prompt.content);
  const dirty =
    name !== prompt.name || role !== prompt.role || type !== prompt.content_type || content !== prompt.content;
  const save = useMutation({
    mutationFn: () =>
      api.updatePrompt(prompt.id, {
        name,
        role,
        content_type: type,
        content,
        expected_edit_revision: prompt.edit_revision,
      }),
    onSuccess: (p) => {
      onSaved?.(p);
      void qc.invalidateQueries({ queryKey: ['prompts'] });
      void qc.invalidateQueries({ queryKey: ['interaction'] });
    },
  });
  return (
    <form
      className="prompt-editor"
      aria-label={`Prompt template ${prompt.name}`}
      onSubmit={(e) => {
        e.preventDefault();
        save.mutate();
      }}
    >
      <h3>Edit “{prompt.name}”</h3>
      <div className="segment-fields">
        <label>
          Name <input value={name} onChange={(e) => setName(e.target.value)} required />
        </label>
        <label>
          Role{' '}
          <select value={role} onChange={(e) => setRole(e.target.value as Role)}>
            {ROLES.map((r) => (
              <option key={r}>{r}</option>
            ))}
          </select>
        </label>
        <label>
          Content type{' '}
          <select value={type} onChange={(e) => setType(e.target.value as ContentType)}>
            {CONTENT_TYPES.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </label>
      </div>
      <CodeEditor
        label={`Content of ${prompt.name}`}
        value={content}
        onChange={setContent}
        language={languageOf(type)}
        minHeight="6rem"
      />
      <div className="form-actions">
        <button type="submit" disabled={!dirty || save.isPending}>
          Save template
        </button>
        {onClose && (
          <button type="button" className="secondary" onClick={onClose}>
            Close
          </button>
        )}
      </div>
      {save.error && <ErrorBanner error={save.error} title="Not saved" />}
    </form>
  );
}

/**
 * Environments (issue 19, point 5): list and create; the provider from the server's list, the
 * endpoint URL, the default model, the API key (a password field, sent once, never shown again:
 * only its hint); the models the selected environment's provider lists.
 */
import { useId, useState, type FormEvent } from 'react';
import { getRouteApi, Link } from '@tanstack/react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Page, Loading } from '../../components/Page.tsx';
import { ErrorBanner } from '../../components/ErrorBanner.tsx';
import { DataTable, columnHelper } from '../../components/DataTable.tsx';
import { api, formatDate, type Environment, type Model } from '../interactions/model.ts';
import '../interactions/forms.css';
import './environments.css';

const route = getRouteApi('/_app/environments');

const col = columnHelper<Environment>();
const columns = [
  col.accessor('name', {
    header: 'Name',
    cell: (c) => (
      <Link to="/environments" search={{ env: c.row.original.id }}>
        {c.getValue()}
      </Link>
    ),
  }),
  col.accessor('provider', { header: 'Provider' }),
  col.accessor((e) => e.default_model ?? '', { id: 'default_model', header: 'Default model' }),
  col.accessor((e) => e.endpoint_url ?? '', { id: 'endpoint_url', header: 'Endpoint URL' }),
  col.accessor((e) => (e.has_api_key ? (e.apikey_hint ?? '…') : 'none'), {
    id: 'key',
    header: 'API key',
    cell: (c) => (
      <span className="mono" data-testid="key-hint">
        {c.getValue()}
      </span>
    ),
  }),
  col.accessor('updated_at', { header: 'Updated', cell: (c) => formatDate(c.getValue()) }),
];

const mcol = columnHelper<Model>();
const modelColumns = [
  mcol.accessor('id', { header: 'Model id', cell: (c) => <span className="mono">{c.getValue()}</span> }),
  mcol.accessor('name', { header: 'Name' }),
  mcol.accessor((m) => m.description ?? '', { id: 'description', header: 'Description' }),
];

export function EnvironmentsPage() {
  const search = route.useSearch();
  const envs = useQuery({ queryKey: ['environments'], queryFn: api.environments });
  const selected = envs.data?.find((e) => e.id === search.env);

  return (
    <Page title="Environments" wide>
      <div className="env-layout">
        <div className="env-main">
          {envs.error ? (
            <ErrorBanner error={envs.error} onRetry={() => void envs.refetch()} />
          ) : envs.isPending ? (
            <Loading />
          ) : (
            <DataTable
              label="Environments"
              data={envs.data}
              columns={columns}
              getRowId={(e) => e.id}
              selectedId={search.env}
              height="min(45vh, 480px)"
              empty="No environment yet: create one."
            />
          )}
          {search.env && envs.data && !selected && (
            <ErrorBanner error={{ message: `No environment ${search.env} in this project` }} />
          )}
          {selected && <EnvironmentDetail env={selected} />}
        </div>
        <CreateEnvironment />
      </div>
    </Page>
  );
}

function EnvironmentDetail({ env }: { env: Environment }) {
  const models = useQuery({
    queryKey: ['environment-models', env.id],
    queryFn: () => api.models(env.id),
    retry: false,
  });
  return (
    <section className="card env-detail" aria-labelledby="env-detail-title">
      <h2 id="env-detail-title">Models of {env.name}</h2>
      <p className="muted">
        Provider <strong>{env.provider}</strong>
        {env.default_model && (
          <>
            {' '}
            · default model <span className="mono">{env.default_model}</span>
          </>
        )}{' '}
        · API key {env.has_api_key ? <span className="mono">{env.apikey_hint ?? '…'}</span> : 'none'}
      </p>
      {models.error ? (
        <ErrorBanner error={models.error} onRetry={() => void models.refetch()} title="The provider's models" />
      ) : models.isPending ? (
        <Loading label="Listing the provider's models…" />
      ) : (
        <DataTable
          label={`Models of ${env.name}`}
          data={models.data}
          columns={modelColumns}
          getRowId={(m) => m.id}
          height="min(40vh, 360px)"
          empty="The provider lists no model."
        />
      )}
      <ReplaceKey env={env} />
    </section>
  );
}

/** Sets or replaces the provider key of an environment (the key is sent once; only its hint comes back). */
function ReplaceKey({ env }: { env: Environment }) {
  const qc = useQueryClient();
  const id = useId();
  const [key, setKey] = useState('');
  const save = useMutation({
    mutationFn: () => api.updateEnvironment(env.id, { apiKey: key }),
    onSuccess: () => {
      setKey('');
      void qc.invalidateQueries({ queryKey: ['environments'] });
      void qc.invalidateQueries({ queryKey: ['environment-models', env.id] });
    },
  });
  return (
    <form
      className="env-key-form"
      onSubmit={(e) => {
        e.preventDefault();
        if (key) save.mutate();
      }}
    >
      <label htmlFor={`${id}-key`}>{env.has_api_key ? 'Replace the API key' : 'Set an API key'}</label>
      <div className="inline-row">
        <input
          id={`${id}-key`}
          type="password"
          autoComplete="new-password"
          value={key}
          onChange={(e) => setKey(e.target.value)}
        />
        <button type="submit" className="secondary" disabled={!key || save.isPending}>
          Save key
        </button>
      </div>
      {save.error && <ErrorBanner error={save.error} />}
      {save.isSuccess && <p role="status">Key saved; it is shown only as {save.data.apikey_hint ?? 'a hint'}.</p>}
    </form>
  );
}

function CreateEnvironment() {
  const qc = useQueryClient();
  const navigate = route.useNavigate();
  const providers = useQuery({ queryKey: ['providers'], queryFn: api.providers, staleTime: 5 * 60_000 });
  const [name, setName] = useState('');
  const [provider, setProvider] = useState('');
  const [endpoint, setEndpoint] = useState('');
  const [model, setModel] = useState('');
  const [key, setKey] = useState('');
  const [created, setCreated] = useState<Environment | null>(null);
  const chosen = providers.data?.find((p) => p.id === (provider || providers.data[0]?.id));

  const create = useMutation({
    mutationFn: () =>
      api.createEnvironment({
        name: name.trim(),
        provider: chosen?.id,
        ...(endpoint.trim() ? { endpoint_url: endpoint.trim() } : {}),
        ...(model.trim() ? { default_model: model.trim() } : {}),
        ...(key ? { apiKey: key } : {}),
      }),
    onSuccess: (env) => {
      setKey('');
      setName('');
      setEndpoint('');
      setModel('');
      setCreated(env);
      void qc.invalidateQueries({ queryKey: ['environments'] });
      void navigate({ search: { env: env.id } });
    },
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    setCreated(null);
    create.mutate();
  };

  return (
    <section className="card env-create" aria-labelledby="env-create-title">
      <h2 id="env-create-title">New environment</h2>
      {providers.error && <ErrorBanner error={providers.error} title="Providers" />}
      <form className="form-grid" onSubmit={submit}>
        <label htmlFor="env-name">Name</label>
        <input id="env-name" required value={name} onChange={(e) => setName(e.target.value)} autoComplete="off" />
        <label htmlFor="env-provider">Provider</label>
        <select
          id="env-provider"
          value={chosen?.id ?? ''}
          onChange={(e) => setProvider(e.target.value)}
          aria-describedby="env-provider-help"
        >
          {(providers.data ?? []).map((p) => (
            <option key={p.id} value={p.id}>
              {p.name}
            </option>
          ))}
        </select>
        <p id="env-provider-help" className="muted hint">
          {chosen?.description ?? (providers.isPending ? 'Loading providers…' : '')}
        </p>
        <label htmlFor="env-endpoint">Endpoint URL{chosen?.requires_endpoint_url ? ' (required)' : ''}</label>
        <input
          id="env-endpoint"
          type="url"
          inputMode="url"
          placeholder="https://…"
          required={!!chosen?.requires_endpoint_url}
          value={endpoint}
          onChange={(e) => setEndpoint(e.target.value)}
          autoComplete="off"
        />
        <label htmlFor="env-model">Default model</label>
        <input
          id="env-model"
          value={model}
          onChange={(e) => setModel(e.target.value)}
          autoComplete="off"
          placeholder={chosen?.test ? 'echo' : ''}
        />
        <label htmlFor="env-key">API key{chosen?.requires_api_key ? ' (required)' : ''}</label>
        <input
          id="env-key"
          type="password"
          autoComplete="new-password"
          required={!!chosen?.requires_api_key}
          value={key}
          onChange={(e) => setKey(e.target.value)}
          aria-describedby="env-key-help"
        />
        <p id="env-key-help" className="muted hint">
          Stored encrypted; never shown again, only its last characters.
        </p>
        <div className="form-actions">
          <button type="submit" disabled={create.isPending || !chosen || !name.trim()}>
            Create environment
          </button>
        </div>
      </form>
      {create.error && <ErrorBanner error={create.error} title="Not created" />}
      {created && (
        <p role="status">
          Created “{created.name}”{created.has_api_key ? `; its key shows as ${created.apikey_hint ?? '…'}` : ''}.
        </p>
      )}
    </section>
  );
}

/**
 * Azure OpenAI and Azure AI Foundry speak OpenAI's Chat Completions with their own URLs and
 * authentication (Azure's REST reference):
 *  - azure_openai: `{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=…`
 *    (the deployment names the model; `config.deployment`, else the run's model), or with
 *    `config.api_version: "v1"` the v1 API, `{endpoint}/openai/v1/chat/completions`, model in the body.
 *  - azure_foundry: the model inference API, `{endpoint}/models/chat/completions?api-version=…`,
 *    model in the body (a deployment name or a model id).
 * Only the v1 API lists models (`/openai/v1/models`); deployment names are the resource's own, so
 * on the dated API and on Foundry an environment's `enabled_models` or default model stand.
 * The key goes in the `api-key` header; a Microsoft Entra ID token (a JWT, or `config.auth:
 * "entra"`) goes as `Authorization: Bearer`.
 */
import { ProviderError, type ProviderConnection } from './driver.ts';
import type { ChatRoute } from './openai-chat.ts';
import { trimSlashes } from './provider-http.ts';

const AZURE_OPENAI_API_VERSION = '2024-10-21';
const AZURE_FOUNDRY_API_VERSION = '2024-05-01-preview';

function endpointOf(conn: ProviderConnection, name: string): string {
  const given = conn.endpoint_url?.trim();
  if (!given)
    throw new ProviderError(
      'provider_bad_request',
      `${name} needs the resource's endpoint URL (e.g. https://my-resource.openai.azure.com); the environment has none`,
    );
  try {
    new URL(given);
  } catch {
    throw new ProviderError('provider_bad_request', `the endpoint URL ${JSON.stringify(given)} is not a valid URL`);
  }
  return trimSlashes(given);
}

function authHeaders(conn: ProviderConnection, label: string): Record<string, string> {
  const key = conn.api_key?.trim();
  if (!key)
    throw new ProviderError(
      'provider_auth',
      `${label} needs an API key or a Microsoft Entra ID token; the environment has none`,
    );
  const bearer = conn.config?.auth === 'entra' || /^eyJ[\w-]+\.[\w-]+\.[\w-]*$/.test(key.replace(/^Bearer\s+/i, ''));
  return bearer ? { authorization: `Bearer ${key.replace(/^Bearer\s+/i, '')}` } : { 'api-key': key };
}

const stringConfig = (conn: ProviderConnection, name: string) => {
  const v = conn.config?.[name];
  return typeof v === 'string' && v.trim() ? v.trim() : undefined;
};

export function azureOpenAIRoute(conn: ProviderConnection, model: string): ChatRoute {
  const endpoint = endpointOf(conn, 'Azure OpenAI');
  const label = `Azure OpenAI at ${endpoint}`;
  const version = stringConfig(conn, 'api_version') ?? AZURE_OPENAI_API_VERSION;
  if (version === 'v1') {
    return {
      url: `${endpoint}/openai/v1/chat/completions`,
      label,
      headers: authHeaders(conn, label),
      modelInBody: true,
      modelsUrl: `${endpoint}/openai/v1/models`,
    };
  }
  const deployment = stringConfig(conn, 'deployment') ?? model;
  return {
    url: `${endpoint}/openai/deployments/${encodeURIComponent(deployment)}/chat/completions?api-version=${encodeURIComponent(version)}`,
    label,
    headers: authHeaders(conn, label),
    modelInBody: false,
  };
}

export function azureFoundryRoute(conn: ProviderConnection): ChatRoute {
  const endpoint = endpointOf(conn, 'Azure AI Foundry');
  const label = `Azure AI Foundry at ${endpoint}`;
  const version = stringConfig(conn, 'api_version') ?? AZURE_FOUNDRY_API_VERSION;
  const base = endpoint.endsWith('/models') ? endpoint : `${endpoint}/models`;
  return {
    url: `${base}/chat/completions?api-version=${encodeURIComponent(version)}`,
    label,
    headers: authHeaders(conn, label),
    modelInBody: true,
  };
}

/**
 * Which providers exist. Environments may name any Vertesia provider id (so configurations move
 * between Vertesia and Orrery), but only the implemented ones can run; the others fail with a
 * message that says so.
 */
import { AnthropicMessagesDriver } from './anthropic-messages.ts';
import type { ModelDriver, ProviderInfo } from './driver.ts';
import { OpenAIChatDriver, type OpenAIChatOptions } from './openai-chat.ts';
import { TestProviderDriver } from './test-provider.ts';
import { BedrockConverseDriver, BedrockMantleDriver } from './bedrock.ts';
import { VertexAIDriver } from './vertexai.ts';
import { azureFoundryRoute, azureOpenAIRoute } from './azure.ts';
import { WatsonxDriver } from './watsonx.ts';
import { ReplicateDriver } from './replicate.ts';
import { scrubbingDriver } from './scrubbing-driver.ts';
import { resultBoundedDriver } from './result-bound.ts';

/** Every provider id Vertesia knows; an environment with any of these is valid. */
export const SUPPORTED_PROVIDER_IDS = [
  'openai',
  'openai_compatible',
  'azure_openai',
  'azure_foundry',
  'huggingface_ie',
  'replicate',
  'bedrock',
  'bedrock_mantle',
  'vertexai',
  'togetherai',
  'mistralai',
  'groq',
  'watsonx',
  'xai',
  'anthropic',
  'virtual_lb',
  'virtual_mediator',
  'test',
] as const;
type SupportedProviderId = (typeof SUPPORTED_PROVIDER_IDS)[number];

interface Entry {
  info: ProviderInfo;
  driver: ModelDriver;
}

/** Hosted services that speak Chat Completions: one driver, their base URL, their name. */
const hosted = (
  o: Omit<OpenAIChatOptions, 'requiresApiKey' | 'maxTokensField' | 'streamUsage'> & Partial<OpenAIChatOptions>,
) => new OpenAIChatDriver({ requiresApiKey: true, maxTokensField: 'max_tokens', streamUsage: true, ...o });

const ENTRIES: Entry[] = [
  {
    info: {
      id: 'openai',
      name: 'OpenAI',
      description: 'OpenAI Chat Completions API (api.openai.com).',
      test: false,
      requires_endpoint_url: false,
      requires_api_key: true,
    },
    driver: hosted({
      provider: 'openai',
      name: 'OpenAI',
      defaultBaseUrl: 'https://api.openai.com/v1',
      maxTokensField: 'max_completion_tokens',
    }),
  },
  {
    info: {
      id: 'openai_compatible',
      name: 'OpenAI-compatible',
      description:
        'Any server that speaks the OpenAI Chat Completions API: Ollama, vLLM, llama.cpp, LM Studio, OpenRouter, … ' +
        'The endpoint URL is the base URL as the official SDKs take it (e.g. http://localhost:11434/v1).',
      test: false,
      requires_endpoint_url: true,
      requires_api_key: false,
    },
    driver: new OpenAIChatDriver({
      provider: 'openai_compatible',
      name: 'OpenAI-compatible server',
      requiresApiKey: false,
      maxTokensField: 'max_tokens',
      streamUsage: true,
    }),
  },
  {
    info: {
      id: 'anthropic',
      name: 'Anthropic',
      description: 'Anthropic Messages API (api.anthropic.com).',
      test: false,
      requires_endpoint_url: false,
      requires_api_key: true,
    },
    driver: new AnthropicMessagesDriver(),
  },
  {
    info: hostedInfo('groq', 'Groq'),
    driver: hosted({ provider: 'groq', name: 'Groq', defaultBaseUrl: 'https://api.groq.com/openai/v1' }),
  },
  {
    info: hostedInfo('togetherai', 'Together AI'),
    driver: hosted({ provider: 'togetherai', name: 'Together AI', defaultBaseUrl: 'https://api.together.xyz/v1' }),
  },
  {
    info: hostedInfo('mistralai', 'Mistral AI'),
    // Mistral validates request fields strictly and sends usage in its last chunk unasked.
    driver: hosted({
      provider: 'mistralai',
      name: 'Mistral AI',
      defaultBaseUrl: 'https://api.mistral.ai/v1',
      streamUsage: false,
    }),
  },
  {
    info: hostedInfo('xai', 'xAI'),
    driver: hosted({ provider: 'xai', name: 'xAI', defaultBaseUrl: 'https://api.x.ai/v1' }),
  },
  {
    info: {
      id: 'azure_openai',
      name: 'Azure OpenAI',
      description:
        'Azure OpenAI Chat Completions: the endpoint URL is the resource (https://<resource>.openai.azure.com); the model (or config.deployment) is the deployment; config.api_version (default 2024-10-21, or "v1"); an API key or a Microsoft Entra ID token.',
      test: false,
      requires_endpoint_url: true,
      requires_api_key: true,
    },
    driver: new OpenAIChatDriver({
      provider: 'azure_openai',
      name: 'Azure OpenAI',
      requiresApiKey: true,
      maxTokensField: 'max_completion_tokens',
      streamUsage: true,
      route: (conn, model) => azureOpenAIRoute(conn, model),
    }),
  },
  {
    info: {
      id: 'azure_foundry',
      name: 'Azure AI Foundry',
      description:
        'Azure AI Foundry model inference (Chat Completions): the endpoint URL of the project or resource (https://<name>.services.ai.azure.com); the model is a deployment or model name; config.api_version (default 2024-05-01-preview); an API key or a Microsoft Entra ID token.',
      test: false,
      requires_endpoint_url: true,
      requires_api_key: true,
    },
    driver: new OpenAIChatDriver({
      provider: 'azure_foundry',
      name: 'Azure AI Foundry',
      requiresApiKey: true,
      maxTokensField: 'max_tokens',
      streamUsage: true,
      route: (conn) => azureFoundryRoute(conn),
    }),
  },
  {
    info: {
      id: 'huggingface_ie',
      name: 'Hugging Face Inference Endpoints',
      description:
        'A Hugging Face Inference Endpoint (TGI, vLLM) through its OpenAI-compatible Messages API: the endpoint URL (https://<name>.endpoints.huggingface.cloud) and a Hugging Face access token.',
      test: false,
      requires_endpoint_url: true,
      requires_api_key: true,
    },
    driver: new OpenAIChatDriver({
      provider: 'huggingface_ie',
      name: 'Hugging Face Inference Endpoint',
      requiresApiKey: true,
      maxTokensField: 'max_tokens',
      streamUsage: true,
    }),
  },
  {
    info: {
      id: 'vertexai',
      name: 'Google Vertex AI',
      description:
        "Gemini (generateContent) and Claude on Vertex AI (rawPredict): the API key is a service account key file's JSON; config.project (default: the key's project_id) and config.region (default us-central1, or global); the endpoint URL is optional and overrides https://{region}-aiplatform.googleapis.com.",
      test: false,
      requires_endpoint_url: false,
      requires_api_key: true,
    },
    driver: new VertexAIDriver(),
  },
  {
    info: {
      id: 'watsonx',
      name: 'IBM watsonx.ai',
      description:
        'IBM watsonx.ai chat API: the endpoint URL is the regional URL (https://us-south.ml.cloud.ibm.com); the key is an IBM Cloud API key (exchanged at IBM Cloud IAM); config.project_id (or config.space_id) is required; config.version (default 2024-05-31); config.api: "generation" for the text generation API.',
      test: false,
      requires_endpoint_url: true,
      requires_api_key: true,
    },
    driver: new WatsonxDriver(),
  },
  {
    info: {
      id: 'replicate',
      name: 'Replicate',
      description:
        'Replicate predictions: models as owner/name or owner/name:version; the key is a Replicate API token; the endpoint URL is optional and overrides https://api.replicate.com.',
      test: false,
      requires_endpoint_url: false,
      requires_api_key: true,
    },
    driver: new ReplicateDriver(),
  },
  {
    info: {
      id: 'bedrock',
      name: 'Amazon Bedrock',
      description:
        'Amazon Bedrock Runtime Converse API: config.region (default AWS_REGION or us-east-1); the key is ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN] (SigV4) or a Bedrock API key, or none for the AWS credential chain; the endpoint URL is optional (a VPC endpoint). Models are model ids, inference profiles or ARNs.',
      test: false,
      requires_endpoint_url: false,
      requires_api_key: false,
    },
    driver: new BedrockConverseDriver(),
  },
  {
    info: {
      id: 'bedrock_mantle',
      name: 'Amazon Bedrock Mantle',
      description:
        "Amazon Bedrock's OpenAI-compatible endpoint (https://bedrock-mantle.<region>.api.aws/v1) through Chat Completions: config.region; a Bedrock API key, or AWS keys (ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN]) or the AWS credential chain, from which a short-term key is made.",
      test: false,
      requires_endpoint_url: false,
      requires_api_key: false,
    },
    driver: new BedrockMantleDriver(),
  },
  {
    info: {
      id: 'test',
      name: 'Test (offline, deterministic)',
      description:
        'Offline test models (echo, json, error) and fault models (slow, flaky, rate_limit, error_mid_stream, stall) that need no network and no API key. Not a real LLM.',
      test: true,
      requires_endpoint_url: false,
      requires_api_key: false,
    },
    driver: new TestProviderDriver(),
  },
];

function hostedInfo(id: SupportedProviderId, name: string): ProviderInfo {
  return {
    id,
    name,
    description: `${name} through its OpenAI-compatible Chat Completions API; the endpoint URL is optional and overrides the default.`,
    test: false,
    requires_endpoint_url: false,
    requires_api_key: true,
  };
}

// Drivers are handed out scrubbing and bounded, so no caller can forget to scrub a provider's
// error text or let a model's answer grow past ORRERY_MAX_RESULT_SIZE.
const BY_ID = new Map(
  ENTRIES.map((e) => [e.info.id, { ...e, driver: scrubbingDriver(resultBoundedDriver(e.driver)) }]),
);

/** The providers Orrery can run, for listings. */
export const PROVIDERS: readonly ProviderInfo[] = ENTRIES.map((e) => e.info);

/** True when Orrery has a driver for the provider, so runs on it can execute. */
export const isImplemented = (id: string): boolean => BY_ID.has(id);

/** The driver for a provider; a plain Error (a bug or a stale row, not a provider failure) otherwise. */
export function getDriver(providerId: string): ModelDriver {
  const entry = BY_ID.get(providerId);
  if (entry) return entry.driver;
  const implemented = ENTRIES.map((e) => e.info.id).join(', ');
  if (providerId === 'virtual_lb' || providerId === 'virtual_mediator') {
    throw new Error(
      `provider "${providerId}" is virtual: its runs go to the environments its config.entries name (runs/virtual.ts)`,
    );
  }
  throw new Error(`unknown provider "${providerId}"; the implemented providers are ${implemented}`);
}

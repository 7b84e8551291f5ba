import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PROVIDERS, SUPPORTED_PROVIDER_IDS, getDriver, isImplemented } from '../../src/providers/registry.ts';
import { startOpenAIWireServer } from '../support/openai-wire-server.ts';

/** What the environments' listing and the provider check (interactions/environments.ts) read. */
const infoOf = (id: string) => PROVIDERS.find((p) => p.id === id);
const isSupported = (id: string) => (SUPPORTED_PROVIDER_IDS as readonly string[]).includes(id);

describe('provider registry', () => {
  it('lists the implemented providers, the test one labelled', () => {
    const ids = PROVIDERS.map((p) => p.id);
    for (const id of ['openai', 'openai_compatible', 'anthropic', 'test', 'groq', 'togetherai', 'mistralai', 'xai'])
      assert.ok(ids.includes(id), id);
    const t = infoOf('test')!;
    assert.equal(t.test, true);
    assert.equal(t.name, 'Test (offline, deterministic)');
    assert.equal(t.requires_api_key, false);
    assert.deepEqual(
      PROVIDERS.filter((p) => p.test).map((p) => p.id),
      ['test'],
    );
    assert.equal(infoOf('openai_compatible')!.requires_endpoint_url, true);
    assert.equal(infoOf('openai')!.requires_api_key, true);
  });

  it('knows every Vertesia provider id, and which ones run', () => {
    assert.equal(SUPPORTED_PROVIDER_IDS.length, 18);
    for (const p of PROVIDERS) assert.ok(isSupported(p.id), `${p.id} should be a supported id`);
    // Every Vertesia provider has a driver but the two virtual ones, which run through their entries (runs/virtual.ts).
    for (const id of SUPPORTED_PROVIDER_IDS) assert.equal(isImplemented(id), !id.startsWith('virtual_'), id);
    assert.equal(isSupported('virtual_lb'), true);
    assert.equal(isSupported('nope'), false);
  });

  it('getDriver answers a driver per implemented id, and a clear Error otherwise', () => {
    for (const p of PROVIDERS) assert.equal(getDriver(p.id).provider, p.id);
    assert.throws(
      () => getDriver('virtual_lb'),
      /provider "virtual_lb" is virtual: its runs go to the environments its config.entries name/,
    );
    assert.throws(
      () => getDriver('nope'),
      (e: Error) => e.constructor === Error && /unknown provider "nope"/.test(e.message),
    );
  });

  it('groq uses Chat Completions with its endpoint URL as an override and its own name in errors', async () => {
    const srv = await startOpenAIWireServer({ apiKey: 'gsk-1', text: 'from groq' });
    try {
      const groq = getDriver('groq');
      const out = await groq.complete(
        { endpoint_url: srv.url, api_key: 'gsk-1' },
        { model: 'llama-3.3-70b', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 },
      );
      assert.equal(out.text, 'from groq');
      assert.equal(srv.requests[0].body.max_tokens, 5);
      await assert.rejects(
        groq.complete(
          { endpoint_url: srv.url, api_key: 'bad' },
          { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
        ),
        /^ProviderError: Groq at http:\/\/127\.0\.0\.1:\d+\/v1 answered HTTP 401/,
      );
    } finally {
      await srv.close();
    }
  });
});

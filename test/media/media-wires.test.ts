/**
 * Media inputs on the Bedrock Converse and Gemini (Vertex AI) wires: a stored PNG and a PDF reach
 * each as its own blocks, whose bytes, decoded from the recorded request bodies, are the objects'
 * bytes. Through the official client, against loopback wire servers.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { ONE_DIALECT, startTestServer, type TestServer } from '../support/server.ts';
import {
  startBedrockWireServer,
  TEST_ACCESS_KEY_ID,
  TEST_SECRET,
  type BedrockWireServer,
} from '../support/bedrock-wire-server.ts';
import { startVertexWireServer, type VertexWireServer } from '../support/vertex-wire-server.ts';
import { regionOf } from '../../src/providers/bedrock.ts';
import { upload } from '../objects/helpers.ts';

const PDF = Buffer.from(
  '%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Count 1 >> endobj\n' +
    '3 0 obj << /Type /Page /Parent 2 0 R >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n',
  'latin1',
);
const SCHEMA = {
  type: 'object',
  properties: { photo: { type: 'string', editor: 'media' }, contract: { type: 'string', editor: 'document' } },
};

// One database (ONE_DIALECT): the wire blocks do not depend on the storage.
for (const dialect of ONE_DIALECT) {
  describe(`${dialect}: media inputs on the Bedrock and Gemini wires`, () => {
    let srv: TestServer;
    let bedrock: BedrockWireServer;
    let vertex: VertexWireServer;
    let png: Buffer;
    let ids: { png: string; pdf: string };

    const object = async (name: string, bytes: Buffer, type: string) => {
      const up = await upload(srv, name, bytes, { type });
      const r = await srv.api('POST', '/api/v1/objects', { name, content: { source: up.id, type, name } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.id as string;
    };
    const interaction = async (env: Record<string, unknown>, model: string) => {
      const e = await srv.api('POST', '/api/v1/environments', { name: `${String(env.provider)} media`, ...env });
      assert.equal(e.status, 200, JSON.stringify(e.body));
      const ix = await srv.api('POST', '/api/v1/interactions', {
        name: `Media ${String(env.provider)}`,
        environment: e.body.id,
        model,
        interaction_schema: SCHEMA,
        prompts: [{ type: 'template', template: { role: 'user', content: 'Describe them', content_type: 'text' } }],
      });
      assert.equal(ix.status, 200, JSON.stringify(ix.body));
      return ix.body.id as string;
    };

    before(async () => {
      srv = await startTestServer(dialect);
      bedrock = await startBedrockWireServer({ region: regionOf({}), text: 'seen' });
      vertex = await startVertexWireServer({ text: 'seen' });
      png = await sharp({ create: { width: 7, height: 4, channels: 3, background: '#3a6' } })
        .png()
        .toBuffer();
      ids = {
        png: await object('leaf.png', png, 'image/png'),
        pdf: await object('lease 2024.pdf', PDF, 'application/pdf'),
      };
    });
    after(async () => {
      await srv.close();
      await bedrock.close();
      await vertex.close();
    });

    it('sends Bedrock Converse image and document blocks carrying the objects bytes', async () => {
      const ix = await interaction(
        {
          provider: 'bedrock',
          endpoint_url: bedrock.url,
          apiKey: `${TEST_ACCESS_KEY_ID}:${TEST_SECRET}`,
        },
        'us.anthropic.claude-sonnet-4-20250514-v1:0',
      );
      const run = await srv.client().interactions.execute(ix, {
        data: { photo: `store:${ids.png}`, contract: `store:${ids.pdf}` },
      });
      assert.equal(run.status, 'completed');
      const content = (bedrock.requests.at(-1)!.body as any).messages.at(-1).content;
      assert.deepEqual(content[0], { text: 'Describe them' });
      assert.equal(content[1].image.format, 'png');
      assert.deepEqual(Buffer.from(content[1].image.source.bytes, 'base64'), png);
      assert.equal(content[2].document.format, 'pdf');
      assert.equal(content[2].document.name, 'lease 2024');
      assert.deepEqual(Buffer.from(content[2].document.source.bytes, 'base64'), PDF);
    });

    it('sends Gemini inline data carrying the objects bytes', async () => {
      const ix = await interaction(
        { provider: 'vertexai', endpoint_url: vertex.origin, apiKey: vertex.serviceAccount() },
        'gemini-2.5-flash',
      );
      const run = await srv.client().interactions.execute(ix, {
        data: { photo: `store:${ids.png}`, contract: `store:${ids.pdf}` },
      });
      assert.equal(run.status, 'completed');
      const parts = (vertex.requests.at(-1)!.body as any).contents.at(-1).parts;
      assert.deepEqual(parts[0], { text: 'Describe them' });
      assert.equal(parts[1].inlineData.mimeType, 'image/png');
      assert.deepEqual(Buffer.from(parts[1].inlineData.data, 'base64'), png);
      assert.equal(parts[2].inlineData.mimeType, 'application/pdf');
      assert.deepEqual(Buffer.from(parts[2].inlineData.data, 'base64'), PDF);
    });
  });
}

/**
 * What running an agent's tool loop on the server costs over the calls it makes: an agent of
 * ITERATIONS model calls (the model asks for an MCP tool ITERATIONS - 1 times, then answers),
 * started with POST /execute/async `type: "conversation"`, against a baseline that makes the same
 * model calls (the same request bodies Orrery sent) and the same MCP tool calls itself, one after
 * the other, from this process. Both talk to the same local OpenAI-compatible upstream and the
 * same local MCP server (the test suite's, built on the official SDK), in alternating rounds.
 *
 * Per iteration: the agent's added wall time (its run's created_at → updated_at, less the
 * baseline's loop) and the server's CPU (all threads, from /proc). Target: at most 5 ms added.
 *
 *   npm run bench -- agents        (ROUNDS=6 ITERATIONS=20 by default)
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { startMcpServer } from '../test/support/mcp-server.ts';
import { machine, startOrrery } from './lib/processes.ts';
import { api, median } from './lib/runs.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 6);
const ITERATIONS = Number(process.env.ITERATIONS ?? 20);
const TICK_US = 10_000;

const cpuUs = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK_US;
};

/** The model: a tool call while fewer than ITERATIONS - 1 tool results are in the request, then an answer. */
const answer = (body: { messages: Array<{ role: string }>; tools?: Array<{ function: { name: string } }> }) => {
  const results = body.messages.filter((m) => m.role === 'tool').length;
  const tool = body.tools?.[0]?.function.name;
  const message =
    tool && results < ITERATIONS - 1
      ? {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: `call_${results + 1}`, type: 'function', function: { name: tool, arguments: '{"city":"Paris"}' } },
          ],
        }
      : { role: 'assistant', content: `Done after ${results} forecasts.` };
  return {
    id: `chatcmpl-${results}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: 'gpt-4o-mini',
    choices: [{ index: 0, message, finish_reason: message.content === null ? 'tool_calls' : 'stop' }],
    usage: { prompt_tokens: 20 + results, completion_tokens: 5, total_tokens: 25 + results },
  };
};

/** The request bodies Orrery sent in the last agent, replayed by the baseline. */
let recorded: string[] = [];
const upstream = createServer((req: IncomingMessage, res: ServerResponse) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const text = Buffer.concat(chunks).toString('utf8');
    recorded.push(text);
    const out = JSON.stringify(answer(JSON.parse(text)));
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
    res.end(out);
  });
});
await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
const mcp = await startMcpServer();

const orrery = await startOrrery();
try {
  const key = orrery.adminKey;
  const headers = { authorization: `Bearer ${key}` };
  const env = await api(orrery.url, key, '/api/v1/environments', {
    name: 'bench agents',
    provider: 'openai_compatible',
    default_model: 'gpt-4o-mini',
    endpoint_url: `${upstreamUrl}/v1`,
    api_key: 'sk-upstream',
  });
  await api(orrery.url, key, '/api/v1/interactions', {
    name: 'Forecaster',
    environment: env.id,
    prompts: [{ type: 'template', template: { role: 'user', content_type: 'handlebars', content: 'Plan {{city}}.' } }],
  });
  await api(orrery.url, key, '/api/v1/mcp-servers', { name: 'weather', url: mcp.url });

  const agent = async () => {
    recorded = [];
    const cpu0 = cpuUs(orrery.proc.pid!);
    const { runId } = await api(orrery.url, key, '/api/v1/execute/async', {
      type: 'conversation',
      interaction: 'Forecaster',
      data: { city: 'Paris' },
      tool_names: ['weather_forecast'],
      max_iterations: ITERATIONS,
    });
    for (;;) {
      const run = (await (await fetch(`${orrery.url}/api/v1/runs/${runId}`, { headers })).json()) as any;
      if (run.status === 'failed') throw new Error(`the agent failed: ${JSON.stringify(run.error)}`);
      if (run.status === 'completed') {
        if (recorded.length !== ITERATIONS) throw new Error(`${recorded.length} model calls, ${ITERATIONS} expected`);
        return {
          ms: Date.parse(run.updated_at) - Date.parse(run.created_at),
          cpuMs: (cpuUs(orrery.proc.pid!) - cpu0) / 1000,
        };
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  // The same calls, made directly: each model request as Orrery sent it, each tool call with the
  // official MCP client, one session per call as the agent opens (with one validator, as it does).
  const jsonSchemaValidator = new AjvJsonSchemaValidator();
  const baseline = async () => {
    const bodies = recorded;
    recorded = []; // the upstream records the replayed requests apart
    const started = performance.now();
    for (let i = 0; i < bodies.length; i++) {
      const r = await fetch(`${upstreamUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-upstream' },
        body: bodies[i],
      });
      await r.json();
      if (i === bodies.length - 1) break;
      const client = new Client({ name: 'bench', version: '1.0.0' }, { jsonSchemaValidator });
      await client.connect(new StreamableHTTPClientTransport(new URL(mcp.url)));
      await client.callTool({ name: 'forecast', arguments: { city: 'Paris' } });
      await client.close();
    }
    recorded = bodies;
    return performance.now() - started;
  };

  await agent(); // warm-up: JIT, caches, the first MCP session
  await baseline();
  const added: number[] = [];
  const cpu: number[] = [];
  const agentMs: number[] = [];
  const baseMs: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    let a: { ms: number; cpuMs: number };
    let b: number;
    if (i % 2) {
      b = await baseline();
      a = await agent();
    } else {
      a = await agent();
      b = await baseline();
    }
    agentMs.push(a.ms);
    baseMs.push(b);
    added.push((a.ms - b) / ITERATIONS);
    cpu.push(a.cpuMs / ITERATIONS);
    console.log(
      `round ${i + 1}: agent ${a.ms} ms (server CPU ${a.cpuMs.toFixed(0)} ms), the same calls made directly ${b.toFixed(1)} ms: ` +
        `${((a.ms - b) / ITERATIONS).toFixed(2)} ms added per iteration`,
    );
  }
  console.log(`machine: ${machine()}; agents of ${ITERATIONS} model calls and ${ITERATIONS - 1} MCP tool calls`);
  console.log(
    `added per iteration, median of ${ROUNDS} paired rounds: ${median(added).toFixed(2)} ms (target at most 5 ms); ` +
      `server CPU per iteration ${median(cpu).toFixed(2)} ms; agent ${median(agentMs)} ms against ${median(baseMs).toFixed(1)} ms`,
  );
  console.log(
    JSON.stringify({
      bench: 'agents',
      iterations: ITERATIONS,
      rounds: ROUNDS,
      added_ms_per_iteration: median(added),
      server_cpu_ms_per_iteration: median(cpu),
      agent_ms: median(agentMs),
      baseline_ms: median(baseMs),
    }),
  );
} finally {
  await orrery.stop();
  await mcp.close();
  upstream.close();
}

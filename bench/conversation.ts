/**
 * Issue 49 benchmark: storage and CPU of a conversation grow with the turn, not the history. K
 * conversations on the `test` provider's `tools` model, advanced together turn by turn to TURNS:
 * each turn a 100-byte user message (runs.sendUserMessage; the model calls its one tool), then a
 * 200-byte result (runs.sendToolResults; the model answers). Per turn: the bytes its two runs are
 * stored as (GET /runs/:id?populate=false) and the server's CPU for the turn (/proc, summed over
 * the K conversations, so the clock's 10 ms tick is spread over K).
 * Targets: bytes per turn flat within 20 % from turn 5 to TURNS, CPU at TURNS within 2x of turn 1.
 *
 *   npm run bench -- conversation        (K=20 TURNS=50 by default)
 */
import { readFileSync } from 'node:fs';
import { startOrrery, machine } from './lib/processes.ts';
import { api } from './lib/runs.ts';

const K = Number(process.env.K ?? 20);
const TURNS = Number(process.env.TURNS ?? 50);
const TICK_US = 10_000;

const cpuUs = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK_US;
};

const orrery = await startOrrery();
try {
  const admin = orrery.adminKey;
  const headers = { authorization: `Bearer ${admin}`, 'content-type': 'application/json' };
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${orrery.url}/api/v1${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    const json = (await res.json()) as any;
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
    return json;
  };
  const storedBytes = async (id: string) =>
    (await (await fetch(`${orrery.url}/api/v1/runs/${id}?populate=false`, { headers })).text()).length;
  const env = await api(orrery.url, admin, '/api/v1/environments', {
    name: 'bench',
    provider: 'test',
    default_model: 'tools',
  });
  const interaction = (
    await api(orrery.url, admin, '/api/v1/interactions', {
      name: 'conversation',
      environment: env.id,
      prompts: [{ type: 'template', template: { role: 'user', content_type: 'text', content: 'Start.' } }],
    })
  ).id as string;
  const tools = [
    {
      name: 'lookup',
      description: 'Looks a city up',
      input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  ];
  const message = (turn: number) => `turn ${turn}: `.padEnd(100, 'x');
  const result = 'r'.repeat(200);
  const pid = orrery.proc.pid!;

  const last: any[] = [];
  const bytes: number[] = [];
  const cpu: number[] = [];
  for (let turn = 1; turn <= TURNS; turn++) {
    const started = cpuUs(pid);
    const called: any[] = [];
    for (let k = 0; k < K; k++) {
      called[k] =
        turn === 1
          ? await post('/runs', { interaction, tool_definitions: tools, conversation: true })
          : await post('/runs/user-message', { run: { id: last[k].id }, environment: env.id, message: message(turn) });
      last[k] = await post('/runs/tool-results', {
        run: { id: called[k].id },
        environment: env.id,
        results: called[k].tool_use.map((t: any) => ({ tool_use_id: t.id, content: result, is_error: false })),
      });
    }
    cpu.push((cpuUs(pid) - started) / K);
    bytes.push((await storedBytes(called[0].id)) + (await storedBytes(last[0].id)));
  }
  const from5 = bytes.slice(4);
  const spread = (Math.max(...from5) - Math.min(...from5)) / Math.min(...from5);
  const firstCpu = (cpu[0] + cpu[1]) / 2;
  const lastCpu = (cpu[TURNS - 2] + cpu[TURNS - 1]) / 2;
  console.log(`machine: ${machine()}; ${K} conversations of ${TURNS} turns`);
  for (const t of [1, 2, 5, 10, 25, TURNS])
    console.log(
      `turn ${String(t).padStart(3)}: ${bytes[t - 1]} bytes stored, ${(cpu[t - 1] / 1000).toFixed(2)} ms CPU`,
    );
  console.log(
    `bytes per turn from turn 5: spread ${(spread * 100).toFixed(1)} % (target 20 %); CPU turns ${TURNS - 1}-${TURNS} / turns 1-2: ${(lastCpu / firstCpu).toFixed(2)}x (target 2x)`,
  );
  console.log(
    JSON.stringify({
      bench: 'conversation',
      K,
      TURNS,
      bytes_spread_from_turn5: spread,
      cpu_ms_first: firstCpu / 1000,
      cpu_ms_last: lastCpu / 1000,
      cpu_ratio: lastCpu / firstCpu,
    }),
  );
} finally {
  await orrery.stop();
}

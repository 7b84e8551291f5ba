/**
 * The gateway benchmark's upstream (bench/gateway.ts): a local OpenAI-compatible server in a process of
 * its own that answers every `POST …/chat/completions` with one fixed chat completion, at once
 * (with `"stream": true`, the same text as `chat.completion.chunk` events, a word per event, then
 * `data: [DONE]`), and `GET /health`. Loopback only; port from BARE_PORT (bench/lib/processes.ts `startChild`).
 */
import { createServer } from 'node:http';

export const COMPLETION_TEXT = 'The outer planets orbit the Sun slowly, far beyond the asteroid belt.';

const completion = Buffer.from(
  JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    created: 1764028800,
    model: 'gpt-4o-mini',
    choices: [
      { index: 0, message: { role: 'assistant', content: COMPLETION_TEXT }, logprobs: null, finish_reason: 'stop' },
    ],
    usage: { prompt_tokens: 14, completion_tokens: 15, total_tokens: 29 },
  }),
);

const chunk = (delta: object, finish: string | null = null, usage?: object) =>
  `data: ${JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion.chunk',
    created: 1764028800,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...(usage ? { usage } : {}),
  })}\n\n`;
const words = COMPLETION_TEXT.split(/(?<= )/);
const streamed = [
  chunk({ role: 'assistant', content: words[0] }),
  ...words.slice(1).map((w) => chunk({ content: w })),
  chunk({}, 'stop', { prompt_tokens: 14, completion_tokens: 15, total_tokens: 29 }),
  'data: [DONE]\n\n',
];

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/health') {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 2 }).end('ok');
    return;
  }
  if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
    return;
  }
  const body: Buffer[] = [];
  req.on('data', (b: Buffer) => body.push(b));
  req.on('end', () => {
    if (!/"stream"\s*:\s*true/.test(Buffer.concat(body).toString('utf8'))) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': completion.length });
      res.end(completion);
      return;
    }
    // The first event at once, the rest after it, as a provider streams tokens.
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(streamed[0]);
    setImmediate(() => res.end(streamed.slice(1).join('')));
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.BARE_PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));

/**
 * The gateway benchmark's upstream (bench/gateway.ts): a local OpenAI-compatible server in a process of
 * its own that answers every `POST …/chat/completions` with one fixed chat completion, at once,
 * and `GET /health`. Loopback only; port from BARE_PORT (bench/lib/processes.ts `startChild`).
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

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/health') {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 2 }).end('ok');
    return;
  }
  if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
    return;
  }
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': completion.length });
    res.end(completion);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.BARE_PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));

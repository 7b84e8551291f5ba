/**
 * The baseline of the run benchmarks: the same HTTP framework (Fastify 5) doing only what any
 * route must do — parse a JSON body and reply — and an SSE route that sends its first event at once.
 */
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.get('/health', async () => ({ status: 'ok' }));
app.post('/api/v1/runs', async (req) => ({ id: 'bare', status: 'completed', echo: req.body }));
app.get('/stream', (req, reply) => {
  reply.hijack();
  reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  reply.raw.write('id: 1\ndata: "first"\n\n');
  if ((req.query as { hold?: string }).hold !== '1') reply.raw.end('event: close\ndata: {}\n\n');
});
await app.listen({ port: Number(process.env.BARE_PORT), host: '127.0.0.1' });

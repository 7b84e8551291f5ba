/**
 * OpenTelemetry (src/telemetry): Orrery's spans, as a local OTLP/HTTP receiver gets them
 * (protobuf and JSON), for blocking, streamed, failed, retried, virtual and traceparent runs; the
 * GenAI metrics; nothing exported without the OTEL_* settings; runs unharmed by a dead collector.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECTS, seedEcho, startTestServer, type TestServer } from '../support/server.ts';
import { listenOnLoopback } from '../support/wire-scaffold.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.ts';
import { startOpenAIWireServer, type WireServer } from '../support/openai-wire-server.ts';
import { telemetrySettingsOf } from '../../src/telemetry/settings.ts';

const SERVER = 2;
const CLIENT = 3;
const ERROR = 2;
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

const settings = (endpoint: string, extra: Record<string, string> = {}) =>
  telemetrySettingsOf({
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_BSP_SCHEDULE_DELAY: '10',
    OTEL_METRIC_EXPORT_INTERVAL: '200',
    OTEL_SERVICE_NAME: 'orrery-test',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
    ...extra,
  });

const chatOf = (spans: ReceivedSpan[], runId: string) =>
  spans.find((s) => s.name.startsWith('chat ') && s.attributes['orrery.run.id'] === runId);

describe('OTEL_* settings', () => {
  it('reads the endpoints, protocol, headers, resource, sampler and batch settings', () => {
    const s = telemetrySettingsOf({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20abc,x-team=ml',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_RESOURCE_ATTRIBUTES: 'service.namespace=llm,deployment.environment.name=prod',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_BSP_MAX_QUEUE_SIZE: '100',
    })!;
    assert.equal(s.traces!.url, 'http://collector:4318/v1/traces');
    assert.equal(s.metrics!.url, 'http://collector:4318/v1/metrics');
    assert.equal(s.traces!.protocol, 'http/json');
    assert.deepEqual(s.traces!.headers, { authorization: 'Bearer abc', 'x-team': 'ml' });
    assert.equal(s.serviceName, 'orrery');
    assert.equal(s.resourceAttributes['service.namespace'], 'llm');
    assert.equal(s.sampler, 'parentbased_traceidratio');
    assert.equal(s.samplerArg, 0.25);
    assert.deepEqual(s.batch, {
      scheduleDelayMs: 5000,
      exportTimeoutMs: 30_000,
      maxQueueSize: 100,
      maxExportBatchSize: 100,
    });
    assert.equal(s.captureContent, false);
    const own = telemetrySettingsOf({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://tempo.example/otlp/v1/traces' })!;
    assert.equal(own.traces!.url, 'https://tempo.example/otlp/v1/traces');
    assert.equal(own.traces!.protocol, 'http/protobuf');
    assert.equal(own.metrics, undefined, 'no metrics without a base or metrics endpoint');
    assert.equal(
      telemetrySettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }),
      undefined,
    );
  });

  it('refuses values it cannot honour, saying what to set', () => {
    const base = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    assert.throws(
      () => telemetrySettingsOf({ ...base, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
      /OTEL_EXPORTER_OTLP_PROTOCOL must be http\/protobuf or http\/json/,
    );
    assert.throws(
      () => telemetrySettingsOf({ ...base, OTEL_TRACES_SAMPLER: 'sometimes' }),
      /OTEL_TRACES_SAMPLER must be one of/,
    );
    assert.throws(() => telemetrySettingsOf({ ...base, OTEL_TRACES_SAMPLER_ARG: '2' }), /between 0 and 1/);
    assert.throws(
      () => telemetrySettingsOf({ ...base, OTEL_BSP_MAX_QUEUE_SIZE: '0' }),
      /OTEL_BSP_MAX_QUEUE_SIZE must be a whole number/,
    );
    assert.throws(
      () => telemetrySettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }),
      /absolute http\(s\) URL/,
    );
    assert.throws(() => telemetrySettingsOf({ ...base, OTEL_EXPORTER_OTLP_HEADERS: 'novalue' }), /key=value pairs/);
  });
});

for (const dialect of TEST_DIALECTS) {
  for (const protocol of ['http/protobuf', 'http/json'] as const) {
    describe(`${dialect}, ${protocol}: runs traced to an OTLP receiver`, () => {
      let srv: TestServer;
      let receiver: OtlpReceiver;
      let wire: WireServer;
      let offline: string;
      let remote: string;
      let n = 0;

      before(async () => {
        receiver = await startOtlpReceiver();
        wire = await startOpenAIWireServer({ apiKey: null, text: 'wire answer' });
        srv = await startTestServer(dialect, {
          telemetry: settings(receiver.origin, { OTEL_EXPORTER_OTLP_PROTOCOL: protocol }),
        });
        offline = (
          await srv.api('POST', '/api/v1/environments', {
            name: 'offline',
            provider: 'test',
            default_model: 'echo',
            config: { retries: { base_delay_ms: 5, max_delay_ms: 20 } },
          })
        ).body.id;
        remote = (
          await srv.api('POST', '/api/v1/environments', {
            name: 'remote',
            provider: 'openai_compatible',
            endpoint_url: wire.url,
            default_model: 'm',
            config: { retries: 0 },
          })
        ).body.id;
      });
      after(async () => {
        await srv.close();
        await wire.close();
        await receiver.close();
      });

      /** An interaction whose prompt is unique (the test provider's fault models count per prompt). */
      const interaction = async (environment: string) =>
        (
          await srv.api('POST', '/api/v1/interactions', {
            name: `otel ${++n}`,
            status: 'draft',
            environment,
            prompts: [
              {
                type: 'template',
                template: { role: 'user', content_type: 'text', content: `call ${n} of ${dialect} ${protocol}` },
              },
            ],
          })
        ).body.id as string;

      it('a blocking run with a traceparent: server span, chat span and provider call in the caller’s trace', async () => {
        const r = await srv.api(
          'POST',
          '/api/v1/runs',
          { interaction: await interaction(remote), config: { model: 'm', temperature: 0.3, max_tokens: 50 } },
          undefined,
          { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`, baggage: 'tenant=acme' },
        );
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.trace_id, CALLER_TRACE);
        const spans = await receiver.waitFor(
          (s) => !!chatOf(s, r.body.id) && s.some((x) => x.kind === SERVER && x.traceId === CALLER_TRACE),
          'the run’s spans',
        );
        const server = spans.find((s) => s.kind === SERVER && s.traceId === CALLER_TRACE)!;
        assert.equal(server.name, 'POST /api/v1/runs');
        assert.equal(server.parentSpanId, CALLER_SPAN);
        assert.equal(server.attributes['http.response.status_code'], 200);
        assert.equal(server.resource['service.name'], 'orrery-test');
        assert.equal(server.resource['deployment.environment.name'], 'test');
        const chat = chatOf(spans, r.body.id)!;
        assert.equal(chat.name, 'chat m');
        assert.equal(chat.kind, CLIENT);
        assert.equal(chat.traceId, CALLER_TRACE);
        assert.equal(chat.parentSpanId, server.spanId);
        assert.equal(chat.spanId, r.body.span_id);
        assert.equal(chat.attributes['gen_ai.operation.name'], 'chat');
        assert.equal(chat.attributes['gen_ai.provider.name'], 'openai_compatible');
        assert.equal(chat.attributes['gen_ai.request.model'], 'm');
        assert.equal(chat.attributes['gen_ai.response.model'], 'm');
        assert.equal(chat.attributes['gen_ai.request.temperature'], 0.3);
        assert.equal(chat.attributes['gen_ai.request.max_tokens'], 50);
        assert.equal(chat.attributes['gen_ai.usage.input_tokens'], r.body.token_use.prompt);
        assert.equal(chat.attributes['gen_ai.usage.output_tokens'], r.body.token_use.result);
        assert.deepEqual(chat.attributes['gen_ai.response.finish_reasons'], [r.body.finish_reason]);
        assert.equal(chat.attributes['gen_ai.response.id'], r.body.id);
        assert.equal(chat.attributes['orrery.interaction.id'], r.body.interaction);
        assert.equal(chat.attributes['orrery.environment.id'], remote);
        assert.equal(chat.attributes['orrery.project.id'], r.body.project);
        assert.equal(chat.status.code, 0);
        const details = chat.events.find((e) => e.name === 'gen_ai.client.inference.operation.details')!;
        assert.match(String(details.attributes['gen_ai.input.messages']), /call \d+ of/);
        assert.match(String(details.attributes['gen_ai.output.messages']), /wire answer/);
        const call = spans.find((s) => s.parentSpanId === chat.spanId && s.kind === CLIENT)!;
        assert.equal(call.name, 'POST');
        assert.equal(call.attributes['http.response.status_code'], 200);
        // The provider got the call's traceparent, and the caller's baggage.
        const sent = wire.requests.at(-1)!.headers;
        assert.equal(sent.traceparent, `00-${CALLER_TRACE}-${call.spanId}-01`);
        assert.equal(sent.baggage, 'tenant=acme');
        // Searchable by its trace.
        const found = await srv.api('POST', '/api/v1/runs/search', { query: { query: `trace_id:${CALLER_TRACE}` } });
        assert.equal(found.status, 200, JSON.stringify(found.body));
        const ids = JSON.stringify(found.body);
        assert.ok(ids.includes(r.body.id), ids);
      });

      it('a blocking run without a traceparent starts a trace; the GenAI metrics are exported', async () => {
        const r = await srv.api('POST', '/api/v1/runs', {
          interaction: await interaction(offline),
          config: { model: 'echo' },
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.match(r.body.trace_id, /^[0-9a-f]{32}$/);
        const spans = await receiver.waitFor((s) => !!chatOf(s, r.body.id), 'the chat span');
        const chat = chatOf(spans, r.body.id)!;
        assert.equal(chat.traceId, r.body.trace_id);
        const server = spans.find((s) => s.spanId === chat.parentSpanId)!;
        assert.equal(server.kind, SERVER);
        assert.equal(server.parentSpanId, '');
        for (let i = 0; i < 250 && receiver.metrics.size < 2; i++) await new Promise((res) => setTimeout(res, 20));
        assert.ok(receiver.metrics.has('gen_ai.client.token.usage'), [...receiver.metrics].join());
        assert.ok(receiver.metrics.has('gen_ai.client.operation.duration'), [...receiver.metrics].join());
      });

      it('records content for a conversation’s run, never for a restricted one (a fork of what the caller holds)', async () => {
        const id = await interaction(offline);
        const first = await srv.api('POST', '/api/v1/runs', {
          interaction: id,
          config: { model: 'echo' },
          conversation: true,
        });
        assert.equal(first.status, 200, JSON.stringify(first.body));
        assert.ok(first.body.conversation?.messages, JSON.stringify(first.body.conversation));
        const fork = await srv.api('POST', '/api/v1/runs', {
          interaction: id,
          config: { model: 'echo' },
          conversation: first.body.conversation,
        });
        assert.equal(fork.status, 200, JSON.stringify(fork.body));
        const spans = await receiver.waitFor(
          (s) => !!chatOf(s, first.body.id) && !!chatOf(s, fork.body.id),
          'both chat spans',
        );
        const details = (span: ReceivedSpan) =>
          span.events.find((e) => e.name === 'gen_ai.client.inference.operation.details');
        assert.ok(details(chatOf(spans, first.body.id)!), 'the first run records its content');
        assert.equal(details(chatOf(spans, fork.body.id)!), undefined, 'the restricted run records none');
        assert.equal(chatOf(spans, fork.body.id)!.attributes['orrery.run.status'], 'completed');
      });

      it('a streamed run: its chat span ends with the stream, in the trace of the request that created it', async () => {
        const created = await srv.api('POST', '/api/v1/runs', {
          interaction: await interaction(offline),
          config: { model: 'echo' },
          stream: true,
        });
        assert.equal(created.status, 200, JSON.stringify(created.body));
        const text = await (
          await fetch(`${srv.url}/api/v1/runs/${created.body.id}/stream?access_token=${srv.adminKey}`)
        ).text();
        assert.match(text, /event: close/);
        const spans = await receiver.waitFor((s) => !!chatOf(s, created.body.id), 'the streamed chat span');
        const chat = chatOf(spans, created.body.id)!;
        assert.equal(chat.traceId, created.body.trace_id);
        const parent = spans.find((s) => s.spanId === chat.parentSpanId)!;
        assert.equal(parent.name, 'POST /api/v1/runs');
        assert.equal(chat.attributes['orrery.run.status'], 'completed');
      });

      it('a failed run: error status and error.type', async () => {
        const r = await srv.api('POST', '/api/v1/runs', {
          interaction: await interaction(offline),
          config: { model: 'error' },
        });
        assert.equal(r.status, 502);
        const id = r.body.details?.id ?? r.body.id ?? r.body.run?.id ?? /run (\S+) failed/.exec(r.body.message)?.[1];
        const spans = await receiver.waitFor((s) => !!chatOf(s, id), 'the failed chat span');
        const chat = chatOf(spans, id)!;
        assert.equal(chat.status.code, ERROR);
        assert.match(chat.status.message, /always fails/);
        assert.equal(chat.attributes['error.type'], 'provider_error');
        assert.equal(chat.attributes['orrery.run.status'], 'failed');
      });

      it('a run that fails on its template: a chat span with the template error, and the ids on the run', async () => {
        const ix = (
          await srv.api('POST', '/api/v1/interactions', {
            name: `otel ${++n}`,
            status: 'draft',
            environment: offline,
            prompts: [
              { type: 'template', template: { role: 'user', content_type: 'jst', content: 'return customer.name' } },
            ],
          })
        ).body.id as string;
        const r = await srv.api('POST', '/api/v1/runs', { interaction: ix, data: {}, config: { model: 'echo' } });
        assert.equal(r.status, 422, JSON.stringify(r.body));
        assert.equal(r.body.error, 'template_error');
        const id = r.body.details.run_id as string;
        const spans = await receiver.waitFor((s) => !!chatOf(s, id), 'the template-failed chat span');
        const chat = chatOf(spans, id)!;
        assert.equal(chat.name, 'chat echo');
        assert.equal(chat.status.code, ERROR);
        assert.equal(chat.attributes['error.type'], 'template_error');
        assert.equal(chat.attributes['orrery.run.status'], 'failed');
        const server = spans.find((s) => s.spanId === chat.parentSpanId)!;
        assert.equal(server.name, 'POST /api/v1/runs');
        assert.equal(server.attributes['http.response.status_code'], 422);
        const stored = await srv.api('GET', `/api/v1/runs/${id}`);
        assert.equal(stored.body.trace_id, chat.traceId);
        assert.equal(stored.body.span_id, chat.spanId);
      });

      it('a retried run: a span per attempt under the chat span', async () => {
        const r = await srv.api('POST', '/api/v1/runs', {
          interaction: await interaction(offline),
          config: { model: 'flaky:2' },
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        const spans = await receiver.waitFor((s) => !!chatOf(s, r.body.id), 'the retried chat span');
        const chat = chatOf(spans, r.body.id)!;
        const attempts = spans
          .filter((s) => s.parentSpanId === chat.spanId && s.name.startsWith('attempt '))
          .sort(
            (a, b) => Number(a.attributes['orrery.attempt.number']) - Number(b.attributes['orrery.attempt.number']),
          );
        assert.deepEqual(
          attempts.map((a) => [a.name, a.status.code]),
          [
            ['attempt 1', ERROR],
            ['attempt 2', ERROR],
            ['attempt 3', 0],
          ],
        );
        assert.equal(attempts[0].attributes['error.type'], 'provider_error');
      });

      it('a virtual-environment run: each attempt is a child run’s chat span under the virtual run’s', async () => {
        const env = await srv.api('POST', '/api/v1/environments', {
          name: `virtual ${++n}`,
          provider: 'virtual_lb',
          config: { entries: [{ model: `${offline}::echo`, weight: 1 }] },
        });
        assert.equal(env.status, 200, JSON.stringify(env.body));
        const r = await srv.api('POST', '/api/v1/runs', { interaction: await interaction(env.body.id) });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        const childId = r.body.attempts?.[0]?.run as string | undefined;
        const spans = await receiver.waitFor(
          (s) => !!chatOf(s, r.body.id) && s.some((x) => x.attributes['orrery.run.parent'] === r.body.id),
          'the virtual run’s spans',
        );
        const parent = chatOf(spans, r.body.id)!;
        const child = spans.find((s) => s.attributes['orrery.run.parent'] === r.body.id)!;
        assert.equal(child.name, 'chat echo');
        assert.equal(child.parentSpanId, parent.spanId);
        assert.equal(child.traceId, parent.traceId);
        if (childId) assert.equal(child.attributes['orrery.run.id'], childId);
        assert.equal(parent.attributes['gen_ai.provider.name'], 'virtual_lb');
      });

      it('counts dropped spans in /metrics (none here)', async () => {
        const metrics = await (await fetch(`${srv.url}/metrics`)).text();
        assert.match(metrics, /orrery_otel_spans_dropped_total 0/);
      });
    });
  }

  describe(`${dialect}: without OTEL_* settings, or with a dead collector`, () => {
    it('exports nothing and records no trace when the variables are unset', async () => {
      assert.equal(telemetrySettingsOf({}), undefined);
      const receiver = await startOtlpReceiver();
      const srv = await startTestServer(dialect);
      try {
        const { interaction } = await seedEcho(srv);
        const r = await srv.api(
          'POST',
          '/api/v1/runs',
          { interaction: interaction.id, data: { text: 'hi' } },
          undefined,
          {
            traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`,
          },
        );
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.trace_id, undefined);
        assert.equal(srv.orrery.config.telemetry, undefined);
      } finally {
        await srv.close();
      }
      assert.equal(receiver.spans.length, 0);
      await receiver.close();
    });

    it('exports the metrics and records no span with OTEL_TRACES_EXPORTER=none', async () => {
      const receiver = await startOtlpReceiver();
      const srv = await startTestServer(dialect, {
        telemetry: settings(receiver.origin, { OTEL_TRACES_EXPORTER: 'none' }),
      });
      try {
        const { interaction } = await seedEcho(srv);
        const r = await srv.api('POST', '/api/v1/runs', { interaction: interaction.id, data: { text: 'hi' } });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.trace_id, undefined, 'no trace to link the run to');
        for (let i = 0; i < 250 && !receiver.metrics.has('gen_ai.client.token.usage'); i++)
          await new Promise((res) => setTimeout(res, 20));
        assert.ok(receiver.metrics.has('gen_ai.client.token.usage'), [...receiver.metrics].join());
      } finally {
        await srv.close();
      }
      assert.equal(receiver.spans.length, 0);
      await receiver.close();
    });

    const runFive = async (srv: TestServer) => {
      const { interaction } = await seedEcho(srv);
      for (let i = 0; i < 5; i++) {
        const r = await srv.api('POST', '/api/v1/runs', { interaction: interaction.id, data: { text: `hi ${i}` } });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.status, 'completed');
        assert.match(r.body.trace_id, /^[0-9a-f]{32}$/);
      }
    };

    it('answers runs while nothing listens at the collector’s address', async () => {
      const dead = await startOtlpReceiver();
      await dead.close(); // nothing listens there any more
      const srv = await startTestServer(dialect, {
        telemetry: settings(dead.origin, { OTEL_BSP_EXPORT_TIMEOUT: '300' }),
      });
      try {
        await runFive(srv);
      } finally {
        await srv.close(); // within OTEL_BSP_EXPORT_TIMEOUT, though the last spans cannot be sent
      }
    });

    it('answers runs while the collector holds its answers, and drops the spans past the queue', async () => {
      // A collector that answers only when told: the export in flight holds the processor, so the queue fills.
      const held: Array<() => void> = [];
      const holding = await listenOnLoopback(
        (_req, res) =>
          new Promise<void>((resolve) =>
            held.push(() => {
              res.writeHead(200, { 'content-length': 0 });
              res.end();
              resolve();
            }),
          ),
        () => {},
      );
      const srv = await startTestServer(dialect, {
        telemetry: settings(holding.origin, { OTEL_BSP_MAX_QUEUE_SIZE: '2', OTEL_BSP_EXPORT_TIMEOUT: '600000' }),
      });
      try {
        await runFive(srv);
        const metrics = await (await fetch(`${srv.url}/metrics`)).text();
        const dropped = Number(/orrery_otel_spans_dropped_total (\d+)/.exec(metrics)?.[1]);
        // Ten spans (a request's and its run's, five times): at most two in the held export, two queued.
        assert.ok(dropped >= 4, `dropped ${dropped}`);
      } finally {
        for (const answer of held.splice(0)) answer();
        const answering = setInterval(() => held.splice(0).forEach((answer) => answer()), 10);
        await srv.close();
        clearInterval(answering);
        await holding.close();
      }
    });
  });
}

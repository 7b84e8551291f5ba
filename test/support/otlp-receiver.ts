/**
 * A local OTLP/HTTP receiver on loopback: takes POST /v1/traces and /v1/metrics in protobuf
 * (decoded here by a small reader of the protobuf wire format, for the OTLP messages the tests
 * read) or JSON, and keeps the spans as plain objects, ids in hex.
 */
import { listenOnLoopback, readBody, sleep, writeJson, type Listening } from './wire-scaffold.ts';
import type { IncomingMessage } from 'node:http';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  status: { code: number; message: string };
  events: Array<{ name: string; attributes: Record<string, unknown> }>;
  resource: Record<string, unknown>;
}

export interface OtlpReceiver extends Listening {
  spans: ReceivedSpan[];
  /** Names of the metrics received. */
  metrics: Set<string>;
  /** Content types of the trace requests. */
  contentTypes: Set<string>;
  /** traceparent headers the receiver saw on other paths (a provider that shares the port: none). */
  waitFor(predicate: (spans: ReceivedSpan[]) => boolean, what: string): Promise<ReceivedSpan[]>;
}

// ---- the protobuf wire format: just what OTLP's trace messages use ----------------------------

type Field = { no: number; wire: number; value: bigint | Uint8Array };

function* fields(buf: Uint8Array): Generator<Field> {
  let i = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[i++];
      result |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return result;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const key = Number(varint());
    const no = key >> 3;
    const wire = key & 7;
    if (wire === 0) yield { no, wire, value: varint() };
    else if (wire === 1) {
      yield { no, wire, value: buf.slice(i, i + 8) };
      i += 8;
    } else if (wire === 2) {
      const len = Number(varint());
      yield { no, wire, value: buf.slice(i, i + len) };
      i += len;
    } else if (wire === 5) {
      yield { no, wire, value: buf.slice(i, i + 4) };
      i += 4;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
}

const text = (v: Field['value']) => Buffer.from(v as Uint8Array).toString('utf8');
const hex = (v: Field['value']) => Buffer.from(v as Uint8Array).toString('hex');
const bytes = (v: Field['value']) => v as Uint8Array;

function anyValue(buf: Uint8Array): unknown {
  for (const f of fields(buf)) {
    if (f.no === 1) return text(f.value);
    if (f.no === 2) return f.value === 1n;
    if (f.no === 3) return Number(BigInt.asIntN(64, f.value as bigint));
    if (f.no === 4) return Buffer.from(bytes(f.value)).readDoubleLE(0);
    if (f.no === 5) return [...fields(bytes(f.value))].filter((x) => x.no === 1).map((x) => anyValue(bytes(x.value)));
  }
  return undefined;
}

function keyValue(buf: Uint8Array): [string, unknown] {
  let key = '';
  let value: unknown;
  for (const f of fields(buf)) {
    if (f.no === 1) key = text(f.value);
    if (f.no === 2) value = anyValue(bytes(f.value));
  }
  return [key, value];
}

function protoSpan(buf: Uint8Array, resource: Record<string, unknown>): ReceivedSpan {
  const s: ReceivedSpan = {
    traceId: '',
    spanId: '',
    parentSpanId: '',
    name: '',
    kind: 0,
    attributes: {},
    status: { code: 0, message: '' },
    events: [],
    resource,
  };
  for (const f of fields(buf)) {
    if (f.no === 1) s.traceId = hex(f.value);
    else if (f.no === 2) s.spanId = hex(f.value);
    else if (f.no === 4) s.parentSpanId = hex(f.value);
    else if (f.no === 5) s.name = text(f.value);
    else if (f.no === 6) s.kind = Number(f.value);
    else if (f.no === 9) {
      const [k, v] = keyValue(bytes(f.value));
      s.attributes[k] = v;
    } else if (f.no === 11) {
      const event = { name: '', attributes: {} as Record<string, unknown> };
      for (const e of fields(bytes(f.value))) {
        if (e.no === 2) event.name = text(e.value);
        if (e.no === 3) {
          const [k, v] = keyValue(bytes(e.value));
          event.attributes[k] = v;
        }
      }
      s.events.push(event);
    } else if (f.no === 15) {
      for (const st of fields(bytes(f.value))) {
        if (st.no === 2) s.status.message = text(st.value);
        if (st.no === 3) s.status.code = Number(st.value);
      }
    }
  }
  return s;
}

function protoTraces(buf: Uint8Array): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of fields(buf)) {
    if (rs.no !== 1) continue;
    const resource: Record<string, unknown> = {};
    const scopes: Uint8Array[] = [];
    for (const f of fields(bytes(rs.value))) {
      if (f.no === 1)
        for (const a of fields(bytes(f.value))) {
          if (a.no === 1) {
            const [k, v] = keyValue(bytes(a.value));
            resource[k] = v;
          }
        }
      if (f.no === 2) scopes.push(bytes(f.value));
    }
    for (const scope of scopes)
      for (const f of fields(scope)) if (f.no === 2) out.push(protoSpan(bytes(f.value), resource));
  }
  return out;
}

// ---- OTLP JSON ---------------------------------------------------------------------------------

type JsonAny = Record<string, any>;
function jsonValue(v: JsonAny): unknown {
  if ('stringValue' in v) return v.stringValue;
  if ('boolValue' in v) return v.boolValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  if ('arrayValue' in v) return ((v.arrayValue.values ?? []) as JsonAny[]).map(jsonValue);
  return undefined;
}
const jsonAttributes = (list: JsonAny[] = []) =>
  Object.fromEntries(list.map((a) => [a.key as string, jsonValue(a.value ?? {})]));

function jsonTraces(body: JsonAny): ReceivedSpan[] {
  return ((body.resourceSpans ?? []) as JsonAny[]).flatMap((rs) => {
    const resource = jsonAttributes(rs.resource?.attributes);
    return ((rs.scopeSpans ?? []) as JsonAny[]).flatMap((ss) =>
      ((ss.spans ?? []) as JsonAny[]).map((s) => ({
        traceId: s.traceId ?? '',
        spanId: s.spanId ?? '',
        parentSpanId: s.parentSpanId ?? '',
        name: s.name,
        kind: s.kind ?? 0,
        attributes: jsonAttributes(s.attributes),
        status: { code: s.status?.code ?? 0, message: s.status?.message ?? '' },
        events: ((s.events ?? []) as JsonAny[]).map((e) => ({
          name: e.name,
          attributes: jsonAttributes(e.attributes),
        })),
        resource,
      })),
    );
  });
}

function readRaw(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (b: Buffer) => parts.push(b));
    req.on('end', () => resolve(Buffer.concat(parts)));
    req.on('error', reject);
  });
}

/** Metric names from a protobuf ExportMetricsServiceRequest (resource_metrics → scope_metrics → metrics → name). */
function protoMetricNames(buf: Uint8Array): string[] {
  const names: string[] = [];
  for (const rm of fields(buf))
    if (rm.no === 1)
      for (const sm of fields(bytes(rm.value)))
        if (sm.no === 2)
          for (const m of fields(bytes(sm.value)))
            if (m.no === 2) for (const f of fields(bytes(m.value))) if (f.no === 1) names.push(text(f.value));
  return names;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const metrics = new Set<string>();
  const contentTypes = new Set<string>();
  const listening = await listenOnLoopback(
    async (req, res) => {
      const type = String(req.headers['content-type'] ?? '');
      if (req.url === '/v1/traces') {
        contentTypes.add(type);
        if (type.includes('json')) spans.push(...jsonTraces(JSON.parse(await readBody(req)) as JsonAny));
        else spans.push(...protoTraces(await readRaw(req)));
      } else if (req.url === '/v1/metrics') {
        if (type.includes('json')) {
          const body = JSON.parse(await readBody(req)) as JsonAny;
          for (const rm of body.resourceMetrics ?? [])
            for (const sm of rm.scopeMetrics ?? []) for (const m of sm.metrics ?? []) metrics.add(m.name as string);
        } else for (const n of protoMetricNames(await readRaw(req))) metrics.add(n);
      } else {
        writeJson(res, 404, {});
        return;
      }
      if (type.includes('json')) writeJson(res, 200, {});
      else {
        res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': 0 });
        res.end();
      }
    },
    (res, message) => writeJson(res, 500, { message }),
  );
  return {
    ...listening,
    spans,
    metrics,
    contentTypes,
    async waitFor(predicate, what) {
      for (let i = 0; i < 500; i++) {
        if (predicate(spans)) return spans;
        await sleep(20);
      }
      throw new Error(`the receiver never got ${what}; it has: ${spans.map((s) => s.name).join(', ')}`);
    },
  };
}

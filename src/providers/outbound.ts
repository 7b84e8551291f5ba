/**
 * Everything Orrery sends to the network goes through one Outbound: an undici Agent with
 * keep-alive connections per origin (cheaper per call than the global fetch), whose connector
 * resolves each host once, checks the addresses against the egress policy (egress.ts) and
 * connects to an address it checked. The server builds one from its config and gives it to the
 * environments it resolves (ProviderConnection.outbound).
 */
import { createRequire } from 'node:module';
import type { Agent } from 'undici';
import { EgressPolicy, allowedAddresses, systemResolver, type Resolver } from './egress.ts';
import type { Telemetry } from '../telemetry/hooks.ts';

type Undici = typeof import('undici');
const require = createRequire(import.meta.url);
let undici: Undici | undefined;
/** undici (its CommonJS build, loaded synchronously) is loaded by the first outbound call, not at start-up: about 8 MB and 150 ms (bench/README.md, footprint). */
const loadUndici = (): Undici => (undici ??= require('undici') as Undici);

export interface OutboundOptions {
  policy: EgressPolicy;
  /** DNS; tests give a stub so that no name is ever looked up outside the machine. */
  resolve?: Resolver;
  /** Open connections per origin. */
  connections?: number;
  /** The largest result a model may answer, in bytes of text (ORRERY_MAX_RESULT_SIZE). */
  maxResultBytes?: number;
  /** Spans of provider calls, with the traceparent they send (src/telemetry). */
  tracer?: Pick<Telemetry, 'providerCall'>;
  /** Certificates trusted instead of the system's: tests give their local https servers' own. */
  ca?: string;
}

export const MAX_RESULT_VARIABLE = 'ORRERY_MAX_RESULT_SIZE';
export const DEFAULT_MAX_RESULT_BYTES = 1024 ** 2;

export class Outbound {
  readonly policy: EgressPolicy;
  readonly maxResultBytes: number;
  readonly tracer: Pick<Telemetry, 'providerCall'> | undefined;
  private made: Agent | undefined;
  private closed = false;

  constructor(private readonly opts: OutboundOptions) {
    this.policy = opts.policy;
    this.maxResultBytes = opts.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES;
    this.tracer = opts.tracer;
  }

  /** The agent, made at the first call that needs it (a closed Outbound makes it closed: calls fail as before). */
  get agent(): Agent {
    if (this.made) return this.made;
    this.made = this.makeAgent();
    if (this.closed) void this.made.close();
    return this.made;
  }

  private makeAgent(): Agent {
    const { Agent, buildConnector } = loadUndici();
    const opts = this.opts;
    const resolve = opts.resolve ?? systemResolver;
    const connect = buildConnector({ timeout: 30_000, ...(opts.ca ? { ca: opts.ca } : {}) });
    return new Agent({
      connections: opts.connections ?? 128,
      keepAliveTimeout: 30_000,
      connect: (options, callback) => {
        allowedAddresses(options.hostname, this.policy, resolve).then(
          // `host` keeps the name, so TLS still verifies the certificate against it (SNI too).
          (addresses) => connect({ ...options, hostname: addresses[0] }, callback),
          (err: Error) => callback(err, null),
        );
      },
    });
  }

  close(): Promise<void> {
    this.closed = true;
    return this.made ? this.made.close() : Promise.resolve();
  }
}

/** For drivers used without a server (unit tests): loopback and private targets allowed. */
let fallback: Outbound | undefined;
export const defaultOutbound = (): Outbound =>
  (fallback ??= new Outbound({ policy: new EgressPolicy('private', 'the default for code outside a server') }));

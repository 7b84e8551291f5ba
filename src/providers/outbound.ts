/**
 * Everything Orrery sends to the network goes through one Outbound: an undici Agent with
 * keep-alive connections per origin (cheaper per call than the global fetch), whose connector
 * resolves each host once, checks the addresses against the egress policy (egress.ts) and
 * connects to an address it checked. The server builds one from its config and gives it to the
 * environments it resolves (ProviderConnection.outbound).
 */
import { Agent, buildConnector } from 'undici';
import { EgressPolicy, allowedAddresses, systemResolver, type Resolver } from './egress.ts';

export interface OutboundOptions {
  policy: EgressPolicy;
  /** DNS; tests give a stub so that no name is ever looked up outside the machine. */
  resolve?: Resolver;
  /** Open connections per origin. */
  connections?: number;
}

export class Outbound {
  readonly policy: EgressPolicy;
  readonly agent: Agent;

  constructor(opts: OutboundOptions) {
    this.policy = opts.policy;
    const resolve = opts.resolve ?? systemResolver;
    const connect = buildConnector({ timeout: 30_000 });
    this.agent = new Agent({
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
    return this.agent.close();
  }
}

/** For drivers used without a server (unit tests): loopback and private targets allowed. */
let fallback: Outbound | undefined;
export const defaultOutbound = (): Outbound => (fallback ??= new Outbound({ policy: new EgressPolicy('private', 'the default for code outside a server') }));

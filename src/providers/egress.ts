/**
 * The egress policy (issue 14): which addresses Orrery may connect to when a user's environment
 * or embeddings provider names an endpoint. Without it a project member could point an endpoint
 * at loopback, a private network or a cloud metadata service and read the answer back in an
 * error message (server-side request forgery).
 *
 * ORRERY_EGRESS is a comma-separated list of:
 *   public            every public (globally routable) address
 *   private           also loopback and private ranges (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7)
 *   <CIDR> or <IP>    that range (this is how a link-local or metadata address can be allowed)
 *   <host name>       that host, whatever it resolves to; `*.example.com` for its subdomains
 * Default: `private` when the server listens on loopback only (a newcomer's local Ollama keeps
 * working), `public` when it listens on other interfaces. Link-local (169.254/16, fe80::/10),
 * unspecified (0.0.0.0/8, ::) and metadata addresses are refused unless a CIDR, IP or host entry
 * names them. The check is made on the resolved address at connect time, and the connection
 * goes to the address that was checked (no DNS rebinding); redirects are not followed.
 */
import { BlockList, isIP } from 'node:net';
import { lookup as dnsLookup } from 'node:dns/promises';

export type AddressClass = 'public' | 'private' | 'loopback' | 'link-local' | 'unspecified' | 'metadata' | 'reserved';

function blockList(entries: Array<[string, number, 'ipv4' | 'ipv6']>): BlockList {
  const list = new BlockList();
  for (const [net, prefix, family] of entries) list.addSubnet(net, prefix, family);
  return list;
}

const METADATA = blockList([
  ['169.254.169.254', 32, 'ipv4'],
  ['100.100.100.200', 32, 'ipv4'],
  ['fd00:ec2::254', 128, 'ipv6'],
  ['169.254.170.2', 32, 'ipv4'],
]);
const UNSPECIFIED = blockList([
  ['0.0.0.0', 8, 'ipv4'],
  ['::', 128, 'ipv6'],
]);
const LOOPBACK = blockList([
  ['127.0.0.0', 8, 'ipv4'],
  ['::1', 128, 'ipv6'],
]);
const LINK_LOCAL = blockList([
  ['169.254.0.0', 16, 'ipv4'],
  ['fe80::', 10, 'ipv6'],
]);
const PRIVATE = blockList([
  ['10.0.0.0', 8, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'],
  ['fc00::', 7, 'ipv6'],
]);
/** Not routable on the internet and not a network of one's own: documentation, benchmarking, multicast, reserved. */
const RESERVED = blockList([
  ['192.0.0.0', 24, 'ipv4'],
  ['192.0.2.0', 24, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'],
  ['198.51.100.0', 24, 'ipv4'],
  ['203.0.113.0', 24, 'ipv4'],
  ['224.0.0.0', 4, 'ipv4'],
  ['240.0.0.0', 4, 'ipv4'],
  ['ff00::', 8, 'ipv6'],
  ['2001:db8::', 32, 'ipv6'],
  ['64:ff9b:1::', 48, 'ipv6'],
  ['100::', 64, 'ipv6'],
]);

/** `::ffff:127.0.0.1` (and its hex form) is 127.0.0.1: check IPv4-mapped addresses as IPv4. */
function normaliseAddress(ip: string): { address: string; family: 'ipv4' | 'ipv6' } {
  const bare = ip.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (isIP(bare) === 4) return { address: bare, family: 'ipv4' };
  const mapped = /^::ffff:(?:0:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
  if (mapped) return { address: mapped[1], family: 'ipv4' };
  const hex = /^::ffff:(?:0:)?([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(bare);
  if (hex) {
    const hi = parseInt(hex[1], 16);
    const lo = parseInt(hex[2], 16);
    return { address: `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`, family: 'ipv4' };
  }
  return { address: bare.toLowerCase(), family: 'ipv6' };
}

export function classify(ip: string): AddressClass {
  const { address, family } = normaliseAddress(ip);
  if (METADATA.check(address, family)) return 'metadata';
  if (UNSPECIFIED.check(address, family)) return 'unspecified';
  if (LOOPBACK.check(address, family)) return 'loopback';
  if (LINK_LOCAL.check(address, family)) return 'link-local';
  if (PRIVATE.check(address, family)) return 'private';
  if (RESERVED.check(address, family)) return 'reserved';
  return 'public';
}

export class EgressPolicy {
  private readonly publicOk: boolean;
  private readonly privateOk: boolean;
  private readonly ranges = new BlockList();
  private readonly hosts = new Set<string>();
  private readonly suffixes: string[] = [];

  /** `setting` as ORRERY_EGRESS gives it; `source` says where the policy came from, for messages. */
  constructor(
    readonly setting: string,
    readonly source: string,
  ) {
    const items = setting
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean);
    if (!items.length)
      throw new Error('ORRERY_EGRESS is empty: use public, private, or a list of CIDRs and host names');
    let pub = false;
    let priv = false;
    for (const item of items) {
      if (item === 'public') pub = true;
      else if (item === 'private') pub = priv = true;
      else if (/^[0-9a-f:.]+\/\d+$/i.test(item)) {
        const [net, bits] = item.split('/');
        const { address, family } = normaliseAddress(net);
        const prefix = Number(bits);
        if (!isIP(address) || !Number.isInteger(prefix) || prefix < 0 || prefix > (family === 'ipv4' ? 32 : 128)) {
          throw new Error(`ORRERY_EGRESS: ${JSON.stringify(item)} is not a CIDR range`);
        }
        this.ranges.addSubnet(address, prefix, family);
      } else if (isIP(normaliseAddress(item).address)) {
        const { address, family } = normaliseAddress(item);
        this.ranges.addAddress(address, family);
      } else if (item.startsWith('*.')) this.suffixes.push(item.slice(1));
      else if (/^[a-z0-9.-]+$/.test(item)) this.hosts.add(item.replace(/\.$/, ''));
      else
        throw new Error(
          `ORRERY_EGRESS: ${JSON.stringify(item)} is not public, private, a CIDR range, an IP address or a host name`,
        );
    }
    this.publicOk = pub;
    this.privateOk = priv;
  }

  /** The default: `private` on a loopback-only listener, `public` otherwise. */
  static forListener(host: string): EgressPolicy {
    const loopbackOnly =
      host === 'localhost' || (isIP(host.replace(/^\[|\]$/g, '')) !== 0 && classify(host) === 'loopback');
    return loopbackOnly
      ? new EgressPolicy('private', `the default for a server listening on ${host} only`)
      : new EgressPolicy('public', `the default for a server listening on ${host}`);
  }

  /** Whether the host name itself is listed (then every address it resolves to is allowed). */
  allowsHost(host: string): boolean {
    const h = host.toLowerCase().replace(/\.$/, '');
    return this.hosts.has(h) || this.suffixes.some((s) => h.endsWith(s));
  }

  allowsAddress(ip: string): boolean {
    const { address, family } = normaliseAddress(ip);
    if (this.ranges.check(address, family)) return true;
    const kind = classify(address);
    if (kind === 'public') return this.publicOk;
    if (kind === 'private' || kind === 'loopback') return this.privateOk;
    return false; // link-local, unspecified, metadata, reserved: only when listed
  }

  /** For messages: what refused it and how to allow it. */
  explain(target: string, ip?: string): string {
    const kind = ip ? classify(ip) : undefined;
    return (
      `${target}${ip && ip !== target ? ` (${ip})` : ''} is ${kind ? `a ${kind} address` : 'not allowed'}, refused by the egress policy ` +
      `ORRERY_EGRESS=${this.setting} (${this.source}); an operator can allow it by adding it to ORRERY_EGRESS`
    );
  }
}

export class EgressRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EgressRefused';
  }
}

/** Host names that mean this machine whatever DNS says. */
const LOCAL_NAMES = /^(localhost|localhost\.localdomain|ip6-localhost|ip6-loopback)$|\.localhost$/i;

/**
 * Saving an endpoint: a URL whose host is an address literal (any form the URL parser
 * normalises: decimal, octal, hex, IPv4-mapped) or `localhost` that the policy refuses is
 * refused now. Names are checked when connecting (they may resolve differently later).
 */
export function checkEndpointLiteral(url: string, policy: EgressPolicy): void {
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return; // not a URL: the caller's own validation says so
  }
  const bare = host.replace(/^\[|\]$/g, '');
  if (policy.allowsHost(bare)) return;
  if (isIP(bare)) {
    if (!policy.allowsAddress(bare)) throw new EgressRefused(policy.explain(host, bare));
  } else if (LOCAL_NAMES.test(bare) && !policy.allowsAddress('127.0.0.1')) {
    throw new EgressRefused(policy.explain(host, '127.0.0.1'));
  }
}

export type Resolver = (host: string) => Promise<Array<{ address: string; family: number }>>;
export const systemResolver: Resolver = (host) => dnsLookup(host, { all: true, verbatim: true });

/**
 * The addresses of `host` that the policy allows, resolved once: the connection goes to one of
 * them, so a name cannot resolve to an allowed address for the check and another to connect.
 */
export async function allowedAddresses(host: string, policy: EgressPolicy, resolve: Resolver): Promise<string[]> {
  const bare = host.replace(/^\[|\]$/g, '');
  if (isIP(bare)) {
    if (policy.allowsHost(bare) || policy.allowsAddress(bare)) return [bare];
    throw new EgressRefused(policy.explain(host, bare));
  }
  const found = await resolve(bare);
  if (policy.allowsHost(bare)) return found.map((a) => a.address);
  const allowed = found.filter((a) => policy.allowsAddress(a.address)).map((a) => a.address);
  if (!allowed.length) throw new EgressRefused(policy.explain(host, found[0]?.address));
  return allowed;
}

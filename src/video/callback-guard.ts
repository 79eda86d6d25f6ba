import type { LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { networkInterfaces } from 'node:os';
import { canonicalHost, hostUrl, isLocalhostName } from '../platform/host.js';

/**
 * Where a `callback_url` may point. A callback is a request the emulator makes for a client, so
 * it must not be turned against the emulator itself (its control surface resets all state) or
 * against hosts an operator has not allowed: it never reaches the emulator's own address or the
 * `/_emulator` prefix (checked at creation and at delivery, and after DNS by the connection's own
 * lookup, `lookupFor`: the address checked is the address connected to, against rebinding, and
 * a slow DNS answer is cut by the attempt's timer like the rest of the attempt), and with
 * CALLBACK_ALLOWED_HOSTS set only those hosts are reached. Redirects are never followed
 * (the delivery code answers a 3xx as a failed attempt).
 *
 * Addresses are compared in one canonical spelling (WHATWG URL's, with IPv4 taken out of
 * IPv4-mapped IPv6), so `127.1`, `2130706433`, `0x7f.1` and `[::ffff:7f00:1]` are all 127.0.0.1,
 * whether a client wrote them or DNS answered them.
 */

export interface CallbackGuardOptions {
  /** The ports the emulator listens on (none before it listens, or in `inject` tests). */
  selfPorts(): number[];
  /** Host names the emulator is known by besides the local addresses (HOST, PUBLIC_BASE_URL). */
  selfHosts: string[];
  /** `host`, `host:port` or `*.domain` patterns; unset: every host but the emulator itself. */
  allowedHosts: string[] | undefined;
  /** Resolves a host name to its addresses (DNS; tests may pass their own). */
  resolve?(host: string): Promise<string[]>;
}

const CONTROL_PREFIX = '/_emulator';
const SELF = 'must not point at the emulator itself';

/** Addresses a connection to which never leaves this machine: loopback and "this host". */
const THIS_MACHINE = new BlockList();
THIS_MACHINE.addSubnet('127.0.0.0', 8, 'ipv4');
THIS_MACHINE.addSubnet('0.0.0.0', 8, 'ipv4');
THIS_MACHINE.addAddress('::1', 'ipv6');
THIS_MACHINE.addAddress('::', 'ipv6');

/** Loopback or unspecified: a name under `localhost` (RFC 6761) or an address in those ranges. */
function isThisMachine(host: string): boolean {
  const family = isIP(host);
  if (family === 0) return isLocalhostName(host);
  return THIS_MACHINE.check(host, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * The path as a router might route it, or a proxy in front of one: percent-decoded (the router
 * decodes once; up to three times here, still linear), `\` read as `/`, empty and dot segments
 * resolved, lower case (this router is case-sensitive, others are not).
 */
function routedPath(pathname: string): string {
  let path = pathname;
  for (let pass = 0; pass < 3 && path.includes('%'); pass++) {
    path = path.replace(/%([0-9a-f]{2})/gi, (_, hex: string) =>
      String.fromCharCode(Number.parseInt(hex, 16)),
    );
  }
  const segments: string[] = [];
  for (const segment of path.split(/[/\\]/)) {
    if (segment === '..') segments.pop();
    else if (segment !== '' && segment !== '.') segments.push(segment);
  }
  return `/${segments.join('/')}`.toLowerCase();
}

const portOf = (url: URL) =>
  url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;

/** Every address of this machine's interfaces. */
function localAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const info of list ?? []) out.add(canonicalHost(info.address));
  }
  return out;
}

/** The error a delivery's connection fails with when its name resolves to the emulator. */
export const REFUSED_SELF = 'ECALLBACKSELF';

/** `host:port` of a Host header, with the scheme's default port; undefined if it is no host. */
function hostPort(header: string, protocol: string): string | undefined {
  const url = hostUrl(header, protocol);
  return url && `${canonicalHost(url.hostname)}:${portOf(url)}`;
}

export class CallbackGuard {
  private readonly allowed: Array<{ host: string; port?: number; wildcard: boolean }> | undefined;

  constructor(private readonly options: CallbackGuardOptions) {
    this.allowed = options.allowedHosts?.map((pattern) => {
      const [host = '', port] = pattern.toLowerCase().split(/:(?=\d+$)/);
      const wildcard = host.startsWith('*.');
      return {
        host: wildcard ? host.slice(2) : canonicalHost(host),
        ...(port === undefined ? {} : { port: Number(port) }),
        wildcard,
      };
    });
  }

  /**
   * Why a callback URL is refused when a task is created, without DNS: the control prefix, a
   * host not allowed, or the address the client reached the emulator through (`requestHost`;
   * a Host header that names no host is ignored, the other checks still apply).
   */
  check(raw: string, requestHost?: string): string | undefined {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return 'must be a public http(s) URL';
    }
    const host = canonicalHost(url.hostname);
    const port = portOf(url);
    if (routedPath(url.pathname).startsWith(CONTROL_PREFIX)) {
      return `must not point at the emulator's control surface (${CONTROL_PREFIX})`;
    }
    const denied = this.notAllowed(host, port);
    if (denied) return denied;
    if (requestHost !== undefined && `${host}:${port}` === hostPort(requestHost, url.protocol)) {
      return SELF;
    }
    if (this.isSelf([host], port)) return SELF;
    return undefined;
  }

  /**
   * The `lookup` of a delivery's connection to `raw` (node:net's option): resolves the name
   * and fails with code REFUSED_SELF if an answer is the emulator itself. The connection uses
   * these very addresses, so no second DNS answer can rebind the name between check and connect.
   */
  lookupFor(raw: string): LookupFunction {
    const port = portOf(new URL(raw));
    return (hostname, options, callback) => {
      const answer: Promise<LookupAddress[]> = this.options.resolve
        ? this.options
            .resolve(hostname)
            .then((list) => list.map((address) => ({ address, family: isIP(address) })))
        : lookup(hostname, { ...options, all: true });
      answer.then(
        (all) => {
          const family = options.family === 4 || options.family === 6 ? options.family : 0;
          const addresses = all.filter((a) => family === 0 || a.family === family);
          const first = addresses[0];
          const found = addresses.map((a) => a.address);
          if (this.isSelf(found, port)) {
            const error = new Error(`refused: callback_url ${SELF}`);
            callback(Object.assign(error, { code: REFUSED_SELF }), '');
          } else if (!first) {
            const error = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
            callback(Object.assign(error, { code: 'ENOTFOUND' }), '');
          } else if (options.all) callback(null, addresses);
          else callback(null, first.address, first.family);
        },
        (error: NodeJS.ErrnoException) => callback(error, ''),
      );
    };
  }

  private notAllowed(host: string, port: number): string | undefined {
    if (!this.allowed) return undefined;
    const ok = this.allowed.some(
      (a) =>
        (a.port === undefined || a.port === port) &&
        (host === a.host || (a.wildcard && host.endsWith(`.${a.host}`))),
    );
    return ok ? undefined : `host ${host} is not in CALLBACK_ALLOWED_HOSTS`;
  }

  private isSelf(hosts: string[], port: number): boolean {
    if (!this.options.selfPorts().includes(port)) return false;
    const local = localAddresses();
    const named = new Set(this.options.selfHosts.map(canonicalHost));
    return hosts.map(canonicalHost).some((h) => isThisMachine(h) || local.has(h) || named.has(h));
  }
}

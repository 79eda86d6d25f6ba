import { lookup } from 'node:dns/promises';
import { networkInterfaces } from 'node:os';

/**
 * Where a `callback_url` may point. A callback is a request the emulator makes for a client, so
 * it must not be turned against the emulator itself (its control surface resets all state) or
 * against hosts an operator has not allowed: it never reaches the emulator's own address or the
 * `/_emulator` prefix (checked at creation, and again at delivery after DNS, against rebinding),
 * and with CALLBACK_ALLOWED_HOSTS set only those hosts are reached. Redirects are never followed
 * (the delivery code answers a 3xx as a failed attempt).
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
const LOOPBACK = /^(?:localhost|127(?:\.\d{1,3}){3}|::1|0\.0\.0\.0|::|0:0:0:0:0:0:0:[01])$/i;

const bare = (host: string) => host.replace(/^\[|\]$/g, '').toLowerCase();

const portOf = (url: URL) =>
  url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;

/** Every address of this machine's interfaces. */
function localAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const info of list ?? []) out.add(bare(info.address));
  }
  return out;
}

const defaultResolve = async (host: string) =>
  (await lookup(host, { all: true })).map((a) => bare(a.address));

export class CallbackGuard {
  private readonly allowed: Array<{ host: string; port?: number; wildcard: boolean }> | undefined;

  constructor(private readonly options: CallbackGuardOptions) {
    this.allowed = options.allowedHosts?.map((pattern) => {
      const [host = '', port] = pattern.toLowerCase().split(/:(?=\d+$)/);
      return {
        host: host.replace(/^\*\./, ''),
        ...(port === undefined ? {} : { port: Number(port) }),
        wildcard: host.startsWith('*.'),
      };
    });
  }

  /**
   * Why a callback URL is refused when a task is created, without DNS: the control prefix, a
   * host not allowed, or the address the client reached the emulator through (`requestHost`).
   */
  check(raw: string, requestHost?: string): string | undefined {
    const url = new URL(raw);
    const host = bare(url.hostname);
    const port = portOf(url);
    if (url.pathname.startsWith(CONTROL_PREFIX)) {
      return `must not point at the emulator's control surface (${CONTROL_PREFIX})`;
    }
    const denied = this.notAllowed(host, port);
    if (denied) return denied;
    if (requestHost !== undefined && `${host}:${port}` === hostPort(requestHost, url.protocol)) {
      return 'must not point at the emulator itself';
    }
    if (this.isSelf([host], port)) return 'must not point at the emulator itself';
    return undefined;
  }

  /** Why a delivery is refused now: `check`, then the addresses the host resolves to. */
  async refuse(raw: string): Promise<string | undefined> {
    const problem = this.check(raw);
    if (problem) return problem;
    const url = new URL(raw);
    const host = bare(url.hostname);
    if (!this.options.selfPorts().includes(portOf(url))) return undefined;
    let addresses: string[];
    try {
      addresses = await (this.options.resolve ?? defaultResolve)(host);
    } catch {
      return undefined; // the attempt itself will fail and say why
    }
    return this.isSelf(addresses, portOf(url))
      ? 'must not point at the emulator itself'
      : undefined;
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
    const named = new Set(this.options.selfHosts.map(bare));
    return hosts.some((h) => LOOPBACK.test(h) || local.has(h) || named.has(h));
  }
}

/** `host:port` of a Host header, with the scheme's default port when it has none. */
function hostPort(header: string, protocol: string): string {
  const url = new URL(`${protocol}//${header}`);
  return `${bare(url.hostname)}:${portOf(url)}`;
}

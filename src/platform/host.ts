import { isIPv6 } from 'node:net';

/**
 * Hosts in one spelling, for comparing them: what a client wrote in a URL or a Host header, and
 * what DNS or the network interfaces answer. `127.1`, `2130706433`, `0x7f.1` and
 * `[::ffff:7f00:1]` are all 127.0.0.1 (the callback guard, the control surface's check of the
 * name a browser page came through).
 */

/** The 96-bit prefixes (as six 16-bit groups) of IPv6 addresses that carry an IPv4 address. */
const EMBEDS_IPV4 = [
  [0, 0, 0, 0, 0, 0xffff], // IPv4-mapped, ::ffff:a.b.c.d
  [0, 0, 0, 0, 0xffff, 0], // IPv4-translated, ::ffff:0:a.b.c.d
  [0, 0, 0, 0, 0, 0], // IPv4-compatible (deprecated), ::a.b.c.d
];

/** The eight 16-bit groups of an IPv6 address as WHATWG URL serialises it (hex, `::` once). */
function groupsOf(ipv6: string): number[] {
  const [head = '', tail] = ipv6.split('::');
  const part = (s: string) => (s === '' ? [] : s.split(':').map((h) => Number.parseInt(h, 16)));
  const left = part(head);
  const right = tail === undefined ? [] : part(tail);
  return [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/** The IPv4 address an IPv6 one carries, or the IPv6 one; `::` and `::1` stay themselves. */
function unmapped(ipv6: string): string {
  const g = groupsOf(ipv6);
  const [, , , , , , hi = 0, lo = 0] = g;
  const carries = EMBEDS_IPV4.some((prefix) => prefix.every((v, i) => g[i] === v));
  if (!carries || (g.slice(0, 6).every((v) => v === 0) && hi === 0 && lo <= 1)) return ipv6;
  return [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join('.');
}

/**
 * A host in the spelling the network sees: an IP address as WHATWG URL writes it (IPv4 in
 * dotted quads, also out of IPv4-mapped IPv6; IPv6 compressed, without brackets or zone), a
 * name in lower case without the root's trailing dot.
 */
export function canonicalHost(host: string): string {
  let bare = host.replace(/^\[(.*)\]$/, '$1');
  const zoneless = bare.split('%')[0] ?? '';
  if (isIPv6(zoneless)) bare = `[${zoneless}]`;
  let name: string;
  try {
    name = new URL(`http://${bare}`).hostname;
  } catch {
    name = bare.toLowerCase();
  }
  if (name.startsWith('[')) return unmapped(name.slice(1, -1));
  return name.replace(/\.$/, '');
}

/** A name under `localhost` (RFC 6761): it always means this machine. */
export const isLocalhostName = (host: string) =>
  host === 'localhost' || host.endsWith('.localhost');

/** A Host header read as a URL's origin under `protocol`, or undefined if it names no host. */
export function hostUrl(header: string, protocol = 'http:'): URL | undefined {
  let url: URL;
  try {
    url = new URL(`${protocol}//${header}`);
  } catch {
    return undefined;
  }
  return url.hostname === '' ? undefined : url;
}

/** The canonical host a Host header names (its port dropped), or undefined if it names none. */
export function hostOfHeader(header: string | undefined): string | undefined {
  const url = header === undefined ? undefined : hostUrl(header);
  return url && canonicalHost(url.hostname);
}

/**
 * A Host header as the client wrote it when it is a plain `host[:port]` a URL can be made of
 * (letters, digits, `.-_:[]`, an address or name and a port), else undefined: a path, a query,
 * user info, spaces, an empty or over-long name. A result URL is made of it, and a task keeps it.
 */
export function urlHostOf(header: string | undefined): string | undefined {
  const plain =
    header !== undefined && header.length <= 261 && /^[A-Za-z0-9._:[\]-]+$/.test(header);
  return plain && hostUrl(header) ? header : undefined;
}

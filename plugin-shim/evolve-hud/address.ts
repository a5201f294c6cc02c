// Where the plugin connects: always an IP address, never a name. A name the
// resolver answers for (`localhost`: `::1` first with Debian's /etc/hosts)
// may lead to a loopback address where the sidecar does not listen, and
// where another local account can, relaying the identity check to the real
// sidecar. So `localhost` is dialled as `127.0.0.1`, the address the
// sidecar serves; an IP in the URL is dialled as written; any other name is
// resolved once per identity check. The proof is then checked against the
// exact address dialled, written as the sidecar writes the address it
// serves (`127.0.0.1:8377`, `[::1]:8377`).

import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";

/** Resolves a host name to one IP address (node's `dns.promises.lookup`, or a stand-in in tests). */
export type Lookup = (hostname: string) => Promise<{ address: string; family: number }>;

/** Where one exchange goes: `base` to fetch, `address` for the proof. */
export interface DialTarget {
  /** The configured URL with its host replaced by `ip` (no trailing slash). */
  base: string;
  /** The IP address dialled, IPv6 without brackets. */
  ip: string;
  port: number;
  /** `ip:port`, IPv6 bracketed: the text the identity proof names. */
  address: string;
}

/** The address the sidecar serves, where `localhost` names are dialled. */
export const LOOPBACK = "127.0.0.1";

/** Whether `hostname` (a URL's, lower case) is `localhost` or a name under it (RFC 6761 keeps them all on this machine). */
export function isLocalhostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, "");
  return name === "localhost" || name.endsWith(".localhost");
}

/** The port a URL connects to. */
export function portOf(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
}

/**
 * An IP address in the form the sidecar writes it: IPv4 dotted, IPv6
 * compressed and lower case (RFC 5952, as Rust's `Ipv6Addr` writes it), an
 * IPv4 address mapped into IPv6 as the IPv4 one (the sidecar counts it so).
 * Undefined when `ip` is not an IP address.
 */
export function canonicalIp(ip: string): string | undefined {
  const bare = ip.replace(/^\[(.*)\]$/, "$1");
  const family = isIP(bare);
  if (family === 4) return new URL(`http://${bare}/`).hostname;
  if (family !== 6) return undefined;
  // The URL parser writes IPv6 by RFC 5952's rules; the mapped form comes out as `::ffff:7f00:1`.
  const v6 = new URL(`http://[${bare}]/`).hostname.slice(1, -1);
  const mapped = v6.match(/^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/);
  if (!mapped) return v6;
  const [hi, lo] = [parseInt(mapped[1], 16), parseInt(mapped[2], 16)];
  return [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join(".");
}

/** `ip:port` as the identity proof names it: `127.0.0.1:8377`, `[::1]:8377`. */
export function socketAddress(ip: string, port: number): string {
  return isIP(ip) === 6 ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/** The IP address `url`'s host is dialled at: `localhost` names at {@link LOOPBACK}, an IP as written, else what `lookup` answers. */
export async function dialIp(url: URL, lookup: Lookup = dnsLookup): Promise<string> {
  if (isLocalhostName(url.hostname)) return LOOPBACK;
  const literal = canonicalIp(url.hostname);
  if (literal) return literal;
  const { address } = await lookup(url.hostname);
  const resolved = canonicalIp(address);
  if (!resolved) throw new Error(`${url.hostname} resolved to ${JSON.stringify(address)}, which is not an IP address`);
  return resolved;
}

/** Where the next exchange with the sidecar at `configured` goes: the same URL with its host replaced by the IP dialled. */
export async function dialTarget(configured: string, lookup: Lookup = dnsLookup): Promise<DialTarget> {
  const url = new URL(configured);
  const ip = await dialIp(url, lookup);
  const port = portOf(url);
  const address = socketAddress(ip, port);
  // The path is kept (a sidecar behind a prefix); the default port is written out, which is the same URL.
  const path = url.pathname === "/" ? "" : url.pathname.replace(/\/+$/, "");
  return { base: `${url.protocol}//${address}${path}`, ip, port, address };
}

/** Whether `hostname` (a URL's) names this machine's sidecar, one this machine may start: `localhost` names and the loopback addresses it serves. */
export function isLocalSidecarHost(hostname: string): boolean {
  if (isLocalhostName(hostname)) return true;
  const ip = canonicalIp(hostname);
  return ip === LOOPBACK || ip === "::1";
}

/**
 * Server-side request forgery guard for the backend's outbound calls (data source web hooks, the
 * `http-request` built-in). With `limits.outboundPrivateNetworks: 'deny'`, a URL whose host is, or resolves
 * to, a loopback, private, link-local (cloud metadata), carrier-grade NAT, multicast or unspecified address
 * is refused. The default is `'allow'`: the reference server runs on a developer's machine and its hooks
 * often call local services. Known limit: the name is resolved again when connecting, so a DNS server that
 * answers differently the second time (rebinding) is not stopped; production deployments should also block
 * private ranges at the network level (egress proxy or firewall).
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

export type PrivateNetworkPolicy = 'allow' | 'deny';

const blocked = new BlockList();
for (const [prefix, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked.addSubnet(prefix, bits, 'ipv4');
for (const [prefix, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  blocked.addSubnet(prefix, bits, 'ipv6');

/** Whether an IP address is in a range a public service has no business calling. */
export function isPrivateAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  const family = isIP(bare);
  if (family === 4) return blocked.check(bare, 'ipv4');
  if (family !== 6) return true;
  // IPv4-mapped (::ffff:a.b.c.d or ::ffff:hhhh:hhhh) and IPv4-compatible addresses reach the IPv4 host.
  const mapped = /^::(?:ffff:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
  if (mapped) return blocked.check(mapped[1]!, 'ipv4');
  const hex = /^::(?:ffff:)?([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(bare);
  if (hex) {
    const n = (parseInt(hex[1]!, 16) << 16) | parseInt(hex[2]!, 16);
    return blocked.check([(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.'), 'ipv4');
  }
  return blocked.check(bare, 'ipv6');
}

/** Throws when `policy` is `deny` and the URL's host is or resolves to a private address. */
export async function checkOutboundUrl(url: URL, policy: PrivateNetworkPolicy | undefined): Promise<void> {
  if (policy !== 'deny') return;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
    } catch (error) {
      throw new Error(`cannot resolve ${host}: ${(error as Error).message}`);
    }
  }
  const refused = addresses.find(isPrivateAddress);
  if (refused !== undefined || addresses.length === 0)
    throw new Error(`${url.host} is a private network address (${refused ?? 'none'}); outbound calls to private networks are denied on this server`);
}

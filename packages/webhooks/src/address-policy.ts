import ipaddr from 'ipaddr.js';

// Which addresses a webhook may be delivered to: public unicast only. A callback that resolves to
// the pod network, the cloud's metadata service, a link-local or loopback address would let
// whoever subscribes make the workers call inside the deployment (SSRF).

/** What an address is, as far as delivering to it goes. */
export type AddressClass = 'public' | 'loopback' | 'not-public' | 'not-an-address';

/** The class of an IP address; an IPv4-mapped IPv6 address is judged as the IPv4 it carries. */
export function addressClass(address: string): AddressClass {
  if (!ipaddr.isValid(address)) return 'not-an-address';
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress())
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  const range = parsed.range();
  if (range === 'loopback') return 'loopback';
  // `::a.b.c.d` (IPv4-compatible, ::/96, deprecated by RFC 4291): ipaddr.js calls it unicast, but a
  // stack that still routes it reaches the IPv4 address it carries — 10.0.0.1, 169.254.169.254.
  if (parsed.kind() === 'ipv6' && parsed.match(ipaddr.parseCIDR('::/96'))) return 'not-public';
  return range === 'unicast' ? 'public' : 'not-public';
}

/** Whether a webhook may go to `address`: public, or loopback when development allows it. */
export function mayDeliverTo(address: string, allowLoopback: boolean): boolean {
  const kind = addressClass(address);
  return kind === 'public' || (allowLoopback && kind === 'loopback');
}

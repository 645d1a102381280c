/**
 * Hosts by where they are. The one rule for hosts an org's settings name (billing and purchasing
 * connections' endpoints, a GCP key's token_uri): the server calls them only at public addresses,
 * checked after resolving the name. Billing connections check them again at every connection and
 * connect to exactly the addresses checked (lib/egress.ts); purchasing connections check them
 * when they are saved (their providers' SDKs connect on their own).
 */
import { BlockList, isIP, type LookupFunction } from "node:net";
import { lookup as dnsLookup } from "node:dns/promises";

/** This machine, as `URL.hostname` spells it (IPv6 in brackets). */
export const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);

function blockList(family: "ipv4" | "ipv6", subnets: [string, number][]): BlockList {
  const list = new BlockList();
  for (const [network, prefix] of subnets) list.addSubnet(network, prefix, family);
  return list;
}

/** IPv4 that is not a public unicast address (IANA special-purpose registry). */
const NON_PUBLIC_V4 = blockList("ipv4", [
  ["0.0.0.0", 8], // "this network"
  ["10.0.0.0", 8], // private
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local (cloud metadata)
  ["172.16.0.0", 12], // private
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // documentation
  ["192.88.99.0", 24], // 6to4 relay anycast
  ["192.168.0.0", 16], // private
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // documentation
  ["203.0.113.0", 24], // documentation
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, and 255.255.255.255 broadcast
]);
/** IPv6 global unicast. Everything outside it is not public: ::, ::1, IPv4-compatible ::a.b.c.d, IPv4-mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96, discard 100::/64, unique-local fc00::/7, link-local fe80::/10, site-local fec0::/10, multicast ff00::/8. */
const GLOBAL_V6 = blockList("ipv6", [["2000::", 3]]);
/** The special-purpose blocks inside global unicast. */
const NON_PUBLIC_V6 = blockList("ipv6", [
  ["2001::", 23], // IETF protocol assignments (Teredo, benchmarking, ORCHID)
  ["2001:db8::", 32], // documentation
  ["2002::", 16], // 6to4 (embeds any IPv4 address)
  ["3fff::", 20], // documentation
]);

/** A public unicast address: the only kind the server calls for an org (not an IP address: false). */
export function isPublicAddress(address: string): boolean {
  switch (isIP(address)) {
    case 4:
      return !NON_PUBLIC_V4.check(address, "ipv4");
    case 6:
      return GLOBAL_V6.check(address, "ipv6") && !NON_PUBLIC_V6.check(address, "ipv6");
    default:
      return false;
  }
}

/** The cloud providers' own names (S3 and its regional/bucket names, Blob Storage, Google APIs). */
const PROVIDER_NAME = /(^|\.)(amazonaws\.com|amazonaws\.com\.cn|core\.windows\.net|googleapis\.com)$/;

/** Names that are never public, whatever a resolver says: this machine, mDNS, private-use TLDs, GCP's metadata server. */
const NON_PUBLIC_NAME = /(^|\.)(localhost|local|internal|home\.arpa)$/;

export interface HostAddress {
  address: string;
  family: 4 | 6;
}
export type HostResolver = (hostname: string) => Promise<HostAddress[]>;

const systemResolver: HostResolver = async (hostname) => (await dnsLookup(hostname, { all: true, verbatim: true })) as HostAddress[];
let resolver: HostResolver = systemResolver;

/** Replaces name resolution (tests map names without touching /etc/hosts); null restores the system resolver. */
export function setHostResolver(r: HostResolver | null): void {
  resolver = r ?? systemResolver;
}

/** A host that may not be called: its address is not public (or the name never is). The message names neither. */
export class NonPublicHostError extends Error {
  readonly code = "ENONPUBLIC";
  constructor() {
    super("The host is not at a public address.");
  }
}

/** `URL.hostname` as a name or an address: brackets off, lower case, no trailing dot. */
export function bareHost(hostname: string): string {
  return hostname.replace(/^\[|\]$/g, "").toLowerCase().replace(/\.+$/, "");
}

/**
 * THE rule: the addresses a host may be called at. An IP address is checked as it is; a name is
 * resolved once and refused when any of its addresses is not public (loopback, private,
 * link-local, CGNAT, IPv4 embedded in IPv6, multicast, reserved, documentation, …). With
 * `allowPrivate` (CONNECTIONS_ALLOW_PRIVATE_ENDPOINTS) every address is allowed. Throws
 * NonPublicHostError, or the resolver's error for a name that does not resolve.
 */
export async function checkedAddresses(hostname: string, allowPrivate: boolean): Promise<HostAddress[]> {
  const host = bareHost(hostname);
  const family = isIP(host);
  if (family) {
    if (!allowPrivate && !isPublicAddress(host)) throw new NonPublicHostError();
    return [{ address: host, family: family as 4 | 6 }];
  }
  if (!allowPrivate && (NON_PUBLIC_NAME.test(host) || !host)) throw new NonPublicHostError();
  const addresses = await resolver(host);
  if (!addresses.length) throw Object.assign(new Error(`${host} has no address`), { code: "ENOTFOUND" });
  // A provider's own name resolves where the operator's DNS says (PrivateLink, Private Endpoints
  // map them to private addresses on purpose); an org cannot make it resolve elsewhere.
  if (!allowPrivate && !PROVIDER_NAME.test(host) && addresses.some((a) => !isPublicAddress(a.address))) throw new NonPublicHostError();
  return addresses;
}

/**
 * Whether a URL an org gave may be saved: false when its host is, or resolves to, a non-public
 * address. A name that does not resolve now is not refused (it is checked again on every
 * connection); neither is a string that is not a URL (its pattern check reports that).
 */
export async function isPublicUrl(url: string, allowPrivate: boolean): Promise<boolean> {
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return true;
  }
  try {
    await checkedAddresses(host, allowPrivate);
    return true;
  } catch (e) {
    return !(e instanceof NonPublicHostError);
  }
}

/**
 * The `lookup` of a socket to an org's host (an http/https Agent's option): `pinned` answers the
 * addresses checked before for those names (no second DNS query, so a name cannot be rebound to
 * another address between check and connect); any other name is resolved and checked here, and
 * the socket connects to the addresses that were checked.
 */
export function checkedLookup(allowPrivate: boolean, pinned: ReadonlyMap<string, HostAddress[]> = new Map()): LookupFunction {
  return ((hostname: string, options: { family?: number | string; all?: boolean }, callback: (err: Error | null, address?: unknown, family?: number) => void) => {
    const host = bareHost(hostname);
    const found = pinned.get(host);
    (found ? Promise.resolve(found) : checkedAddresses(host, allowPrivate)).then(
      (addresses) => {
        const family = options?.family === "IPv4" ? 4 : options?.family === "IPv6" ? 6 : Number(options?.family) || 0;
        const usable = family ? addresses.filter((a) => a.family === family) : addresses;
        if (!usable.length) return callback(Object.assign(new Error(`${host} has no IPv${family} address`), { code: "ENOTFOUND" }));
        if (options?.all) callback(null, usable);
        else callback(null, usable[0]!.address, usable[0]!.family);
      },
      (err: Error) => callback(err),
    );
  }) as LookupFunction;
}

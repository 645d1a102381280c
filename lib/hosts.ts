/** Hosts by where they are, as written in a URL (a name that resolves to such an address is not caught here). */

/** This machine, as `URL.hostname` spells it (IPv6 in brackets). */
export const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** This machine or a private, link-local or carrier-grade NAT network: what an org's settings must not make the server call. */
export function isInternalHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, "");
  if (host === "localhost" || host.endsWith(".localhost") || host === "0.0.0.0" || host === "::" || host === "::1") return true;
  if (/^(fc|fd|fe8|fe9|fea|feb)[0-9a-f]*:/.test(host) || host.startsWith("::ffff:")) return true;
  const v4 = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(host);
  if (!v4) return false;
  const [a, b] = [Number(v4[1]), Number(v4[2])];
  return a === 10 || a === 127 || a === 0 || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 100 && b >= 64 && b <= 127);
}

/**
 * Where an endpoint may point: the SSRF rule of billing connections (lib/hosts.ts). The URL is
 * checked when it is saved (resolved; refused when the host is, or resolves to, a non-public
 * address) and again at every delivery, whose sockets connect only to the addresses checked then
 * (lib/egress.ts). Plain http and private addresses only with CONNECTIONS_ALLOW_PRIVATE_ENDPOINTS.
 */
import { isPublicUrl } from "../hosts.ts";

export const MAX_URL_LENGTH = 2048;

const NON_PUBLIC = "must not point at a loopback, private, link-local or other non-public address (the server allows that only with CONNECTIONS_ALLOW_PRIVATE_ENDPOINTS)";

/** Why `url` may not be an endpoint's address, or null when it may. May query DNS: call it before any transaction. */
export async function endpointUrlProblem(url: string, allowPrivate: boolean): Promise<string | null> {
  if (url.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return "must be an absolute https URL";
  }
  if (u.protocol !== "https:" && !(allowPrivate && u.protocol === "http:")) return allowPrivate ? "must be an http(s) URL" : "must be an https URL";
  if (!u.hostname) return "must name a host";
  // Basic credentials in the URL would be sent on every request and shown back in every read.
  if (u.username || u.password) return "must not carry credentials (user:password@); put a token in the path or query instead";
  if (u.hash) return "must not have a #fragment";
  if (/[\s\u0000-\u001f\u007f]/.test(url)) return "must not contain spaces or control characters";
  if (!(await isPublicUrl(url, allowPrivate))) return NON_PUBLIC;
  return null;
}

/** Where a URL points, without credentials, path secrets or query (for logs). */
export function safeTarget(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return "(invalid url)";
  }
}

/**
 * A Slack incoming-webhook URL as shown back: its path is the credential, so only the host and
 * the path's last four characters remain (enough to tell two endpoints apart).
 */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    const tail = u.pathname.replace(/\/+$/, "").slice(-4);
    return `${u.protocol}//${u.host}/…${tail}`;
  } catch {
    return "(invalid url)";
  }
}

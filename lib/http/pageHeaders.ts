/**
 * Headers of every HTML page the service renders (sign-in and consent pages, `/docs`): never
 * framed, never cached, no referrer, no sniffing; each page brings its own Content-Security-Policy.
 */
export function htmlPageHeaders(contentSecurityPolicy: string): Record<string, string> {
  return {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "content-security-policy": contentSecurityPolicy,
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
  };
}

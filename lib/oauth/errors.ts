/**
 * OAuth endpoints answer with OAuth's own error format (RFC 6749 §5.2, RFC 7591 §3.2.2,
 * RFC 7009), not the Beta API error body: `{ "error": "invalid_grant", "error_description": "…" }`.
 */
export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status = 400,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
    this.name = "OAuthError";
  }
}

/** Headers every OAuth JSON answer carries: no caching of secrets; callable from browser-based clients. */
export const OAUTH_JSON_HEADERS: Record<string, string> = {
  "content-type": "application/json; charset=utf-8",
  "cache-control": "no-store",
  pragma: "no-cache",
  "access-control-allow-origin": "*",
};

export function oauthJson(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...OAUTH_JSON_HEADERS, ...headers } });
}

export function oauthErrorResponse(e: OAuthError): Response {
  return oauthJson({ error: e.error, error_description: e.description }, e.status, e.headers);
}

/** CORS preflight answer for the endpoints browser-based MCP clients call directly. */
export function corsPreflight(methods: string): Response {
  return new Response(null, {
    status: 204,
    headers: {
      "access-control-allow-origin": "*",
      "access-control-allow-methods": `${methods}, OPTIONS`,
      "access-control-allow-headers": "authorization, content-type, mcp-protocol-version",
      "access-control-max-age": "86400",
    },
  });
}

/** Runs an OAuth endpoint: OAuthError → its RFC body; anything else propagates to the app's handler (500). */
export async function oauthEndpoint(fn: () => Promise<Response>): Promise<Response> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof OAuthError) return oauthErrorResponse(e);
    throw e;
  }
}

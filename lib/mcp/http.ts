/**
 * The HTTP edge of the assistant (MCP) server: browser-origin check (DNS-rebinding
 * protection), CORS, bearer authentication for the `/mcp` resource (RFC 9728 / RFC 6750
 * challenges), then one stateless Streamable HTTP exchange handled by the MCP SDK.
 *
 * Stateless: every POST gets a fresh McpServer + transport bound to the caller's principal, so
 * any replica answers any request and nothing is kept between requests (no session table, no
 * sticky routing). Our tools are plain request/response reads, so nothing needs a session.
 */
import { presentedToken, resolvePrincipal } from "../auth/guard.ts";
import type { Principal } from "../auth/principal.ts";
import { AppError, ForbiddenError, MethodNotAllowedError, UnauthorizedError } from "../errors.ts";
import { readBodyBytes, refuseDeepJson } from "../http/jsonBody.ts";
import { errorResponse } from "../http/errorBody.ts";
import { classifyError } from "../http/classifyError.ts";
import { errorForLog } from "../log.ts";
import { rateLimiterOf } from "../http/orgRoutes.ts";
import { rateLimitHeaders, type RateLimitState } from "../http/rateLimit.ts";
import type { Services } from "../services.ts";
import { isMcpScope, MCP_SCOPES } from "./scopes.ts";
import { decideMcpBody, INVALID_REQUEST } from "./batch.ts";

/**
 * The MCP SDK, the tools and zod load on the first assistant call rather than at every start
 * (≈ 0.1 s of the binary's cold start, bench/coldstart.ts).
 */
let mcpModules: Promise<[typeof import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"), typeof import("./server.ts")]> | undefined;
function loadMcp() {
  mcpModules ??= Promise.all([import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"), import("./server.ts")]);
  mcpModules.catch(() => (mcpModules = undefined));
  return mcpModules;
}

export const ASSISTANT_SCOPE = "assistant:read" as const;

/** `${publicUrl}/mcp`: the resource (RFC 8707 audience) of tokens accepted here. */
export function mcpResourceUrl(publicUrl: string): string {
  return `${publicUrl}/mcp`;
}

export function protectedResourceMetadataUrl(publicUrl: string): string {
  return `${publicUrl}/.well-known/oauth-protected-resource/mcp`;
}

/** RFC 9728 protected resource metadata of the MCP server. */
export function protectedResourceMetadata(publicUrl: string) {
  return {
    resource: mcpResourceUrl(publicUrl),
    authorization_servers: [publicUrl],
    // Every scope the tools use, so a client following MCP scope selection asks for all of them.
    scopes_supported: [...MCP_SCOPES],
    bearer_methods_supported: ["header"],
    resource_name: "commitops assistant (MCP)",
    resource_documentation: `${publicUrl}/docs`,
  };
}

const EXPOSED_HEADERS = "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate, x-request-id, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After";
const ALLOWED_HEADERS = "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID, x-api-key, x-request-id";
/** Only what is served: GET (no standalone SSE stream) and DELETE (no session) answer 405 here. */
const ALLOWED_METHODS = "POST, OPTIONS";

/** Browser origins allowed to call /mcp: the public URL's origin plus MCP_ALLOWED_ORIGINS. */
export function allowedOrigins(s: Services): Set<string> {
  const set = new Set<string>([new URL(s.config.publicUrl).origin.toLowerCase()]);
  for (const o of s.config.mcpAllowedOrigins) {
    try {
      set.add(new URL(o).origin.toLowerCase());
    } catch {
      set.add(o.toLowerCase());
    }
  }
  return set;
}

/**
 * Non-browser clients send no Origin and pass. A browser page on another origin is refused
 * before anything else (MCP transport security: DNS-rebinding protection), so a hostile page
 * resolving its name to a local or internal address cannot drive the server.
 */
function originAllowed(s: Services, origin: string | null): boolean {
  if (origin === null) return true;
  return allowedOrigins(s).has(origin.toLowerCase());
}

function corsHeaders(origin: string | null): Record<string, string> {
  if (!origin) return {};
  return { "Access-Control-Allow-Origin": origin, "Access-Control-Expose-Headers": EXPOSED_HEADERS, Vary: "Origin" };
}

function withHeaders(res: Response, headers: Record<string, string>): Response {
  if (!Object.keys(headers).length) return res;
  const h = new Headers(res.headers);
  for (const [k, v] of Object.entries(headers)) h.set(k, v);
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers: h });
}

/** 401/403 challenges of the MCP resource (RFC 6750 §3, RFC 9728 §5.1). */
function unauthorized(s: Services, invalidToken: boolean): AppError {
  const meta = protectedResourceMetadataUrl(s.config.publicUrl);
  return invalidToken
    ? new UnauthorizedError(
        "The access token is unknown, expired, revoked or issued for another resource. Sign out in your MCP client and authenticate again.",
        `Bearer error="invalid_token", error_description="The access token is not valid for this resource", resource_metadata="${meta}"`,
      )
    : new UnauthorizedError(
        "Authentication required: connect your MCP client through OAuth (it discovers the authorization server from the resource metadata) or send `Authorization: Bearer <API key with assistant:read>`.",
        `Bearer resource_metadata="${meta}", scope="${MCP_SCOPES.join(" ")}"`,
      );
}

function insufficientScope(s: Services): AppError {
  return new ForbiddenError(`This credential lacks the \`${ASSISTANT_SCOPE}\` scope the assistant needs.`, "insufficient_scope", {
    "WWW-Authenticate": `Bearer error="insufficient_scope", scope="${ASSISTANT_SCOPE}", resource_metadata="${protectedResourceMetadataUrl(s.config.publicUrl)}"`,
  });
}

/** Resolves the caller of /mcp or throws the 401/403 the client must see. */
export async function authenticateMcp(s: Services, headers: Headers): Promise<Principal> {
  const token = presentedToken(headers);
  if (!token) throw unauthorized(s, headers.has("authorization"));
  const principal = await resolvePrincipal(s, token, mcpResourceUrl(s.config.publicUrl));
  if (!principal) throw unauthorized(s, true);
  if (!principal.scopes.includes(ASSISTANT_SCOPE)) throw insufficientScope(s);
  // The assistant is read-only: whatever else the credential holds, only its assistant scopes
  // count here (an API key with write scopes reads through /mcp like a read-only one).
  return { ...principal, scopes: principal.scopes.filter(isMcpScope) };
}

/** A JSON-RPC error answered before the transport (no request id is known: `id: null`). */
function jsonRpcError(status: number, code: number, message: string, headers: Record<string, string>): Response {
  return new Response(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

function headersOf(state: RateLimitState | null): Record<string, string> {
  return state ? rateLimitHeaders(state) : {};
}

/** One request to /mcp, whatever its method. Never throws: errors become the spec's error body. */
export async function handleMcpRequest(s: Services, request: Request): Promise<Response> {
  const origin = request.headers.get("origin");
  const path = new URL(request.url).pathname;
  if (!originAllowed(s, origin)) {
    return errorResponse(new ForbiddenError("Requests from this browser origin are not allowed. Add it to MCP_ALLOWED_ORIGINS.", "origin_not_allowed"), path);
  }
  const cors = corsHeaders(origin);
  if (request.method === "OPTIONS") {
    return new Response(null, {
      status: 204,
      headers: { ...cors, "Access-Control-Allow-Methods": ALLOWED_METHODS, "Access-Control-Allow-Headers": ALLOWED_HEADERS, "Access-Control-Max-Age": "600" },
    });
  }
  // The `RateLimit-*` headers of the answer, once the credential is known (errors carry them too).
  let rate: Record<string, string> = {};
  try {
    const principal = await authenticateMcp(s, request.headers);
    // The Beta API's per-credential limiter (one per Services): assistant calls share the budget,
    // and every JSON-RPC message of a request counts as one request (lib/mcp/batch.ts).
    const limiter = rateLimiterOf(s);
    // Stateless server: no standalone SSE stream (GET) and no session to delete (DELETE);
    // both answers are the ones the Streamable HTTP transport spec prescribes for that case.
    if (request.method !== "POST") {
      rate = headersOf(limiter.check(principal.credentialId));
      throw new MethodNotAllowedError(["POST", "OPTIONS"]);
    }
    // A credential with nothing left is refused before its body is read.
    rate = headersOf(limiter.peek(principal.credentialId));
    // Read within MAX_BODY_BYTES (a chunked body is cut off there) and the nesting limit before
    // anything parses it; a body that is not JSON is left to the SDK's own parse error.
    let body: Uint8Array<ArrayBuffer>;
    let text: string;
    try {
      body = await readBodyBytes(request, s.config.maxBodyBytes);
      text = new TextDecoder().decode(body);
      refuseDeepJson(text);
    } catch (e) {
      // A body refused (413, too deep) still counts as one request.
      rate = headersOf(limiter.check(principal.credentialId));
      throw e;
    }
    let parsed: unknown;
    let isJson = true;
    try {
      parsed = JSON.parse(text);
    } catch {
      isJson = false;
    }
    const decision = isJson ? decideMcpBody(parsed, request.headers.get("mcp-protocol-version"), limiter.limit) : ({ ok: true, cost: 1 } as const);
    // The whole batch is counted (or refused with 429 + Retry-After) before any message runs;
    // a refused batch counts as the one request it was.
    rate = headersOf(limiter.check(principal.credentialId, decision.ok ? decision.cost : 1));
    if (!decision.ok) return jsonRpcError(400, INVALID_REQUEST, decision.message, { ...cors, ...rate });
    const [{ WebStandardStreamableHTTPServerTransport }, { createMcpServer }] = await loadMcp();
    const server = createMcpServer(s, principal);
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true, maxRequestBodySize: s.config.maxBodyBytes });
    await server.connect(transport);
    const headers = new Headers(request.headers);
    headers.delete("transfer-encoding");
    headers.set("content-length", String(body.byteLength));
    const res = await transport.handleRequest(new Request(request.url, { method: request.method, headers, body }), isJson ? { parsedBody: parsed } : undefined);
    // JSON responses are complete once returned; release the per-request server.
    if (!res.headers.get("content-type")?.includes("text/event-stream")) void server.close().catch(() => {});
    return withHeaders(res, { ...cors, ...rate });
  } catch (e) {
    const { error, internal } = classifyError(e);
    if (internal) s.log.error("mcp request failed", { path, error: errorForLog(e) });
    // A 429 carries its own RateLimit-* headers (remaining 0).
    return errorResponse(error, path, { ...cors, ...(error.status === 429 ? {} : rate) });
  }
}

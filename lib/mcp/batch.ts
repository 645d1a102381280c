/**
 * What one POST to /mcp costs against the per-credential rate limit, and which JSON-RPC batches
 * (a JSON array body) are served at all. Every message counts as one request, as if it had been
 * sent alone: a batch must not buy a hundred tool calls for the price of one.
 */

/** Most messages in one batch (protocol versions before 2025-06-18, which still have batches). */
export const MCP_MAX_BATCH_MESSAGES = 20;

/** MCP 2025-06-18 removed JSON-RPC batching; it and every later version get no batches. */
export const BATCHING_REMOVED_IN = "2025-06-18";

/**
 * The version a server assumes without `MCP-Protocol-Version` (Streamable HTTP, "Protocol Version
 * Header"): the SDK's DEFAULT_NEGOTIATED_PROTOCOL_VERSION, spelled here because the SDK loads
 * lazily (a test keeps them equal).
 */
export const DEFAULT_PROTOCOL_VERSION = "2025-03-26";

/** JSON-RPC "Invalid Request". */
export const INVALID_REQUEST = -32600;

export type McpBatchDecision = { ok: true; cost: number } | { ok: false; message: string };

/**
 * The protocol version a batch is sent under: the version an `initialize` request in it asks
 * for, else the `MCP-Protocol-Version` header, else the spec's default for a request without it.
 */
function batchProtocolVersion(messages: unknown[], headerVersion: string | null): string {
  for (const m of messages) {
    const msg = m as { method?: unknown; params?: { protocolVersion?: unknown } } | null;
    if (msg && typeof msg === "object" && msg.method === "initialize" && typeof msg.params?.protocolVersion === "string") return msg.params.protocolVersion;
  }
  return headerVersion ?? DEFAULT_PROTOCOL_VERSION;
}

/**
 * Decides a parsed /mcp body before any of it runs: a single message (or a body that is not
 * JSON, left to the transport's parse error) costs 1; a batch costs its length, and is refused
 * when empty, when its protocol version has no batches (2025-06-18 and later; versions are
 * dates, compared as strings) or when it holds more than MCP_MAX_BATCH_MESSAGES messages or
 * more than the whole per-minute budget (`perMinute`, 0 = no limit): such a batch could never
 * pass, so it is a 400 the client can act on (split it), never a 429 it would retry forever.
 */
export function decideMcpBody(body: unknown, headerVersion: string | null, perMinute: number): McpBatchDecision {
  if (!Array.isArray(body)) return { ok: true, cost: 1 };
  const version = batchProtocolVersion(body, headerVersion);
  if (version >= BATCHING_REMOVED_IN) {
    return {
      ok: false,
      message: `Invalid Request: JSON-RPC batches are not supported in MCP protocol version ${version} (removed in ${BATCHING_REMOVED_IN}); send one message per request.`,
    };
  }
  if (body.length === 0) return { ok: false, message: "Invalid Request: an empty JSON-RPC batch." };
  const cap = perMinute > 0 ? Math.min(MCP_MAX_BATCH_MESSAGES, perMinute) : MCP_MAX_BATCH_MESSAGES;
  if (body.length > cap) {
    const why = cap < MCP_MAX_BATCH_MESSAGES ? ` (this credential's rate limit is ${perMinute} requests per minute)` : "";
    return { ok: false, message: `Invalid Request: a JSON-RPC batch may hold at most ${cap} messages${why}; this one holds ${body.length}.` };
  }
  return { ok: true, cost: body.length };
}

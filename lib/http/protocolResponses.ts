/**
 * The documented answers of the operations outside the Beta API (health, OAuth, MCP). Their
 * bodies are fixed by their protocols (RFC 6749/7009/7591, JSON-RPC), not by TypeBox schemas of
 * ours, so they are written out here: a generated client still sees every operation's 2xx.
 */
import { BATCHING_REMOVED_IN, MCP_MAX_BATCH_MESSAGES } from "../mcp/batch.ts";
import { MAX_JSON_DEPTH } from "./jsonBody.ts";

const json = (schema: Record<string, unknown>) => ({ "application/json": { schema } });
const html = { "text/html": { schema: { type: "string" as const, description: "A server-rendered HTML page" } } };
const seeOther = { description: "Redirect (`Location`): the next step of the flow, or the client's redirect URI with `code`/`error` and `state`" };

export const HEALTH_RESPONSES = {
  200: { description: "The process is alive", content: json({ type: "object", required: ["status"], properties: { status: { type: "string", enum: ["ok"] } } }) },
};

const READINESS_CHECKS = {
  type: "array",
  description: "Each check and its state: `database` (answers), `migrations` (this version's are applied), `secret_key` (every stored credential can be opened with the keys set)",
  items: {
    type: "object",
    required: ["name", "status"],
    properties: {
      name: { type: "string", enum: ["database", "migrations", "secret_key"] },
      status: { type: "string", enum: ["ok", "failing", "skipped"] },
      message: { type: "string", description: "What is wrong and what to do, or why it was not checked" },
    },
  },
};

export const READY_RESPONSES = {
  200: {
    description: "Ready: every check passes (a 503 error body lists them in `detail.checks`)",
    content: json({
      type: "object",
      required: ["status", "database", "checks"],
      properties: { status: { type: "string", enum: ["ready"] }, database: { type: "string", enum: ["pglite", "postgres"] }, checks: READINESS_CHECKS },
    }),
  },
};

export const HTML_PAGE_RESPONSES = { 200: { description: "The page", content: html } };
export const FORM_RESPONSES = { 200: { description: "The page again, with what was wrong", content: html }, 303: seeOther };
export const AUTHORIZE_RESPONSES = { 200: { description: "The sign-in or consent page", content: html }, 303: seeOther };
export const CALLBACK_RESPONSES = { 303: seeOther };

export const TOKEN_RESPONSES = {
  200: {
    description: "Tokens (RFC 6749 §5.1)",
    content: json({
      type: "object",
      required: ["access_token", "token_type", "expires_in"],
      properties: {
        access_token: { type: "string" },
        token_type: { type: "string", enum: ["Bearer"] },
        expires_in: { type: "integer" },
        refresh_token: { type: "string" },
        scope: { type: "string", description: "Space-separated scopes granted" },
        org_id: { type: "string", format: "uuid", description: "The organization chosen at consent: the `{org_id}` of the Beta API's URLs for this token" },
      },
    }),
  },
};

export const REGISTRATION_RESPONSES = {
  201: {
    description: "The registered client (RFC 7591 §3.2.1)",
    content: json({
      type: "object",
      required: ["client_id", "redirect_uris"],
      properties: {
        client_id: { type: "string" },
        client_id_issued_at: { type: "integer" },
        client_name: { type: "string" },
        redirect_uris: { type: "array", items: { type: "string", format: "uri" } },
        grant_types: { type: "array", items: { type: "string" } },
        response_types: { type: "array", items: { type: "string" } },
        token_endpoint_auth_method: { type: "string" },
        scope: { type: "string" },
      },
    }),
  },
};

export const REVOCATION_RESPONSES = {
  200: { description: "Revoked, or the token was not valid (RFC 7009 §2.2: the same answer)", content: json({ type: "object", additionalProperties: false }) },
};

const jsonRpcMessage = { type: "object", required: ["jsonrpc"], properties: { jsonrpc: { type: "string", enum: ["2.0"] }, id: { type: ["string", "integer", "null"] }, result: { type: "object" }, error: { type: "object" } } };
/** The per-credential budget on every authenticated /mcp answer (docs/features/mcp.md "Rate limit"). */
const rateLimited = {
  "RateLimit-Limit": { $ref: "#/components/headers/RateLimitLimit" },
  "RateLimit-Remaining": { $ref: "#/components/headers/RateLimitRemaining" },
  "RateLimit-Reset": { $ref: "#/components/headers/RateLimitReset" },
};

export const MCP_RESPONSES = {
  200: {
    description: "The JSON-RPC response to the request (an array for a batch of several messages, protocol versions before 2025-06-18)",
    headers: rateLimited,
    content: json({ oneOf: [jsonRpcMessage, { type: "array", items: jsonRpcMessage }] }),
  },
  202: { description: "A notification or response was accepted (no body)", headers: rateLimited },
  400: {
    description:
      `A JSON-RPC error (\`id: null\`): a batch on ${BATCHING_REMOVED_IN} or later, over ${MCP_MAX_BATCH_MESSAGES} messages or empty (-32600), a body that is not JSON-RPC (-32700); or the spec's error body for JSON nested deeper than ${MAX_JSON_DEPTH} levels`,
    headers: rateLimited,
    content: json({ oneOf: [jsonRpcMessage, { $ref: "#/components/schemas/ErrorBody" }] }),
  },
  429: {
    description: "Over the credential's rate limit; every message of a batch counts as one request (nothing of the request ran)",
    headers: { ...rateLimited, "Retry-After": { $ref: "#/components/headers/RetryAfter" } },
    content: json({ $ref: "#/components/schemas/ErrorBody" }),
  },
};

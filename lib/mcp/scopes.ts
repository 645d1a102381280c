/**
 * The scopes of the assistant (MCP) resource: `assistant:read` plus the read scopes its tools
 * use. Advertised in the protected resource metadata and the 401 challenge, granted by default
 * to a token for `/mcp`, and the only scopes such a token ever carries: the assistant is
 * read-only, so no write scope is granted to it.
 */
import type { Scope } from "../auth/scopes.ts";

export const MCP_SCOPES = ["assistant:read", "reports:read", "templates:read", "estimates:read", "purchases:read", "budgets:read"] as const satisfies readonly Scope[];
export type McpScope = (typeof MCP_SCOPES)[number];

export function isMcpScope(s: string): s is McpScope {
  return (MCP_SCOPES as readonly string[]).includes(s);
}

import type { Scope } from "./scopes.ts";

/** Who is calling: resolved from an org API key or an OAuth access token. */
export interface Principal {
  kind: "api_key" | "oauth";
  orgId: string;
  scopes: Scope[];
  userId: string | null;
  /** api_keys.id or the OAuth token id: stored with what the caller creates (e.g. tickets). */
  credentialId: string;
}

/**
 * Turns a presented bearer secret into a principal, or null when it is not one of this
 * resolver's tokens. Resolvers are tried in order (API keys, then OAuth access tokens).
 * `audience` is the resource the request targets (the MCP URL or the REST base URL).
 */
export type TokenResolver = (token: string, ctx: { audience: string }) => Promise<Principal | null>;

import type { DbOrTx } from "../db/index.ts";
import type { Config } from "../config.ts";
import { isScope, type Scope } from "../auth/scopes.ts";
import { clientScopes, findClient, type OAuthClient } from "./clients.ts";
import { normalizeResource } from "./resolver.ts";
import { isMcpScope } from "../mcp/scopes.ts";

/** The parameters of an authorization request that the login/consent forms carry along. */
export const AUTHORIZE_PARAMS = ["client_id", "redirect_uri", "response_type", "state", "code_challenge", "code_challenge_method", "scope", "resource"] as const;
export type AuthorizeParams = Partial<Record<(typeof AUTHORIZE_PARAMS)[number], string>>;

export interface AuthorizationRequest {
  client: OAuthClient;
  redirectUri: string;
  state: string | null;
  codeChallenge: string;
  scopes: Scope[];
  resource: string;
  /** The params as received, to carry through the login and consent forms. */
  params: AuthorizeParams;
}

/** Client or redirect URI cannot be trusted: shown as an error page, never redirected to. */
export class UntrustedRequestError extends Error {}

/** A problem reported to the (verified) redirect URI as `?error=…&error_description=…&state=…&iss=…`. */
export class RedirectableError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly redirectUri: string,
    readonly state: string | null,
  ) {
    super(description);
  }
}

const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** The resources a token may be bound to (RFC 8707): the MCP server and the REST API. */
export function allowedResources(config: Config): string[] {
  return [`${config.publicUrl}/mcp`, `${config.publicUrl}/beta/v1`];
}

export function defaultResource(config: Config): string {
  return `${config.publicUrl}/mcp`;
}

/** Reads the authorize parameters; a repeated parameter is an error (RFC 6749 §3.1), `resource` excepted (→ invalid_target). */
export function readAuthorizeParams(source: URLSearchParams): { params: AuthorizeParams; repeated: string[] } {
  const params: AuthorizeParams = {};
  const repeated: string[] = [];
  for (const k of AUTHORIZE_PARAMS) {
    const all = source.getAll(k);
    if (all.length > 1) repeated.push(k);
    if (all.length) params[k] = all[0];
  }
  return { params, repeated };
}

export async function validateAuthorizationRequest(db: DbOrTx, config: Config, source: URLSearchParams): Promise<AuthorizationRequest> {
  const { params: p, repeated } = readAuthorizeParams(source);
  if (!p.client_id) throw new UntrustedRequestError("The request has no client_id. Start the sign-in again from your application.");
  if (repeated.includes("client_id") || repeated.includes("redirect_uri")) throw new UntrustedRequestError("client_id and redirect_uri may appear only once.");
  const client = await findClient(db, p.client_id);
  if (!client) throw new UntrustedRequestError("This application is not registered with commitops (unknown client_id). Start the sign-in again from your application so it can register itself.");
  if (!p.redirect_uri) throw new UntrustedRequestError("The request has no redirect_uri.");
  if (!client.redirectUris.includes(p.redirect_uri)) throw new UntrustedRequestError("The redirect_uri does not exactly match any URI this application registered, so commitops will not send you there.");
  const redirectUri = p.redirect_uri;
  const state = p.state ?? null;
  const fail = (error: string, description: string) => new RedirectableError(error, description, redirectUri, state);
  if (repeated.includes("resource")) throw fail("invalid_target", "Only one resource may be requested per authorization.");
  if (repeated.length) throw fail("invalid_request", `Parameter(s) repeated: ${repeated.join(", ")}.`);
  if (p.response_type !== "code") throw fail("unsupported_response_type", "Only response_type=code is supported.");
  if (!p.code_challenge) throw fail("invalid_request", "PKCE is required: send code_challenge and code_challenge_method=S256.");
  if (p.code_challenge_method !== "S256") throw fail("invalid_request", "code_challenge_method must be S256.");
  if (!CHALLENGE.test(p.code_challenge)) throw fail("invalid_request", "code_challenge must be the base64url SHA-256 of the code_verifier (43 characters).");
  if (state !== null && state.length > 2000) throw fail("invalid_request", "state is too long (at most 2000 characters).");
  const resource = p.resource === undefined ? defaultResource(config) : normalizeResource(p.resource);
  if (!allowedResources(config).includes(resource)) throw fail("invalid_target", `resource must be one of ${allowedResources(config).join(", ")}.`);
  // A token for the assistant carries only the assistant's read scopes (it is read-only), and
  // without a scope parameter it gets all of them: every tool area, no write scope.
  const forAssistant = resource === defaultResource(config);
  const permitted = clientScopes(client).filter((s) => !forAssistant || isMcpScope(s));
  // Unknown scopes are ignored (RFC 6749 §3.3 lets the server narrow the request); none left → invalid_scope.
  const requested = p.scope === undefined || p.scope.trim() === "" ? permitted : [...new Set(p.scope.trim().split(/\s+/))];
  const scopes = requested.filter((s): s is Scope => isScope(s) && permitted.includes(s));
  if (scopes.length === 0) throw fail("invalid_scope", `None of the requested scopes is available${forAssistant ? " to the assistant, which is read-only" : ""}. Supported: ${permitted.join(" ")}.`);
  return { client, redirectUri, state, codeChallenge: p.code_challenge, scopes, resource, params: p };
}

/** The redirect back to the client (RFC 6749 §4.1.2) with `iss` (RFC 9207); keeps the URI's own query. */
export function clientRedirectUrl(redirectUri: string, issuer: string, values: Record<string, string | null | undefined>): string {
  const u = new URL(redirectUri);
  for (const [k, v] of Object.entries(values)) if (v !== null && v !== undefined) u.searchParams.append(k, v);
  u.searchParams.append("iss", issuer);
  return u.toString();
}

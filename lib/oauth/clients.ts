import { eq } from "drizzle-orm";
import { oauthClients } from "../db/schema/index.ts";
import type { DbOrTx } from "../db/index.ts";
import { SCOPES, isScope } from "../auth/scopes.ts";
import { newSecret } from "../auth/tokens.ts";
import { OAuthError } from "./errors.ts";
import { CLIENT_ID_PREFIX } from "./secrets.ts";
import { LOOPBACK_HOSTS } from "../hosts.ts";

export type OAuthClient = typeof oauthClients.$inferSelect;

const MAX_REDIRECT_URIS = 10;
const MAX_URI_LENGTH = 2000;
const MAX_NAME_CODE_POINTS = 200;

// Whitespace and C0/C1 control characters: the URL parser silently drops or encodes them.
const WHITESPACE_OR_CONTROL = /[\s\u0000-\u001f\u007f-\u009f]/u;

/**
 * Why a redirect URI is refused, or null when acceptable. The authorization request compares
 * redirect URIs as exact strings, so a registered URI must already be in the form every parser
 * reads the same way: the WHATWG URL serialization (`new URL(uri).href`) of an absolute URL
 * with a host, https anywhere or http on a loopback host only (native apps, RFC 8252 §7.3);
 * no credentials, no fragment, no wildcard (`*`), no whitespace or control character.
 */
export function redirectUriProblem(uri: unknown): string | null {
  if (typeof uri !== "string" || uri.length === 0) return "must be a non-empty string";
  if (uri.length > MAX_URI_LENGTH) return `must be at most ${MAX_URI_LENGTH} characters`;
  if (WHITESPACE_OR_CONTROL.test(uri)) return "must not contain whitespace or control characters";
  if (uri.includes("*")) return "must not contain wildcards (*): register each URI exactly";
  if (uri.includes("#")) return "must not contain a fragment";
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return "must be an absolute URI";
  }
  if (u.protocol !== "https:" && u.protocol !== "http:") return "must use https (or http on a loopback host)";
  if (!u.hostname) return "must name a host";
  if (u.username || u.password) return "must not contain credentials";
  if (u.href !== uri) return `must be written in canonical form: ${JSON.stringify(u.href.slice(0, 200))}`;
  if (u.protocol === "http:" && !LOOPBACK_HOSTS.has(u.hostname)) return "http is only allowed for loopback hosts (127.0.0.1, localhost, [::1]); use https";
  return null;
}

export interface RegistrationResponse {
  client_id: string;
  client_id_issued_at: number;
  client_name: string;
  redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  token_endpoint_auth_method: "none";
  scope?: string;
  client_uri?: string;
}

function optionalString(meta: Record<string, unknown>, key: string, max = MAX_URI_LENGTH): string | undefined {
  const v = meta[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string" || [...v].length > max) throw new OAuthError("invalid_client_metadata", `${key} must be a string of at most ${max} characters.`);
  return v;
}

/**
 * RFC 7591 dynamic registration of a public client. Every client is public (PKCE, no secret):
 * a requested confidential auth method is overridden to `none`, which the response states
 * (RFC 7591 §3.2.1 lets the server replace requested values).
 */
export async function registerClient(db: DbOrTx, meta: unknown, now: Date): Promise<RegistrationResponse> {
  if (!meta || typeof meta !== "object" || Array.isArray(meta)) throw new OAuthError("invalid_client_metadata", "The registration body must be a JSON object.");
  const m = meta as Record<string, unknown>;
  const uris = m.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0) throw new OAuthError("invalid_redirect_uri", "redirect_uris must be a non-empty array of https (or loopback http) URIs.");
  if (uris.length > MAX_REDIRECT_URIS) throw new OAuthError("invalid_redirect_uri", `At most ${MAX_REDIRECT_URIS} redirect_uris may be registered.`);
  for (const u of uris) {
    const problem = redirectUriProblem(u);
    if (problem) throw new OAuthError("invalid_redirect_uri", `redirect_uri ${JSON.stringify(String(u).slice(0, 200))} ${problem}.`);
  }
  const grantTypes = m.grant_types ?? ["authorization_code", "refresh_token"];
  if (!Array.isArray(grantTypes) || grantTypes.some((g) => g !== "authorization_code" && g !== "refresh_token") || !grantTypes.includes("authorization_code"))
    throw new OAuthError("invalid_client_metadata", "grant_types must include authorization_code and may add refresh_token; nothing else is supported.");
  const responseTypes = m.response_types ?? ["code"];
  if (!Array.isArray(responseTypes) || responseTypes.length === 0 || responseTypes.some((r) => r !== "code"))
    throw new OAuthError("invalid_client_metadata", "response_types must be [\"code\"].");
  const authMethod = m.token_endpoint_auth_method;
  if (authMethod !== undefined && typeof authMethod !== "string") throw new OAuthError("invalid_client_metadata", "token_endpoint_auth_method must be a string.");
  const name = optionalString(m, "client_name", MAX_NAME_CODE_POINTS)?.trim() || "Unnamed client";
  const clientUri = optionalString(m, "client_uri");
  if (clientUri !== undefined && !/^https?:\/\//i.test(clientUri)) throw new OAuthError("invalid_client_metadata", "client_uri must be an http(s) URL.");
  const scopeIn = optionalString(m, "scope", 1000);
  // Unknown scopes are ignored (clients often copy generic ones such as `openid`); none known → no restriction.
  const known = scopeIn ? [...new Set(scopeIn.split(/\s+/).filter(isScope))] : [];
  const scope = known.length ? known.join(" ") : null;
  const id = newSecret(CLIENT_ID_PREFIX, 16);
  await db.insert(oauthClients).values({
    id,
    name,
    redirectUris: uris as string[],
    grantTypes: [...new Set(grantTypes as string[])],
    scope,
    clientUri: clientUri ?? null,
    softwareId: optionalString(m, "software_id", 200) ?? null,
    softwareVersion: optionalString(m, "software_version", 200) ?? null,
    createdAt: now,
  });
  return {
    client_id: id,
    client_id_issued_at: Math.floor(now.getTime() / 1000),
    client_name: name,
    redirect_uris: uris as string[],
    grant_types: [...new Set(grantTypes as string[])],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
    ...(scope ? { scope } : {}),
    ...(clientUri ? { client_uri: clientUri } : {}),
  };
}

export async function findClient(db: DbOrTx, clientId: string | null | undefined): Promise<OAuthClient | null> {
  if (!clientId || clientId.length > 200) return null;
  const [c] = await db.select().from(oauthClients).where(eq(oauthClients.id, clientId)).limit(1);
  return c ?? null;
}

/** The scopes a client may ask for: its registered ones, or every scope of the service. */
export function clientScopes(c: OAuthClient): string[] {
  return c.scope ? c.scope.split(" ") : [...SCOPES];
}

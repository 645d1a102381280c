/** The machine-facing OAuth endpoints: metadata, registration, token and revocation (JSON, RFC error bodies). */
import type { Config } from "../config.ts";
import type { Services } from "../services.ts";
import { SCOPES } from "../auth/scopes.ts";
import { findClient, registerClient } from "./clients.ts";
import { OAuthError, oauthEndpoint, oauthJson } from "./errors.ts";
import { exchangeAuthorizationCode, refreshTokens, revokeToken } from "./grants.ts";
import { readBodyTextWithin } from "../http/jsonBody.ts";

/** RFC 8414 authorization server metadata. */
export function authorizationServerMetadata(config: Config) {
  const base = config.publicUrl;
  return {
    issuer: base,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    registration_endpoint: `${base}/oauth/register`,
    revocation_endpoint: `${base}/oauth/revoke`,
    scopes_supported: [...SCOPES],
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: ["authorization_code", "refresh_token"],
    token_endpoint_auth_methods_supported: ["none"],
    revocation_endpoint_auth_methods_supported: ["none"],
    code_challenge_methods_supported: ["S256"],
    authorization_response_iss_parameter_supported: true,
    service_documentation: `${base}/docs`,
  };
}

/** Largest OAuth form or client-registration body (requests are a few hundred bytes). */
export const OAUTH_MAX_BODY_BYTES = 64 * 1024;

/** Reads an application/x-www-form-urlencoded body; a repeated parameter is invalid_request (RFC 6749 §3.2). */
async function readOAuthForm(request: Request): Promise<Map<string, string>> {
  const type = request.headers.get("content-type") ?? "";
  if (!/^application\/x-www-form-urlencoded\b/i.test(type)) throw new OAuthError("invalid_request", "Send the parameters as application/x-www-form-urlencoded.");
  const text = await readBodyTextWithin(request, OAUTH_MAX_BODY_BYTES);
  if (text === null) throw new OAuthError("invalid_request", "The request body is too large.");
  const out = new Map<string, string>();
  for (const [k, v] of new URLSearchParams(text)) {
    if (out.has(k)) throw new OAuthError("invalid_request", `Parameter ${k} is repeated.`);
    out.set(k, v);
  }
  return out;
}

/** Public clients identify themselves by client_id (form or HTTP Basic user name; a secret is ignored). */
async function identifyClient(s: Services, request: Request, form: Map<string, string>): Promise<string> {
  let id = form.get("client_id");
  const auth = request.headers.get("authorization");
  const basic = auth && /^Basic\s+(\S+)$/i.exec(auth);
  if (basic) {
    let user: string;
    try {
      user = decodeURIComponent(atob(basic[1]!).split(":")[0] ?? "");
    } catch {
      throw new OAuthError("invalid_client", "Malformed HTTP Basic credentials.", 401, { "www-authenticate": 'Basic realm="commitops"' });
    }
    if (id && id !== user) throw new OAuthError("invalid_request", "client_id differs from the HTTP Basic user name.");
    id = user;
  }
  if (!id) throw new OAuthError("invalid_client", "client_id is required (register at /oauth/register).", 401);
  if (!(await findClient(s.db, id))) throw new OAuthError("invalid_client", "Unknown client_id; register again at /oauth/register.", 401);
  return id;
}

export function tokenEndpoint(s: Services, request: Request): Promise<Response> {
  return oauthEndpoint(async () => {
    const form = await readOAuthForm(request);
    const clientId = await identifyClient(s, request, form);
    const grantType = form.get("grant_type");
    const now = s.now();
    if (grantType === "authorization_code") {
      const r = await exchangeAuthorizationCode(
        s.db,
        s.config,
        { clientId, code: form.get("code"), redirectUri: form.get("redirect_uri"), codeVerifier: form.get("code_verifier"), resource: form.get("resource") },
        now,
      );
      return oauthJson(r);
    }
    if (grantType === "refresh_token") {
      const r = await refreshTokens(s.db, s.config, { clientId, refreshToken: form.get("refresh_token"), scope: form.get("scope"), resource: form.get("resource") }, now);
      return oauthJson(r);
    }
    if (!grantType) throw new OAuthError("invalid_request", "grant_type is required.");
    throw new OAuthError("unsupported_grant_type", "Supported grant types: authorization_code, refresh_token.");
  });
}

export function revocationEndpoint(s: Services, request: Request): Promise<Response> {
  return oauthEndpoint(async () => {
    const form = await readOAuthForm(request);
    const clientId = await identifyClient(s, request, form);
    await revokeToken(s.db, { clientId, token: form.get("token") }, s.now());
    return oauthJson({});
  });
}

export function registrationEndpoint(s: Services, request: Request): Promise<Response> {
  return oauthEndpoint(async () => {
    const type = request.headers.get("content-type") ?? "";
    if (!/^application\/json\b/i.test(type)) throw new OAuthError("invalid_client_metadata", "Send the client metadata as application/json.");
    const text = await readBodyTextWithin(request, OAUTH_MAX_BODY_BYTES);
    if (text === null) throw new OAuthError("invalid_client_metadata", "The client metadata is too large.");
    let meta: unknown;
    try {
      meta = JSON.parse(text);
    } catch {
      throw new OAuthError("invalid_client_metadata", "The request body is not valid JSON.");
    }
    return oauthJson(await registerClient(s.db, meta, s.now()), 201);
  });
}

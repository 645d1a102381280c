/**
 * Sign-in through an upstream OpenID Connect provider (OIDC_ISSUER / OIDC_CLIENT_ID /
 * OIDC_CLIENT_SECRET): authorization code flow with PKCE through arctic's generic OAuth2Client,
 * endpoints discovered from the issuer, the ID token verified against the issuer's JWKS (jose).
 * It only links to an existing account by verified email; it never creates accounts.
 */
import { and, eq, gt, isNull } from "drizzle-orm";
import { CodeChallengeMethod, OAuth2Client, OAuth2RequestError, ArcticFetchError, generateCodeVerifier } from "arctic";
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from "jose";
import { oauthUpstreamStates } from "../db/schema/index.ts";
import type { Config } from "../config.ts";
import type { Services } from "../services.ts";
import { hashSecret, newSecret } from "../auth/tokens.ts";
import { findUserByEmail } from "../orgs/service.ts";

export class UpstreamLoginError extends Error {
  constructor(message: string, readonly status = 400) {
    super(message);
  }
}

export function upstreamConfigured(config: Config): boolean {
  return !!(config.oidcIssuer && config.oidcClientId && config.oidcClientSecret);
}

interface Discovery {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
}

const DISCOVERY_TTL_MS = 10 * 60_000;
const STATE_TTL_MS = 10 * 60_000;
const discoveryCache = new Map<string, { at: number; d: Discovery; jwks: JWTVerifyGetKey }>();

async function discover(issuer: string): Promise<{ d: Discovery; jwks: JWTVerifyGetKey }> {
  const hit = discoveryCache.get(issuer);
  if (hit && Date.now() - hit.at < DISCOVERY_TTL_MS) return hit;
  let d: Discovery;
  try {
    const r = await fetch(`${issuer}/.well-known/openid-configuration`, { headers: { accept: "application/json" }, signal: AbortSignal.timeout(10_000) });
    if (!r.ok) throw new Error(`status ${r.status}`);
    d = (await r.json()) as Discovery;
  } catch {
    throw new UpstreamLoginError("The single sign-on provider could not be reached. Try again later or sign in with your password.", 502);
  }
  // OIDC Discovery §4.3: the document must be the issuer's own.
  if (d.issuer !== issuer || !d.authorization_endpoint || !d.token_endpoint || !d.jwks_uri)
    throw new UpstreamLoginError("The single sign-on provider's configuration does not match OIDC_ISSUER.", 502);
  const entry = { at: Date.now(), d, jwks: createRemoteJWKSet(new URL(d.jwks_uri)) };
  discoveryCache.set(issuer, entry);
  return entry;
}

function client(config: Config): OAuth2Client {
  return new OAuth2Client(config.oidcClientId!, config.oidcClientSecret!, `${config.publicUrl}/oauth/upstream/callback`);
}

/** Stores the pending sign-in (bound to this browser) and returns the provider's authorization URL. */
export async function startUpstreamLogin(s: Services, browserSecret: string, returnQuery: string): Promise<string> {
  const { d } = await discover(s.config.oidcIssuer!);
  const state = newSecret("st", 24);
  const nonce = newSecret("n", 24);
  const verifier = generateCodeVerifier();
  await s.db.insert(oauthUpstreamStates).values({
    stateHash: hashSecret(state),
    browserHash: hashSecret(browserSecret),
    codeVerifier: verifier,
    nonce,
    returnQuery,
    expiresAt: new Date(s.now().getTime() + STATE_TTL_MS),
  });
  const url = client(s.config).createAuthorizationURLWithPKCE(d.authorization_endpoint, state, CodeChallengeMethod.S256, verifier, ["openid", "email"]);
  url.searchParams.set("nonce", nonce);
  return url.toString();
}

/** Completes the provider's redirect: the linked account's id and the authorize request to resume. */
export async function finishUpstreamLogin(s: Services, browserSecret: string | null, q: URLSearchParams): Promise<{ userId: string; returnQuery: string }> {
  const state = q.get("state");
  if (!state) throw new UpstreamLoginError("The sign-in response has no state. Start again from your application.");
  const now = s.now();
  // Single use: consumed atomically whatever happens next.
  const [pending] = await s.db
    .update(oauthUpstreamStates)
    .set({ usedAt: now })
    .where(and(eq(oauthUpstreamStates.stateHash, hashSecret(state)), isNull(oauthUpstreamStates.usedAt), gt(oauthUpstreamStates.expiresAt, now)))
    .returning();
  if (!pending) throw new UpstreamLoginError("This sign-in link is unknown, expired or already used. Start again from your application.");
  if (!browserSecret || hashSecret(browserSecret) !== pending.browserHash)
    throw new UpstreamLoginError("This sign-in was started in another browser. Start again from your application in this browser.", 403);
  const upstreamError = q.get("error");
  if (upstreamError) throw new UpstreamLoginError(`The single sign-on provider refused the sign-in (${upstreamError.slice(0, 100)}).`, 403);
  const code = q.get("code");
  if (!code) throw new UpstreamLoginError("The sign-in response has no code.");

  const { d, jwks } = await discover(s.config.oidcIssuer!);
  let idToken: string;
  try {
    const tokens = await client(s.config).validateAuthorizationCode(d.token_endpoint, code, pending.codeVerifier);
    idToken = tokens.idToken();
  } catch (e) {
    if (e instanceof OAuth2RequestError) throw new UpstreamLoginError(`The single sign-on provider rejected the sign-in (${e.code}).`, 502);
    if (e instanceof ArcticFetchError) throw new UpstreamLoginError("The single sign-on provider could not be reached.", 502);
    throw new UpstreamLoginError("The single sign-on provider returned no ID token.", 502);
  }
  let claims: Record<string, unknown>;
  try {
    const v = await jwtVerify(idToken, jwks, { issuer: s.config.oidcIssuer!, audience: s.config.oidcClientId!, currentDate: now, clockTolerance: 60 });
    claims = v.payload as Record<string, unknown>;
  } catch {
    throw new UpstreamLoginError("The ID token from the single sign-on provider is invalid (signature, issuer, audience or expiry).", 502);
  }
  if (claims.nonce !== pending.nonce) throw new UpstreamLoginError("The ID token does not belong to this sign-in (nonce mismatch).", 502);
  if (claims.email_verified !== true || typeof claims.email !== "string")
    throw new UpstreamLoginError("The single sign-on provider did not confirm a verified email address, so the account cannot be linked.", 403);
  const user = await findUserByEmail(s.db, claims.email);
  if (!user)
    throw new UpstreamLoginError(`No commitops account uses the email ${claims.email}. Accounts are not created by single sign-on; ask an administrator of your organization to invite you.`, 403);
  return { userId: user.id, returnQuery: pending.returnQuery };
}

import { and, eq, gt, isNull } from "drizzle-orm";
import { sha256 } from "@noble/hashes/sha2.js";
import { memberships, oauthClients, oauthCodes, oauthTokens } from "../db/schema/index.ts";
import type { Db, DbOrTx } from "../db/index.ts";
import type { Config } from "../config.ts";
import { isScope } from "../auth/scopes.ts";
import { hashSecret, newSecret, timingSafeEqualStr } from "../auth/tokens.ts";
import { OAuthError } from "./errors.ts";
import { normalizeResource } from "./resolver.ts";
import { ACCESS_TOKEN_PREFIX, CODE_PREFIX, REFRESH_TOKEN_PREFIX } from "./secrets.ts";
import type { AuthorizationRequest } from "./authorizeRequest.ts";

export interface TokenResponse {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  refresh_token?: string;
  scope: string;
  /** The organization the user chose at consent: a REST client needs it to build its URLs (an extension parameter, RFC 6749 §5.1). */
  org_id: string;
}

const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

export function pkceChallenge(verifier: string): string {
  return Buffer.from(sha256(new TextEncoder().encode(verifier))).toString("base64url");
}

const plus = (now: Date, seconds: number) => new Date(now.getTime() + seconds * 1000);

/** Issues a single-use authorization code for an approved request (returned in clear once). */
export async function issueAuthorizationCode(
  db: DbOrTx,
  config: Config,
  req: AuthorizationRequest,
  grant: { userId: string; orgId: string; sessionId: string | null; scopes: string[] },
  now: Date,
): Promise<string> {
  const code = newSecret(CODE_PREFIX);
  await db.insert(oauthCodes).values({
    codeHash: hashSecret(code),
    clientId: req.client.id,
    userId: grant.userId,
    orgId: grant.orgId,
    sessionId: grant.sessionId,
    redirectUri: req.redirectUri,
    codeChallenge: req.codeChallenge,
    scopes: grant.scopes,
    resource: req.resource,
    createdAt: now,
    expiresAt: plus(now, config.oauthCodeTtl),
  });
  return code;
}

/** An access token, plus a refresh token when the client registered the refresh_token grant. */
async function issueTokenPair(
  tx: DbOrTx,
  config: Config,
  g: { familyId: string; clientId: string; userId: string; orgId: string; sessionId: string | null; scopes: string[]; resource: string; withRefresh: boolean },
  now: Date,
): Promise<TokenResponse> {
  const access = newSecret(ACCESS_TOKEN_PREFIX);
  const refresh = g.withRefresh ? newSecret(REFRESH_TOKEN_PREFIX) : null;
  const base = { familyId: g.familyId, clientId: g.clientId, userId: g.userId, orgId: g.orgId, sessionId: g.sessionId, scopes: g.scopes, resource: g.resource, createdAt: now };
  await tx.insert(oauthTokens).values([
    { ...base, kind: "access" as const, tokenHash: hashSecret(access), expiresAt: plus(now, config.oauthAccessTokenTtl) },
    ...(refresh ? [{ ...base, kind: "refresh" as const, tokenHash: hashSecret(refresh), expiresAt: plus(now, config.oauthRefreshTokenTtl) }] : []),
  ]);
  return { access_token: access, token_type: "Bearer", expires_in: config.oauthAccessTokenTtl, ...(refresh ? { refresh_token: refresh } : {}), scope: g.scopes.join(" "), org_id: g.orgId };
}

/** Revokes every token descending from one authorization (code or refresh replay, refresh revocation). */
export async function revokeFamily(db: DbOrTx, familyId: string, now: Date): Promise<void> {
  await db.update(oauthTokens).set({ revokedAt: now }).where(and(eq(oauthTokens.familyId, familyId), isNull(oauthTokens.revokedAt)));
}

async function clientGrantTypes(db: DbOrTx, clientId: string): Promise<string[]> {
  const [c] = await db.select({ grantTypes: oauthClients.grantTypes }).from(oauthClients).where(eq(oauthClients.id, clientId)).limit(1);
  return c?.grantTypes ?? [];
}

async function isMember(db: DbOrTx, orgId: string, userId: string): Promise<boolean> {
  const [m] = await db.select({ role: memberships.role }).from(memberships).where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId))).limit(1);
  return !!m;
}

/**
 * grant_type=authorization_code. The code is consumed atomically (UPDATE … WHERE used_at IS NULL
 * RETURNING) before any other check, so a code is never good twice and a guessed verifier burns it.
 * A replayed code revokes every token issued from it (RFC 6749 §4.1.2, OAuth 2.1 §4.1.3).
 */
export async function exchangeAuthorizationCode(
  db: Db,
  config: Config,
  input: { clientId: string; code?: string; redirectUri?: string; codeVerifier?: string; resource?: string },
  now: Date,
): Promise<TokenResponse> {
  if (!input.code) throw new OAuthError("invalid_request", "code is required.");
  if (!input.redirectUri) throw new OAuthError("invalid_request", "redirect_uri is required (the one sent to /oauth/authorize).");
  if (!input.codeVerifier) throw new OAuthError("invalid_request", "code_verifier is required (PKCE).");
  const codeHash = hashSecret(input.code);
  const outcome = await db.transaction(async (tx) => {
    const [code] = await tx.update(oauthCodes).set({ usedAt: now }).where(and(eq(oauthCodes.codeHash, codeHash), isNull(oauthCodes.usedAt))).returning();
    if (!code) {
      const [seen] = await tx.select({ id: oauthCodes.id }).from(oauthCodes).where(eq(oauthCodes.codeHash, codeHash)).limit(1);
      if (seen) {
        await revokeFamily(tx, seen.id, now);
        return new OAuthError("invalid_grant", "This authorization code was already used; the tokens issued from it are revoked. Sign in again.");
      }
      return new OAuthError("invalid_grant", "Unknown authorization code.");
    }
    if (code.clientId !== input.clientId) return new OAuthError("invalid_grant", "This authorization code was issued to another client.");
    if (code.expiresAt.getTime() <= now.getTime()) return new OAuthError("invalid_grant", "The authorization code has expired; sign in again.");
    if (code.redirectUri !== input.redirectUri) return new OAuthError("invalid_grant", "redirect_uri does not match the authorization request.");
    if (!VERIFIER.test(input.codeVerifier!) || !timingSafeEqualStr(pkceChallenge(input.codeVerifier!), code.codeChallenge))
      return new OAuthError("invalid_grant", "code_verifier does not match the code_challenge (PKCE).");
    if (input.resource !== undefined && normalizeResource(input.resource) !== code.resource)
      return new OAuthError("invalid_target", "resource must be the one of the authorization request.");
    if (!(await isMember(tx, code.orgId, code.userId))) return new OAuthError("invalid_grant", "The user is no longer a member of the organization.");
    const withRefresh = (await clientGrantTypes(tx, code.clientId)).includes("refresh_token");
    return issueTokenPair(tx, config, { familyId: code.id, clientId: code.clientId, userId: code.userId, orgId: code.orgId, sessionId: code.sessionId, scopes: code.scopes, resource: code.resource, withRefresh }, now);
  });
  if (outcome instanceof OAuthError) throw outcome;
  return outcome;
}

/**
 * grant_type=refresh_token with rotation: the presented refresh token is consumed atomically and a
 * new pair issued in the same family. Presenting a consumed refresh token again is a replay: the
 * whole family (every access and refresh token of the authorization) is revoked.
 */
export async function refreshTokens(
  db: Db,
  config: Config,
  input: { clientId: string; refreshToken?: string; scope?: string; resource?: string },
  now: Date,
): Promise<TokenResponse> {
  if (!input.refreshToken) throw new OAuthError("invalid_request", "refresh_token is required.");
  const tokenHash = hashSecret(input.refreshToken);
  const outcome = await db.transaction(async (tx) => {
    const [old] = await tx
      .update(oauthTokens)
      .set({ usedAt: now })
      .where(
        and(
          eq(oauthTokens.tokenHash, tokenHash),
          eq(oauthTokens.kind, "refresh"),
          eq(oauthTokens.clientId, input.clientId),
          isNull(oauthTokens.usedAt),
          isNull(oauthTokens.revokedAt),
          gt(oauthTokens.expiresAt, now),
        ),
      )
      .returning();
    if (!old) {
      const [seen] = await tx
        .select({ familyId: oauthTokens.familyId, usedAt: oauthTokens.usedAt, clientId: oauthTokens.clientId })
        .from(oauthTokens)
        .where(and(eq(oauthTokens.tokenHash, tokenHash), eq(oauthTokens.kind, "refresh")))
        .limit(1);
      if (seen && seen.clientId === input.clientId && seen.usedAt) {
        await revokeFamily(tx, seen.familyId, now);
        return new OAuthError("invalid_grant", "This refresh token was already used; every token of this authorization is revoked. Sign in again.");
      }
      return new OAuthError("invalid_grant", "The refresh token is unknown, expired or revoked. Sign in again.");
    }
    let scopes = old.scopes;
    if (input.scope !== undefined) {
      const asked = [...new Set(input.scope.trim().split(/\s+/).filter(Boolean))];
      if (asked.length === 0 || asked.some((s) => !isScope(s) || !old.scopes.includes(s))) return new OAuthError("invalid_scope", "A refresh may only narrow the granted scopes.");
      scopes = asked;
    }
    if (input.resource !== undefined && normalizeResource(input.resource) !== old.resource)
      return new OAuthError("invalid_target", "resource must be the one the authorization was granted for.");
    if (!(await isMember(tx, old.orgId, old.userId))) return new OAuthError("invalid_grant", "The user is no longer a member of the organization.");
    return issueTokenPair(tx, config, { familyId: old.familyId, clientId: old.clientId, userId: old.userId, orgId: old.orgId, sessionId: old.sessionId, scopes, resource: old.resource, withRefresh: true }, now);
  });
  if (outcome instanceof OAuthError) throw outcome;
  return outcome;
}

/**
 * RFC 7009: revoking a refresh token revokes its whole authorization; an access token only
 * itself. Unknown tokens and tokens of other clients are answered the same (200) and left alone.
 */
export async function revokeToken(db: Db, input: { clientId: string; token?: string }, now: Date): Promise<void> {
  if (!input.token) throw new OAuthError("invalid_request", "token is required.");
  const [row] = await db
    .select({ id: oauthTokens.id, kind: oauthTokens.kind, familyId: oauthTokens.familyId, clientId: oauthTokens.clientId })
    .from(oauthTokens)
    .where(eq(oauthTokens.tokenHash, hashSecret(input.token)))
    .limit(1);
  if (!row || row.clientId !== input.clientId) return;
  if (row.kind === "refresh") await revokeFamily(db, row.familyId, now);
  else await db.update(oauthTokens).set({ revokedAt: now }).where(and(eq(oauthTokens.id, row.id), isNull(oauthTokens.revokedAt)));
}

/** Sign-out: every token and pending code obtained through this login session stops working. */
export async function revokeSessionGrants(tx: DbOrTx, sessionId: string, now: Date): Promise<void> {
  await tx.update(oauthCodes).set({ usedAt: now }).where(and(eq(oauthCodes.sessionId, sessionId), isNull(oauthCodes.usedAt)));
  // Every token of a family carries the session of the login that granted it.
  await tx.update(oauthTokens).set({ revokedAt: now }).where(and(eq(oauthTokens.sessionId, sessionId), isNull(oauthTokens.revokedAt)));
}

import { and, eq, sql } from "drizzle-orm";
import { memberships, oauthTokens } from "../db/schema/index.ts";
import type { DbOrTx } from "../db/index.ts";
import type { Principal, TokenResolver } from "../auth/principal.ts";
import { ROLE_SCOPES, isScope, type Role, type Scope } from "../auth/scopes.ts";
import { hashSecret } from "../auth/tokens.ts";
import { ACCESS_TOKEN_PREFIX } from "./secrets.ts";

/**
 * Outcome of checking a presented OAuth access token:
 * - `missing`: no token was presented (the caller passed null/empty);
 * - `invalid`: not one of our access tokens, or unknown, expired, revoked, or its user is no
 *   longer a member of the token's organization (→ 401 `invalid_token`);
 * - `wrong_audience`: a valid token issued for another resource (RFC 8707) (→ 401 `invalid_token`);
 * - `ok`: the principal; its scopes are the granted ones ∩ the user's current role's scopes.
 *   Scope checks are the guard's (lib/auth/guard.ts requireScope; /mcp's in lib/mcp/http.ts).
 */
export type AccessTokenCheck =
  | { ok: true; principal: Principal & { kind: "oauth"; userId: string }; audience: string; expiresAt: Date }
  | { ok: false; reason: "missing" | "invalid" | "wrong_audience" };

/**
 * The access token by its hash with its user's current role: built once per database object as a
 * prepared statement (it runs on every request of an OAuth client; on PostgreSQL a named
 * statement, parsed and planned once per connection). Nothing is cached: a revoked token fails
 * on its next request.
 */
const tokenLookups = new WeakMap<object, ReturnType<typeof prepareTokenLookup>>();
function prepareTokenLookup(db: DbOrTx) {
  return db
    .select({
      id: oauthTokens.id,
      orgId: oauthTokens.orgId,
      userId: oauthTokens.userId,
      scopes: oauthTokens.scopes,
      resource: oauthTokens.resource,
      expiresAt: oauthTokens.expiresAt,
      revokedAt: oauthTokens.revokedAt,
      role: memberships.role,
    })
    .from(oauthTokens)
    .leftJoin(memberships, and(eq(memberships.orgId, oauthTokens.orgId), eq(memberships.userId, oauthTokens.userId)))
    .where(and(eq(oauthTokens.tokenHash, sql.placeholder("hash")), eq(oauthTokens.kind, "access")))
    .limit(1)
    .prepare("commitops_oauth_access_token");
}

export async function verifyAccessToken(db: DbOrTx, token: string | null | undefined, audience: string, now: Date = new Date()): Promise<AccessTokenCheck> {
  if (!token) return { ok: false, reason: "missing" };
  if (!token.startsWith(`${ACCESS_TOKEN_PREFIX}_`)) return { ok: false, reason: "invalid" };
  let lookup = tokenLookups.get(db);
  if (!lookup) tokenLookups.set(db, (lookup = prepareTokenLookup(db)));
  const [row] = await lookup.execute({ hash: hashSecret(token) });
  if (!row || row.revokedAt || row.expiresAt.getTime() <= now.getTime() || !row.role) return { ok: false, reason: "invalid" };
  if (row.resource !== normalizeResource(audience)) return { ok: false, reason: "wrong_audience" };
  const allowed = ROLE_SCOPES[row.role as Role];
  const scopes = row.scopes.filter((s): s is Scope => isScope(s) && allowed.includes(s));
  return {
    ok: true,
    principal: { kind: "oauth", orgId: row.orgId, scopes, userId: row.userId, credentialId: row.id },
    audience: row.resource,
    expiresAt: row.expiresAt,
  };
}

/** Resource URIs compare without a trailing slash (`…/mcp/` is `…/mcp`). */
export function normalizeResource(uri: string): string {
  return uri.replace(/\/+$/, "");
}

/** The TokenResolver of OAuth access tokens for lib/auth/guard.ts. */
export function oauthAccessTokenResolver(db: DbOrTx, now: () => Date = () => new Date()): TokenResolver {
  return async (token, ctx) => {
    const r = await verifyAccessToken(db, token, ctx.audience, now());
    return r.ok ? r.principal : null;
  };
}

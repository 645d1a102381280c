import { ForbiddenError, UnauthorizedError } from "../errors.ts";
import type { Services } from "../services.ts";
import { apiKeyResolver } from "./apiKeys.ts";
import { oauthAccessTokenResolver } from "../oauth/resolver.ts";
import type { Principal, TokenResolver } from "./principal.ts";
import { SCOPES, type Scope } from "./scopes.ts";

/** The bearer secret of a request: `Authorization: Bearer …`, else `x-api-key`. */
export function presentedToken(headers: Headers): string | null {
  const auth = headers.get("authorization");
  if (auth) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    return m ? m[1]! : null;
  }
  return headers.get("x-api-key")?.trim() || null;
}

/** The built-in resolvers of a Services (built once: they run on every request). */
const builtIn = new WeakMap<Services, TokenResolver[]>();

/** Org API keys, OAuth access tokens, then those registered by features (`extras.tokenResolvers`). */
export function tokenResolvers(s: Services): TokenResolver[] {
  let own = builtIn.get(s);
  if (!own) {
    const apiKeys = apiKeyResolver(s.db, s.handle.query);
    builtIn.set(s, (own = [(t) => apiKeys(t), oauthAccessTokenResolver(s.db, () => s.now())]));
  }
  const extra = s.extras.tokenResolvers as TokenResolver[] | undefined;
  return extra?.length ? [...own, ...extra] : own;
}

export async function resolvePrincipal(s: Services, token: string, audience: string): Promise<Principal | null> {
  for (const r of tokenResolvers(s)) {
    const p = await r(token, { audience });
    if (p) return p;
  }
  return null;
}

/**
 * The one org guard of the Beta API, in two steps so the rate limiter can count a request between
 * them (a credential probing other organizations spends its own allowance): 401 without a valid
 * credential…
 */
export async function authenticate(s: Services, headers: Headers): Promise<Principal> {
  const token = presentedToken(headers);
  if (!token) throw new UnauthorizedError();
  const principal = await resolvePrincipal(s, token, `${s.config.publicUrl}/beta/v1`);
  if (!principal) throw new UnauthorizedError("The credential is unknown, expired or revoked.", 'Bearer realm="commitops", error="invalid_token"');
  return principal;
}

/** …then 403 when the credential belongs to another organization (whether or not `orgId` exists: nothing is revealed). */
export function requireOrg(principal: Principal, orgId: string): void {
  if (principal.orgId !== orgId.toLowerCase()) throw new ForbiddenError("This credential does not grant access to that organization.");
}

export function requireScope(principal: Principal, scope: Scope): void {
  if (!principal.scopes.includes(scope)) throw new ForbiddenError(`This credential lacks the \`${scope}\` scope.`, "insufficient_scope");
}

/** An admin's act (managing API keys): the credential must hold every scope, as `org create`'s key does. */
export function requireAdmin(principal: Principal): void {
  if (!SCOPES.every((sc) => principal.scopes.includes(sc))) throw new ForbiddenError("This needs a credential holding every scope (an admin key).", "insufficient_scope");
}

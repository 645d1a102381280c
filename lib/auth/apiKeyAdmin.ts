import { and, desc, eq, isNull } from "drizzle-orm";
import { apiKeys } from "../db/schema/index.ts";
import type { DbOrTx } from "../db/index.ts";
import { ForbiddenError } from "../errors.ts";
import { createApiKey, revokeApiKey } from "./apiKeys.ts";
import type { Principal } from "./principal.ts";
import { SCOPES, type Scope } from "./scopes.ts";

/** Managing keys is an admin's act: the caller must hold every scope (as `org create`'s key does). */
function requireKeyAdmin(p: Principal) {
  if (!SCOPES.every((sc) => p.scopes.includes(sc))) throw new ForbiddenError("Managing API keys needs a credential holding every scope (an admin key).", "insufficient_scope");
}

/**
 * A key never holds a scope its creator lacks: the caller's scopes, which for a user (OAuth
 * token, or a key that user created) are already bounded by the user's current role.
 */
function requireScopesHeld(p: Principal, scopes: readonly Scope[]) {
  const beyond = scopes.filter((sc) => !p.scopes.includes(sc));
  if (beyond.length) throw new ForbiddenError(`A key cannot hold scopes its creator lacks: ${beyond.join(", ")}.`, "insufficient_scope");
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export async function listOrgApiKeys(db: DbOrTx, p: Principal, includeRevoked: boolean) {
  requireKeyAdmin(p);
  const rows = await db
    .select()
    .from(apiKeys)
    .where(includeRevoked ? eq(apiKeys.orgId, p.orgId) : and(eq(apiKeys.orgId, p.orgId), isNull(apiKeys.revokedAt)))
    .orderBy(desc(apiKeys.createdAt));
  return rows.map((k) => ({
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    scopes: k.scopes,
    created_at: k.createdAt.toISOString(),
    last_used_at: iso(k.lastUsedAt),
    revoked_at: iso(k.revokedAt),
  }));
}

export async function createOrgApiKey(db: DbOrTx, p: Principal, input: { name: string; scopes?: Scope[] }) {
  requireKeyAdmin(p);
  const scopes = input.scopes ?? p.scopes;
  requireScopesHeld(p, scopes);
  // The creator ties the key to their membership: the resolver bounds it by their current role.
  const k = await createApiKey(db, { orgId: p.orgId, name: input.name, scopes, createdBy: p.userId });
  return { id: k.id, name: input.name, prefix: k.prefix, scopes: k.scopes, api_key: k.key };
}

export async function revokeOrgApiKey(db: DbOrTx, p: Principal, keyId: string) {
  requireKeyAdmin(p);
  await revokeApiKey(db, keyId, p.orgId);
}

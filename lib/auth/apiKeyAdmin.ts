import { and, desc, eq, isNull } from "drizzle-orm";
import { apiKeys } from "../db/schema/index.ts";
import type { DbOrTx } from "../db/index.ts";
import { createApiKey, revokeApiKey } from "./apiKeys.ts";
import type { Principal } from "./principal.ts";
import type { Scope } from "./scopes.ts";
import { requireAdmin } from "./guard.ts";

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export async function listOrgApiKeys(db: DbOrTx, p: Principal, includeRevoked: boolean) {
  requireAdmin(p);
  const rows = await db
    .select()
    .from(apiKeys)
    .where(includeRevoked ? eq(apiKeys.orgId, p.orgId) : and(eq(apiKeys.orgId, p.orgId), isNull(apiKeys.revokedAt)))
    .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id));
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
  requireAdmin(p);
  // The creator holds every scope (admin), so the key cannot out-scope them today; `createdBy`
  // ties it to their membership, so the resolver bounds it by their role from then on.
  const k = await createApiKey(db, { orgId: p.orgId, name: input.name, scopes: input.scopes ?? p.scopes, createdBy: p.userId });
  return { id: k.id, name: input.name, prefix: k.prefix, scopes: k.scopes, api_key: k.key };
}

export async function revokeOrgApiKey(db: DbOrTx, p: Principal, keyId: string) {
  requireAdmin(p);
  await revokeApiKey(db, keyId, p.orgId);
}

import { and, eq, isNull } from "drizzle-orm";
import { apiKeys } from "../db/schema/index.ts";
import type { DbOrTx } from "../db/index.ts";
import { NotFoundError, ValidationError } from "../errors.ts";
import type { Principal } from "./principal.ts";
import { SCOPES, isScope, type Scope } from "./scopes.ts";
import { hashSecret, newSecret } from "./tokens.ts";

export const API_KEY_PREFIX = "co";

export interface CreatedApiKey {
  id: string;
  /** The only time the key is visible. */
  key: string;
  prefix: string;
  scopes: Scope[];
}

export async function createApiKey(
  db: DbOrTx,
  input: { orgId: string; name?: string; scopes?: string[]; createdBy?: string | null },
): Promise<CreatedApiKey> {
  const scopes = input.scopes?.length ? input.scopes : [...SCOPES];
  const bad = scopes.filter((s) => !isScope(s));
  if (bad.length) throw new ValidationError(`Unknown scope(s): ${bad.join(", ")}. Known: ${SCOPES.join(", ")}.`, { scopes: bad.map((s) => `unknown scope ${s}`) });
  const key = newSecret(API_KEY_PREFIX);
  const prefix = key.slice(0, 10);
  const [row] = await db
    .insert(apiKeys)
    .values({ orgId: input.orgId, name: input.name ?? "API key", prefix, keyHash: hashSecret(key), scopes, createdBy: input.createdBy ?? null })
    .returning({ id: apiKeys.id });
  return { id: row!.id, key, prefix, scopes: scopes as Scope[] };
}

export async function revokeApiKey(db: DbOrTx, keyId: string, orgId?: string): Promise<void> {
  const cond = orgId ? and(eq(apiKeys.id, keyId), eq(apiKeys.orgId, orgId)) : eq(apiKeys.id, keyId);
  const rows = await db.update(apiKeys).set({ revokedAt: new Date() }).where(and(cond, isNull(apiKeys.revokedAt))).returning({ id: apiKeys.id });
  if (rows.length === 0) throw new NotFoundError("No such active API key.");
}

const lastTouched = new Map<string, number>();

type Query = <T>(text: string, params?: unknown[]) => Promise<T[]>;

/**
 * Resolver for org API keys (`co_…`). Revoked keys resolve to nothing (→ 401). It runs on every
 * request, so it is one indexed lookup in plain SQL (no query building).
 */
export function apiKeyResolver(db: DbOrTx, query: Query): (token: string) => Promise<Principal | null> {
  return async (token) => {
    if (!token.startsWith(`${API_KEY_PREFIX}_`)) return null;
    const [row] = await query<{ id: string; org_id: string; scopes: string[]; created_by: string | null; revoked_at: unknown }>(
      "SELECT id, org_id, scopes, created_by, revoked_at FROM api_keys WHERE key_hash = $1 LIMIT 1",
      [hashSecret(token)],
    );
    if (!row || row.revoked_at) return null;
    const now = Date.now();
    if ((lastTouched.get(row.id) ?? 0) < now - 60_000) {
      lastTouched.set(row.id, now);
      db.update(apiKeys).set({ lastUsedAt: new Date() }).where(eq(apiKeys.id, row.id)).catch(() => {});
    }
    return { kind: "api_key", orgId: row.org_id, scopes: row.scopes.filter(isScope), userId: row.created_by, credentialId: row.id };
  };
}

import { and, eq, isNull } from "drizzle-orm";
import { apiKeys } from "../db/schema/index.ts";
import type { DatabaseHandle, DbOrTx } from "../db/index.ts";
import { NotFoundError, ValidationError } from "../errors.ts";
import type { Principal } from "./principal.ts";
import { ROLE_SCOPES, SCOPES, isScope, type Role, type Scope } from "./scopes.ts";
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

/** How long a key found unknown (or revoked) answers 401 without a lookup. */
export const UNKNOWN_KEY_TTL_MS = 30_000;
/** Digests remembered at most (oldest out first): ~1.5 MB. */
export const UNKNOWN_KEY_LIMIT = 10_000;

/**
 * SHA-256 digests of API keys the database does not know (or knows revoked), each remembered for
 * UNKNOWN_KEY_TTL_MS: a client retrying a wrong key, or a scanner, costs one lookup per key per
 * 30 s instead of one per request. Per process; it can never deny a valid key: a key is 32 random
 * bytes, so its digest cannot have been looked up before the key was created (on any replica),
 * and a revoked key never becomes valid again.
 * Keys refused for their creator having left the org are not remembered (re-adding the member
 * restores them at once).
 */
class UnknownKeys {
  private until = new Map<string, number>();

  has(digest: string, now: number): boolean {
    const t = this.until.get(digest);
    if (t === undefined) return false;
    if (t > now) return true;
    this.until.delete(digest);
    return false;
  }

  add(digest: string, now: number): void {
    this.until.delete(digest);
    this.until.set(digest, now + UNKNOWN_KEY_TTL_MS);
    // A Map keeps insertion order: the first entries are the oldest.
    while (this.until.size > UNKNOWN_KEY_LIMIT) this.until.delete(this.until.keys().next().value!);
  }
}

const unknownKeys = new UnknownKeys();

type Query = DatabaseHandle["query"];

interface ResolvedKeyRow {
  id: string;
  org_id: string;
  scopes: string[];
  created_by: string | null;
  revoked_at: unknown;
  /** The creator's current membership role in the key's org (null: no creator, or no longer a member). */
  creator_role: Role | null;
}

/**
 * What a key may do now. A key created by a user never outlives or out-scopes that user: it holds
 * its own scopes ∩ the creator's current role, and nothing once the creator has left the org
 * (null → 401, like a revoked key). A key without a creator (CLI, `org create`) holds its own.
 */
function effectiveKeyScopes(row: ResolvedKeyRow): Scope[] | null {
  const own = row.scopes.filter(isScope);
  if (!row.created_by) return own;
  if (!row.creator_role) return null;
  const allowed = ROLE_SCOPES[row.creator_role] ?? [];
  return own.filter((sc) => allowed.includes(sc));
}

/**
 * Resolver for org API keys (`co_…`). Revoked keys resolve to nothing (→ 401). It runs on every
 * request, so it is one prepared statement in plain SQL (no query building, parsed and planned
 * once per connection): the key by its hash and, through the (org, user) unique index, its
 * creator's current role. A key found is not cached (a revoked key fails on its next request);
 * one found unknown or revoked is, briefly (`UnknownKeys`).
 */
export function apiKeyResolver(db: DbOrTx, query: Query): (token: string) => Promise<Principal | null> {
  return async (token) => {
    if (!token.startsWith(`${API_KEY_PREFIX}_`)) return null;
    const digest = hashSecret(token);
    if (unknownKeys.has(digest, Date.now())) return null;
    const [row] = await query<ResolvedKeyRow>(
      `SELECT k.id, k.org_id, k.scopes, k.created_by, k.revoked_at, m.role AS creator_role
         FROM api_keys k
         LEFT JOIN memberships m ON m.org_id = k.org_id AND m.user_id = k.created_by
        WHERE k.key_hash = $1
        LIMIT 1`,
      [digest],
      { prepare: true },
    );
    if (!row || row.revoked_at) {
      unknownKeys.add(digest, Date.now());
      return null;
    }
    const scopes = effectiveKeyScopes(row);
    if (!scopes) return null;
    const now = Date.now();
    if ((lastTouched.get(row.id) ?? 0) < now - 60_000) {
      lastTouched.set(row.id, now);
      db.update(apiKeys).set({ lastUsedAt: new Date() }).where(eq(apiKeys.id, row.id)).catch(() => {});
    }
    return { kind: "api_key", orgId: row.org_id, scopes, userId: row.created_by, credentialId: row.id };
  };
}

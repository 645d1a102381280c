import { and, eq, lt, sql } from "drizzle-orm";
import type { Db } from "../db/index.ts";
import { idempotencyKeys } from "../db/schema/index.ts";

/** How long a key is honoured (DESIGN §12: 24 h). */
export const IDEMPOTENCY_TTL_HOURS = 24;

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export type IdempotencyClaim =
  /** This request runs the operation. */
  | { kind: "claimed" }
  /** A request with this key and body already completed: its answer. */
  | { kind: "replay"; response: StoredResponse }
  /** The key was used for another method, path or body. */
  | { kind: "reused" }
  /** Another request with this key is running now. */
  | { kind: "in_progress" };

const expired = sql`${idempotencyKeys.createdAt} < now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})`;

/**
 * Claims `key` for one execution. The primary key makes the first INSERT win across every replica;
 * a claim whose lease has lapsed (its process crashed) or a key older than the TTL is taken over by
 * a conditional UPDATE, which again only one contender can win (PostgreSQL re-checks the
 * condition on the locked row, and the winner's write makes it false).
 */
export async function claimIdempotencyKey(db: Db, orgId: string, key: string, fingerprint: string, leaseSeconds: number): Promise<IdempotencyClaim> {
  const lease = sql`now() + make_interval(secs => ${leaseSeconds})`;
  for (let attempt = 0; attempt < 3; attempt++) {
    const inserted = await db
      .insert(idempotencyKeys)
      .values({ orgId, key, fingerprint, status: "in_progress", lockedUntil: lease })
      .onConflictDoNothing()
      .returning({ key: idempotencyKeys.key });
    if (inserted.length) return { kind: "claimed" };
    const [row] = await db.select().from(idempotencyKeys).where(and(eq(idempotencyKeys.orgId, orgId), eq(idempotencyKeys.key, key)));
    if (!row) continue; // released between the two statements
    const [takenOverExpired] = await db
      .update(idempotencyKeys)
      .set({ fingerprint, status: "in_progress", lockedUntil: lease, responseStatus: null, responseHeaders: null, responseBody: null, createdAt: sql`now()` })
      .where(and(eq(idempotencyKeys.orgId, orgId), eq(idempotencyKeys.key, key), expired))
      .returning({ key: idempotencyKeys.key });
    if (takenOverExpired) return { kind: "claimed" };
    if (row.fingerprint !== fingerprint) return { kind: "reused" };
    if (row.status === "completed") {
      return { kind: "replay", response: { status: row.responseStatus ?? 200, headers: (row.responseHeaders as Record<string, string>) ?? {}, body: row.responseBody ?? "" } };
    }
    const [takenOver] = await db
      .update(idempotencyKeys)
      .set({ lockedUntil: lease })
      .where(and(eq(idempotencyKeys.orgId, orgId), eq(idempotencyKeys.key, key), eq(idempotencyKeys.status, "in_progress"), lt(idempotencyKeys.lockedUntil, sql`now()`)))
      .returning({ key: idempotencyKeys.key });
    return takenOver ? { kind: "claimed" } : { kind: "in_progress" };
  }
  return { kind: "in_progress" };
}

/** Stores the answer of a claimed key: every later request with it replays this. */
export async function completeIdempotencyKey(db: Db, orgId: string, key: string, response: StoredResponse): Promise<void> {
  await db
    .update(idempotencyKeys)
    .set({ status: "completed", responseStatus: response.status, responseHeaders: response.headers, responseBody: response.body })
    .where(and(eq(idempotencyKeys.orgId, orgId), eq(idempotencyKeys.key, key)));
}

/** A request that failed wrote nothing (one transaction per change): its key is free again. */
export async function releaseIdempotencyKey(db: Db, orgId: string, key: string): Promise<void> {
  await db.delete(idempotencyKeys).where(and(eq(idempotencyKeys.orgId, orgId), eq(idempotencyKeys.key, key), eq(idempotencyKeys.status, "in_progress")));
}

/** Keys past the TTL (a job runs this; a stale key is also taken over when reused). */
export async function purgeExpiredIdempotencyKeys(db: Db): Promise<number> {
  const rows = await db.delete(idempotencyKeys).where(expired).returning({ key: idempotencyKeys.key });
  return rows.length;
}

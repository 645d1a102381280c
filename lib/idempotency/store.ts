import { randomUUID } from "node:crypto";
import { and, eq, isNull, lt, sql } from "drizzle-orm";
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
  /** This request runs the operation; `token` proves it holds the claim. */
  | { kind: "claimed"; token: string }
  /** A request with this key and body already completed: its answer. */
  | { kind: "replay"; response: StoredResponse }
  /** The key was used for another method, path or body. */
  | { kind: "reused" }
  /** Another request with this key is running now. */
  | { kind: "in_progress" }
  /** A request with this key committed its write but its answer was lost (its process ended first). */
  | { kind: "committed_unanswered" };

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
    const token = randomUUID();
    const inserted = await db
      .insert(idempotencyKeys)
      .values({ orgId, key, fingerprint, status: "in_progress", lockedUntil: lease, claimToken: token })
      .onConflictDoNothing()
      .returning({ key: idempotencyKeys.key });
    if (inserted.length) return { kind: "claimed", token };
    const [row] = await db.select().from(idempotencyKeys).where(and(eq(idempotencyKeys.orgId, orgId), eq(idempotencyKeys.key, key)));
    if (!row) continue; // released between the two statements
    const [takenOverExpired] = await db
      .update(idempotencyKeys)
      .set({ fingerprint, status: "in_progress", lockedUntil: lease, claimToken: token, responseStatus: null, responseHeaders: null, responseBody: null, createdAt: sql`now()` })
      .where(and(eq(idempotencyKeys.orgId, orgId), eq(idempotencyKeys.key, key), expired))
      .returning({ key: idempotencyKeys.key });
    if (takenOverExpired) return { kind: "claimed", token };
    if (row.fingerprint !== fingerprint) return { kind: "reused" };
    if (row.status === "completed") {
      return { kind: "replay", response: { status: row.responseStatus ?? 200, headers: (row.responseHeaders as Record<string, string>) ?? {}, body: row.responseBody ?? "" } };
    }
    // A lapsed claim whose request committed something is never run again.
    if (row.commitMarker !== null && row.lockedUntil.getTime() < Date.now()) return { kind: "committed_unanswered" };
    const [takenOver] = await db
      .update(idempotencyKeys)
      .set({ lockedUntil: lease, claimToken: token })
      .where(
        and(
          eq(idempotencyKeys.orgId, orgId),
          eq(idempotencyKeys.key, key),
          eq(idempotencyKeys.status, "in_progress"),
          lt(idempotencyKeys.lockedUntil, sql`now()`),
          isNull(idempotencyKeys.commitMarker),
        ),
      )
      .returning({ key: idempotencyKeys.key });
    return takenOver ? { kind: "claimed", token } : { kind: "in_progress" };
  }
  return { kind: "in_progress" };
}

const heldBy = (orgId: string, key: string, token: string) =>
  and(eq(idempotencyKeys.orgId, orgId), eq(idempotencyKeys.key, key), eq(idempotencyKeys.status, "in_progress"), eq(idempotencyKeys.claimToken, token));

/** Stores the answer of a claimed key (only while this request still holds it): every later request with it replays this. */
export async function completeIdempotencyKey(db: Db, orgId: string, key: string, token: string, response: StoredResponse): Promise<boolean> {
  const rows = await db
    .update(idempotencyKeys)
    .set({ status: "completed", responseStatus: response.status, responseHeaders: response.headers, responseBody: response.body })
    .where(heldBy(orgId, key, token))
    .returning({ key: idempotencyKeys.key });
  return rows.length > 0;
}

/**
 * The operation ran but its answer could not be stored: the claim is held for the rest of the
 * key's life, so a retry is told the request is in progress (409) rather than running it twice.
 */
export async function holdIdempotencyKey(db: Db, orgId: string, key: string, token: string): Promise<void> {
  await db
    .update(idempotencyKeys)
    .set({ lockedUntil: sql`${idempotencyKeys.createdAt} + make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})` })
    .where(heldBy(orgId, key, token));
}

/**
 * A request that failed: its key is free again — unless another request took the claim over, or
 * the request committed a write before it failed (then the claim stays, and is never run twice).
 */
export async function releaseIdempotencyKey(db: Db, orgId: string, key: string, token: string): Promise<void> {
  await db.delete(idempotencyKeys).where(and(heldBy(orgId, key, token), isNull(idempotencyKeys.commitMarker)));
}

/** The statement a claimed request's transaction runs last: records its marker ($4) on the claim ($1–$3). */
export const RECORD_COMMIT_SQL = `UPDATE idempotency_keys SET commit_marker = $4 WHERE org_id = $1 AND key = $2 AND claim_token = $3`;

/** Whether the transaction that recorded `marker` on this claim committed. */
export async function commitRecorded(db: Db, orgId: string, key: string, token: string, marker: string): Promise<boolean> {
  const [row] = await db
    .select({ marker: idempotencyKeys.commitMarker })
    .from(idempotencyKeys)
    .where(and(eq(idempotencyKeys.orgId, orgId), eq(idempotencyKeys.key, key), eq(idempotencyKeys.claimToken, token)));
  return row?.marker === marker;
}

/**
 * Whether a claim running elsewhere has ended (its answer stored, the claim freed, or its lease
 * lapsed): the one light read a waiting duplicate repeats, before it tries to claim again.
 */
export async function idempotencyClaimSettled(db: Db, orgId: string, key: string): Promise<boolean> {
  const [row] = await db
    .select({ status: idempotencyKeys.status, lapsed: sql<boolean>`${idempotencyKeys.lockedUntil} < now()` })
    .from(idempotencyKeys)
    .where(and(eq(idempotencyKeys.orgId, orgId), eq(idempotencyKeys.key, key)));
  return !row || row.status === "completed" || row.lapsed === true;
}

/** Keys past the TTL (a job runs this; a stale key is also taken over when reused). */
export async function purgeExpiredIdempotencyKeys(db: Db): Promise<number> {
  const rows = await db.delete(idempotencyKeys).where(expired).returning({ key: idempotencyKeys.key });
  return rows.length;
}

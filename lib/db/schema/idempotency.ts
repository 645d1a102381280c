import { index, integer, jsonb, pgTable, primaryKey, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { organizations } from "./core.ts";

/**
 * `Idempotency-Key`s of Beta POSTs (DESIGN §12), kept 24 h. The first request with a key claims
 * the row (`in_progress`, leased until `locked_until` so a crashed replica's claim can be taken
 * over); its 2xx answer is stored and replayed to every retry with the same key and body, on any
 * replica. A failed request deletes its claim: nothing was written, a retry runs again.
 */
export const idempotencyKeys = pgTable(
  "idempotency_keys",
  {
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    /** sha256 of the client's key (lib/idempotency/seal.ts): the key itself is never stored. */
    key: text("key").notNull(),
    /** HMAC under the key of method, path and body: the same key with anything else is refused (422). */
    fingerprint: text("fingerprint").notNull(),
    status: text("status", { enum: ["in_progress", "completed"] }).notNull(),
    lockedUntil: timestamp("locked_until", { withTimezone: true }).notNull(),
    /** Who holds the claim now: only that request may complete or release it (a taken-over claim is not the old holder's). */
    claimToken: text("claim_token"),
    responseStatus: integer("response_status"),
    responseHeaders: jsonb("response_headers"),
    /** The answer's body sealed under the client's key (AES-256-GCM): it may hold a secret shown once. */
    responseBody: text("response_body"),
    /**
     * Written as the last statement of each transaction the claimed request commits (a fresh
     * value each time): a COMMIT whose answer was lost is known committed when it holds that
     * transaction's value (lib/db/requestScope.ts). Set: something committed, so the claim is
     * never released for a second run.
     */
    commitMarker: text("commit_marker"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.key] }), index("idempotency_keys_created_idx").on(t.createdAt)],
);

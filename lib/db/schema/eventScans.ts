import { pgTable, primaryKey, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { organizations } from "./core.ts";

/**
 * The scans that look for events nothing else triggers (a commitment near its end, a connection
 * with no new data, unusual spend; lib/events/scans.ts), claimed per job and org so that on any
 * number of replicas each org is scanned once per period: `done_for` is the period (UTC day or
 * hour) last scanned to the end, written in the transaction of the events it found; a claim
 * (`claimed_by` until `claimed_until`) keeps other replicas off meanwhile and lapses if its
 * holder dies.
 */
export const eventScans = pgTable(
  "event_scans",
  {
    job: text("job").notNull(),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    doneFor: text("done_for"),
    claimedBy: text("claimed_by"),
    claimedUntil: timestamp("claimed_until", { withTimezone: true }),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.job, t.orgId] })],
);

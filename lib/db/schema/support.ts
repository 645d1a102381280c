import { sql } from "drizzle-orm";
import { providerColumn } from "./columns.ts";
import { bigint, date, index, integer, pgSequence, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { organizations, users } from "./core.ts";

/** Numbers of ticket keys (`SUP-<n>`): global, increasing, never reused. */
export const supportTicketNumberSeq = pgSequence("support_ticket_number_seq", { startWith: 1, increment: 1 });

/** Bug reports and feature requests filed through the Beta API, for the service team. */
export const supportTickets = pgTable(
  "support_tickets",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    number: bigint("number", { mode: "number" }).notNull().default(sql`nextval('support_ticket_number_seq')`),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    kind: text("kind", { enum: ["bug", "feature"] }).notNull(),
    /** The user behind the credential (null for an org API key without a user). */
    userId: uuid("user_id").references(() => users.id, { onDelete: "set null" }),
    /** api_keys.id or the OAuth token id that filed the ticket. */
    credentialId: text("credential_id").notNull(),
    credentialKind: text("credential_kind", { enum: ["api_key", "oauth"] }).notNull(),
    summary: text("summary").notNull(),
    userVerbatim: text("user_verbatim").notNull(),
    // Bug report fields.
    whatHappened: text("what_happened"),
    stepsToReproduce: text("steps_to_reproduce"),
    expectedBehavior: text("expected_behavior"),
    appUrl: text("app_url"),
    provider: providerColumn(),
    // Feature request fields.
    problem: text("problem"),
    desiredBehavior: text("desired_behavior"),
    businessValue: text("business_value"),
    /** The UTC day the ticket counts against in the org's daily cap. */
    capDay: date("cap_day", { mode: "string" }).notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex("support_tickets_number_uq").on(t.number), index("support_tickets_org_created_idx").on(t.orgId, t.createdAt)],
);

/**
 * Tickets filed per organization and UTC day. The cap is enforced by one conditional upsert on
 * this row (`count = count + 1 WHERE count < cap`) in the ticket's transaction: the row lock
 * serializes concurrent filings, so the cap is exact.
 */
export const supportDailyCounts = pgTable(
  "support_daily_counts",
  {
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    day: date("day", { mode: "string" }).notNull(),
    count: integer("count").notNull(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.day] })],
);

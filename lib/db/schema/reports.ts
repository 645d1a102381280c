import { bigserial, boolean, date, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { providerColumn } from "./columns.ts";
import { organizations } from "./core.ts";

/**
 * Frozen report rows of a closed billing period (one provider of one month): written once by the
 * freeze job in the same transaction that sets billing_periods.frozen_at, then read instead of
 * the live billing data, so late rows or corrections never change a finalized report.
 */
export const reportSnapshots = pgTable(
  "report_snapshots",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    reportType: text("report_type").notNull(),
    provider: providerColumn().notNull(),
    /** First day of the month (UTC). */
    month: date("month").notNull(),
    /** Row order of the report at freeze time. */
    seq: integer("seq").notNull(),
    row: jsonb("row").notNull(),
    frozenAt: timestamp("frozen_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("report_snapshots_lookup_idx").on(t.orgId, t.reportType, t.month, t.provider, t.seq)],
);

/** Per-organization report visibility: a hidden report is absent from the catalog and 404s. */
export const orgReportSettings = pgTable(
  "org_report_settings",
  {
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    reportType: text("report_type").notNull(),
    hidden: boolean("hidden").notNull().default(false),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.reportType] })],
);

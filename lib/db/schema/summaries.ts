import { bigint, date, index, integer, jsonb, numeric, pgTable, primaryKey, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { billSumColumns, providerColumn } from "./columns.ts";

/**
 * The billing periods (org, provider, billing account, month) whose summaries were built in SQL
 * by lib/billing/summaries.ts `rebuildBillingSummaries`, with the detail grains below. A period
 * without a row here (summaries written otherwise, or never) is read from its raw rows wherever
 * a detail grain would be needed. Deleted with the period's summaries.
 */
export const billingSummaryPeriods = pgTable(
  "billing_summary_periods",
  {
    orgId: uuid("org_id").notNull(),
    provider: providerColumn().notNull(),
    billingAccountId: text("billing_account_id").notNull(),
    month: date("month").notNull(),
    /** Raw rows summarised (decides whether the month's report rows are stored ahead). */
    lineItems: bigint("line_items", { mode: "number" }).notNull(),
    builtAt: timestamp("built_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.month, t.provider, t.billingAccountId] })],
);

/**
 * Cost aggregates of one billing period at the grains the base summaries do not have:
 * `resource` (account_id, resource_id, service_name: the cloud_bill_by_resource report),
 * `day_account` (day, account_id, account_name) and `day_service` (day, service_category,
 * service_name): the assistant's daily spend. Exact numeric sums, like billing_cost_summaries.
 */
export const billingDetailSummaries = pgTable(
  "billing_detail_summaries",
  {
    orgId: uuid("org_id").notNull(),
    provider: providerColumn().notNull(),
    billingAccountId: text("billing_account_id").notNull(),
    month: date("month").notNull(),
    grain: text("grain", { enum: ["resource", "day_account", "day_service"] }).notNull(),
    currency: text("currency").notNull(),
    accountId: text("account_id"),
    accountName: text("account_name"),
    resourceId: text("resource_id"),
    serviceCategory: text("service_category"),
    serviceName: text("service_name"),
    day: date("day"),
    ...billSumColumns(),
  },
  (t) => [index("billing_detail_summaries_lookup_idx").on(t.orgId, t.month, t.grain, t.provider, t.billingAccountId)],
);

/**
 * Report rows of an open month stored ahead, as shown (lib/reports/rowCache.ts): one set per
 * (org, report, provider, month), written when the month's summaries are rebuilt and read in
 * order instead of computing the month's invoice rounding first. `inputs` fingerprints what the
 * report joins at read time (account names, child organizations, insured terms): a set whose
 * fingerprint differs from the current one is stale and computed again.
 */
export const reportRowSets = pgTable(
  "report_row_sets",
  {
    orgId: uuid("org_id").notNull(),
    reportType: text("report_type").notNull(),
    provider: providerColumn().notNull(),
    month: date("month").notNull(),
    inputs: text("inputs").notNull(),
    rowCount: integer("row_count").notNull(),
    builtAt: timestamp("built_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.month, t.provider, t.reportType] })],
);

export const reportRows = pgTable(
  "report_rows",
  {
    orgId: uuid("org_id").notNull(),
    reportType: text("report_type").notNull(),
    provider: providerColumn().notNull(),
    month: date("month").notNull(),
    seq: integer("seq").notNull(),
    row: jsonb("row").notNull(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.reportType, t.month, t.provider, t.seq] })],
);

import { sql } from "drizzle-orm";
import { billSumColumns, providerColumn } from "./columns.ts";
import { boolean, date, index, integer, jsonb, numeric, pgTable, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { organizations } from "./core.ts";

/** Money and quantities: exact decimals in the database (drizzle returns them as strings). */
/** The type of every amount and quantity of a billing row (the staged import casts to it: lib/billing/focusStaged.ts). */
export const MONEY = { precision: 30, scale: 10 } as const;
const money = (name: string) => numeric(name, MONEY);

/** Linked accounts (FOCUS SubAccount) and billing accounts, discovered from billing data. */
export const cloudAccounts = pgTable(
  "cloud_accounts",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    provider: providerColumn().notNull(),
    /** The provider's account id (AWS account, Azure subscription, GCP project). */
    accountId: text("account_id").notNull(),
    name: text("name"),
    billingAccountId: text("billing_account_id"),
    billingAccountName: text("billing_account_name"),
    /** Child organization this account's costs are attributed to (partner → customer). */
    childOrgId: uuid("child_org_id").references(() => organizations.id, { onDelete: "set null" }),
    firstSeenAt: timestamp("first_seen_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex("cloud_accounts_org_provider_account_uq").on(t.orgId, t.provider, t.accountId)],
);

/** Invoice state of one billing month per org and provider. */
export const billingPeriods = pgTable(
  "billing_periods",
  {
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    provider: providerColumn().notNull(),
    /** First day of the month (UTC). */
    month: date("month").notNull(),
    status: text("status", { enum: ["open", "closed"] }).notNull().default("open"),
    closedAt: timestamp("closed_at", { withTimezone: true }),
    /** Set once the freeze job has snapshotted every report of this period. */
    frozenAt: timestamp("frozen_at", { withTimezone: true }),
    /**
     * The report types that freeze snapshotted (served from report_snapshots from then on; a
     * report added later reads live). Null for a period frozen before this was recorded: then
     * every report but the static ones was snapshotted.
     */
    frozenReports: text("frozen_reports").array(),
  },
  (t) => [uniqueIndex("billing_periods_pk").on(t.orgId, t.provider, t.month)],
);

/** One import of a FOCUS file (for replace-on-reimport and audit). */
export const billingImports = pgTable(
  "billing_imports",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    fileName: text("file_name").notNull(),
    rowsImported: integer("rows_imported").notNull().default(0),
    rowsRejected: integer("rows_rejected").notNull().default(0),
    /** SHA-256 of the file and the options that shaped its rows (files on disk): the same content is not imported twice. */
    contentDigest: text("content_digest"),
    /** When a later import replaced rows of one of its periods: its digest no longer stands for stored data. */
    supersededAt: timestamp("superseded_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("billing_imports_digest_idx").on(t.orgId, t.contentDigest).where(sql`${t.contentDigest} IS NOT NULL`)],
);

/**
 * FOCUS cost-and-usage rows (1.0–1.2 columns used by the reports; the rest kept in `extra`).
 * Indexed by org + billing period (+ provider, billing account: the unit an import replaces).
 *
 * A fact table written only by the import's COPY: no surrogate key (no API addresses one row)
 * and no foreign keys (the per-row RI triggers cost ~45 % of the COPY; rows go with their
 * period or import, organizations are never deleted). Every row is keyed by `org_id`, the
 * distribution column on a distributed PostgreSQL (docs/OPERATIONS.md).
 */
export const billingLineItems = pgTable(
  "billing_line_items",
  {
    orgId: uuid("org_id").notNull(),
    /** billing_imports.id of the import that wrote the row. */
    importId: uuid("import_id"),
    provider: providerColumn().notNull(),
    billingAccountId: text("billing_account_id").notNull(),
    billingAccountName: text("billing_account_name"),
    subAccountId: text("sub_account_id"),
    subAccountName: text("sub_account_name"),
    billingCurrency: text("billing_currency").notNull().default("USD"),
    /** First day of the billing month (from BillingPeriodStart). */
    billingPeriod: date("billing_period").notNull(),
    chargePeriodStart: timestamp("charge_period_start", { withTimezone: true }).notNull(),
    chargePeriodEnd: timestamp("charge_period_end", { withTimezone: true }).notNull(),
    chargeCategory: text("charge_category").notNull(), // Usage, Purchase, Tax, Credit, Adjustment
    chargeClass: text("charge_class"), // null or Correction
    chargeFrequency: text("charge_frequency"), // One-Time, Recurring, Usage-Based (normalized case)
    chargeDescription: text("charge_description"),
    billedCost: money("billed_cost").notNull(),
    effectiveCost: money("effective_cost").notNull(),
    listCost: money("list_cost"),
    contractedCost: money("contracted_cost"),
    pricingCategory: text("pricing_category"), // Standard, Dynamic, Committed, Other
    pricingQuantity: money("pricing_quantity"),
    pricingUnit: text("pricing_unit"),
    consumedQuantity: money("consumed_quantity"),
    consumedUnit: text("consumed_unit"),
    commitmentDiscountId: text("commitment_discount_id"),
    commitmentDiscountCategory: text("commitment_discount_category"), // Spend, Usage
    commitmentDiscountType: text("commitment_discount_type"),
    commitmentDiscountStatus: text("commitment_discount_status"), // Used, Unused
    commitmentDiscountName: text("commitment_discount_name"),
    commitmentDiscountQuantity: money("commitment_discount_quantity"),
    commitmentDiscountUnit: text("commitment_discount_unit"),
    regionId: text("region_id"),
    regionName: text("region_name"),
    serviceCategory: text("service_category"),
    serviceName: text("service_name"),
    resourceId: text("resource_id"),
    resourceType: text("resource_type"),
    skuId: text("sku_id"),
    skuPriceId: text("sku_price_id"),
    /** Instance type from SkuPriceDetails.InstanceType / x_InstanceType (plan generation groups by its family). */
    instanceType: text("instance_type"),
    tags: jsonb("tags"),
    /** Columns the reports do not use, kept for audit (x_ columns, newer FOCUS columns). */
    extra: jsonb("extra"),
  },
  (t) => [
    index("billing_line_items_org_period_idx").on(t.orgId, t.billingPeriod, t.provider, t.billingAccountId),
    // Insured-commitment rebates read the Unused rows of a few commitments (few rows: one per commitment-hour at most).
    index("billing_line_items_unused_idx").on(t.orgId, t.billingPeriod, t.commitmentDiscountId).where(sql`${t.commitmentDiscountStatus} = 'Unused'`),
    index("billing_line_items_commitment_idx").on(t.orgId, t.commitmentDiscountId).where(sql`${t.commitmentDiscountId} IS NOT NULL`),
  ],
);

/**
 * Commitment inventory: derived from billing data (Purchase/Used/Unused rows) or added by a
 * purchase (auto-purchase ledger). `insured` ones are the service's `_gris` product.
 */
export const commitments = pgTable(
  "commitments",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    provider: providerColumn().notNull(),
    /** The provider's id (FOCUS CommitmentDiscountId / ARN / reservation id). */
    providerCommitmentId: text("provider_commitment_id").notNull(),
    name: text("name"),
    /** DESIGN §5 commitment_type (reserved_instance, compute_savings_plan, reservation, …). */
    commitmentType: text("commitment_type").notNull(),
    /** FOCUS CommitmentDiscountCategory: Spend or Usage. */
    category: text("category"),
    contractTerm: text("contract_term"), // one_year, three_year, thirty_day_gris, one_year_gris
    paymentOption: text("payment_option"), // no_upfront, partial_upfront, all_upfront
    offeringClass: text("offering_class"), // standard, convertible, null
    region: text("region"),
    instanceType: text("instance_type"),
    instanceFamily: text("instance_family"),
    startsAt: timestamp("starts_at", { withTimezone: true }),
    endsAt: timestamp("ends_at", { withTimezone: true }),
    /** Resource count (RI/reservation/resource CUD) or $/hour (savings plan / spend CUD). */
    amount: money("amount"),
    upfrontCost: money("upfront_cost"),
    recurringHourlyCost: money("recurring_hourly_cost"),
    holdingAccountId: text("holding_account_id"),
    insured: boolean("insured").notNull().default(false),
    feeRate: money("fee_rate"),
    lockInEndsAt: timestamp("lock_in_ends_at", { withTimezone: true }),
    /** billing: discovered from billing rows; purchase: bought by auto-purchase; provider: found in a purchasing connection's listing. */
    source: text("source", { enum: ["billing", "purchase", "provider"] }).notNull().default("billing"),
    /** active | pending | retired as the provider last listed it (purchasing connections' inventory job); null when never listed. */
    providerState: text("provider_state", { enum: ["active", "pending", "retired"] }),
    reconciledAt: timestamp("reconciled_at", { withTimezone: true }),
    /** The purchase that created it, when source = purchase. */
    purchaseId: uuid("purchase_id"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex("commitments_org_provider_cid_uq").on(t.orgId, t.provider, t.providerCommitmentId)],
);

/**
 * The reports' aggregates of one (org, provider, billing account, month), rebuilt from its
 * billing rows in the transaction of every import that replaces it (lib/billing/summaries.ts),
 * so a report request reads a few hundred summary rows instead of the month's raw rows.
 * Sums are exact (numeric, unrounded); names, child organizations and insured terms are joined
 * when a report is read, so reassigning an account never leaves a summary stale.
 *
 * `grain` says which key columns are set: `account` (account_id, account_name), `service`
 * (service_category, service_name), `day`.
 */
export const billingCostSummaries = pgTable(
  "billing_cost_summaries",
  {
    orgId: uuid("org_id").notNull(),
    provider: providerColumn().notNull(),
    billingAccountId: text("billing_account_id").notNull(),
    month: date("month").notNull(),
    grain: text("grain", { enum: ["account", "service", "day"] }).notNull(),
    currency: text("currency").notNull(),
    accountId: text("account_id"),
    /** Display name of the account in the billing rows (linked-account name, else billing account name). */
    accountName: text("account_name"),
    serviceCategory: text("service_category"),
    serviceName: text("service_name"),
    day: date("day"),
    ...billSumColumns(),
  },
  (t) => [index("billing_cost_summaries_lookup_idx").on(t.orgId, t.month, t.grain, t.provider, t.billingAccountId)],
);

/**
 * Commitment usage per commitment and key (Used, Unused, covered on-demand and savings), the
 * input of the pro-rata allocation of Unused cost (computed when a report is read, over all
 * billing accounts). `grain`: `account`, `service`, `day_account`.
 */
export const commitmentUsageSummaries = pgTable(
  "commitment_usage_summaries",
  {
    orgId: uuid("org_id").notNull(),
    provider: providerColumn().notNull(),
    billingAccountId: text("billing_account_id").notNull(),
    month: date("month").notNull(),
    grain: text("grain", { enum: ["account", "service", "day_account"] }).notNull(),
    currency: text("currency").notNull(),
    commitmentId: text("commitment_id").notNull(),
    accountId: text("account_id"),
    serviceName: text("service_name"),
    day: date("day"),
    usedCost: numeric("used_cost").notNull(),
    unusedCost: numeric("unused_cost").notNull(),
    coveredOndemandCost: numeric("covered_ondemand_cost").notNull(),
    savings: numeric("savings").notNull(),
  },
  (t) => [index("commitment_usage_summaries_lookup_idx").on(t.orgId, t.month, t.grain, t.provider, t.billingAccountId)],
);

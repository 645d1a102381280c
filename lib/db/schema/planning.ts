import { sql } from "drizzle-orm";
import { providerColumn } from "./columns.ts";
import { boolean, date, index, integer, jsonb, numeric, pgTable, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { organizations } from "./core.ts";

const money = (name: string) => numeric(name, { precision: 30, scale: 10 });

/**
 * Scopes of usage a template plans for. Each org has one `provider_resources` segment per
 * provider (everything of that provider, created on first use) plus any custom ones whose
 * `filters` narrow the usage by account, region and service.
 */
export const segments = pgTable(
  "segments",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    provider: providerColumn().notNull(),
    kind: text("kind", { enum: ["provider_resources", "custom"] }).notNull(),
    name: text("name").notNull(),
    /** { account_ids?: string[], regions?: string[], services?: string[] } (empty = all). */
    filters: jsonb("filters").notNull().default(sql`'{}'::jsonb`),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // Race-safe "created on first use": concurrent first requests collide here (ON CONFLICT).
    uniqueIndex("segments_org_provider_default_uq").on(t.orgId, t.provider).where(sql`kind = 'provider_resources'`),
    index("segments_org_idx").on(t.orgId, t.provider),
  ],
);

/**
 * Commitment plan templates. `system_kind` marks the three built-in ones of a segment
 * (recommended, balanced, high_savings), unique per segment. The auto_purchase schedule is
 * kept in columns so the job can find due templates with an index.
 */
export const commitmentPlanTemplates = pgTable(
  "commitment_plan_templates",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    segmentId: uuid("segment_id").notNull().references(() => segments.id, { onDelete: "cascade" }),
    provider: providerColumn().notNull(),
    name: text("name").notNull(),
    description: text("description"),
    isSystemGenerated: boolean("is_system_generated").notNull().default(false),
    systemKind: text("system_kind", { enum: ["recommended", "balanced", "high_savings"] }),
    /** Position among the segment's templates (system ones first, in a fixed order). */
    sortOrder: integer("sort_order").notNull().default(100),
    maxUpfrontCost: money("max_upfront_cost").notNull(),
    lookbackDays: integer("lookback_days").notNull(),
    /** [{ commitment_type, contract_term, payment_option }] */
    contractSpecs: jsonb("contract_specs").notNull(),
    resourceIds: jsonb("resource_ids").notNull().default(sql`'[]'::jsonb`),
    renewalCommitmentIds: jsonb("renewal_commitment_ids").notNull().default(sql`'[]'::jsonb`),
    /** null = not on a schedule. */
    schedule: text("schedule", { enum: ["daily", "weekly", "monthly"] }),
    minMonthlySavings: money("min_monthly_savings"),
    autoPurchaseEnabled: boolean("auto_purchase_enabled"),
    /** null: approval required when the provider's purchasing connection really buys (not dry-run). */
    requireApproval: boolean("require_approval"),
    /** Orders whose total upfront is at most this are approved without a person (null: never). */
    autoApproveMaxUpfront: money("auto_approve_max_upfront"),
    startDate: date("start_date"),
    endDate: date("end_date"),
    /** UTC day the schedule was last set or changed: earlier slots are never run. */
    scheduleSetOn: date("schedule_set_on"),
    /** Execution date (schedule slot) of the last run that completed, and when it ran. */
    lastExecutionDate: date("last_execution_date"),
    lastExecutedAt: timestamp("last_executed_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
    /** Bumped by every change made through the API: the ETag's version (If-Match). */
    version: integer("version").notNull().default(1),
  },
  (t) => [
    uniqueIndex("templates_segment_system_uq").on(t.segmentId, t.systemKind).where(sql`system_kind IS NOT NULL`),
    index("templates_org_segment_idx").on(t.orgId, t.segmentId),
    index("templates_scheduled_idx").on(t.startDate).where(sql`schedule IS NOT NULL`),
  ],
);

/** A generated plan: what to buy, priced when generated. */
export const commitmentPlans = pgTable(
  "commitment_plans",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    provider: providerColumn().notNull(),
    segmentId: uuid("segment_id").references(() => segments.id, { onDelete: "set null" }),
    templateId: uuid("template_id").references(() => commitmentPlanTemplates.id, { onDelete: "set null" }),
    /** Plain uuid (no foreign key): an estimate's soft delete keeps the link (estimates rule 2). */
    costEstimateId: uuid("cost_estimate_id"),
    /** The schedule slot that generated it (auto-purchase), else null. */
    executionDate: date("execution_date"),
    status: text("status", { enum: ["generated", "purchased", "not_purchased"] }).notNull().default("generated"),
    /** Why a scheduled plan was or was not bought (disabled, below_min_monthly_savings, …). */
    statusReason: text("status_reason"),
    lookbackDays: integer("lookback_days").notNull(),
    usageFrom: timestamp("usage_from", { withTimezone: true }),
    usageTo: timestamp("usage_to", { withTimezone: true }),
    totalUpfrontCost: money("total_upfront_cost").notNull(),
    monthlyCost: money("monthly_cost").notNull(),
    monthlyNetSavings: money("monthly_net_savings").notNull(),
    maxUpfrontCost: money("max_upfront_cost"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("plans_org_template_idx").on(t.orgId, t.templateId, t.createdAt)],
);

export const commitmentPlanItems = pgTable(
  "commitment_plan_items",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    planId: uuid("plan_id").notNull().references(() => commitmentPlans.id, { onDelete: "cascade" }),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    groupKey: text("group_key").notNull(),
    offerId: text("offer_id"),
    leaseMenuItemId: text("lease_menu_item_id"),
    commitmentType: text("commitment_type").notNull(),
    contractTerm: text("contract_term").notNull(),
    paymentOption: text("payment_option").notNull(),
    region: text("region"),
    instanceType: text("instance_type"),
    /** Units covered per hour (instances; on-demand $/h for spend-based groups). */
    units: money("units").notNull(),
    /** Purchase amount: resource count, or $/hour commitment for savings plans / spend CUDs. */
    amount: money("amount").notNull(),
    upfrontCost: money("upfront_cost").notNull(),
    monthlyCost: money("monthly_cost").notNull(),
    monthlyNetSavings: money("monthly_net_savings").notNull(),
    expectedCoverage: numeric("expected_coverage", { precision: 12, scale: 8 }).notNull(),
    expectedUtilization: numeric("expected_utilization", { precision: 12, scale: 8 }).notNull(),
    durationSeconds: integer("duration_seconds").notNull(),
    feeRate: money("fee_rate").notNull().default("0"),
    lockInDays: integer("lock_in_days"),
  },
  (t) => [index("plan_items_plan_idx").on(t.planId)],
);

/**
 * The once-only claim of one auto-purchase execution: (template, execution date) is unique.
 * A run takes the `pending` row with FOR UPDATE SKIP LOCKED and does all its writes (plan,
 * purchase, commitments, status `done`) in that same transaction, so a crash rolls everything
 * back and leaves the row `pending` for the next tick, and a second replica skips it.
 */
export const purchaseRuns = pgTable(
  "purchase_runs",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    templateId: uuid("template_id").notNull().references(() => commitmentPlanTemplates.id, { onDelete: "cascade" }),
    executionDate: date("execution_date").notNull(),
    status: text("status", { enum: ["pending", "done", "failed"] }).notNull().default("pending"),
    /** purchased | disabled | below_min_monthly_savings | nothing_to_buy */
    outcome: text("outcome"),
    planId: uuid("plan_id"),
    purchaseId: uuid("purchase_id"),
    attempts: integer("attempts").notNull().default(0),
    lastError: text("last_error"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    completedAt: timestamp("completed_at", { withTimezone: true }),
  },
  (t) => [uniqueIndex("purchase_runs_template_date_uq").on(t.templateId, t.executionDate), index("purchase_runs_pending_idx").on(t.status).where(sql`status = 'pending'`)],
);

/**
 * One order per (template, execution date) at most: a generated plan's items to buy. Bought by
 * the ledger (no purchasing connection: demo inventory, confirmed at once) or at the provider
 * through the org's purchasing connection, item by item (purchase_items), after approval when
 * the template asks for it.
 */
export const purchases = pgTable(
  "purchases",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    provider: providerColumn().notNull(),
    templateId: uuid("template_id").references(() => commitmentPlanTemplates.id, { onDelete: "set null" }),
    executionDate: date("execution_date"),
    planId: uuid("plan_id").notNull().references(() => commitmentPlans.id),
    /** `<template id>:<execution date>`: the same slot always yields the same key. */
    idempotencyKey: text("idempotency_key").notNull(),
    /** ledger | aws_purchasing | azure_purchasing | gcp_purchasing */
    purchaser: text("purchaser").notNull(),
    /** The purchasing connection that buys it (null: the ledger). Plain uuid: a deleted connection leaves the history. */
    connectionId: uuid("connection_id"),
    dryRun: boolean("dry_run").notNull().default(false),
    status: text("status", { enum: ["pending_approval", "approved", "confirmed", "partially_failed", "failed", "rejected", "expired", "dry_run"] }).notNull(),
    totalUpfrontCost: money("total_upfront_cost").notNull(),
    monthlyNetSavings: money("monthly_net_savings").notNull(),
    itemCount: integer("item_count").notNull(),
    requiresApproval: boolean("requires_approval").notNull().default(false),
    /** A pending approval lapses then (prices and usage go stale) and the plan is regenerated. */
    approvalExpiresAt: timestamp("approval_expires_at", { withTimezone: true }),
    /** Who approved or rejected it (an API key or user id, or `auto` under auto_approve_max_upfront). */
    decidedBy: text("decided_by"),
    decidedAt: timestamp("decided_at", { withTimezone: true }),
    decisionNote: text("decision_note"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("purchases_idempotency_uq").on(t.orgId, t.idempotencyKey),
    uniqueIndex("purchases_template_date_uq").on(t.templateId, t.executionDate).where(sql`template_id IS NOT NULL`),
    index("purchases_org_status_idx").on(t.orgId, t.status, t.createdAt),
    index("purchases_pending_approval_idx").on(t.approvalExpiresAt).where(sql`status = 'pending_approval'`),
  ],
);

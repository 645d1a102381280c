import { sql } from "drizzle-orm";
import { boolean, index, integer, jsonb, numeric, pgTable, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { providerColumn } from "./columns.ts";
import { organizations } from "./core.ts";
import { purchases } from "./planning.ts";

const money = (name: string) => numeric(name, { precision: 30, scale: 10 });

/**
 * The credentials commitops buys with at one provider (DESIGN §14): a connection of its own,
 * separate from the billing connection (least privilege). At most one per org and provider, so
 * an order always knows who buys it. New ones are `dry_run` until an admin turns that off.
 */
export const purchasingConnections = pgTable(
  "purchasing_connections",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    kind: text("kind", { enum: ["aws_purchasing", "azure_purchasing", "gcp_purchasing"] }).notNull(),
    provider: providerColumn().notNull(),
    config: jsonb("config").notNull(),
    secretCiphertext: text("secret_ciphertext"),
    secretKeyId: text("secret_key_id"),
    secretFields: text("secret_fields").array().notNull().default(sql`'{}'::text[]`),
    /** The provider's dry-run / price calculation is made and recorded; nothing is bought. */
    dryRun: boolean("dry_run").notNull().default(true),
    enabled: boolean("enabled").notNull().default(true),
    /** Inventory listing: ok | error | pending (never listed). */
    status: text("status", { enum: ["pending", "ok", "error"] }).notNull().default("pending"),
    lastError: text("last_error"),
    lastErrorCause: text("last_error_cause"),
    lastInventoryAt: timestamp("last_inventory_at", { withTimezone: true }),
    nextInventoryAt: timestamp("next_inventory_at", { withTimezone: true }).notNull().defaultNow(),
    /** The replica listing its inventory now, until when. */
    claimedUntil: timestamp("claimed_until", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("purchasing_connections_org_provider_uq").on(t.orgId, t.provider),
    uniqueIndex("purchasing_connections_org_name_uq").on(t.orgId, sql`lower(${t.name})`),
    index("purchasing_connections_inventory_due_idx").on(t.nextInventoryAt),
  ],
);

/**
 * One commitment to buy at a provider, as a recorded state machine (DESIGN §14):
 * pending_approval → approved → submitting → confirmed | failed (or rejected, expired,
 * dry_run). `token` is committed with `submitting` before the provider is called; a worker
 * holds the item through `claimed_until` while it calls, and whoever finds it `submitting`
 * with the lease lapsed first asks the provider whether the token already bought it.
 */
export const purchaseItems = pgTable(
  "purchase_items",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    purchaseId: uuid("purchase_id").notNull().references(() => purchases.id, { onDelete: "cascade" }),
    position: integer("position").notNull(),
    provider: providerColumn().notNull(),
    connectionId: uuid("connection_id"),
    status: text("status", { enum: ["pending_approval", "approved", "submitting", "confirmed", "failed", "rejected", "expired", "dry_run"] }).notNull(),
    dryRun: boolean("dry_run").notNull().default(false),
    /** The idempotency token handed to the provider (client token, request id, our order id or resource name). */
    token: uuid("token").notNull(),
    commitmentType: text("commitment_type").notNull(),
    contractTerm: text("contract_term").notNull(),
    paymentOption: text("payment_option").notNull(),
    region: text("region"),
    instanceType: text("instance_type"),
    instanceFamily: text("instance_family"),
    amount: money("amount").notNull(),
    plannedUpfront: money("planned_upfront").notNull(),
    plannedHourly: money("planned_hourly").notNull(),
    monthlyNetSavings: money("monthly_net_savings").notNull(),
    durationSeconds: integer("duration_seconds").notNull(),
    feeRate: money("fee_rate").notNull().default("0"),
    lockInDays: integer("lock_in_days"),
    offeringId: text("offering_id"),
    quotedUpfront: money("quoted_upfront"),
    quotedHourly: money("quoted_hourly"),
    providerPurchaseId: text("provider_purchase_id"),
    providerState: text("provider_state"),
    actualUpfront: money("actual_upfront"),
    actualHourly: money("actual_hourly"),
    currency: text("currency"),
    startsAt: timestamp("starts_at", { withTimezone: true }),
    endsAt: timestamp("ends_at", { withTimezone: true }),
    /** The inventory row the confirmed purchase added. */
    commitmentId: uuid("commitment_id"),
    dryRunSummary: text("dry_run_summary"),
    failureCause: text("failure_cause"),
    failureMessage: text("failure_message"),
    attempts: integer("attempts").notNull().default(0),
    claimedBy: text("claimed_by"),
    claimedUntil: timestamp("claimed_until", { withTimezone: true }),
    nextAttemptAt: timestamp("next_attempt_at", { withTimezone: true }).notNull().defaultNow(),
    submittedAt: timestamp("submitted_at", { withTimezone: true }),
    finishedAt: timestamp("finished_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("purchase_items_token_uq").on(t.token),
    uniqueIndex("purchase_items_purchase_position_uq").on(t.purchaseId, t.position),
    // One provider purchase belongs to one item: a recovery lookup can never adopt another item's purchase.
    uniqueIndex("purchase_items_provider_purchase_uq").on(t.connectionId, t.providerPurchaseId).where(sql`provider_purchase_id IS NOT NULL`),
    index("purchase_items_workable_idx").on(t.nextAttemptAt).where(sql`status IN ('approved', 'submitting')`),
  ],
);

/**
 * What happened to a purchase, in order (its story in `GET /purchases/{id}`), written in the same
 * transaction as the change it tells of; the order-level ones worth telling are also events of the
 * org's log (lib/events), which its endpoints and PURCHASE_WEBHOOK_URL receive.
 */
export const purchaseEvents = pgTable(
  "purchase_events",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    purchaseId: uuid("purchase_id").notNull().references(() => purchases.id, { onDelete: "cascade" }),
    itemId: uuid("item_id"),
    event: text("event").notNull(),
    message: text("message").notNull(),
    detail: jsonb("detail"),
    at: timestamp("at", { withTimezone: true }).notNull().defaultNow(),
    /** Worth a person's attention (pending approval, outcomes): also an event of the org's log (lib/purchasing/events.ts). */
    notify: boolean("notify").notNull().default(false),
    seq: integer("seq").generatedAlwaysAsIdentity(),
  },
  (t) => [index("purchase_events_purchase_idx").on(t.purchaseId, t.seq)],
);

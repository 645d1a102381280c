import { sql } from "drizzle-orm";
import { providerColumn } from "./columns.ts";
import { bigserial, boolean, index, integer, jsonb, numeric, pgTable, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { organizations } from "./core.ts";
import { catalogSkus } from "./catalog.ts";

/** Saved baskets of catalog SKUs. Soft-deleted so plans and shares keep their links. */
export const costEstimates = pgTable(
  "cost_estimates",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    provider: providerColumn().notNull(),
    name: text("name").notNull(),
    description: text("description"),
    sourceDraftId: uuid("source_draft_id"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
    /** Bumped by every change of the estimate or its lines: the ETag's version (If-Match). */
    version: integer("version").notNull().default(1),
    deletedAt: timestamp("deleted_at", { withTimezone: true }),
  },
  (t) => [
    // One live estimate per imported draft (rule 1); a deleted one releases the draft id.
    uniqueIndex("cost_estimates_org_draft_live_uq").on(t.orgId, t.sourceDraftId).where(sql`deleted_at IS NULL`),
    index("cost_estimates_org_provider_idx").on(t.orgId, t.provider, t.updatedAt),
  ],
);

/** Lines of an estimate. The SKU descriptor is snapshotted at add time (rule 3). */
export const estimateLineItems = pgTable(
  "estimate_line_items",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    /** Insertion order (ids are random). */
    seq: bigserial("seq", { mode: "number" }).notNull(),
    estimateId: uuid("estimate_id").notNull().references(() => costEstimates.id, { onDelete: "cascade" }),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    catalogSkuId: uuid("catalog_sku_id").notNull().references(() => catalogSkus.id),
    catalogSkuOrgId: text("catalog_sku_org_id").notNull(),
    skuSnapshot: jsonb("sku_snapshot").notNull(),
    usageUnit: text("usage_unit"),
    label: text("label"),
    quantity: numeric("quantity", { precision: 30, scale: 10 }).notNull(),
    quantityBasis: text("quantity_basis").notNull(),
    isEnabled: boolean("is_enabled").notNull().default(true),
    /** The six identifying fields of the chosen CommitmentOption, or null for on-demand. */
    selectedCommitmentOption: jsonb("selected_commitment_option"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("estimate_line_items_estimate_idx").on(t.estimateId, t.seq)],
);

/** Shares of an estimate (links survive the estimate's soft delete, rule 2). */
export const estimateShares = pgTable(
  "estimate_shares",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    estimateId: uuid("estimate_id").notNull().references(() => costEstimates.id),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("estimate_shares_estimate_idx").on(t.estimateId)],
);

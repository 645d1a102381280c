import { sql } from "drizzle-orm";
import { providerColumn } from "./columns.ts";
import { boolean, index, integer, numeric, pgTable, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";

/** Prices: exact decimals in the database (drizzle returns them as strings). */
const price = (name: string) => numeric(name, { precision: 30, scale: 12 });

/**
 * Catalog SKUs: the public catalog (`catalog_sku_org_id` = "public") plus each organization's
 * custom-priced SKUs (`catalog_sku_org_id` = the org id, which overrides the public SKU with the
 * same provider_sku_id for that org). Never deleted: a withdrawn SKU is `is_available = false`,
 * so estimate lines keep resolving.
 */
export const catalogSkus = pgTable(
  "catalog_skus",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    catalogSkuOrgId: text("catalog_sku_org_id").notNull(),
    provider: providerColumn().notNull(),
    providerSkuId: text("provider_sku_id").notNull(),
    displayName: text("display_name").notNull(),
    instanceType: text("instance_type").notNull().default(""),
    instanceFamily: text("instance_family").notNull().default(""),
    service: text("service").notNull().default(""),
    providerService: text("provider_service").notNull().default(""),
    regionCode: text("region_code").notNull().default(""),
    operatingSystem: text("operating_system").notNull().default(""),
    databaseEngine: text("database_engine").notNull().default(""),
    cacheEngine: text("cache_engine").notNull().default(""),
    usageType: text("usage_type").notNull().default(""),
    /** Unit the price tiers are quoted in ("Hrs" for everything billed per running hour). */
    usageUnit: text("usage_unit").notNull().default("Hrs"),
    isAvailable: boolean("is_available").notNull().default(true),
    /** Where the price comes from (provenance, e.g. a price list file or snapshot source id). */
    source: text("source").notNull(),
    /** The import feed that last wrote the row: a re-import withdraws only its own feed's rows. */
    feed: text("feed").notNull(),
    asOf: text("as_of").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("catalog_skus_key_uq").on(t.catalogSkuOrgId, t.provider, t.providerSkuId),
    index("catalog_skus_search_idx").on(t.provider, t.catalogSkuOrgId, t.regionCode),
    // max(updated_at) is the pricing cache's cheap change detector (lib/catalog/pricingInputs.ts).
    index("catalog_skus_updated_idx").on(t.updatedAt),
    index("catalog_skus_feed_idx").on(t.feed),
  ],
);

/** On-demand price tiers of a SKU: `unit_price` per usage unit from `start_quantity` (per month). */
export const skuPriceTiers = pgTable(
  "sku_price_tiers",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    catalogSkuId: uuid("catalog_sku_id").notNull().references(() => catalogSkus.id, { onDelete: "cascade" }),
    startQuantity: price("start_quantity").notNull(),
    endQuantity: price("end_quantity"),
    unitPrice: price("unit_price").notNull(),
    source: text("source").notNull(),
    asOf: text("as_of").notNull(),
  },
  (t) => [uniqueIndex("sku_price_tiers_uq").on(t.catalogSkuId, t.startQuantity)],
);

/**
 * A commitment product: an RI / reservation / CUD of one term and payment option (per SKU
 * family and region), a savings plan, or an insured `_gris` offer built on a 3-year no-upfront
 * commitment. `offer_key` is the provider-side identity used to upsert on re-import.
 */
export const offers = pgTable(
  "offers",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    offerOrgId: text("offer_org_id").notNull(),
    provider: providerColumn().notNull(),
    offerKey: text("offer_key").notNull(),
    commitmentType: text("commitment_type").notNull(),
    contractTerm: text("contract_term").notNull(),
    paymentOption: text("payment_option").notNull(),
    offeringClass: text("offering_class"),
    planType: text("plan_type"),
    durationSeconds: integer("duration_seconds").notNull(),
    region: text("region"),
    instanceType: text("instance_type"),
    instanceFamily: text("instance_family"),
    productDescription: text("product_description"),
    displayName: text("display_name").notNull(),
    guaranteedDisplayName: text("guaranteed_display_name"),
    isFlexible: boolean("is_flexible").notNull().default(false),
    /** Service premium on realized gross savings (insured offers; 0 for native ones). */
    feeRate: price("fee_rate").notNull().default("0"),
    lockInDays: integer("lock_in_days").notNull(),
    isInsured: boolean("is_insured").notNull().default(false),
    isAvailable: boolean("is_available").notNull().default(true),
    source: text("source").notNull(),
    feed: text("feed").notNull(),
    asOf: text("as_of").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex("offers_key_uq").on(t.offerOrgId, t.provider, t.offerKey), index("offers_updated_idx").on(t.updatedAt), index("offers_feed_idx").on(t.feed)],
);

/**
 * What an offer costs for one SKU: per unit (one instance running, i.e. per instance-hour of
 * coverage) a recurring hourly rate and a one-time upfront for the whole duration.
 */
export const leaseMenuItems = pgTable(
  "lease_menu_items",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    offerId: uuid("offer_id").notNull().references(() => offers.id, { onDelete: "cascade" }),
    catalogSkuId: uuid("catalog_sku_id").notNull().references(() => catalogSkus.id, { onDelete: "cascade" }),
    recurringHourlyRate: price("recurring_hourly_rate").notNull(),
    upfrontCost: price("upfront_cost").notNull(),
    isAvailable: boolean("is_available").notNull().default(true),
    source: text("source").notNull(),
    feed: text("feed").notNull(),
    asOf: text("as_of").notNull(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("lease_menu_items_uq").on(t.offerId, t.catalogSkuId),
    index("lease_menu_items_sku_idx").on(t.catalogSkuId),
    index("lease_menu_items_updated_idx").on(t.updatedAt),
    index("lease_menu_items_feed_idx").on(t.feed),
  ],
);

/** Which version of the bundled public price snapshot has been applied (fast idempotent seed). */
export const catalogSeedState = pgTable("catalog_seed_state", {
  name: text("name").primaryKey(),
  version: text("version").notNull(),
  appliedAt: timestamp("applied_at", { withTimezone: true }).notNull().default(sql`now()`),
});

/**
 * One refreshable price feed (an AWS service-region offer file, a Savings Plans region file, an
 * Azure service-region, a GCP service): what its last successful refresh saw, for conditional
 * requests, and when it was last confirmed current (the freshness shown in pricing).
 */
export const catalogFeeds = pgTable("catalog_feeds", {
  feed: text("feed").primaryKey(),
  provider: providerColumn().notNull(),
  /** The provider's version of the feed (AWS version URL/id, publication date, a content digest). */
  version: text("version"),
  /** The HTTP ETag of the feed's document, sent back as If-None-Match. */
  etag: text("etag"),
  /** Last time a refresh confirmed these prices current (changed or not). */
  checkedAt: timestamp("checked_at", { withTimezone: true }),
  /** Last time a refresh changed a row of the feed (a price, a withdrawal, a new SKU or offer). */
  changedAt: timestamp("changed_at", { withTimezone: true }),
  /** The last failure's cause (never a secret or a response body); cleared by a success. */
  lastError: text("last_error"),
  lastErrorAt: timestamp("last_error_at", { withTimezone: true }),
});

/**
 * The refresh lease: one refresh at a time across replicas and CLI runs, and the daily job's
 * run claimed once per day (`run_date`).
 */
export const catalogRefreshLease = pgTable("catalog_refresh_lease", {
  name: text("name").primaryKey(),
  holder: text("holder"),
  leaseUntil: timestamp("lease_until", { withTimezone: true }),
  /** The UTC day whose daily refresh has been claimed. */
  runDate: text("run_date"),
  startedAt: timestamp("started_at", { withTimezone: true }),
  finishedAt: timestamp("finished_at", { withTimezone: true }),
});

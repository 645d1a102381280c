import { sql, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/index.ts";
import type { LeaseRate, PricingOffer, Provider, SkuPricingInputs } from "../pricing/index.ts";
import { PUBLIC_CATALOG } from "./model.ts";
import { confirmedAsOf, oldestDay } from "./freshness.ts";
import { rowsOf } from "../billing/sql.ts";

/**
 * Pricing inputs are loaded per requested SKU (the SKU, its on-demand tiers, its available
 * leases with their offers: three queries per batch of ids) and kept in a bounded LRU keyed by
 * (catalog generation, SKU id). A live catalog has hundreds of thousands of lease rows, so
 * nothing loads the whole catalog; a hot estimate costs one small generation query.
 *
 * Every catalog write (`applyCatalogBatch`, `bumpCatalogGeneration`) sets a new generation in
 * the database in the same transaction, so every replica sees a change on its next read.
 */
const GENERATION_KEY = "catalog_generation";
/** SKU ids per query (one jsonb parameter each). */
const LOAD_BATCH = 1000;
/**
 * SKUs kept across reads (every generation together). A SKU with its ~30 commitment options
 * weighs ~10 KB, so the cache stays within tens of MB; a 1,000-line estimate fits several times.
 */
const MAX_CACHED_SKUS = 5000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const bool = (v: unknown) => v === true || v === "t" || v === "true";

/** Marks the catalog changed (call in the transaction that changed it). */
export async function bumpCatalogGeneration(db: DbOrTx): Promise<void> {
  await db.execute(sql`
    INSERT INTO catalog_seed_state (name, version, applied_at) VALUES (${GENERATION_KEY}, gen_random_uuid()::text, now())
    ON CONFLICT (name) DO UPDATE SET version = excluded.version, applied_at = excluded.applied_at`);
}

/**
 * The generation plus a cheap fingerprint: the newest updated_at of SKUs, offers and lease menu
 * items (rows inserted, or updated with `updated_at = now()`, directly: fixtures, manual fixes)
 * and the feeds' check times (a refresh that finds a feed unchanged moves only
 * `catalog_feeds.checked_at`, and with it the day its prices are confirmed as of). Catalog
 * writers bump the generation; a manual change to tiers, or one that leaves updated_at, must bump
 * it too (docs/OPERATIONS.md).
 */
async function currentGeneration(db: DbOrTx): Promise<string> {
  // Index-backed maxima only: a count over a live catalog's hundreds of thousands of rows would
  // cost every hot read tens of milliseconds.
  const [row] = rowsOf<{ g: string | null; s: string | null; o: string | null; l: string | null; f: string }>(
    await db.execute(sql`
      SELECT (SELECT version FROM catalog_seed_state WHERE name = ${GENERATION_KEY}) AS g,
             (SELECT max(updated_at)::text FROM catalog_skus) AS s,
             (SELECT max(updated_at)::text FROM offers) AS o,
             (SELECT max(updated_at)::text FROM lease_menu_items) AS l,
             (SELECT count(*) || '/' || coalesce(max(checked_at)::text, '') || '/' || coalesce(sum(extract(epoch FROM checked_at))::text, '') FROM catalog_feeds) AS f`),
  );
  return `${row?.g ?? "none"}|${row?.s}|${row?.o}|${row?.l}|${row?.f}`;
}

/** One SKU's inputs with the leases of every catalog owner, and the day each price is confirmed as of. */
interface LoadedSku {
  inputs: SkuPricingInputs;
  skuAsOf: string | null;
  /** Parallel to `inputs.leases`. */
  leaseAsOf: (string | null)[];
}

/** The UTC day the row's live feed was last confirmed current (null: not a checked live feed). */
const checkedDay = (alias: string) => sql.raw(`to_char(${alias}.checked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`);

function offerOf(r: Record<string, any>): PricingOffer {
  return {
    id: r.offer_id,
    orgId: r.offer_org_id,
    provider: r.provider,
    commitmentType: r.commitment_type,
    contractTerm: r.contract_term,
    paymentOption: r.payment_option,
    offeringClass: r.offering_class,
    planType: r.plan_type,
    durationSeconds: Number(r.duration_seconds),
    region: r.region,
    instanceType: r.instance_type,
    instanceFamily: r.instance_family,
    productDescription: r.product_description,
    displayName: r.display_name,
    guaranteedDisplayName: r.guaranteed_display_name,
    isFlexible: bool(r.is_flexible),
    feeRate: Number(r.fee_rate),
    lockInDays: Number(r.lock_in_days),
    isInsured: bool(r.is_insured),
  };
}

async function loadBatch(db: DbOrTx, ids: string[], offers: Map<string, PricingOffer>, out: Map<string, LoadedSku>): Promise<void> {
  const wanted: SQL = sql`ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))::uuid[]`;
  const skus = rowsOf<{ id: string; org: string; provider: Provider; provider_sku_id: string; display_name: string; usage_unit: string; is_available: unknown; as_of: string; checked: string | null }>(
    await db.execute(sql`
      SELECT s.id, s.catalog_sku_org_id AS org, s.provider, s.provider_sku_id, s.display_name, s.usage_unit, s.is_available, s.as_of, ${checkedDay("f")} AS checked
      FROM catalog_skus s LEFT JOIN catalog_feeds f ON f.feed = s.feed AND s.catalog_sku_org_id = ${PUBLIC_CATALOG}
      WHERE s.id = ANY(${wanted})`),
  );
  for (const s of skus) {
    const skuAsOf = confirmedAsOf(s.checked, s.as_of);
    out.set(s.id, {
      inputs: {
        sku: { id: s.id, orgId: s.org, provider: s.provider, providerSkuId: s.provider_sku_id, displayName: s.display_name, usageUnit: s.usage_unit, isAvailable: bool(s.is_available) },
        tiers: [],
        leases: [],
        pricesAsOf: skuAsOf,
      },
      skuAsOf,
      leaseAsOf: [],
    });
  }
  if (!skus.length) return;
  const tiers = rowsOf<{ sku: string; start: string; end: string | null; price: string }>(
    await db.execute(sql`
      SELECT catalog_sku_id AS sku, start_quantity AS start, end_quantity AS "end", unit_price AS price
      FROM sku_price_tiers WHERE catalog_sku_id = ANY(${wanted}) ORDER BY catalog_sku_id, start_quantity`),
  );
  for (const t of tiers) out.get(t.sku)?.inputs.tiers.push({ startQuantity: Number(t.start), endQuantity: t.end === null ? null : Number(t.end), unitPrice: Number(t.price) });
  const leases = rowsOf<Record<string, any>>(
    await db.execute(sql`
      SELECT l.id, l.catalog_sku_id AS sku, l.recurring_hourly_rate AS recurring, l.upfront_cost AS upfront, l.as_of, ${checkedDay("f")} AS checked,
             o.id AS offer_id, o.offer_org_id, o.provider, o.commitment_type, o.contract_term, o.payment_option, o.offering_class, o.plan_type,
             o.duration_seconds, o.region, o.instance_type, o.instance_family, o.product_description, o.display_name, o.guaranteed_display_name,
             o.is_flexible, o.fee_rate, o.lock_in_days, o.is_insured
      FROM lease_menu_items l
      JOIN offers o ON o.id = l.offer_id AND o.is_available
      LEFT JOIN catalog_feeds f ON f.feed = l.feed AND o.offer_org_id = ${PUBLIC_CATALOG}
      WHERE l.is_available AND l.catalog_sku_id = ANY(${wanted})
      ORDER BY l.id`),
  );
  for (const l of leases) {
    const target = out.get(l.sku);
    if (!target) continue;
    let offer = offers.get(l.offer_id);
    if (!offer) offers.set(l.offer_id, (offer = offerOf(l)));
    const rate: LeaseRate = { leaseMenuItemId: l.id, offer, recurringHourlyRate: Number(l.recurring), upfrontCost: Number(l.upfront) };
    const asOf = confirmedAsOf(l.checked, l.as_of);
    target.inputs.leases.push(rate);
    target.leaseAsOf.push(asOf);
    target.inputs.pricesAsOf = oldestDay([target.inputs.pricesAsOf, asOf]);
  }
}

/** The given SKUs from the database, in batches; absent ids are absent from the map. */
async function loadSkus(db: DbOrTx, ids: string[]): Promise<Map<string, LoadedSku>> {
  const out = new Map<string, LoadedSku>();
  // Offers shared by many SKUs (savings plans) are one object per load.
  const offers = new Map<string, PricingOffer>();
  for (let i = 0; i < ids.length; i += LOAD_BATCH) await loadBatch(db, ids.slice(i, i + LOAD_BATCH), offers, out);
  return out;
}

/** Least recently used entries leave first (a Map keeps insertion order; a hit re-inserts). */
class Lru<K, V> {
  private readonly entries = new Map<K, V>();
  constructor(private readonly max: number) {}
  get(k: K): V | undefined {
    const v = this.entries.get(k);
    if (v !== undefined) {
      this.entries.delete(k);
      this.entries.set(k, v);
    }
    return v;
  }
  set(k: K, v: V): void {
    this.entries.delete(k);
    this.entries.set(k, v);
    while (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
  }
}

// Loaded values only, never a load in flight: a caller inside a transaction must not wait on a
// load another caller runs outside it (PGlite runs one at a time: that wait would deadlock).
// null: no such SKU.
const cache = new Lru<string, LoadedSku | null>(MAX_CACHED_SKUS);

/** The SKU's inputs as the org sees them: its own and public leases only, pricesAsOf over those. */
function forOrg(loaded: LoadedSku, orgId: string): SkuPricingInputs | null {
  const { inputs } = loaded;
  if (inputs.sku.orgId !== PUBLIC_CATALOG && inputs.sku.orgId !== orgId) return null;
  const visible = (l: LeaseRate) => l.offer.orgId === PUBLIC_CATALOG || l.offer.orgId === orgId;
  if (inputs.leases.every(visible)) return inputs;
  const leases: LeaseRate[] = [];
  const asOf: (string | null)[] = [loaded.skuAsOf];
  inputs.leases.forEach((l, i) => {
    if (!visible(l)) return;
    leases.push(l);
    asOf.push(loaded.leaseAsOf[i]!);
  });
  return { ...inputs, leases, pricesAsOf: oldestDay(asOf) };
}

/**
 * The pricing inputs of the given SKUs for an org, keyed by catalog SKU id: the SKU, its
 * on-demand tiers, its currently available commitment leases (public ones and the org's own)
 * and the day those prices were confirmed as of (lib/catalog/freshness.ts). SKUs not visible to
 * the org are absent. Only the requested SKUs are read; one small query when they are cached.
 * The inputs are shared between reads: never modify them.
 */
export async function loadPricingInputs(db: DbOrTx, orgId: string, skuIds: string[]): Promise<Map<string, SkuPricingInputs>> {
  const ids = [...new Set(skuIds.map((id) => id.toLowerCase()))].filter((id) => UUID.test(id));
  const out = new Map<string, SkuPricingInputs>();
  if (!ids.length) return out;
  const generation = await currentGeneration(db);
  // Without a generation row the fingerprint alone could collide across databases: no caching.
  const cacheable = !generation.startsWith("none|");
  const found = new Map<string, LoadedSku | null>();
  const missing: string[] = [];
  for (const id of ids) {
    const hit = cacheable ? cache.get(`${generation}|${id}`) : undefined;
    if (hit !== undefined) found.set(id, hit);
    else missing.push(id);
  }
  if (missing.length) {
    const loadedNow = await loadSkus(db, missing);
    for (const id of missing) {
      const one = loadedNow.get(id) ?? null;
      found.set(id, one);
      if (cacheable) cache.set(`${generation}|${id}`, one);
    }
  }
  const loaded = ids.map((id) => found.get(id) ?? null);
  ids.forEach((id, i) => {
    const inputs = loaded[i] ? forOrg(loaded[i]!, orgId) : null;
    if (inputs) out.set(id, inputs);
  });
  return out;
}

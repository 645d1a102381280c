import { sql } from "drizzle-orm";
import type { DbOrTx } from "../db/index.ts";
import type { LeaseRate, PricingOffer, Provider, SkuPricingInputs } from "../pricing/index.ts";
import { PUBLIC_CATALOG } from "./model.ts";

/**
 * Pricing inputs come from an in-process copy of the whole catalog (SKUs, tiers, available
 * offers and lease menu items of every catalog owner: a few thousand rows), keyed by the
 * catalog generation. Every catalog write (`applyCatalogBatch`, `bumpCatalogGeneration`) sets
 * a new generation in the database in the same transaction, so each read costs one small query
 * (generation + table fingerprint) and every replica sees a change on its next read. Pricing a 1,000-line estimate therefore
 * does not scale with the catalog or the lines in database round trips.
 */
const GENERATION_KEY = "catalog_generation";

function rowsOf<T>(res: unknown): T[] {
  return (Array.isArray(res) ? res : (res as { rows: T[] }).rows) as T[];
}

const bool = (v: unknown) => v === true || v === "t" || v === "true";

/** Marks the catalog changed (call in the transaction that changed it). */
export async function bumpCatalogGeneration(db: DbOrTx): Promise<void> {
  await db.execute(sql`
    INSERT INTO catalog_seed_state (name, version, applied_at) VALUES (${GENERATION_KEY}, gen_random_uuid()::text, now())
    ON CONFLICT (name) DO UPDATE SET version = excluded.version, applied_at = excluded.applied_at`);
}

/**
 * The generation plus a cheap fingerprint of the tables (row counts, newest updated_at), so rows
 * inserted directly (fixtures, manual fixes) are picked up too; catalog writers still bump the
 * generation, which also covers in-place updates.
 */
async function currentGeneration(db: DbOrTx): Promise<string> {
  const [row] = rowsOf<{ g: string | null; s: string; o: string; l: string; t: string }>(
    await db.execute(sql`
      SELECT (SELECT version FROM catalog_seed_state WHERE name = ${GENERATION_KEY}) AS g,
             (SELECT count(*) || '/' || coalesce(max(updated_at)::text, '') FROM catalog_skus) AS s,
             (SELECT count(*) || '/' || coalesce(max(updated_at)::text, '') FROM offers) AS o,
             (SELECT count(*) || '/' || coalesce(max(updated_at)::text, '') FROM lease_menu_items) AS l,
             (SELECT count(*)::text FROM sku_price_tiers) AS t`),
  );
  return `${row?.g ?? "none"}|${row?.s}|${row?.o}|${row?.l}|${row?.t}`;
}

type CatalogCopy = Map<string, SkuPricingInputs>;

async function loadCatalogCopy(db: DbOrTx): Promise<CatalogCopy> {
  const out: CatalogCopy = new Map();
  const skus = rowsOf<{ id: string; org: string; provider: Provider; provider_sku_id: string; display_name: string; usage_unit: string; is_available: unknown }>(
    await db.execute(sql`SELECT id, catalog_sku_org_id AS org, provider, provider_sku_id, display_name, usage_unit, is_available FROM catalog_skus`),
  );
  for (const s of skus) {
    out.set(s.id, {
      sku: { id: s.id, orgId: s.org, provider: s.provider, providerSkuId: s.provider_sku_id, displayName: s.display_name, usageUnit: s.usage_unit, isAvailable: bool(s.is_available) },
      tiers: [],
      leases: [],
    });
  }
  const tiers = rowsOf<{ sku: string; start: string; end: string | null; price: string }>(
    await db.execute(sql`SELECT catalog_sku_id AS sku, start_quantity AS start, end_quantity AS "end", unit_price AS price FROM sku_price_tiers ORDER BY catalog_sku_id, start_quantity`),
  );
  for (const t of tiers) out.get(t.sku)?.tiers.push({ startQuantity: Number(t.start), endQuantity: t.end === null ? null : Number(t.end), unitPrice: Number(t.price) });
  const offers = rowsOf<Record<string, any>>(
    await db.execute(sql`
      SELECT id, offer_org_id, provider, commitment_type, contract_term, payment_option, offering_class, plan_type, duration_seconds,
             region, instance_type, instance_family, product_description, display_name, guaranteed_display_name, is_flexible,
             fee_rate, lock_in_days, is_insured
      FROM offers WHERE is_available`),
  );
  const byId = new Map<string, PricingOffer>();
  for (const r of offers) {
    byId.set(r.id, {
      id: r.id,
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
    });
  }
  const leases = rowsOf<{ id: string; sku: string; offer: string; recurring: string; upfront: string }>(
    await db.execute(sql`SELECT id, catalog_sku_id AS sku, offer_id AS offer, recurring_hourly_rate AS recurring, upfront_cost AS upfront FROM lease_menu_items WHERE is_available ORDER BY id`),
  );
  for (const l of leases) {
    const offer = byId.get(l.offer);
    const target = out.get(l.sku);
    if (!offer || !target) continue;
    const rate: LeaseRate = { leaseMenuItemId: l.id, offer, recurringHourlyRate: Number(l.recurring), upfrontCost: Number(l.upfront) };
    target.leases.push(rate);
  }
  return out;
}

// A few generations (several databases in one process, e.g. tests); the newest are kept.
const copies = new Map<string, Promise<CatalogCopy>>();
const MAX_COPIES = 4;

async function catalogCopy(db: DbOrTx): Promise<CatalogCopy> {
  const generation = await currentGeneration(db);
  // Without a generation row the fingerprint alone could collide across databases: no caching.
  if (generation.startsWith("none|")) return loadCatalogCopy(db);
  let p = copies.get(generation);
  if (!p) {
    p = loadCatalogCopy(db);
    copies.set(generation, p);
    p.catch(() => copies.delete(generation));
    while (copies.size > MAX_COPIES) copies.delete(copies.keys().next().value!);
  }
  return p;
}

/**
 * The pricing inputs of the given SKUs for an org, keyed by catalog SKU id: the SKU, its
 * on-demand tiers and its currently available commitment leases (public ones and the org's
 * own). SKUs not visible to the org are absent. One small query when the catalog is unchanged.
 */
export async function loadPricingInputs(db: DbOrTx, orgId: string, skuIds: string[]): Promise<Map<string, SkuPricingInputs>> {
  const copy = await catalogCopy(db);
  const out = new Map<string, SkuPricingInputs>();
  for (const id of skuIds) {
    if (out.has(id)) continue;
    const inputs = copy.get(id);
    if (!inputs || (inputs.sku.orgId !== PUBLIC_CATALOG && inputs.sku.orgId !== orgId)) continue;
    const leases = inputs.leases.filter((l) => l.offer.orgId === PUBLIC_CATALOG || l.offer.orgId === orgId);
    out.set(id, leases.length === inputs.leases.length ? inputs : { ...inputs, leases });
  }
  return out;
}

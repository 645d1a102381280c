import { parse } from "csv-parse/sync";
import { eq, sql } from "drizzle-orm";
import type { Db } from "../db/index.ts";
import { catalogSeedState } from "../db/schema/index.ts";
import type { Provider } from "../pricing/index.ts";
import { withInsuredOffers } from "./insured.ts";
import { PUBLIC_CATALOG, SNAPSHOT_FEED, termName, termSeconds, type CatalogBatch, type OfferInput, type SkuInput } from "./model.ts";
import { applyCatalogBatch } from "./store.ts";
import { CATALOG_SKUS_CSV, PRICES_CSV, SNAPSHOT_VERSION as SNAPSHOT_DATA_VERSION } from "./snapshot.gen.ts";

/**
 * What the seed applies: the snapshot's data and how offers are derived from it. Bump the
 * revision when the derivation changes (rev 2: insured offers keep the 3-year duration of the
 * commitment underneath) so existing databases are re-seeded in place.
 */
const SEED_REVISION = 2;
const SNAPSHOT_VERSION = `${SNAPSHOT_DATA_VERSION}+r${SEED_REVISION}`;
/** The version `ensurePublicCatalog` applies (and records in catalog_seed_state). */
export const PUBLIC_CATALOG_VERSION = SNAPSHOT_VERSION;

/** The feed name of the bundled public snapshot (re-seeding withdraws only its own rows). */
export { SNAPSHOT_FEED };

type Row = Record<string, string>;

function num(v: string | undefined): number | null {
  if (v === undefined || v.trim() === "") return null;
  const n = Number(v);
  return Number.isFinite(n) && n >= 0 ? n : null;
}

/** Newer `as_of` first (ISO-like dates compare as strings; "~2025-06" style prefixes stripped). */
function asOfKey(r: Row): string {
  return (r.as_of ?? "").replace(/^[^0-9]*/, "");
}

function newest(rows: Row[]): Row {
  return rows.reduce((a, b) => (asOfKey(b) > asOfKey(a) ? b : a));
}

interface Kind {
  commitmentType: string;
  offeringClass: string | null;
  planType: string | null;
  isFlexible: boolean;
  /** Offer identity beyond type/term/payment: per SKU, or shared by many SKUs (savings plans). */
  scope: (r: Row) => string;
  label: string;
}

function kindOf(r: Row): Kind | null {
  const perSku = (x: Row) => x.provider_sku_id!;
  const family = (x: Row) => `${x.region_code}|${(x.instance_type ?? "").split(/[.-]/)[0]}`;
  switch (`${r.provider}:${r.pricing_model}:${r.offering_class}`) {
    case "aws:reserved_instance:standard":
      return { commitmentType: "reserved_instance", offeringClass: "standard", planType: null, isFlexible: false, scope: perSku, label: "Standard Reserved Instance" };
    case "aws:reserved_instance:convertible":
      return { commitmentType: "reserved_instance", offeringClass: "convertible", planType: null, isFlexible: true, scope: perSku, label: "Convertible Reserved Instance" };
    case "aws:savings_plan:compute":
      return { commitmentType: "compute_savings_plan", offeringClass: null, planType: "compute", isFlexible: true, scope: () => "all", label: "Compute Savings Plan" };
    case "aws:savings_plan:ec2_instance":
      return { commitmentType: "ec2_instance_savings_plan", offeringClass: null, planType: "ec2_instance", isFlexible: true, scope: family, label: "EC2 Instance Savings Plan" };
    case "azure:reservation:azure_reserved_vm_instance":
      return { commitmentType: "reservation", offeringClass: null, planType: null, isFlexible: false, scope: perSku, label: "Reserved VM Instance" };
    case "azure:savings_plan:azure_savings_plan_compute":
      return { commitmentType: "savings_plan", offeringClass: null, planType: "compute", isFlexible: true, scope: () => "all", label: "Savings Plan for Compute" };
    case "gcp:committed_use_discount:resource_based":
      return { commitmentType: "resource_cud", offeringClass: null, planType: null, isFlexible: false, scope: perSku, label: "resource-based committed use discount" };
    default:
      return null;
  }
}

/**
 * (payment option, recurring hourly, upfront) pairs a price row supports. Where the source gives
 * only the effective rate, no-upfront (recurring = effective) and all-upfront (upfront =
 * effective × hours of the term) are exact; partial-upfront without a split is left out.
 */
function paymentSplits(r: Row, years: number): { paymentOption: string; recurring: number; upfront: number }[] {
  const eff = num(r.effective_hourly_usd);
  const rec = num(r.recurring_hourly_usd);
  const up = num(r.upfront_usd);
  const hours = 8760 * years;
  switch (r.payment_option) {
    case "no_upfront":
    case "monthly_no_upfront": {
      const recurring = rec ?? eff;
      return recurring === null ? [] : [{ paymentOption: "no_upfront", recurring, upfront: 0 }];
    }
    case "all_upfront": {
      const upfront = up ?? (eff === null ? null : eff * hours);
      return upfront === null ? [] : [{ paymentOption: "all_upfront", recurring: 0, upfront }];
    }
    case "partial_upfront":
      return rec !== null && up !== null ? [{ paymentOption: "partial_upfront", recurring: rec, upfront: up }] : [];
    case "upfront_or_monthly":
      // Azure charges the same total upfront or in monthly instalments.
      return eff === null ? [] : [
        { paymentOption: "no_upfront", recurring: eff, upfront: 0 },
        { paymentOption: "all_upfront", recurring: 0, upfront: eff * hours },
      ];
    default:
      return [];
  }
}

const PAYMENT_LABEL: Record<string, string> = { no_upfront: "no upfront", partial_upfront: "partial upfront", all_upfront: "all upfront" };

/** Builds the public catalog batches (one per provider) from the bundled price snapshot. */
export function snapshotBatches(pricesCsv = PRICES_CSV, skusCsv = CATALOG_SKUS_CSV): CatalogBatch[] {
  const skuRows: Row[] = parse(skusCsv, { columns: true, skip_empty_lines: true });
  const priceRows: Row[] = parse(pricesCsv, { columns: true, skip_empty_lines: true });
  const bySku = new Map<string, Row[]>();
  for (const r of priceRows) (bySku.get(r.provider_sku_id!) ?? bySku.set(r.provider_sku_id!, []).get(r.provider_sku_id!)!).push(r);

  const batches = new Map<Provider, CatalogBatch>();
  const batchOf = (p: Provider) => batches.get(p) ?? batches.set(p, { provider: p, orgId: PUBLIC_CATALOG, source: SNAPSHOT_FEED, skus: [], offers: [] }).get(p)!;
  const offerByKey = new Map<string, OfferInput>();

  for (const d of skuRows) {
    const provider = d.provider_sku_id!.split(":")[0] as Provider;
    if (!["aws", "azure", "gcp"].includes(provider)) continue;
    const rows = bySku.get(d.provider_sku_id!) ?? [];
    const od = rows.filter((r) => r.pricing_model === "on_demand" && num(r.on_demand_hourly_usd) !== null);
    const odRow = od.length ? newest(od) : null;
    const commitmentRows = rows.filter((r) => kindOf(r) !== null);
    if (!odRow && !commitmentRows.length) continue;
    const sku: SkuInput = {
      providerSkuId: d.provider_sku_id!,
      displayName: d.display_name!,
      instanceType: d.instance_type,
      service: d.service,
      providerService: d.provider_service,
      regionCode: d.region_code,
      operatingSystem: d.operating_system,
      databaseEngine: d.database_engine,
      cacheEngine: d.cache_engine,
      usageType: d.usage_type,
      usageUnit: "Hrs",
      tiers: odRow ? [{ startQuantity: 0, endQuantity: null, unitPrice: num(odRow.on_demand_hourly_usd)! }] : [],
      source: (odRow ?? newest(commitmentRows)).source_id,
      asOf: (odRow ?? newest(commitmentRows)).as_of!,
    };
    batchOf(provider).skus.push(sku);

    // One row per (model, class, term, payment): prefer the newest vintage.
    const groups = new Map<string, Row[]>();
    for (const r of commitmentRows) {
      const k = `${r.pricing_model}|${r.offering_class}|${r.term_years}|${r.payment_option}`;
      (groups.get(k) ?? groups.set(k, []).get(k)!).push(r);
    }
    for (const group of groups.values()) {
      const r = newest(group);
      const kind = kindOf(r)!;
      const years = Number(r.term_years);
      if (years !== 1 && years !== 3) continue;
      for (const split of paymentSplits(r, years)) {
        const offerKey = [kind.commitmentType, kind.offeringClass ?? "", termName(years), split.paymentOption, kind.scope(r)].join("|");
        let offer = offerByKey.get(offerKey);
        if (!offer) {
          const perSku = kind.scope(r) === r.provider_sku_id;
          offer = {
            offerKey,
            commitmentType: kind.commitmentType,
            contractTerm: termName(years),
            paymentOption: split.paymentOption,
            offeringClass: kind.offeringClass,
            planType: kind.planType,
            durationSeconds: termSeconds(years),
            region: kind.commitmentType === "compute_savings_plan" || kind.commitmentType === "savings_plan" ? null : r.region_code || null,
            instanceType: perSku ? r.instance_type || null : null,
            instanceFamily: kind.commitmentType === "compute_savings_plan" || kind.commitmentType === "savings_plan" ? null : (r.instance_type ?? "").split(/[.-]/)[0] || null,
            productDescription: perSku ? [r.operating_system, r.database_engine, r.cache_engine].filter(Boolean).join(" ") || null : null,
            displayName: `${provider.toUpperCase()} ${years}-year ${kind.label}, ${PAYMENT_LABEL[split.paymentOption]}${perSku ? ` (${r.instance_type} ${r.region_code})` : ""}`,
            guaranteedDisplayName: null,
            isFlexible: kind.isFlexible,
            feeRate: 0,
            lockInDays: years * 365,
            isInsured: false,
            source: r.source_id,
            asOf: r.as_of!,
            leases: [],
          };
          offerByKey.set(offerKey, offer);
          batchOf(provider).offers.push(offer);
        }
        offer.leases.push({ providerSkuId: r.provider_sku_id!, recurringHourlyRate: split.recurring, upfrontCost: split.upfront, source: r.source_id, asOf: r.as_of! });
      }
    }
  }
  return [...batches.values()].map(withInsuredOffers);
}

const SEED_NAME = "public_catalog";

/**
 * Makes sure the public catalog of the bundled snapshot is in the database. Idempotent and
 * cheap when already applied (one indexed read); concurrent callers serialize on an advisory
 * lock and only the first applies it. Runs on every server start (demo seeder) and lazily
 * before the first catalog read.
 */
export async function ensurePublicCatalog(db: Db): Promise<{ applied: boolean; version: string }> {
  const [state] = await db.select().from(catalogSeedState).where(eq(catalogSeedState.name, SEED_NAME));
  if (state?.version === SNAPSHOT_VERSION) return { applied: false, version: SNAPSHOT_VERSION };
  return db.transaction(async (tx) => {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(727104)`);
    const [again] = await tx.select().from(catalogSeedState).where(eq(catalogSeedState.name, SEED_NAME));
    if (again?.version === SNAPSHOT_VERSION) return { applied: false, version: SNAPSHOT_VERSION };
    for (const batch of snapshotBatches()) await applyCatalogBatch(tx, batch, { yieldToOtherFeeds: true });
    await tx
      .insert(catalogSeedState)
      .values({ name: SEED_NAME, version: SNAPSHOT_VERSION })
      .onConflictDoUpdate({ target: catalogSeedState.name, set: { version: SNAPSHOT_VERSION, appliedAt: sql`now()` } });
    return { applied: true, version: SNAPSHOT_VERSION };
  });
}

const ensured = new WeakMap<object, Promise<unknown>>();

/** ensurePublicCatalog once per database handle in this process (for lazy callers such as routes). */
export function ensurePublicCatalogOnce(db: Db): Promise<unknown> {
  let p = ensured.get(db);
  if (!p) {
    p = ensurePublicCatalog(db).catch((e) => {
      ensured.delete(db);
      throw e;
    });
    ensured.set(db, p);
  }
  return p;
}

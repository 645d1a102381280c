import { and, eq, inArray, sql, type SQL } from "drizzle-orm";
import type { AnyPgColumn } from "drizzle-orm/pg-core";
import type { DbOrTx, Db } from "../db/index.ts";
import { catalogSkus, leaseMenuItems, offers, skuPriceTiers } from "../db/schema/index.ts";
import { instanceFamilyOf, type CatalogBatch } from "./model.ts";
import { bumpCatalogGeneration } from "./pricingInputs.ts";

const CHUNK = 500;

function chunks<T>(xs: T[], n = CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += n) out.push(xs.slice(i, i + n));
  return out;
}


/** Rows of a driver-neutral `tx.execute` result (PGlite: `{ rows }`, postgres.js: an array). */
function rowsOf<T>(res: unknown): T[] {
  return (Array.isArray(res) ? res : (res as { rows: T[] }).rows) as T[];
}

/**
 * Bulk upsert through one jsonb parameter (`jsonb_to_recordset`): thousands of rows cost one
 * statement and one parameter instead of tens of thousands of bind parameters.
 */
async function bulkUpsert<T>(tx: DbOrTx, table: string, columns: [string, string][], rows: Record<string, unknown>[], conflict: string, returning: string): Promise<T[]> {
  if (!rows.length) return [];
  const cols = columns.map(([c]) => c).join(", ");
  const types = columns.map(([c, t]) => `${c} ${t}`).join(", ");
  const res = await tx.execute(
    sql`INSERT INTO ${sql.raw(table)} (${sql.raw(cols)}) SELECT ${sql.raw(cols)} FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS x(${sql.raw(types)}) ${sql.raw(conflict)} RETURNING ${sql.raw(returning)}`,
  );
  return rowsOf<T>(res);
}

/** `col NOT IN (the list)`, the list passed as one jsonb parameter. */
function notInJson(col: AnyPgColumn, values: string[]): SQL {
  return sql`${col} NOT IN (SELECT jsonb_array_elements_text(${JSON.stringify(values)}::jsonb))`;
}

export interface ApplyResult {
  skus: number;
  offers: number;
  leaseMenuItems: number;
  withdrawnSkus: number;
  withdrawnOffers: number;
  withdrawnLeaseMenuItems: number;
}

/**
 * Applies one import in one transaction: upserts SKUs (with their on-demand tiers), offers and
 * lease menu items by their provider-side keys (ids stay stable, so estimate lines and stored
 * selections keep matching), and marks unavailable — never deletes — what this feed published
 * before and no longer lists.
 */
export async function applyCatalogBatch(db: Db | DbOrTx, batch: CatalogBatch): Promise<ApplyResult> {
  return (db as Db).transaction(async (tx) => {
    const feed = batch.source;
    const scope = and(eq(catalogSkus.catalogSkuOrgId, batch.orgId), eq(catalogSkus.provider, batch.provider));
    const skuIds = new Map<string, string>();

    // SKUs: a SKU listed twice keeps its last entry.
    const skus = [...new Map(batch.skus.map((s) => [s.providerSkuId, s])).values()];
    const skuCols = ["display_name", "instance_type", "instance_family", "service", "provider_service", "region_code", "operating_system", "database_engine", "cache_engine", "usage_type", "usage_unit", "source", "feed", "as_of"];
    for (const part of chunks(skus, 2000)) {
      const rows = await bulkUpsert<{ id: string; provider_sku_id: string }>(
        tx,
        "catalog_skus",
        [["catalog_sku_org_id", "text"], ["provider", "text"], ["provider_sku_id", "text"], ...skuCols.map((c): [string, string] => [c, "text"])],
        part.map((s) => ({
          catalog_sku_org_id: batch.orgId,
          provider: batch.provider,
          provider_sku_id: s.providerSkuId,
          display_name: s.displayName,
          instance_type: s.instanceType ?? "",
          instance_family: s.instanceFamily ?? instanceFamilyOf(s.instanceType ?? ""),
          service: s.service ?? "",
          provider_service: s.providerService ?? "",
          region_code: s.regionCode ?? "",
          operating_system: s.operatingSystem ?? "",
          database_engine: s.databaseEngine ?? "",
          cache_engine: s.cacheEngine ?? "",
          usage_type: s.usageType ?? "",
          usage_unit: s.usageUnit ?? "Hrs",
          source: s.source ?? batch.source,
          feed,
          as_of: s.asOf,
        })),
        `ON CONFLICT (catalog_sku_org_id, provider, provider_sku_id) DO UPDATE SET ${skuCols.map((c) => `${c} = excluded.${c}`).join(", ")}, is_available = true, updated_at = now()`,
        "id, provider_sku_id",
      );
      for (const r of rows) skuIds.set(r.provider_sku_id, r.id);
    }
    const ids = [...skuIds.values()];
    for (const part of chunks(ids)) await tx.delete(skuPriceTiers).where(inArray(skuPriceTiers.catalogSkuId, part));
    const tiers = skus.flatMap((s) =>
      s.tiers.map((t) => ({
        catalog_sku_id: skuIds.get(s.providerSkuId)!,
        start_quantity: t.startQuantity,
        end_quantity: t.endQuantity,
        unit_price: t.unitPrice,
        source: s.source ?? batch.source,
        as_of: s.asOf,
      })),
    );
    for (const part of chunks(tiers, 2000)) {
      await bulkUpsert(tx, "sku_price_tiers", [["catalog_sku_id", "uuid"], ["start_quantity", "numeric"], ["end_quantity", "numeric"], ["unit_price", "numeric"], ["source", "text"], ["as_of", "text"]], part, "", "id");
    }
    const withdrawnSkus = await tx
      .update(catalogSkus)
      .set({ isAvailable: false, updatedAt: sql`now()` })
      .where(and(scope, eq(catalogSkus.feed, feed), eq(catalogSkus.isAvailable, true), notInJson(catalogSkus.providerSkuId, skus.map((s) => s.providerSkuId))))
      .returning({ id: catalogSkus.id });

    // Leases may name SKUs another feed imported (e.g. a Savings Plans rate file).
    const missing = [...new Set(batch.offers.flatMap((o) => o.leases.map((l) => l.providerSkuId)))].filter((k) => !skuIds.has(k));
    for (const part of chunks(missing)) {
      const rows = await tx.select({ id: catalogSkus.id, providerSkuId: catalogSkus.providerSkuId }).from(catalogSkus).where(and(scope, inArray(catalogSkus.providerSkuId, part)));
      for (const r of rows) skuIds.set(r.providerSkuId, r.id);
    }

    const offerList = [...new Map(batch.offers.map((o) => [o.offerKey, o])).values()];
    const offerIds = new Map<string, string>();
    const offerCols: [string, string][] = [
      ["commitment_type", "text"], ["contract_term", "text"], ["payment_option", "text"], ["offering_class", "text"], ["plan_type", "text"],
      ["duration_seconds", "integer"], ["region", "text"], ["instance_type", "text"], ["instance_family", "text"], ["product_description", "text"],
      ["display_name", "text"], ["guaranteed_display_name", "text"], ["is_flexible", "boolean"], ["fee_rate", "numeric"], ["lock_in_days", "integer"],
      ["is_insured", "boolean"], ["source", "text"], ["feed", "text"], ["as_of", "text"],
    ];
    for (const part of chunks(offerList, 2000)) {
      const rows = await bulkUpsert<{ id: string; offer_key: string }>(
        tx,
        "offers",
        [["offer_org_id", "text"], ["provider", "text"], ["offer_key", "text"], ...offerCols],
        part.map((o) => ({
          offer_org_id: batch.orgId,
          provider: batch.provider,
          offer_key: o.offerKey,
          commitment_type: o.commitmentType,
          contract_term: o.contractTerm,
          payment_option: o.paymentOption,
          offering_class: o.offeringClass ?? null,
          plan_type: o.planType ?? null,
          duration_seconds: o.durationSeconds,
          region: o.region ?? null,
          instance_type: o.instanceType ?? null,
          instance_family: o.instanceFamily ?? null,
          product_description: o.productDescription ?? null,
          display_name: o.displayName,
          guaranteed_display_name: o.guaranteedDisplayName ?? null,
          is_flexible: o.isFlexible,
          fee_rate: o.feeRate ?? 0,
          lock_in_days: o.lockInDays,
          is_insured: o.isInsured ?? false,
          source: o.source ?? batch.source,
          feed,
          as_of: o.asOf,
        })),
        `ON CONFLICT (offer_org_id, provider, offer_key) DO UPDATE SET ${offerCols.map(([c]) => `${c} = excluded.${c}`).join(", ")}, is_available = true, updated_at = now()`,
        "id, offer_key",
      );
      for (const r of rows) offerIds.set(r.offer_key, r.id);
    }
    const withdrawnOffers = await tx
      .update(offers)
      .set({ isAvailable: false, updatedAt: sql`now()` })
      .where(
        and(
          eq(offers.offerOrgId, batch.orgId),
          eq(offers.provider, batch.provider),
          eq(offers.feed, feed),
          eq(offers.isAvailable, true),
          notInJson(offers.offerKey, offerList.map((o) => o.offerKey)),
        ),
      )
      .returning({ id: offers.id });

    const leaseMap = new Map<string, { offerId: string; catalogSkuId: string; recurringHourlyRate: string; upfrontCost: string; source: string; asOf: string }>();
    for (const o of offerList) {
      for (const l of o.leases) {
        const skuId = skuIds.get(l.providerSkuId);
        if (!skuId) continue; // a rate for a SKU nobody imported: nothing to attach it to
        const offerId = offerIds.get(o.offerKey)!;
        leaseMap.set(`${offerId}|${skuId}`, {
          offerId,
          catalogSkuId: skuId,
          recurringHourlyRate: String(l.recurringHourlyRate),
          upfrontCost: String(l.upfrontCost),
          source: l.source ?? o.source ?? batch.source,
          asOf: l.asOf,
        });
      }
    }
    const leases = [...leaseMap.values()];
    // Mark this feed's lease menu items unavailable, then the upsert below revives the listed ones
    // (one transaction: no reader sees the intermediate state).
    const previouslyAvailable = new Set<string>();
    {
      const rows = await tx
        .update(leaseMenuItems)
        .set({ isAvailable: false })
        .where(and(sql`${leaseMenuItems.offerId} IN (SELECT (jsonb_array_elements_text(${JSON.stringify([...offerIds.values()])}::jsonb))::uuid)`, eq(leaseMenuItems.isAvailable, true)))
        .returning({ id: leaseMenuItems.id });
      for (const r of rows) previouslyAvailable.add(r.id);
    }
    for (const part of chunks(leases, 2000)) {
      const rows = await bulkUpsert<{ id: string }>(
        tx,
        "lease_menu_items",
        [["offer_id", "uuid"], ["catalog_sku_id", "uuid"], ["recurring_hourly_rate", "numeric"], ["upfront_cost", "numeric"], ["source", "text"], ["feed", "text"], ["as_of", "text"]],
        part.map((l) => ({ offer_id: l.offerId, catalog_sku_id: l.catalogSkuId, recurring_hourly_rate: l.recurringHourlyRate, upfront_cost: l.upfrontCost, source: l.source, feed, as_of: l.asOf })),
        "ON CONFLICT (offer_id, catalog_sku_id) DO UPDATE SET recurring_hourly_rate = excluded.recurring_hourly_rate, upfront_cost = excluded.upfront_cost, source = excluded.source, feed = excluded.feed, as_of = excluded.as_of, is_available = true, updated_at = now()",
        "id",
      );
      for (const r of rows) previouslyAvailable.delete(r.id);
    }
    const withdrawnLeaseMenuItems = previouslyAvailable.size;
    await bumpCatalogGeneration(tx);
    return {
      skus: skus.length,
      offers: offerList.length,
      leaseMenuItems: leases.length,
      withdrawnSkus: withdrawnSkus.length,
      withdrawnOffers: withdrawnOffers.length,
      withdrawnLeaseMenuItems,
    };
  });
}

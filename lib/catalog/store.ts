import { sql } from "drizzle-orm";
import type { DbOrTx, Db } from "../db/index.ts";
import { instanceFamilyOf, SNAPSHOT_FEED, type CatalogBatch, type OfferInput, type SkuInput } from "./model.ts";
import { bumpCatalogGeneration } from "./pricingInputs.ts";
import { memoryBudget } from "../adapters/gc.ts";
import type { Provider } from "../pricing/index.ts";
import { rowsOf } from "../billing/sql.ts";

/**
 * Rows per statement: one jsonb parameter each, so the size bounds memory, not bind parameters.
 * Key lookups are `= ANY(ARRAY(…))`, an index condition: `IN (SELECT jsonb_array_elements…)` let
 * the planner, blind to a table grown inside the transaction, scan every offer once per key list.
 */
const SKU_CHUNK = 2000;
const LEASE_CHUNK = 5000;
/** Resident size past which an apply asks for a collection between chunks. */
const APPLY_RSS_BUDGET = 96 * 1024 * 1024;
/** Rows written in one apply beyond which the statistics are refreshed before the withdrawal queries. */
const ANALYZE_AFTER_ROWS = 5000;

/**
 * Bulk upsert through one jsonb parameter (`jsonb_to_recordset`): thousands of rows cost one
 * statement and one parameter instead of tens of thousands of bind parameters.
 */
async function bulkUpsert<T>(tx: DbOrTx, table: string, columns: [string, string][], rows: Record<string, unknown>[], conflict: string, returning: string): Promise<T[]> {
  if (!rows.length) return [];
  const cols = columns.map(([c]) => c).join(", ");
  const types = columns.map(([c, t]) => `${c} ${t}`).join(", ");
  const res = await tx.execute(
    sql`INSERT INTO ${sql.raw(table)} AS t (${sql.raw(cols)}) SELECT ${sql.raw(cols)} FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS x(${sql.raw(types)}) ${sql.raw(conflict)} RETURNING ${sql.raw(returning)}`,
  );
  return rowsOf<T>(res);
}

/**
 * `ON CONFLICT … DO UPDATE` that writes only what differs (a refresh that changes nothing writes
 * nothing) and, when the writer yields to other feeds (the bundled snapshot), never takes over a
 * row another feed (a live refresh, an import) owns.
 */
function upsertClause(target: string, cols: string[], yieldToOtherFeeds: boolean, ignored: string[] = PROVENANCE): string {
  const set = cols.map((c) => `${c} = excluded.${c}`).join(", ");
  const compared = cols.filter((c) => !ignored.includes(c));
  // A live feed always takes a row over from the snapshot, even when the row says the same.
  const takeover = ignored.includes("feed") ? ` OR (t.feed = '${SNAPSHOT_FEED}' AND excluded.feed <> t.feed)` : "";
  const differs = `((${compared.map((c) => `t.${c}`).join(", ")}, t.is_available) IS DISTINCT FROM (${compared.map((c) => `excluded.${c}`).join(", ")}, true)${takeover})`;
  const owner = yieldToOtherFeeds ? ` AND t.feed = excluded.feed` : "";
  return `ON CONFLICT (${target}) DO UPDATE SET ${set}, is_available = true, updated_at = now() WHERE ${differs}${owner}`;
}

/**
 * A row whose only difference is its provenance is left alone: a new AWS file version that
 * repeats a price must not rewrite it (its `as_of` stays the day the price took effect; when the
 * prices were last confirmed is the feed's `checked_at`). The owning feed is compared, so a
 * refresh takes a snapshot row over even at the snapshot's price.
 */
const PROVENANCE = ["source", "as_of"];
/**
 * Offers carry no price: their owner is not compared either, which keeps an offer shared by
 * several feeds (a savings plan priced region by region) from changing hands, and every
 * replica's pricing cache from being invalidated, on every region's refresh.
 */
const OFFER_PROVENANCE = ["feed", "source", "as_of"];

export interface ApplyResult {
  skus: number;
  offers: number;
  leaseMenuItems: number;
  withdrawnSkus: number;
  withdrawnOffers: number;
  withdrawnLeaseMenuItems: number;
  /** Rows actually inserted, changed or withdrawn (0: the catalog already said exactly this). */
  changed: number;
}

export interface ApplyOptions {
  /** The bundled snapshot: it fills gaps but never overwrites a row a live refresh or an import owns. */
  yieldToOtherFeeds?: boolean;
  /**
   * Refuse (and roll back) an apply that would withdraw more than this share of the feed's
   * available SKUs or prices: an empty or gutted answer from a provider, a mirror or a proxy must
   * not make a whole region unavailable. Unset: no limit (imports, the snapshot, `--force`).
   */
  maxWithdrawnShare?: number;
}

/** An apply refused by `maxWithdrawnShare`: nothing of it was written. */
export class WithdrawalRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WithdrawalRefusedError";
  }
}

/** A feed's content as streams: SKUs first, then the offers whose leases name them. */
export interface CatalogStream {
  provider: Provider;
  /** PUBLIC_CATALOG or an org id (custom-priced SKUs). */
  orgId: string;
  /** The feed: what it no longer lists is withdrawn. */
  source: string;
  skus: AsyncIterable<SkuInput> | Iterable<SkuInput>;
  offers: AsyncIterable<OfferInput> | Iterable<OfferInput>;
}

async function* chunked<T>(xs: AsyncIterable<T> | Iterable<T>, size: (chunk: T[], next: T) => boolean): AsyncGenerator<T[]> {
  // A feed of a large region is hundreds of chunks, each leaving megabytes of JSON text behind.
  const collectIfOver = memoryBudget(APPLY_RSS_BUDGET);
  let chunk: T[] = [];
  for await (const x of xs as AsyncIterable<T>) {
    if (chunk.length && size(chunk, x)) {
      yield chunk;
      chunk = [];
      collectIfOver();
    }
    chunk.push(x);
  }
  if (chunk.length) yield chunk;
}

const SKU_COLS = ["display_name", "instance_type", "instance_family", "service", "provider_service", "region_code", "operating_system", "database_engine", "cache_engine", "usage_type", "usage_unit", "source", "feed", "as_of"];
const OFFER_COLS: [string, string][] = [
  ["commitment_type", "text"], ["contract_term", "text"], ["payment_option", "text"], ["offering_class", "text"], ["plan_type", "text"],
  ["duration_seconds", "integer"], ["region", "text"], ["instance_type", "text"], ["instance_family", "text"], ["product_description", "text"],
  ["display_name", "text"], ["guaranteed_display_name", "text"], ["is_flexible", "boolean"], ["fee_rate", "numeric"], ["lock_in_days", "integer"],
  ["is_insured", "boolean"], ["source", "text"], ["feed", "text"], ["as_of", "text"],
];
const LEASE_COLS: [string, string][] = [["recurring_hourly_rate", "numeric"], ["upfront_cost", "numeric"], ["source", "text"], ["feed", "text"], ["as_of", "text"]];

/** A tier set as comparable text: numbers as numbers (the database pads numerics); provenance is not compared (see PROVENANCE). */
function tierSignature(tiers: { start: unknown; end: unknown; price: unknown }[]): string {
  return tiers
    .map((t) => [Number(t.start), t.end === null || t.end === undefined ? "" : Number(t.end), Number(t.price)].join(","))
    .sort()
    .join(";");
}

/**
 * Applies one feed in one transaction, streaming: SKUs (with their on-demand tiers), offers and
 * lease menu items are upserted by their provider-side keys in chunks (ids stay stable, so
 * estimate lines and stored selections keep matching), only rows that differ are written, and
 * what this feed published before but no longer lists is marked unavailable — never deleted.
 * The keys seen are kept in a temporary table, so memory does not grow with the feed.
 */
export async function applyCatalogStream(db: Db | DbOrTx, stream: CatalogStream, opts: ApplyOptions = {}): Promise<ApplyResult> {
  const yieldTo = opts.yieldToOtherFeeds ?? false;
  return (db as Db).transaction(async (tx) => {
    const feed = stream.source;
    const result: ApplyResult = { skus: 0, offers: 0, leaseMenuItems: 0, withdrawnSkus: 0, withdrawnOffers: 0, withdrawnLeaseMenuItems: 0, changed: 0 };
    await tx.execute(sql`CREATE TEMP TABLE IF NOT EXISTS catalog_apply_seen (kind text NOT NULL, key text NOT NULL, PRIMARY KEY (kind, key)) ON COMMIT DROP`);
    await tx.execute(sql`DELETE FROM catalog_apply_seen`);
    const remember = (kind: string, keys: string[]) =>
      keys.length ? tx.execute(sql`INSERT INTO catalog_apply_seen (kind, key) SELECT ${kind}, k FROM jsonb_array_elements_text(${JSON.stringify(keys)}::jsonb) AS k ON CONFLICT DO NOTHING`) : null;
    /** SKU ids (and owning feed) of the given provider keys in this catalog. */
    const skuIdsOf = async (keys: string[]) =>
      rowsOf<{ id: string; provider_sku_id: string; feed: string }>(
        await tx.execute(sql`SELECT id, provider_sku_id, feed FROM catalog_skus WHERE catalog_sku_org_id = ${stream.orgId} AND provider = ${stream.provider}
          AND provider_sku_id = ANY(ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(keys)}::jsonb)))`),
      );

    for await (const raw of chunked(stream.skus, (c) => c.length >= SKU_CHUNK)) {
      // A SKU listed twice keeps its last entry.
      const skus = [...new Map(raw.map((s) => [s.providerSkuId, s])).values()];
      const changed = await bulkUpsert<{ id: string }>(
        tx,
        "catalog_skus",
        [["catalog_sku_org_id", "text"], ["provider", "text"], ["provider_sku_id", "text"], ...SKU_COLS.map((c): [string, string] => [c, "text"])],
        skus.map((s) => ({
          catalog_sku_org_id: stream.orgId,
          provider: stream.provider,
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
          source: s.source ?? stream.source,
          feed,
          as_of: s.asOf,
        })),
        upsertClause("catalog_sku_org_id, provider, provider_sku_id", SKU_COLS, yieldTo),
        "id",
      );
      result.changed += changed.length;
      const changedIds = new Set(changed.map((r) => r.id));
      result.skus += skus.length;
      await remember("s", skus.map((s) => s.providerSkuId));

      // Tiers: replaced only for SKUs this feed owns whose tiers differ.
      const owned = (await skuIdsOf(skus.map((s) => s.providerSkuId))).filter((r) => r.feed === feed);
      const idOf = new Map(owned.map((r) => [r.provider_sku_id, r.id]));
      const existing = new Map<string, { start: unknown; end: unknown; price: unknown; source: string; asOf: string }[]>();
      if (owned.length) {
        const rows = rowsOf<{ sku: string; start: string; end: string | null; price: string; source: string; as_of: string }>(
          await tx.execute(sql`SELECT catalog_sku_id AS sku, start_quantity AS start, end_quantity AS "end", unit_price AS price, source, as_of FROM sku_price_tiers
            WHERE catalog_sku_id = ANY(ARRAY(SELECT (jsonb_array_elements_text(${JSON.stringify(owned.map((r) => r.id))}::jsonb))::uuid))`),
        );
        for (const r of rows) (existing.get(r.sku) ?? existing.set(r.sku, []).get(r.sku)!).push({ start: r.start, end: r.end, price: r.price, source: r.source, asOf: r.as_of });
      }
      const replace: string[] = [];
      const tiers: Record<string, unknown>[] = [];
      for (const s of skus) {
        const id = idOf.get(s.providerSkuId);
        if (!id) continue;
        const source = s.source ?? stream.source;
        const next = s.tiers.map((t) => ({ start: t.startQuantity, end: t.endQuantity, price: t.unitPrice, source, asOf: s.asOf }));
        // Tiers follow their SKU: rewritten when their prices differ or the SKU row itself changed
        // (a refresh taking a snapshot SKU over re-labels its tiers too).
        if (!changedIds.has(id) && tierSignature(next) === tierSignature(existing.get(id) ?? [])) continue;
        replace.push(id);
        for (const t of s.tiers) tiers.push({ catalog_sku_id: id, start_quantity: t.startQuantity, end_quantity: t.endQuantity, unit_price: t.unitPrice, source, as_of: s.asOf });
      }
      if (replace.length) {
        // The SKU's provenance is its on-demand price's: it moves with the tiers.
        const moved = skus.filter((s) => replace.includes(idOf.get(s.providerSkuId)!)).map((s) => ({ id: idOf.get(s.providerSkuId)!, source: s.source ?? stream.source, as_of: s.asOf }));
        await tx.execute(sql`UPDATE catalog_skus c SET source = x.source, as_of = x.as_of, updated_at = now()
          FROM jsonb_to_recordset(${JSON.stringify(moved)}::jsonb) AS x(id uuid, source text, as_of text)
          WHERE c.id = x.id AND (c.source, c.as_of) IS DISTINCT FROM (x.source, x.as_of)`);
        await tx.execute(sql`DELETE FROM sku_price_tiers WHERE catalog_sku_id = ANY(ARRAY(SELECT (jsonb_array_elements_text(${JSON.stringify(replace)}::jsonb))::uuid))`);
        for (let i = 0; i < tiers.length; i += SKU_CHUNK) {
          await bulkUpsert(tx, "sku_price_tiers", [["catalog_sku_id", "uuid"], ["start_quantity", "numeric"], ["end_quantity", "numeric"], ["unit_price", "numeric"], ["source", "text"], ["as_of", "text"]], tiers.slice(i, i + SKU_CHUNK), "", "id");
        }
        result.changed += replace.length;
      }
    }

    // Offers in chunks bounded by their lease count (a compute savings plan prices thousands of SKUs).
    const leaseCount = (c: OfferInput[]) => c.reduce((n, o) => n + o.leases.length, 0);
    for await (const raw of chunked(stream.offers, (c, next) => c.length >= SKU_CHUNK || leaseCount(c) + next.leases.length > LEASE_CHUNK)) {
      const offerList = [...new Map(raw.map((o) => [o.offerKey, o])).values()];
      const changed = await bulkUpsert<{ id: string }>(
        tx,
        "offers",
        [["offer_org_id", "text"], ["provider", "text"], ["offer_key", "text"], ...OFFER_COLS],
        offerList.map((o) => ({
          offer_org_id: stream.orgId,
          provider: stream.provider,
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
          source: o.source ?? stream.source,
          feed,
          as_of: o.asOf,
        })),
        upsertClause("offer_org_id, provider, offer_key", OFFER_COLS.map(([c]) => c), yieldTo, OFFER_PROVENANCE),
        "id",
      );
      result.changed += changed.length;
      result.offers += offerList.length;
      await remember("o", offerList.map((o) => o.offerKey));

      const offerRows = rowsOf<{ id: string; offer_key: string }>(
        await tx.execute(sql`SELECT id, offer_key FROM offers WHERE offer_org_id = ${stream.orgId} AND provider = ${stream.provider}
          AND offer_key = ANY(ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(offerList.map((o) => o.offerKey))}::jsonb)))`),
      );
      const offerIds = new Map(offerRows.map((r) => [r.offer_key, r.id]));
      // Leases may name SKUs another feed imported (e.g. a Savings Plans rate file).
      const skuIds = new Map((await skuIdsOf([...new Set(offerList.flatMap((o) => o.leases.map((l) => l.providerSkuId)))])).map((r) => [r.provider_sku_id, r.id]));
      const leaseMap = new Map<string, Record<string, unknown>>();
      for (const o of offerList) {
        const offerId = offerIds.get(o.offerKey)!;
        for (const l of o.leases) {
          const skuId = skuIds.get(l.providerSkuId);
          if (!skuId) continue; // a rate for a SKU nobody imported: nothing to attach it to
          leaseMap.set(`${offerId}|${skuId}`, {
            offer_id: offerId,
            catalog_sku_id: skuId,
            recurring_hourly_rate: String(l.recurringHourlyRate),
            upfront_cost: String(l.upfrontCost),
            source: l.source ?? o.source ?? stream.source,
            feed,
            as_of: l.asOf,
          });
        }
      }
      const leases = [...leaseMap.values()];
      for (let i = 0; i < leases.length; i += LEASE_CHUNK) {
        const part = leases.slice(i, i + LEASE_CHUNK);
        const rows = await bulkUpsert<{ id: string }>(
          tx,
          "lease_menu_items",
          [["offer_id", "uuid"], ["catalog_sku_id", "uuid"], ...LEASE_COLS],
          part,
          upsertClause("offer_id, catalog_sku_id", LEASE_COLS.map(([c]) => c), yieldTo),
          "id",
        );
        result.changed += rows.length;
      }
      result.leaseMenuItems += leases.length;
      await remember("l", [...leaseMap.keys()]);
    }

    // The planner's statistics predate this transaction: after a large write (a first refresh of a
    // region) it would join the grown tables as if they were still small, for minutes. ANALYZE
    // counts the transaction's own rows.
    if (result.changed > ANALYZE_AFTER_ROWS) await tx.execute(sql`ANALYZE catalog_skus, offers, lease_menu_items, catalog_apply_seen`);

    // Withdrawals: this feed's rows that it no longer lists.
    if (opts.maxWithdrawnShare !== undefined) {
      const [c] = rowsOf<{ skus: number; gone_skus: number; leases: number; gone_leases: number }>(
        await tx.execute(sql`SELECT
            (SELECT count(*)::int FROM catalog_skus WHERE catalog_sku_org_id = ${stream.orgId} AND provider = ${stream.provider} AND feed = ${feed} AND is_available) AS skus,
            (SELECT count(*)::int FROM catalog_skus WHERE catalog_sku_org_id = ${stream.orgId} AND provider = ${stream.provider} AND feed = ${feed} AND is_available
               AND NOT EXISTS (SELECT 1 FROM catalog_apply_seen WHERE kind = 's' AND key = catalog_skus.provider_sku_id)) AS gone_skus,
            (SELECT count(*)::int FROM lease_menu_items l JOIN offers o ON o.id = l.offer_id WHERE o.offer_org_id = ${stream.orgId} AND o.provider = ${stream.provider} AND l.feed = ${feed} AND l.is_available) AS leases,
            (SELECT count(*)::int FROM lease_menu_items l JOIN offers o ON o.id = l.offer_id WHERE o.offer_org_id = ${stream.orgId} AND o.provider = ${stream.provider} AND l.feed = ${feed} AND l.is_available
               AND NOT EXISTS (SELECT 1 FROM catalog_apply_seen WHERE kind = 'l' AND key = l.offer_id::text || '|' || l.catalog_sku_id::text)) AS gone_leases`),
      );
      const share = opts.maxWithdrawnShare;
      for (const [gone, total, what] of [[Number(c!.gone_skus), Number(c!.skus), "SKUs"], [Number(c!.gone_leases), Number(c!.leases), "commitment prices"]] as const) {
        if (gone > 0 && gone > total * share) {
          throw new WithdrawalRefusedError(`refused: it would withdraw ${gone} of the feed's ${total} available ${what} (more than ${Math.round(share * 100)} %); if the provider really withdrew them, refresh with --force`);
        }
      }
    }
    const withdrawnSkus = rowsOf<{ id: string }>(
      await tx.execute(sql`UPDATE catalog_skus SET is_available = false, updated_at = now()
        WHERE catalog_sku_org_id = ${stream.orgId} AND provider = ${stream.provider} AND feed = ${feed} AND is_available
          AND NOT EXISTS (SELECT 1 FROM catalog_apply_seen WHERE kind = 's' AND key = catalog_skus.provider_sku_id) RETURNING id`),
    );
    const withdrawnLeases = rowsOf<{ id: string }>(
      await tx.execute(sql`UPDATE lease_menu_items l SET is_available = false, updated_at = now()
        FROM offers o
        WHERE o.id = l.offer_id AND o.offer_org_id = ${stream.orgId} AND o.provider = ${stream.provider} AND l.feed = ${feed} AND l.is_available
          AND NOT EXISTS (SELECT 1 FROM catalog_apply_seen WHERE kind = 'l' AND key = l.offer_id::text || '|' || l.catalog_sku_id::text) RETURNING l.id`),
    );
    const withdrawnOffers = rowsOf<{ id: string }>(
      await tx.execute(sql`UPDATE offers SET is_available = false, updated_at = now()
        WHERE offer_org_id = ${stream.orgId} AND provider = ${stream.provider} AND feed = ${feed} AND is_available
          AND NOT EXISTS (SELECT 1 FROM catalog_apply_seen WHERE kind = 'o' AND key = offers.offer_key)
          -- An offer shared by several feeds (a savings plan priced region by region) stays while another feed still prices it.
          AND NOT EXISTS (SELECT 1 FROM lease_menu_items l WHERE l.offer_id = offers.id AND l.is_available AND l.feed <> ${feed})
        RETURNING id`),
    );
    result.withdrawnSkus = withdrawnSkus.length;
    result.withdrawnOffers = withdrawnOffers.length;
    result.withdrawnLeaseMenuItems = withdrawnLeases.length;
    result.changed += withdrawnSkus.length + withdrawnOffers.length + withdrawnLeases.length;
    await tx.execute(sql`DELETE FROM catalog_apply_seen`);
    if (result.changed) await bumpCatalogGeneration(tx);
    return result;
  });
}

/** Applies a whole in-memory batch (the bundled snapshot, `catalog import`): see applyCatalogStream. */
export function applyCatalogBatch(db: Db | DbOrTx, batch: CatalogBatch, opts: ApplyOptions = {}): Promise<ApplyResult> {
  return applyCatalogStream(db, batch, opts);
}

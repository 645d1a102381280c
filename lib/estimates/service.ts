import { and, asc, desc, eq, inArray, isNull, or, sql } from "drizzle-orm";
import type { Db, DbOrTx } from "../db/index.ts";
import { catalogSkus, costEstimates, estimateLineItems } from "../db/schema/index.ts";
import { ConflictError, NotFoundError, ValidationError } from "../errors.ts";
import { checkVersion, withVersion, type ExpectedVersions } from "../versions.ts";
import type { Page } from "../http/paging.ts";
import { loadPricingInputs } from "../catalog/pricingInputs.ts";
import { PUBLIC_CATALOG } from "../catalog/model.ts";
import { ensurePublicCatalogOnce } from "../catalog/seed.ts";
import { isStale, type Freshness } from "../catalog/freshness.ts";
import {
  findExactOption,
  priceEstimate,
  priceLine,
  type CommitmentSelection,
  type EstimatePricing,
  type LinePricing,
  type PricingLine,
  type Provider,
  type QuantityBasis,
} from "../pricing/index.ts";
import { displayEstimatePricing, displayLine } from "../pricing/display.ts";

import { catalogSkuDescriptor, type CatalogSkuDescriptor } from "../catalog/descriptor.ts";

export const DEFAULT_ESTIMATE_NAME = "Untitled estimate";

export type { CatalogSkuDescriptor } from "../catalog/descriptor.ts";

export interface LineItem {
  id: string;
  catalog_sku: CatalogSkuDescriptor;
  usage_unit: string | null;
  label: string | null;
  quantity: number;
  quantity_basis: QuantityBasis;
  is_enabled: boolean;
  selected_commitment_option: CommitmentSelection | null;
  created_at: string;
  updated_at: string;
}

export interface EstimateSummary {
  id: string;
  provider: Provider;
  name: string;
  description: string | null;
  line_count: number;
  created_at: string;
  updated_at: string;
}

export interface EstimateDocument {
  id: string;
  provider: Provider;
  name: string;
  description: string | null;
  source_draft_id: string | null;
  created_at: string;
  updated_at: string;
  line_items: LineItem[];
  pricing: EstimatePricing | null;
}

export interface LineItemInput {
  catalog_sku_id: string;
  catalog_sku_org_id: string;
  quantity?: number;
  quantity_basis?: QuantityBasis;
  label?: string | null;
  is_enabled?: boolean;
  selected_commitment_option?: CommitmentSelection | null;
}

export interface CreateEstimateInput {
  provider: Provider;
  name?: string;
  description?: string | null;
  source_draft_id?: string | null;
  line_items?: LineItemInput[];
}

/**
 * How an estimate is read: without pricing, or priced, which needs the clock and
 * PRICE_STALE_DAYS to say whether its prices are stale (`freshnessOf(s)`).
 */
export type ReadOptions =
  | { includePricing: false }
  | { includePricing?: true; includeOptions?: boolean; onlyMostFlexibleCommitmentType?: boolean; freshness: Freshness };

type EstimateRow = typeof costEstimates.$inferSelect;
type LineRow = typeof estimateLineItems.$inferSelect;

const iso = (d: Date) => d.toISOString();

/**
 * updated_at of a change: the database's wall clock (microseconds), so "most recently updated
 * first" orders changes made within the same millisecond too.
 */
const TOUCH = sql`clock_timestamp()`;
const NEXT_VERSION = sql`${costEstimates.version} + 1`;

/** Only the six identifying fields are kept from a chosen option (extra fields are ignored). */
export function selectionOf(o: CommitmentSelection): CommitmentSelection {
  return {
    commitment_type: o.commitment_type,
    contract_term: o.contract_term,
    payment_option: o.payment_option,
    lease_menu_item_id: o.lease_menu_item_id,
    offer_id: o.offer_id,
    offer_org_id: o.offer_org_id,
  };
}

export function lineItemOf(r: LineRow): LineItem {
  return {
    id: r.id,
    catalog_sku: r.skuSnapshot as CatalogSkuDescriptor,
    usage_unit: r.usageUnit,
    label: r.label,
    quantity: Number(r.quantity),
    quantity_basis: r.quantityBasis as QuantityBasis,
    is_enabled: r.isEnabled,
    selected_commitment_option: (r.selectedCommitmentOption as CommitmentSelection | null) ?? null,
    created_at: iso(r.createdAt),
    updated_at: iso(r.updatedAt),
  };
}

function pricingLineOf(r: LineRow): PricingLine {
  return {
    id: r.id,
    catalogSkuId: r.catalogSkuId,
    quantity: Number(r.quantity),
    quantityBasis: r.quantityBasis as QuantityBasis,
    isEnabled: r.isEnabled,
    selected: (r.selectedCommitmentOption as CommitmentSelection | null) ?? null,
  };
}

function liveEstimate(orgId: string, id: string) {
  return and(eq(costEstimates.id, id), eq(costEstimates.orgId, orgId), isNull(costEstimates.deletedAt));
}

async function findLive(db: DbOrTx, orgId: string, id: string, lock = false): Promise<EstimateRow> {
  const q = db.select().from(costEstimates).where(liveEstimate(orgId, id));
  const [row] = lock ? await q.for("update") : await q;
  if (!row) throw new NotFoundError("No such cost estimate.");
  return row;
}

export async function listEstimates(db: DbOrTx, orgId: string, provider: Provider): Promise<EstimateSummary[]> {
  return (await listEstimatesPage(db, orgId, provider, { offset: 0, limit: null })).items;
}

/** One page of the list (most recently updated first) and the number of estimates in it all. */
export async function listEstimatesPage(db: DbOrTx, orgId: string, provider: Provider, page: { offset: number; limit: number | null }): Promise<Page<EstimateSummary>> {
  const live = and(eq(costEstimates.orgId, orgId), eq(costEstimates.provider, provider), isNull(costEstimates.deletedAt));
  const q = db
    .select({
      e: costEstimates,
      lineCount: sql<number>`(SELECT count(*)::int FROM estimate_line_items li WHERE li.estimate_id = cost_estimates.id)`,
    })
    .from(costEstimates)
    .where(live)
    .orderBy(desc(costEstimates.updatedAt), desc(costEstimates.id))
    .offset(page.offset);
  const rows = page.limit === null ? await q : await q.limit(page.limit);
  const total =
    page.limit === null ? rows.length : Number((await db.select({ n: sql<number>`count(*)::int` }).from(costEstimates).where(live))[0]!.n);
  const items = rows.map(({ e, lineCount }) => ({
    id: e.id,
    provider: e.provider as Provider,
    name: e.name,
    description: e.description,
    line_count: Number(lineCount),
    created_at: iso(e.createdAt),
    updated_at: iso(e.updatedAt),
  }));
  return { items, total };
}

/**
 * Validates line inputs against the catalog visible to the org (rule 3) and the current
 * options of each SKU (rule 10), and returns the rows to insert. Errors name the offending
 * line (`line_items.<i>.<field>`).
 */
async function resolveLineInputs(tx: DbOrTx, orgId: string, estimate: EstimateRow, inputs: LineItemInput[]) {
  if (!inputs.length) return [];
  const ids = [...new Set(inputs.map((l) => l.catalog_sku_id))];
  const skus = await tx
    .select()
    .from(catalogSkus)
    .where(and(inArray(catalogSkus.id, ids), or(eq(catalogSkus.catalogSkuOrgId, PUBLIC_CATALOG), eq(catalogSkus.catalogSkuOrgId, orgId))));
  const byId = new Map(skus.map((s) => [s.id, s]));
  const needsOptions = inputs.some((l) => l.selected_commitment_option);
  const pricing = needsOptions ? await loadPricingInputs(tx, orgId, ids) : new Map();
  return inputs.map((l, i) => {
    const sku = byId.get(l.catalog_sku_id);
    if (!sku || sku.catalogSkuOrgId !== l.catalog_sku_org_id || !sku.isAvailable) {
      throw new ValidationError(
        `line_items[${i}]: no available catalog SKU ${l.catalog_sku_id} in catalog "${l.catalog_sku_org_id}" (use the public catalog or your organization's custom SKUs).`,
        { [`line_items.${i}.catalog_sku_id`]: ["is not a known catalog SKU"] },
        "unknown_catalog_sku",
      );
    }
    if (sku.provider !== estimate.provider) {
      throw new ValidationError(
        `line_items[${i}]: the catalog SKU is a ${sku.provider} SKU but the estimate is for ${estimate.provider}.`,
        { [`line_items.${i}.catalog_sku_id`]: [`must be a ${estimate.provider} SKU`] },
        "provider_mismatch",
      );
    }
    const selected = l.selected_commitment_option ? selectionOf(l.selected_commitment_option) : null;
    if (selected && !findExactOption(pricing.get(sku.id), selected)) throw unknownOption(`line_items.${i}.selected_commitment_option`);
    return {
      estimateId: estimate.id,
      orgId,
      catalogSkuId: sku.id,
      catalogSkuOrgId: sku.catalogSkuOrgId,
      skuSnapshot: catalogSkuDescriptor(sku),
      usageUnit: sku.usageUnit,
      label: l.label ?? null,
      quantity: String(l.quantity ?? 1),
      quantityBasis: l.quantity_basis ?? "resource_count",
      isEnabled: l.is_enabled ?? true,
      selectedCommitmentOption: selected,
    };
  });
}

function unknownOption(field: string) {
  return new ValidationError(
    "The selected commitment option is not a current option of this line: copy commitment_type, contract_term, payment_option, lease_menu_item_id, offer_id and offer_org_id from an entry of the line's commitment_options.",
    { [field]: ["does not match a current commitment option"] },
    "unknown_commitment_option",
  );
}

async function insertLines(tx: DbOrTx, rows: Awaited<ReturnType<typeof resolveLineInputs>>) {
  for (let i = 0; i < rows.length; i += 500) await tx.insert(estimateLineItems).values(rows.slice(i, i + 500));
}

/**
 * The draft was imported for another provider: returning that estimate would hand the client a
 * basket of the wrong cloud, so the repeat is refused instead of being idempotent.
 */
function sourceDraftConflict(draftId: string, existing: { id: string; provider: string }) {
  return new ConflictError(
    `source_draft_id ${draftId} was already imported as ${existing.provider} cost estimate ${existing.id}; delete that estimate to import the draft for another provider.`,
    "source_draft_conflict",
  );
}

/**
 * Creates an estimate with its lines in one transaction. With a `source_draft_id` creation is
 * idempotent per org (rule 1): the partial unique index on live rows + ON CONFLICT DO NOTHING
 * make concurrent identical imports create exactly one estimate; the others get it unchanged,
 * or 409 `source_draft_conflict` when they ask for another provider.
 */
export async function createEstimate(db: Db, orgId: string, input: CreateEstimateInput, read: ReadOptions): Promise<EstimateDocument> {
  await ensurePublicCatalogOnce(db);
  const id = await db.transaction(async (tx) => {
    const values = {
      orgId,
      provider: input.provider,
      name: input.name ?? DEFAULT_ESTIMATE_NAME,
      description: input.description ?? null,
      sourceDraftId: input.source_draft_id ?? null,
    };
    let row: EstimateRow | undefined;
    if (values.sourceDraftId) {
      [row] = await tx
        .insert(costEstimates)
        .values(values)
        .onConflictDoNothing({ target: [costEstimates.orgId, costEstimates.sourceDraftId], where: sql`deleted_at IS NULL` })
        .returning();
      if (!row) {
        const [existing] = await tx
          .select({ id: costEstimates.id, provider: costEstimates.provider })
          .from(costEstimates)
          .where(and(eq(costEstimates.orgId, orgId), eq(costEstimates.sourceDraftId, values.sourceDraftId), isNull(costEstimates.deletedAt)));
        if (!existing) throw new Error("source_draft_id conflict without a live estimate");
        if (existing.provider !== values.provider) throw sourceDraftConflict(values.sourceDraftId, existing);
        return existing.id;
      }
    } else {
      [row] = await tx.insert(costEstimates).values(values).returning();
    }
    await insertLines(tx, await resolveLineInputs(tx, orgId, row!, input.line_items ?? []));
    return row!.id;
  });
  return getEstimate(db, orgId, id, read);
}

export async function getEstimate(db: DbOrTx, orgId: string, id: string, opts: ReadOptions): Promise<EstimateDocument> {
  const e = await findLive(db, orgId, id);
  const lines = await db.select().from(estimateLineItems).where(eq(estimateLineItems.estimateId, e.id)).orderBy(asc(estimateLineItems.seq));
  let pricing: EstimatePricing | null = null;
  if (opts.includePricing !== false) {
    const inputs = await loadPricingInputs(db, orgId, lines.map((l) => l.catalogSkuId));
    const pricingLines = lines.map(pricingLineOf);
    pricing = displayEstimatePricing(
      pricingLines,
      priceEstimate(pricingLines, inputs, {
        includeOptions: opts.includeOptions ?? false,
        onlyMostFlexibleCommitmentType: opts.onlyMostFlexibleCommitmentType ?? false,
        freshness: opts.freshness,
      }),
    );
  }
  return withVersion(
    {
      id: e.id,
      provider: e.provider as Provider,
      name: e.name,
      description: e.description,
      source_draft_id: e.sourceDraftId,
      created_at: iso(e.createdAt),
      updated_at: iso(e.updatedAt),
      line_items: lines.map(lineItemOf),
      pricing,
    },
    e.version,
  );
}

/** Rule 11: only name and description change. */
export async function patchEstimate(db: Db, orgId: string, id: string, patch: { name?: string; description?: string | null }, read: ReadOptions, ifMatch?: ExpectedVersions): Promise<EstimateDocument> {
  const set: Record<string, unknown> = { updatedAt: TOUCH, version: NEXT_VERSION };
  if (patch.name !== undefined) set.name = patch.name;
  if (patch.description !== undefined) set.description = patch.description;
  await db.transaction(async (tx) => {
    checkVersion((await findLive(tx, orgId, id, true)).version, ifMatch);
    await tx.update(costEstimates).set(set).where(liveEstimate(orgId, id));
  });
  return getEstimate(db, orgId, id, read);
}

/** Soft delete (rule 2): links from plans and shares keep pointing at the row; the draft id is released. */
export async function deleteEstimate(db: Db, orgId: string, id: string, now: Date, ifMatch?: ExpectedVersions): Promise<void> {
  await db.transaction(async (tx) => {
    checkVersion((await findLive(tx, orgId, id, true)).version, ifMatch);
    await tx.update(costEstimates).set({ deletedAt: now }).where(liveEstimate(orgId, id));
  });
}

export async function addLines(db: Db, orgId: string, estimateId: string, inputs: LineItemInput[], read: ReadOptions, ifMatch?: ExpectedVersions): Promise<EstimateDocument> {
  await ensurePublicCatalogOnce(db);
  await db.transaction(async (tx) => {
    const e = await findLive(tx, orgId, estimateId, true);
    checkVersion(e.version, ifMatch);
    await insertLines(tx, await resolveLineInputs(tx, orgId, e, inputs));
    await tx.update(costEstimates).set({ updatedAt: TOUCH, version: NEXT_VERSION }).where(eq(costEstimates.id, e.id));
  });
  return getEstimate(db, orgId, estimateId, read);
}

async function findLine(db: DbOrTx, orgId: string, estimateId: string, lineId: string): Promise<LineRow> {
  const [line] = await db
    .select()
    .from(estimateLineItems)
    .where(and(eq(estimateLineItems.id, lineId), eq(estimateLineItems.estimateId, estimateId), eq(estimateLineItems.orgId, orgId)));
  if (!line) throw new NotFoundError("No such line item in this cost estimate.");
  return line;
}

/** One line with its pricing entry (prices_as_of included), always with the full options grid. */
/** A line read alone says itself whether its prices are stale (the estimate read says it in its totals). */
function withStale(pricing: LinePricing, freshness: Freshness): LinePricing & { stale: boolean } {
  const { commitment_options, ...rest } = pricing;
  return { ...rest, stale: isStale(pricing.prices_as_of, freshness), ...(commitment_options ? { commitment_options } : {}) };
}

export async function getLine(
  db: DbOrTx,
  orgId: string,
  estimateId: string,
  lineId: string,
  opts: { onlyMostFlexibleCommitmentType?: boolean; freshness: Freshness },
): Promise<{ line_item: LineItem; pricing: LinePricing & { stale: boolean } }> {
  const e = await findLive(db, orgId, estimateId);
  const line = await findLine(db, orgId, estimateId, lineId);
  const inputs = await loadPricingInputs(db, orgId, [line.catalogSkuId]);
  return withVersion(
    {
      line_item: lineItemOf(line),
      pricing: withStale(displayLine(priceLine(inputs.get(line.catalogSkuId), pricingLineOf(line), { includeOptions: true, onlyMostFlexibleCommitmentType: opts.onlyMostFlexibleCommitmentType ?? false })), opts.freshness),
    },
    e.version,
  );
}

export interface LinePatch {
  quantity?: number;
  quantity_basis?: QuantityBasis;
  label?: string | null;
  is_enabled?: boolean;
  selected_commitment_option?: CommitmentSelection | null;
}

/** Merge-semantic line update (rules 8–10); the estimate's updated_at moves with it. */
export async function patchLine(db: Db, orgId: string, estimateId: string, lineId: string, patch: LinePatch, ifMatch?: ExpectedVersions): Promise<LineItem> {
  if (patch.quantity_basis !== undefined && patch.quantity === undefined) {
    throw new ValidationError("Changing quantity_basis requires quantity in the same request.", { quantity: ["is required when quantity_basis is given"] }, "quantity_required");
  }
  return db.transaction(async (tx) => {
    checkVersion((await findLive(tx, orgId, estimateId, true)).version, ifMatch);
    const line = await findLine(tx, orgId, estimateId, lineId);
    const set: Record<string, unknown> = { updatedAt: TOUCH };
    if (patch.quantity !== undefined) set.quantity = String(patch.quantity);
    if (patch.quantity_basis !== undefined) set.quantityBasis = patch.quantity_basis;
    if (patch.label !== undefined) set.label = patch.label;
    if (patch.is_enabled !== undefined) set.isEnabled = patch.is_enabled;
    if (patch.selected_commitment_option === null) set.selectedCommitmentOption = null;
    else if (patch.selected_commitment_option !== undefined) {
      const selected = selectionOf(patch.selected_commitment_option);
      const inputs = await loadPricingInputs(tx, orgId, [line.catalogSkuId]);
      if (!findExactOption(inputs.get(line.catalogSkuId), selected)) throw unknownOption("selected_commitment_option");
      set.selectedCommitmentOption = selected;
    }
    const [updated] = await tx.update(estimateLineItems).set(set).where(eq(estimateLineItems.id, line.id)).returning();
    const [e] = await tx.update(costEstimates).set({ updatedAt: TOUCH, version: NEXT_VERSION }).where(eq(costEstimates.id, estimateId)).returning({ version: costEstimates.version });
    return withVersion(lineItemOf(updated!), e!.version);
  });
}

export async function deleteLine(db: Db, orgId: string, estimateId: string, lineId: string, ifMatch?: ExpectedVersions): Promise<void> {
  await db.transaction(async (tx) => {
    checkVersion((await findLive(tx, orgId, estimateId, true)).version, ifMatch);
    const rows = await tx
      .delete(estimateLineItems)
      .where(and(eq(estimateLineItems.id, lineId), eq(estimateLineItems.estimateId, estimateId), eq(estimateLineItems.orgId, orgId)))
      .returning({ id: estimateLineItems.id });
    if (!rows.length) throw new NotFoundError("No such line item in this cost estimate.");
    await tx.update(costEstimates).set({ updatedAt: TOUCH, version: NEXT_VERSION }).where(eq(costEstimates.id, estimateId));
  });
}

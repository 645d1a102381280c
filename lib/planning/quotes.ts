/**
 * Commitment options of a usage group, from the catalog through lib/pricing (the money model
 * lives there; this only normalizes its per-instance economics to the group's unit).
 *
 * A group's usage is on-demand-equivalent dollars per hour of one instance family in one
 * region. The family's reference SKU (its cheapest available SKU with commitment offers,
 * Linux preferred) defines the unit: one unit = one reference instance running for an hour,
 * so usage in units = dollars / the reference on-demand rate (normalized size, as providers'
 * size flexibility does).
 */
import { and, eq, inArray, or } from "drizzle-orm";
import type { DbOrTx } from "../db/index.ts";
import { catalogSkus } from "../db/schema/index.ts";
import { loadPricingInputs } from "../catalog/pricingInputs.ts";
import { PUBLIC_CATALOG } from "../catalog/model.ts";
import { applicableLeases, commitsToSpend, offerUnitEconomics, ondemandHourlyRate, type SkuPricingInputs } from "../pricing/index.ts";
import type { UnitQuote } from "./optimize.ts";
import { familyOf } from "./usage.ts";
import type { ContractSpec, Provider } from "../templates/enums.ts";

export interface ReferenceSku {
  catalogSkuId: string;
  instanceType: string;
  region: string;
  ondemandHourlyRate: number;
  /** On-demand rate per instance type of the family (to convert commitments to units). */
  ratesByInstanceType: Map<string, number>;
  quotes: UnitQuote[];
  /** Every `commitment_type/contract_term/payment_option` the catalog offers for the reference SKU (what a template could buy). */
  offeredSpecs: string[];
}

const specKey = (t: string, term: string, pay: string) => `${t}/${term}/${pay}`;

/** Reference SKU and allowed quotes per group key `${region}|${family}`. */
export async function groupQuotes(
  db: DbOrTx,
  orgId: string,
  provider: Provider,
  groups: { key: string; region: string; instanceFamily: string }[],
  specs: ContractSpec[],
): Promise<Map<string, ReferenceSku>> {
  const out = new Map<string, ReferenceSku>();
  if (!groups.length) return out;
  const regions = [...new Set(groups.map((g) => g.region))];
  const wanted = new Set(groups.map((g) => g.key));
  const allowed = new Set(specs.map((s) => specKey(s.commitment_type, s.contract_term, s.payment_option)));
  const skus = await db
    .select({ id: catalogSkus.id, instanceType: catalogSkus.instanceType, region: catalogSkus.regionCode, os: catalogSkus.operatingSystem, orgId: catalogSkus.catalogSkuOrgId })
    .from(catalogSkus)
    .where(
      and(
        eq(catalogSkus.provider, provider),
        eq(catalogSkus.isAvailable, true),
        inArray(catalogSkus.regionCode, regions),
        or(eq(catalogSkus.catalogSkuOrgId, PUBLIC_CATALOG), eq(catalogSkus.catalogSkuOrgId, orgId)),
      ),
    );
  const candidates = skus.filter((s) => s.instanceType && wanted.has(`${s.region}|${familyOf(provider, s.instanceType)}`));
  if (!candidates.length) return out;
  const inputs = await loadPricingInputs(db, orgId, candidates.map((c) => c.id));
  const byGroup = new Map<string, { sku: (typeof candidates)[number]; inputs: SkuPricingInputs; od: number }[]>();
  for (const c of candidates) {
    const inp = inputs.get(c.id);
    if (!inp) continue;
    const od = ondemandHourlyRate(inp.tiers);
    if (!(od > 0)) continue;
    const key = `${c.region}|${familyOf(provider, c.instanceType)}`;
    (byGroup.get(key) ?? byGroup.set(key, []).get(key)!).push({ sku: c, inputs: inp, od });
  }
  for (const [key, list] of byGroup) {
    const rates = new Map<string, number>();
    for (const x of list) if (!rates.has(x.sku.instanceType) || /linux/i.test(x.sku.os)) rates.set(x.sku.instanceType, x.od);
    const withLeases = list.filter((x) => x.inputs.leases.length > 0);
    if (!withLeases.length) continue;
    // Org custom prices first, then Linux (the base price), then the smallest size.
    withLeases.sort((a, b) => Number(b.sku.orgId !== PUBLIC_CATALOG) - Number(a.sku.orgId !== PUBLIC_CATALOG) || Number(/linux/i.test(b.sku.os)) - Number(/linux/i.test(a.sku.os)) || a.od - b.od || a.sku.id.localeCompare(b.sku.id));
    const ref = withLeases[0]!;
    const quotes: UnitQuote[] = [];
    const leases = applicableLeases(ref.inputs);
    const offeredSpecs = [...new Set(leases.map((l) => specKey(l.offer.commitmentType, l.offer.contractTerm, l.offer.paymentOption)))];
    for (const lease of leases) {
      const e = offerUnitEconomics(ref.inputs, lease);
      if (!allowed.has(specKey(e.commitmentType, e.contractTerm, e.paymentOption))) continue;
      quotes.push({
        offerId: e.offerId,
        offerOrgId: e.offerOrgId,
        leaseMenuItemId: e.leaseMenuItemId,
        commitmentType: e.commitmentType,
        contractTerm: e.contractTerm,
        paymentOption: e.paymentOption,
        effectiveHourlyRate: e.effectiveHourlyRate,
        ondemandHourlyRate: e.ondemandHourlyRate,
        recurringHourlyRate: e.recurringHourlyRate,
        upfrontPerUnit: e.upfrontCost,
        durationSeconds: e.durationSeconds,
        feeRate: e.feeRate,
        lockInDays: e.lockInDays,
        spendBased: commitsToSpend(e.commitmentType),
      });
    }
    out.set(key, { catalogSkuId: ref.sku.id, instanceType: ref.sku.instanceType, region: ref.sku.region, ondemandHourlyRate: ref.od, ratesByInstanceType: rates, quotes, offeredSpecs });
  }
  return out;
}

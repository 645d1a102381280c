/**
 * Fixtures whose money has sub-cent remainders, so a total rounded from full precision differs
 * from the sum of the rounded parts shown beside it (DESIGN §12 "Money at the edge").
 */
import { catalogSkus, leaseMenuItems, offers, skuPriceTiers } from "../../lib/db/schema/index.ts";
import type { Db } from "../../lib/db/index.ts";
import { seedUsage } from "../planning/fixtures.ts";

/** $/h of the compute savings plan: 730 h × this = 10.004000008 a month per unit. */
export const HALF_CENT_RATE = "0.0137041096";
/** On-demand $/h of both workloads: one instance all month = 73.00 covered. */
export const HALF_CENT_OD = 0.1;
/** Hours of the 30-day window with a second instance (not worth committing to). */
export const PEAK_HOURS = 7;
export const LOOKBACK_HOURS = 30 * 24;

/** Money with at most 2 decimals; rates/amounts with at most 6. */
export const isCents = (x: unknown) => typeof x === "number" && Math.round(x * 100) / 100 === x;
export const isRate6 = (x: unknown) => typeof x === "number" && Math.round(x * 1e6) / 1e6 === x;
export const sumCents = (xs: number[]) => xs.reduce((a, x) => a + Math.round(x * 100), 0) / 100;

/**
 * Two AWS workloads of the org (m5.large in us-east-1, c5.large in us-west-2), each with a
 * one-year no-upfront compute savings plan at HALF_CENT_RATE $/h, and usage of one instance
 * every hour of the 30 days before `end` plus a second one during PEAK_HOURS hours.
 * A plan then buys one unit per workload: monthly cost 10.004 (shown 10.00) and net savings
 * 62.996 (shown 63.00) each, so its full-precision totals 20.008 / 125.992 round to 20.01 /
 * 125.99 while its items add up to 20.00 / 126.00; amount 0.0137041096 (shown 0.013704) and
 * expected coverage 720/727 (shown 0.990371).
 */
export async function seedHalfCentWorkloads(db: Db, orgId: string, end: Date): Promise<void> {
  const common = { source: "test", feed: "test", asOf: "2026-01" };
  for (const w of [
    { region: "us-east-1", instanceType: "m5.large", family: "m5" },
    { region: "us-west-2", instanceType: "c5.large", family: "c5" },
  ]) {
    const [sku] = await db
      .insert(catalogSkus)
      .values({ catalogSkuOrgId: orgId, provider: "aws", providerSkuId: `halfcent:${w.region}:${w.instanceType}`, displayName: w.instanceType, instanceType: w.instanceType, instanceFamily: w.family, service: "compute", providerService: "AmazonEC2", regionCode: w.region, operatingSystem: "Linux", usageType: `BoxUsage:${w.instanceType}`, ...common })
      .returning();
    await db.insert(skuPriceTiers).values({ catalogSkuId: sku!.id, startQuantity: "0", unitPrice: String(HALF_CENT_OD), ...common });
    const [offer] = await db
      .insert(offers)
      .values({ offerOrgId: orgId, provider: "aws", offerKey: `halfcent:sp:${w.region}:${w.instanceType}`, commitmentType: "compute_savings_plan", contractTerm: "one_year", paymentOption: "no_upfront", durationSeconds: 31_536_000, region: w.region, instanceType: w.instanceType, instanceFamily: w.family, displayName: "sp", feeRate: "0", lockInDays: 365, isInsured: false, ...common })
      .returning();
    await db.insert(leaseMenuItems).values({ offerId: offer!.id, catalogSkuId: sku!.id, recurringHourlyRate: HALF_CENT_RATE, upfrontCost: "0", ...common });
    await seedUsage(db, orgId, end, LOOKBACK_HOURS, (h) => (h < PEAK_HOURS ? 2 : 1), w.instanceType, { provider: "aws", region: w.region, od: HALF_CENT_OD });
  }
}

/** The contract spec of the half-cent offers. */
export const HALF_CENT_SPEC = { commitment_type: "compute_savings_plan", contract_term: "one_year", payment_option: "no_upfront" };

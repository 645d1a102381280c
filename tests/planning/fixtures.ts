import { billingLineItems, catalogSkus, leaseMenuItems, offers, skuPriceTiers } from "../../lib/db/schema/index.ts";
import type { Db } from "../../lib/db/index.ts";
import { expect } from "bun:test";
import type { TestContext } from "../helpers/app.ts";

/** m5.large in us-east-1 at $0.10/h on demand, with three commitment offers of the org. */
export const OD = 0.1;
export const OFFERS = {
  oneYearNoUpfront: { commitmentType: "reserved_instance", contractTerm: "one_year", paymentOption: "no_upfront", durationSeconds: 31_536_000, recurring: 0.062, upfront: 0, feeRate: 0, lockInDays: 365 },
  threeYearAllUpfront: { commitmentType: "reserved_instance", contractTerm: "three_year", paymentOption: "all_upfront", durationSeconds: 94_608_000, recurring: 0, upfront: 1051.2, feeRate: 0, lockInDays: 1095 },
  insured30: { commitmentType: "reserved_instance", contractTerm: "thirty_day_gris", paymentOption: "no_upfront", durationSeconds: 94_608_000, recurring: 0.045, upfront: 0, feeRate: 0.3, lockInDays: 30 },
} as const;

export async function seedCatalog(db: Db, orgId: string): Promise<{ skuId: string }> {
  const common = { source: "test", feed: "test", asOf: "2026-01" };
  const [sku] = await db
    .insert(catalogSkus)
    .values({ catalogSkuOrgId: orgId, provider: "aws", providerSkuId: `test:ec2:us-east-1:m5.large:linux`, displayName: "m5.large Linux", instanceType: "m5.large", instanceFamily: "m5", service: "compute", providerService: "AmazonEC2", regionCode: "us-east-1", operatingSystem: "Linux", usageType: "BoxUsage:m5.large", ...common })
    .returning();
  await db.insert(skuPriceTiers).values({ catalogSkuId: sku!.id, startQuantity: "0", unitPrice: String(OD), ...common });
  for (const [key, o] of Object.entries(OFFERS)) {
    const [offer] = await db
      .insert(offers)
      .values({
        offerOrgId: orgId,
        provider: "aws",
        offerKey: `test:${key}`,
        commitmentType: o.commitmentType,
        contractTerm: o.contractTerm,
        paymentOption: o.paymentOption,
        offeringClass: "standard",
        durationSeconds: o.durationSeconds,
        region: "us-east-1",
        instanceType: "m5.large",
        instanceFamily: "m5",
        displayName: key,
        feeRate: String(o.feeRate),
        lockInDays: o.lockInDays,
        isInsured: o.feeRate > 0,
        ...common,
      })
      .returning();
    await db.insert(leaseMenuItems).values({ offerId: offer!.id, catalogSkuId: sku!.id, recurringHourlyRate: String(o.recurring), upfrontCost: String(o.upfront), ...common });
  }
  return { skuId: sku!.id };
}

/**
 * Hourly usage rows of m5 instances in us-east-1 ending at `end` (exclusive): `count(h)`
 * instances during hour h (0 = oldest), one row per hour at $0.10 each on demand.
 */
export async function seedUsage(
  db: Db,
  orgId: string,
  end: Date,
  hours: number,
  count: (h: number, at: Date) => number,
  instanceType = "m5.large",
  place: { provider?: "aws" | "azure" | "gcp"; region?: string; od?: number; service?: string } = {},
): Promise<void> {
  const { provider = "aws", region = "us-east-1", od = OD, service = "AmazonEC2" } = place;
  const rows = [];
  const start = end.getTime() - hours * 3_600_000;
  for (let h = 0; h < hours; h++) {
    const s = new Date(start + h * 3_600_000);
    const n = count(h, s);
    if (n <= 0) continue;
    const cost = (n * od).toFixed(6);
    rows.push({
      orgId,
      provider,
      billingAccountId: "100000000001",
      subAccountId: "200000000001",
      billingPeriod: `${s.toISOString().slice(0, 7)}-01`,
      chargePeriodStart: s,
      chargePeriodEnd: new Date(s.getTime() + 3_600_000),
      chargeCategory: "Usage",
      billedCost: cost,
      effectiveCost: cost,
      listCost: cost,
      pricingCategory: "Standard",
      pricingQuantity: String(n),
      pricingUnit: "Hours",
      consumedQuantity: String(n),
      consumedUnit: "Hours",
      regionId: region,
      serviceName: service,
      instanceType,
      resourceId: `i-${instanceType}`,
    });
  }
  for (let i = 0; i < rows.length; i += 500) await db.insert(billingLineItems).values(rows.slice(i, i + 500) as any);
}

type OrgKey = { id: string; key: string };

/** Creates a usage template of `o` through the API (provider aws, name "Auto" unless the body says). */
export async function createTemplate(t: TestContext, o: OrgKey, body: Record<string, unknown>): Promise<any> {
  const r = await t.request("POST", `/beta/v1/org/${o.id}/commitment-plan-templates`, { key: o.key, body: { provider: "aws", name: "Auto", ...body } });
  expect(r.status).toBe(200);
  return r.json();
}

/** A GET with its status and parsed JSON body. */
export async function getJson(t: TestContext, path: string, key: string): Promise<{ r: Response; status: number; body: any }> {
  const r = await t.request("GET", path, { key });
  return { r, status: r.status, body: (await r.json()) as any };
}

/** A template's contract spec for one of OFFERS (as a client writes it). */
export const spec = (o: { commitmentType: string; contractTerm: string; paymentOption: string }) => ({ commitment_type: o.commitmentType, contract_term: o.contractTerm, payment_option: o.paymentOption });

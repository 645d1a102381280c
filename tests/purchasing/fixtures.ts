import { catalogSkus, leaseMenuItems, offers, skuPriceTiers } from "../../lib/db/schema/index.ts";
import { seedUsage } from "../planning/fixtures.ts";
import { and, eq } from "drizzle-orm";
import { PurchaseFailure } from "../../lib/purchasing/providers/types.ts";
import type { Db } from "../../lib/db/index.ts";
import type { Provider } from "../../lib/providers.ts";

export interface Workload {
  provider: Provider;
  region: string;
  instanceType: string;
  instanceFamily: string;
  /** On-demand $/h of one instance. */
  od: number;
  /** The one commitment offer of the org for it. */
  offer: { commitmentType: string; contractTerm: string; paymentOption: string; durationSeconds: number; recurring: number; upfront: number };
}

export const AZURE_D2S: Workload = {
  provider: "azure",
  region: "eastus",
  instanceType: "Standard_D2s_v3",
  instanceFamily: "Standard_Ds_v",
  od: 0.096,
  offer: { commitmentType: "reservation", contractTerm: "one_year", paymentOption: "no_upfront", durationSeconds: 31_536_000, recurring: 0.07, upfront: 0 },
};

export const GCP_N2: Workload = {
  provider: "gcp",
  region: "us-central1",
  instanceType: "n2-standard-4",
  instanceFamily: "n2",
  od: 0.194,
  offer: { commitmentType: "resource_cud", contractTerm: "one_year", paymentOption: "no_upfront", durationSeconds: 31_536_000, recurring: 0.122, upfront: 0 },
};

/** The org's catalog SKU, on-demand price and one offer for a workload, and `count` instances running every hour until `end`. */
export async function seedWorkload(db: Db, orgId: string, w: Workload, end: Date, hours: number, count: number): Promise<void> {
  const common = { source: "test", feed: "test", asOf: "2026-01" };
  const [sku] = await db
    .insert(catalogSkus)
    .values({ catalogSkuOrgId: orgId, provider: w.provider, providerSkuId: `test:${w.provider}:${w.region}:${w.instanceType}`, displayName: w.instanceType, instanceType: w.instanceType, instanceFamily: w.instanceFamily, service: "compute", providerService: "compute", regionCode: w.region, operatingSystem: "Linux", usageType: w.instanceType, ...common })
    .returning();
  await db.insert(skuPriceTiers).values({ catalogSkuId: sku!.id, startQuantity: "0", unitPrice: String(w.od), ...common });
  const o = w.offer;
  const [offer] = await db
    .insert(offers)
    .values({ offerOrgId: orgId, provider: w.provider, offerKey: `test:${w.provider}:${o.commitmentType}:${w.region}:${w.instanceType}`, commitmentType: o.commitmentType, contractTerm: o.contractTerm, paymentOption: o.paymentOption, durationSeconds: o.durationSeconds, region: w.region, instanceType: w.instanceType, instanceFamily: w.instanceFamily, displayName: o.commitmentType, feeRate: "0", lockInDays: 365, isInsured: false, ...common })
    .returning();
  await db.insert(leaseMenuItems).values({ offerId: offer!.id, catalogSkuId: sku!.id, recurringHourlyRate: String(o.recurring), upfrontCost: String(o.upfront), ...common });
  await seedUsage(db, orgId, end, hours, () => count, w.instanceType, { provider: w.provider, region: w.region, od: w.od, service: "Virtual Machines" });
}

/** A one-year no-upfront compute savings plan offer for the org's m5.large SKU (tests/planning/fixtures.ts has only RI offers). */
export async function addComputeSavingsPlanOffer(db: Db, orgId: string): Promise<void> {
  const common = { source: "test", feed: "test", asOf: "2026-01" };
  const [offer] = await db
    .insert(offers)
    .values({ offerOrgId: orgId, provider: "aws", offerKey: "test:sp", commitmentType: "compute_savings_plan", contractTerm: "one_year", paymentOption: "no_upfront", durationSeconds: 31_536_000, region: "us-east-1", instanceType: "m5.large", instanceFamily: "m5", displayName: "sp", feeRate: "0", lockInDays: 365, isInsured: false, ...common })
    .returning();
  const [sku] = await db.select().from(catalogSkus).where(and(eq(catalogSkus.catalogSkuOrgId, orgId), eq(catalogSkus.instanceType, "m5.large")));
  await db.insert(leaseMenuItems).values({ offerId: offer!.id, catalogSkuId: sku!.id, recurringHourlyRate: "0.07", upfrontCost: "0", ...common });
}

/** The PurchaseFailure a provider call ends with (any other outcome fails the test). */
export async function failureOf(p: Promise<unknown>): Promise<PurchaseFailure> {
  try {
    await p;
  } catch (e) {
    if (e instanceof PurchaseFailure) return e;
    throw e;
  }
  throw new Error("expected a PurchaseFailure");
}

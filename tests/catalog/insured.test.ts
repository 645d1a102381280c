import { expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { ensurePublicCatalog } from "../../lib/catalog/seed.ts";
import { loadPricingInputs } from "../../lib/catalog/pricingInputs.ts";
import { catalogSkus } from "../../lib/db/schema/index.ts";
import { PUBLIC_CATALOG } from "../../lib/catalog/model.ts";

const THREE_YEARS = 3 * 365 * 86_400;

describeEachDb("insured (_gris) offers of the public catalog", (driver) => {
  const t = useTestApp(driver);

  test("run the 3-year term of the commitment underneath; only the lock-in is 30 days / 1 year", async () => {
    await ensurePublicCatalog(t.s.db as any);
    const [sku] = await t.s.db.select().from(catalogSkus).where(and(eq(catalogSkus.catalogSkuOrgId, PUBLIC_CATALOG), eq(catalogSkus.providerSkuId, "aws:ec2:us-east-1:c5.large:linux")));
    const inputs = (await loadPricingInputs(t.s.db, t.org.id, [sku!.id])).get(sku!.id)!;
    const base = inputs.leases.find((l) => l.offer.contractTerm === "three_year" && l.offer.paymentOption === "no_upfront" && l.offer.offeringClass === "standard");
    const insured = inputs.leases.filter((l) => l.offer.isInsured);
    expect(base).toBeDefined();
    expect(insured.map((l) => [l.offer.contractTerm, l.offer.lockInDays, l.offer.feeRate]).sort()).toEqual(
      expect.arrayContaining([["one_year_gris", 365, 0.2], ["thirty_day_gris", 30, 0.3]]),
    );
    for (const l of insured) {
      // A purchase ends at start + duration: a 30-day duration would drop the commitment from
      // the inventory after a month and the schedule would buy it again.
      expect(l.offer.durationSeconds).toBe(THREE_YEARS);
      expect(l.upfrontCost).toBe(0);
    }
  });
});

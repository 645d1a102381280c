import { and, eq } from "drizzle-orm";
import { catalogSkus } from "../db/schema/index.ts";
import type { DemoSeeder } from "../demo/seeders.ts";
import { PUBLIC_CATALOG } from "../catalog/model.ts";
import { ensurePublicCatalogOnce } from "../catalog/seed.ts";
import type { Services } from "../services.ts";
import { createEstimate } from "./service.ts";
import { loadPricingInputs } from "../catalog/pricingInputs.ts";

/** Fixed draft id: re-running the seeder finds the same estimate (rule 1 idempotency). */
const DEMO_DRAFT_ID = "3f0d6c52-5a9e-4c1e-9b7a-0e57a7e5d001";

/**
 * Seeds the public catalog (cheap when already applied) and a demo AWS estimate with two lines,
 * the first under a 1-year no-upfront Reserved Instance. Idempotent.
 */
export async function seedEstimatesDemo(s: Services, orgId: string): Promise<void> {
  await ensurePublicCatalogOnce(s.db);
  const pick = async (providerSkuId: string) =>
    (await s.db.select().from(catalogSkus).where(and(eq(catalogSkus.catalogSkuOrgId, PUBLIC_CATALOG), eq(catalogSkus.providerSkuId, providerSkuId))))[0];
  const m5 = await pick("aws:ec2:us-east-1:m5.large:linux");
  const c5 = await pick("aws:ec2:us-east-1:c5.xlarge:linux");
  const inputs = m5 ? (await loadPricingInputs(s.db, orgId, [m5.id])).get(m5.id) : undefined;
  const ri = inputs?.leases.find((l) => l.offer.commitmentType === "reserved_instance" && l.offer.contractTerm === "one_year" && l.offer.paymentOption === "no_upfront");
  const lines = [m5, c5].filter((x) => x !== undefined).map((sku, i) => ({
    catalog_sku_id: sku!.id,
    catalog_sku_org_id: PUBLIC_CATALOG,
    quantity: i === 0 ? 10 : 4,
    quantity_basis: "resource_count" as const,
    label: i === 0 ? "web tier" : "batch workers",
    selected_commitment_option:
      i === 0 && ri
        ? { commitment_type: ri.offer.commitmentType, contract_term: ri.offer.contractTerm, payment_option: ri.offer.paymentOption, lease_menu_item_id: ri.leaseMenuItemId, offer_id: ri.offer.id, offer_org_id: ri.offer.orgId }
        : null,
  }));
  await createEstimate(s.db, orgId, { provider: "aws", name: "Demo: web platform", description: "Seeded example basket", source_draft_id: DEMO_DRAFT_ID, line_items: lines }, { includePricing: false });
}

/** Seeds the public catalog and the demo estimate (the server runs demo seeders in the background). */
export const estimatesDemoSeeder: DemoSeeder = {
  name: "catalog+estimates",
  run: (s, orgId) => seedEstimatesDemo(s, orgId),
};

import { selectionOf as selectionOfOption } from "../../lib/estimates/service.ts";
import { and, eq } from "drizzle-orm";
import { catalogSkus } from "../../lib/db/schema/index.ts";
import { ensurePublicCatalog } from "../../lib/catalog/seed.ts";
import type { Services } from "../../lib/services.ts";

/** Well-known public SKUs of the bundled price snapshot used across the tests. */
export const SKU = {
  /** AWS Pricing Calculator SKU: on-demand 0.398/h, RI and SP grids with real upfront/recurring splits. */
  awsC5Win: "aws:ec2:ap-northeast-1:c5.xlarge:windows",
  awsM5: "aws:ec2:us-east-1:m5.large:linux",
  /** Azure eastus: PAYG 0.0832/h (2026-06), 1-year reservation effective 0.0486/h. */
  azureB2ms: "azure:vm:eastus:standard_b2ms:linux",
  /** GCP: on-demand 0.073715/h, 1-year CUD 0.046441/h, 3-year CUD 0.033172/h. */
  gcpE2: "gcp:gce:europe-west1:e2-standard-2:linux",
};

export async function seedCatalog(s: Services): Promise<Record<keyof typeof SKU, string>> {
  await ensurePublicCatalog(s.db);
  const out = {} as Record<keyof typeof SKU, string>;
  for (const [k, providerSkuId] of Object.entries(SKU)) {
    const [row] = await s.db.select().from(catalogSkus).where(and(eq(catalogSkus.catalogSkuOrgId, "public"), eq(catalogSkus.providerSkuId, providerSkuId)));
    if (!row) throw new Error(`snapshot SKU ${providerSkuId} missing`);
    out[k as keyof typeof SKU] = row.id;
  }
  return out;
}

export const line = (catalogSkuId: string, extra: Record<string, unknown> = {}) => ({ catalog_sku_id: catalogSkuId, catalog_sku_org_id: "public", ...extra });

/** The six identifying fields of a CommitmentOption, as a client copies them (rule 10). */
export const selectionOf = (o: any) => selectionOfOption(o);

import { expect, test } from "bun:test";
import { and, eq, sql } from "drizzle-orm";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { commands } from "../../scripts/cli/index.ts";
import { catalogSkus, leaseMenuItems, offers, skuPriceTiers } from "../../lib/db/schema/index.ts";
import { loadPricingInputs } from "../../lib/catalog/pricingInputs.ts";
import { priceLine, commitmentOptions } from "../../lib/pricing/index.ts";
import { INSURED_TERMS } from "../../lib/catalog/insured.ts";

const FIX = new URL("./fixtures/", import.meta.url).pathname;

describeEachDb("catalog import commands", (driver) => {
  const t = useTestApp(driver);
  const run = (name: string, values: Record<string, unknown>) => commands.find((c) => c.group === "catalog" && c.name === name)!.run(t.s, values, []);
  const skuRow = async (providerSkuId: string, org = "public") =>
    (await t.s.db.select().from(catalogSkus).where(and(eq(catalogSkus.catalogSkuOrgId, org), eq(catalogSkus.providerSkuId, providerSkuId))))[0];
  const inputsOf = async (providerSkuId: string) => {
    const row = (await skuRow(providerSkuId))!;
    return (await loadPricingInputs(t.s.db, t.org.id, [row.id])).get(row.id)!;
  };
  const lineOf = (inputs: any, quantity: number, basis: "resource_count" | "usage_hours" | "usage_quantity" = "resource_count") => ({
    id: "l",
    catalogSkuId: inputs.sku.id,
    quantity,
    quantityBasis: basis,
    isEnabled: true,
    selected: null,
  });

  test("AWS Price List offer file: instances, tiered usage SKU, RI grid with insured offers", async () => {
    const r: any = await run("import", { format: "aws-offer", file: [`${FIX}aws-ec2-offer.json`] });
    // m5.large + m5.xlarge + data transfer (the Dedicated-tenancy instance is skipped)
    expect(r.skus).toBe(3);
    const m5 = await skuRow("aws:ec2:sa-east-1:m5.large:linux");
    expect(m5).toMatchObject({ displayName: "AWS m5.large Linux sa-east-1", usageType: "SAE1-BoxUsage:m5.large", source: "aws_price_list:AmazonEC2:20261101000000", asOf: "2026-11-01", isAvailable: true });
    const inputs = await inputsOf("aws:ec2:sa-east-1:m5.large:linux");
    expect(priceLine(inputs, lineOf(inputs, 1)).ondemand_monthly_cost).toBeCloseTo(0.153 * 730, 9);
    const grid = commitmentOptions(inputs, 1, "resource_count");
    const partial = grid.find((o) => o.contract_term === "three_year" && o.payment_option === "partial_upfront")!;
    // recurring 0.038 × 730 = 27.74; amortized 1000 / 36 = 27.7778; upfront 1000
    expect(partial.commitment_financials_monthly_rate.commitment_cost.breakdown.cloud_provider_cost.breakdown.recurring).toBeCloseTo(27.74, 9);
    expect(partial.commitment_financials_monthly_rate.commitment_cost.breakdown.cloud_provider_cost.breakdown.amortized_upfront).toBeCloseTo(1000 / 36, 9);
    expect(partial.commitment_upfront_cost).toBe(1000);
    // insured offers come from the 3-year no-upfront rate (0.08/h) with the configured fees
    const insured = grid.filter((o) => o.contract_term.endsWith("_gris"));
    expect(insured.map((o) => o.contract_term).sort()).toEqual(["one_year_gris", "thirty_day_gris"]);
    for (const o of insured) {
      const cfg = INSURED_TERMS.find((g) => g.contractTerm === o.contract_term)!;
      expect(o.commitment_financials_monthly_rate.commitment_cost.breakdown.cloud_provider_cost.total).toBeCloseTo(0.08 * 730, 9);
      const gross = 0.153 * 730 - 0.08 * 730;
      expect(o.commitment_financials_monthly_rate.commitment_cost.breakdown.service_premium).toBeCloseTo(cfg.feeRate * gross, 9);
      // the 3-year commitment underneath runs its term; the lock-in sets break-even days
      expect(o.offer.duration_seconds).toBe(3 * 365 * 86400);
      const total = o.commitment_financials_monthly_rate.commitment_cost.total;
      expect(o.breakeven_days).toBeCloseTo((total / (0.153 * 730)) * cfg.lockInDays, 9);
    }
    // data transfer out: 20,000 GB = 10,240 × 0.15 + 9,760 × 0.138 = 1536 + 1346.88 = 2882.88
    const dt = await inputsOf("aws:AmazonEC2:TEST4DATAOUT");
    expect(dt.sku.usageUnit).toBe("GB");
    expect(priceLine(dt, lineOf(dt, 20000, "usage_quantity")).ondemand_monthly_cost).toBeCloseTo(2882.88, 9);
  });

  test("Savings Plans rate file attaches rates to the imported EC2 SKUs", async () => {
    const r: any = await run("import", { format: "aws-savings-plans", file: [`${FIX}aws-compute-savings-plan.json`] });
    expect(r.leaseMenuItems).toBeGreaterThanOrEqual(2);
    const inputs = await inputsOf("aws:ec2:sa-east-1:m5.large:linux");
    const sp = commitmentOptions(inputs, 2, "resource_count").filter((o) => o.commitment_type === "compute_savings_plan");
    const noUp = sp.find((o) => o.contract_term === "three_year" && o.payment_option === "no_upfront")!;
    // 0.099 $/h × 2 = 0.198 $/h commitment; 0.099 × 730 × 2 = 144.54 per month
    expect(noUp.selected_amount).toBeCloseTo(0.198, 12);
    expect(noUp.commitment_financials_monthly_rate.commitment_cost.total).toBeCloseTo(144.54, 9);
    const allUp = sp.find((o) => o.contract_term === "one_year" && o.payment_option === "all_upfront")!;
    // 0.11 × 8760 = 963.6 upfront per instance
    expect(allUp.commitment_upfront_cost).toBeCloseTo(963.6 * 2, 9);
    expect(allUp.commitment_financials_monthly_rate.commitment_cost.breakdown.cloud_provider_cost.breakdown.recurring).toBe(0);
    // the Fargate rate has no EC2 SKU and is not attached anywhere
    expect(sp.length).toBe(2 + 2);
  });

  test("re-import updates prices in place and marks withdrawn SKUs/offers unavailable", async () => {
    const before = (await skuRow("aws:ec2:sa-east-1:m5.large:linux"))!;
    const allUpfront = (await t.s.db.select().from(offers).where(eq(offers.offerKey, `reserved_instance|standard|one_year|all_upfront|aws:ec2:sa-east-1:m5.large:linux`)))[0]!;
    const r: any = await run("import", { format: "aws-offer", file: [`${FIX}aws-ec2-offer-2026-12.json`] });
    expect(r.withdrawnSkus).toBe(1);
    expect(r.withdrawnOffers).toBe(1);
    const after = (await skuRow("aws:ec2:sa-east-1:m5.large:linux"))!;
    expect(after.id).toBe(before.id);
    expect(after.asOf).toBe("2026-12-01");
    const tiers = await t.s.db.select().from(skuPriceTiers).where(eq(skuPriceTiers.catalogSkuId, after.id));
    expect(tiers.map((x) => Number(x.unitPrice))).toEqual([0.146]);
    const gone = (await skuRow("aws:ec2:sa-east-1:m5.xlarge:linux"))!;
    expect(gone.isAvailable).toBe(false);
    const [o] = await t.s.db.select().from(offers).where(eq(offers.id, allUpfront.id));
    expect(o!.isAvailable).toBe(false);
    // the withdrawn SKU costs nothing in an estimate and the withdrawn offer is no option
    const inputs = await inputsOf("aws:ec2:sa-east-1:m5.large:linux");
    expect(commitmentOptions(inputs, 1, "resource_count").some((x) => x.offer_id === allUpfront.id)).toBe(false);
    const w = await inputsOf("aws:ec2:sa-east-1:m5.xlarge:linux");
    expect(priceLine(w, lineOf(w, 1)).status).toBe("sku_unavailable");
    // savings plans came from another feed and are untouched
    expect(commitmentOptions(inputs, 1, "resource_count").filter((x) => x.commitment_type === "compute_savings_plan").length).toBe(4);
  });

  test("Azure Retail Prices pages: PAYG, savings plan, reservation, tiered storage; spot skipped", async () => {
    const r: any = await run("import", { format: "azure-retail", file: [`${FIX}azure-retail-page-1.json`, `${FIX}azure-retail-page-2.json`] });
    expect(r.skus).toBe(2);
    const vm = await inputsOf("azure:vm:brazilsouth:standard_d2s_v5:linux");
    expect(priceLine(vm, lineOf(vm, 1)).ondemand_monthly_cost).toBeCloseTo(0.096 * 730, 9);
    const grid = commitmentOptions(vm, 1, "resource_count");
    const res = grid.filter((o) => o.commitment_type === "reservation" && o.contract_term === "one_year");
    // 508 for the year: no upfront = 508 / 8760 per hour → 508 / 12 per month; all upfront 508 once
    expect(res.find((o) => o.payment_option === "no_upfront")!.commitment_financials_monthly_rate.commitment_cost.total).toBeCloseTo(508 / 12, 9);
    expect(res.find((o) => o.payment_option === "all_upfront")!.commitment_upfront_cost).toBeCloseTo(508, 9);
    expect(res.find((o) => o.payment_option === "all_upfront")!.commitment_financials_monthly_rate.commitment_cost.total).toBeCloseTo(508 / 12, 9);
    const sp3 = grid.find((o) => o.commitment_type === "savings_plan" && o.contract_term === "three_year" && o.payment_option === "no_upfront")!;
    expect(sp3.commitment_financials_monthly_rate.commitment_cost.total).toBeCloseTo(0.0432 * 730, 9);
    // insured on the 3-year no-upfront savings plan
    expect(grid.filter((o) => o.contract_term.endsWith("_gris")).length).toBe(2);
    const blob = (await t.s.db.select().from(catalogSkus).where(eq(catalogSkus.providerService, "Storage")))[0]!;
    const bi = (await loadPricingInputs(t.s.db, t.org.id, [blob.id])).get(blob.id)!;
    // 60,000 GB: first 51,200 free in this fixture, 8,800 × 0.0288 = 253.44
    expect(priceLine(bi, lineOf(bi, 60000, "usage_quantity")).ondemand_monthly_cost).toBeCloseTo(253.44, 9);
  });

  test("GCP Cloud Billing Catalog SKUs: on-demand, resource CUD matched to its resource, tiers", async () => {
    const r: any = await run("import", { format: "gcp-catalog", file: [`${FIX}gcp-compute-skus.json`] });
    expect(r.skus).toBe(2);
    const core = await inputsOf("gcp:sku:TEST-N2-CORE:southamerica-east1");
    const grid = commitmentOptions(core, 1460, "usage_hours");
    const cud = grid.find((o) => o.commitment_type === "resource_cud" && o.contract_term === "three_year")!;
    // 1,460 vCPU-hours: on-demand 0.05 × 1460 = 73; CUD 0.0225 × 1460 = 32.85
    expect(cud.commitment_financials_monthly_rate.covered_ondemand_cost).toBeCloseTo(73, 9);
    expect(cud.commitment_financials_monthly_rate.commitment_cost.total).toBeCloseTo(32.85, 9);
    expect(grid.filter((o) => o.contract_term.endsWith("_gris")).length).toBe(2);
    const gcs = await inputsOf("gcp:sku:TEST-GCS-STD:southamerica-east1");
    // 105 GiB-months: 5 free, 100 × 0.035 = 3.5
    expect(priceLine(gcs, lineOf(gcs, 105, "usage_quantity")).ondemand_monthly_cost).toBeCloseTo(3.5, 9);
    expect(await skuRow("gcp:sku:TEST-N2-PREEMPT:southamerica-east1")).toBeUndefined();
  });

  test("custom-priced SKUs for one org; a bad file writes nothing", async () => {
    const r: any = await run("import", { format: "gcp-catalog", file: [`${FIX}gcp-compute-skus.json`], org: t.org.id, feed: "negotiated" });
    expect(r.catalog).toBe(t.org.id);
    expect(await skuRow("gcp:sku:TEST-N2-CORE:southamerica-east1", t.org.id)).toBeDefined();
    const count = async () => Number((await t.s.handle.query<{ n: string }>("SELECT count(*) AS n FROM catalog_skus"))[0]!.n);
    const n = await count();
    await expect(run("import", { format: "gcp-catalog", file: [`${FIX}aws-ec2-offer.json`] })).rejects.toThrow(/GCP/);
    await expect(run("import", { format: "aws-offer", file: [`${FIX}aws-ec2-offer.json`, `${FIX}gcp-compute-skus.json`] })).rejects.toThrow();
    await expect(run("import", { format: "nope", file: [`${FIX}aws-ec2-offer.json`] })).rejects.toThrow(/--format/);
    expect(await count()).toBe(n);
  });
});

describeEachDb("public catalog seed and search", (driver) => {
  const t = useTestApp(driver);

  test("catalog seed is idempotent and keeps source and as_of on every price", async () => {
    const seed = commands.find((c) => c.group === "catalog" && c.name === "seed")!;
    const first: any = await seed.run(t.s, {}, []);
    expect(first.applied).toBe(true);
    const counts = async () => (await t.s.handle.query<{ n: string }>("SELECT (SELECT count(*) FROM catalog_skus) + (SELECT count(*) FROM offers) + (SELECT count(*) FROM lease_menu_items) AS n"))[0]!.n;
    const n = await counts();
    const second: any = await seed.run(t.s, {}, []);
    expect(second.applied).toBe(false);
    expect(await counts()).toBe(n);
    for (const table of ["catalog_skus", "sku_price_tiers", "offers", "lease_menu_items"]) {
      const [row] = await t.s.handle.query<{ n: string }>(`SELECT count(*) AS n FROM ${table} WHERE source = '' OR as_of = ''`);
      expect(Number(row!.n)).toBe(0);
    }
    // all three providers, public
    const byProvider = await t.s.handle.query<{ provider: string }>("SELECT DISTINCT provider FROM catalog_skus WHERE catalog_sku_org_id = 'public' ORDER BY provider");
    expect(byProvider.map((r) => r.provider)).toEqual(["aws", "azure", "gcp"]);
    // no invented splits: partial upfront only where the source gives upfront + recurring
    const partial = await t.s.handle.query<{ source: string }>("SELECT DISTINCT l.source FROM lease_menu_items l JOIN offers o ON o.id = l.offer_id WHERE o.payment_option = 'partial_upfront'");
    for (const p of partial) expect(["aws_calculator_doc_c5xlarge", "vantage_rds_2020_ri_split"]).toContain(p.source);
    // insured offers only on top of 3-year no-upfront rates; azure has no 3-year data
    const insured = await t.s.db.select().from(offers).where(eq(offers.isInsured, true));
    expect(insured.length).toBeGreaterThan(0);
    expect(insured.every((o) => o.paymentOption === "no_upfront" && o.provider !== "azure" && o.contractTerm.endsWith("_gris"))).toBe(true);
    const [mix] = await t.s.handle.query<{ n: string }>("SELECT count(*) AS n FROM offers WHERE is_insured AND fee_rate = 0");
    expect(Number(mix!.n)).toBe(0);
  });

  test("GET /catalog-skus: provider required, free text, filters, pagination header", async () => {
    expect((await t.orgRequest("GET", "/catalog-skus")).status).toBe(400);
    expect((await t.orgRequest("GET", "/catalog-skus?provider=aws&page_size=1000")).status).toBe(400);
    expect((await t.orgRequest("GET", "/catalog-skus?provider=aws&page=0")).status).toBe(400);
    let r = await t.orgRequest("GET", "/catalog-skus?provider=gcp&q=e2-standard-2%20europe-west1");
    expect(r.status).toBe(200);
    let items = await r.json();
    expect(items.length).toBe(2); // Linux and Windows
    for (const s of items) {
      expect(s).toMatchObject({ provider: "gcp", instance_type: "e2-standard-2", region_code: "europe-west1", catalog_sku_org_id: "public" });
      expect(s.catalog_sku_id).toMatch(/^[0-9a-f-]{36}$/);
    }
    r = await t.orgRequest("GET", "/catalog-skus?provider=aws&region=us-east-1&instance_type=m5.large&service=compute");
    items = await r.json();
    expect(items.length).toBeGreaterThan(0);
    expect(items.every((s: any) => s.region_code === "us-east-1" && s.instance_type === "m5.large")).toBe(true);
    r = await t.orgRequest("GET", "/catalog-skus?provider=azure&q=WINDOWS&page=2&page_size=5");
    const page = JSON.parse(r.headers.get("x-pagination")!);
    expect(page).toMatchObject({ page: 2, page_size: 5 });
    expect(page.total_count).toBeGreaterThan(5);
    expect(page.total_pages).toBe(Math.ceil(page.total_count / 5));
    items = await r.json();
    expect(items.length).toBe(5);
    expect(items.every((s: any) => s.provider === "azure" && /windows/i.test(s.display_name))).toBe(true);
    // LIKE wildcards in the text are literal
    r = await t.orgRequest("GET", "/catalog-skus?provider=aws&q=%25");
    expect(await r.json()).toEqual([]);
  });
});

describeEachDb("demo seeder", (driver) => {
  const t = useTestApp(driver);

  test("seeds the public catalog and one priced demo estimate, idempotently", async () => {
    const { estimatesDemoSeeder, seedEstimatesDemo } = await import("../../lib/estimates/demo.ts");
    const { demoSeeders } = await import("../../lib/demo/seeders.ts");
    expect(demoSeeders).toContain(estimatesDemoSeeder);
    await estimatesDemoSeeder.run(t.s, t.org.id);
    await seedEstimatesDemo(t.s, t.org.id); // a second run changes nothing
    const list = await (await t.orgRequest("GET", "/cost-estimates?provider=aws")).json();
    expect(list.length).toBe(1);
    const doc = await (await t.orgRequest("GET", `/cost-estimates/${list[0].id}`)).json();
    expect(doc.line_items.length).toBe(2);
    expect(doc.pricing.line_items[0].status).toBe("ok");
    expect(doc.pricing.line_items[0].matched_commitment_option.commitment_type).toBe("reserved_instance");
    expect(doc.pricing.totals.monthly_net_savings).toBeGreaterThan(0);
  });
});

describeEachDb("fresh start without the demo seeder (SEED_DEMO=false)", (driver) => {
  const t = useTestApp(driver);

  test("the first catalog read loads the public catalog; creating an estimate works at once", async () => {
    const r = await t.orgRequest("GET", "/catalog-skus?provider=gcp&q=e2-standard-2");
    expect(r.status).toBe(200);
    const items = await r.json();
    expect(items.length).toBeGreaterThan(0);
    const e = await t.orgRequest("POST", "/cost-estimates", { body: { provider: "gcp", line_items: [{ catalog_sku_id: items[0].catalog_sku_id, catalog_sku_org_id: "public" }] } });
    expect(e.status).toBe(200);
    expect((await e.json()).pricing.line_items[0].ondemand_monthly_cost).toBeGreaterThan(0);
  });
});

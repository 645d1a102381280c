/**
 * Ad-hoc pricing through the MCP client and the real app: search_catalog is REST's catalog
 * search, and price_sku prices lines under every commitment option without saving anything,
 * to the cent what a saved cost estimate with the same lines shows through REST.
 */
import { beforeAll, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { catalogSkus, skuPriceTiers } from "../../lib/db/schema/index.ts";
import { line, seedCatalog, SKU } from "../estimates/helpers.ts";
import { isCents, isRate6, sumCents } from "../purchasing/halfCents.ts";
import { NOW, connectMcp } from "./fixtures.ts";

/** A REST CommitmentOption in price_sku's flat shape (the same numbers, nothing recomputed). */
const flat = (o: any) => ({
  commitment_type: o.commitment_type,
  contract_term: o.contract_term,
  payment_option: o.payment_option,
  offering_class: o.offer.offering_class,
  plan_type: o.offer.plan_type,
  display_name: o.offer.display_name,
  is_flexible: o.offer.is_flexible,
  duration_seconds: o.offer.duration_seconds,
  selected_amount: o.selected_amount,
  discount_rate: o.discount_rate,
  breakeven_days: o.breakeven_days,
  upfront_cost: o.commitment_upfront_cost,
  monthly_commitment_cost: o.commitment_financials_monthly_rate.commitment_cost.total,
  monthly_recurring_cost: o.commitment_financials_monthly_rate.commitment_cost.breakdown.cloud_provider_cost.breakdown.recurring,
  monthly_amortized_upfront: o.commitment_financials_monthly_rate.commitment_cost.breakdown.cloud_provider_cost.breakdown.amortized_upfront,
  monthly_service_premium: o.commitment_financials_monthly_rate.commitment_cost.breakdown.service_premium,
  covered_ondemand_cost: o.commitment_financials_monthly_rate.covered_ondemand_cost,
  monthly_net_savings: o.commitment_financials_monthly_rate.commitment_savings.net,
  monthly_gross_savings: o.commitment_financials_monthly_rate.commitment_savings.gross,
  lease_menu_item_id: o.lease_menu_item_id,
  offer_id: o.offer_id,
  offer_org_id: o.offer_org_id,
});

const selection = (o: any) => ({ commitment_type: o.commitment_type, contract_term: o.contract_term, payment_option: o.payment_option, lease_menu_item_id: o.lease_menu_item_id, offer_id: o.offer_id, offer_org_id: o.offer_org_id });

describeEachDb("mcp: ad-hoc pricing (search_catalog, price_sku)", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });
  let client: Client;
  let skus: Record<keyof typeof SKU, string>;
  /** The org's own SKU at $0.005/h: one hour shows 0.01 (half away from zero), two lines 0.02 (not 0.01). */
  let halfCentSku: string;

  const call = async (name: string, args: Record<string, unknown> = {}) => {
    const r: any = await client.callTool({ name, arguments: args });
    if (r.isError) throw new Error(`${name}: ${r.content?.[0]?.text}`);
    expect(JSON.parse(r.content[1].text)).toEqual(r.structuredContent);
    return r.structuredContent;
  };
  const callError = async (name: string, args: Record<string, unknown>) => {
    const r: any = await client.callTool({ name, arguments: args });
    expect(r.isError).toBe(true);
    return r.content[0].text as string;
  };
  const rest = async (path: string) => {
    const r = await t.orgRequest("GET", path);
    expect(r.status).toBe(200);
    return { body: (await r.json()) as any, headers: r.headers };
  };
  const countEstimates = async () => Number((await t.s.handle.query<{ n: number }>("SELECT count(*)::int AS n FROM cost_estimates"))[0]!.n);

  beforeAll(async () => {
    skus = await seedCatalog(t.s);
    const common = { source: "test", feed: "test", asOf: "2026-01" };
    const [own] = await t.s.db
      .insert(catalogSkus)
      .values({ catalogSkuOrgId: t.org.id, provider: "aws", providerSkuId: "test:halfcent:t9.micro", displayName: "t9.micro half cent", instanceType: "t9.micro", instanceFamily: "t9", service: "compute", providerService: "AmazonEC2", regionCode: "us-east-1", operatingSystem: "Linux", usageType: "BoxUsage:t9.micro", ...common })
      .returning();
    await t.s.db.insert(skuPriceTiers).values({ catalogSkuId: own!.id, startQuantity: "0", unitPrice: "0.005", ...common });
    halfCentSku = own!.id;
    client = await connectMcp(t, t.org.key);
  });

  test("search_catalog returns REST /catalog-skus' SKUs, in its order, with its total", async () => {
    const queries: Record<string, string>[] = [
      { provider: "aws", q: "c5.xlarge windows" },
      { provider: "aws", region: "us-east-1", instance_type: "m5.large" },
      { provider: "gcp", service: "compute", region: "europe-west1" },
      { provider: "azure", q: "d2s" },
    ];
    for (const q of queries) {
      const mcp = await call("search_catalog", { ...q, limit: 10 });
      const qs = new URLSearchParams({ ...q, page_size: "10" });
      const { body, headers } = await rest(`/catalog-skus?${qs}`);
      expect(body.length).toBeGreaterThan(0);
      expect(mcp.skus).toEqual(body);
      expect(mcp.total_count).toBe(JSON.parse(headers.get("x-pagination")!).total_count);
      expect(mcp.truncated).toBe(mcp.total_count > body.length);
    }
    // The org's custom SKU is found; another org does not see it.
    expect((await call("search_catalog", { provider: "aws", instance_type: "t9.micro" })).skus.map((s: any) => s.catalog_sku_id)).toEqual([halfCentSku]);
    const other = await t.newOrg("Other pricing org", ["assistant:read", "estimates:read"]);
    const otherClient = await connectMcp(t, other.key);
    const r: any = await otherClient.callTool({ name: "search_catalog", arguments: { provider: "aws", instance_type: "t9.micro" } });
    expect(r.structuredContent.total_count).toBe(0);
    const priced: any = await otherClient.callTool({ name: "price_sku", arguments: { lines: [{ catalog_sku_id: halfCentSku }] } });
    expect(priced.isError).toBe(true);
    await otherClient.close();
  }, 60_000);

  test("price_sku equals a saved estimate with the same lines (REST, options grid) to the cent, and saves nothing", async () => {
    const before = await countEstimates();
    const lines = [
      { catalog_sku_id: skus.awsC5Win, quantity: 10, selected_option: { commitment_type: "reserved_instance", contract_term: "three_year", payment_option: "all_upfront" } },
      { instance_type: "m5.large", region: "us-east-1", quantity: 3 },
      { catalog_sku_id: skus.awsC5Win, quantity: 1001.5, quantity_basis: "usage_hours", selected_option: { commitment_type: "compute_savings_plan", contract_term: "three_year", payment_option: "partial_upfront" } },
      { catalog_sku_id: halfCentSku, quantity: 1, quantity_basis: "usage_hours" },
      { catalog_sku_id: halfCentSku, quantity: 1, quantity_basis: "usage_hours" },
    ];
    const priced = await call("price_sku", { provider: "aws", lines });
    expect(await countEstimates()).toBe(before);
    expect(priced.currency).toBe("USD");
    // m5.large in us-east-1 resolves to its Linux SKU.
    expect(priced.lines[1].catalog_sku.provider_sku_id).toBe(SKU.awsM5);

    const body = {
      provider: "aws",
      name: "Same lines",
      line_items: priced.lines.map((l: any) => ({
        ...line(l.catalog_sku.catalog_sku_id, { quantity: l.quantity, quantity_basis: l.quantity_basis }),
        catalog_sku_org_id: l.catalog_sku.catalog_sku_org_id,
        ...(l.selected_option ? { selected_commitment_option: selection(l.selected_option) } : {}),
      })),
    };
    const created = await t.orgRequest("POST", "/cost-estimates", { body });
    expect(created.status).toBe(200);
    const est = await created.json();
    for (const flexible of [false, true]) {
      const args = { provider: "aws", lines, only_most_flexible_commitment_type: flexible };
      const mcp = flexible ? await call("price_sku", args) : priced;
      const { body: doc } = await rest(`/cost-estimates/${est.id}?include_options=true&only_most_flexible_commitment_type=${flexible}`);
      expect(mcp.totals).toEqual(doc.pricing.totals);
      doc.pricing.line_items.forEach((p: any, i: number) => {
        const l = mcp.lines[i];
        expect([l.status, l.detail, l.ondemand_monthly_cost, l.estimated_monthly_cost, l.monthly_net_savings]).toEqual([p.status, p.detail, p.ondemand_monthly_cost, p.estimated_monthly_cost, p.monthly_net_savings]);
        expect(l.selected_option).toEqual(p.matched_commitment_option ? flat(p.matched_commitment_option) : null);
        expect(l.upfront_cost).toBe(p.matched_commitment_option?.commitment_upfront_cost ?? 0);
        expect(l.options).toEqual(p.commitment_options.map(flat));
        expect(l.options_count).toBe(p.commitment_options.length);
      });
    }
    // The grid is every option: 24 for the Windows c5.xlarge in Tokyo, 1 for m5.large, none for the custom SKU.
    expect(priced.lines.map((l: any) => l.options_count)).toEqual([24, 1, 24, 0, 0]);
    // Money at the edge: cents and 6-decimal rates; the half-cent lines show 0.01 each and the total 0.02 more.
    for (const l of priced.lines) {
      for (const k of ["ondemand_monthly_cost", "estimated_monthly_cost", "monthly_net_savings", "upfront_cost"]) expect(isCents(l[k])).toBe(true);
      for (const o of l.options) {
        for (const k of ["upfront_cost", "monthly_commitment_cost", "covered_ondemand_cost", "monthly_net_savings", "monthly_gross_savings"]) expect(isCents(o[k])).toBe(true);
        for (const k of ["discount_rate", "selected_amount"]) expect(isRate6(o[k])).toBe(true);
        expect(o.monthly_commitment_cost).toBe(sumCents([o.monthly_recurring_cost, o.monthly_amortized_upfront, o.monthly_service_premium]));
        expect(o.monthly_net_savings).toBe(sumCents([o.covered_ondemand_cost, -o.monthly_commitment_cost]));
      }
    }
    expect(priced.lines[3].ondemand_monthly_cost).toBe(0.01);
    expect(priced.totals.ondemand_monthly_cost).toBe(sumCents(priced.lines.map((l: any) => l.ondemand_monthly_cost)));
    expect(priced.totals.estimated_monthly_cost).toBe(sumCents(priced.lines.map((l: any) => l.estimated_monthly_cost)));
    expect(priced.totals.commitment_upfront_cost).toBe(sumCents(priced.lines.map((l: any) => l.upfront_cost)));
  }, 60_000);

  test("option_totals: each option over the lines offering it (others on demand), summed from the shown values; grid filters", async () => {
    const lines = [
      { catalog_sku_id: skus.awsC5Win, quantity: 10 },
      { catalog_sku_id: skus.awsM5, quantity: 3 },
      { catalog_sku_id: halfCentSku, quantity: 1, quantity_basis: "usage_hours" },
    ];
    const p = await call("price_sku", { lines });
    const ri1 = p.option_totals.find((o: any) => o.option === "reserved_instance/one_year/no_upfront/standard");
    // m5.large and the Windows c5.xlarge both offer a 1-year no-upfront standard RI.
    expect(ri1.lines_offered).toBe(2);
    const of = (l: any) => l.options.find((o: any) => o.commitment_type === "reserved_instance" && o.contract_term === "one_year" && o.payment_option === "no_upfront");
    expect(ri1.monthly_commitment_cost).toBe(sumCents([of(p.lines[0]).monthly_commitment_cost, of(p.lines[1]).monthly_commitment_cost]));
    expect(ri1.monthly_net_savings).toBe(sumCents([of(p.lines[0]).monthly_net_savings, of(p.lines[1]).monthly_net_savings]));
    expect(ri1.ondemand_monthly_cost_of_other_lines).toBe(p.lines[2].ondemand_monthly_cost);
    expect(ri1.estimated_monthly_cost).toBe(sumCents([ri1.monthly_commitment_cost, ri1.ondemand_monthly_cost_of_other_lines]));
    const sp = p.option_totals.find((o: any) => o.option === "compute_savings_plan/three_year/all_upfront");
    expect(sp.lines_offered).toBe(1);
    expect(sp.ondemand_monthly_cost_of_other_lines).toBe(sumCents([p.lines[1].ondemand_monthly_cost, p.lines[2].ondemand_monthly_cost]));
    expect(sp.upfront_cost).toBe(p.lines[0].options.find((o: any) => o.commitment_type === "compute_savings_plan" && o.contract_term === "three_year" && o.payment_option === "all_upfront").upfront_cost);
    // No selection: the totals are on demand.
    expect(p.totals.estimated_monthly_cost).toBe(p.totals.ondemand_monthly_cost);

    const only = await call("price_sku", { lines, contract_term: "three_year", payment_option: "all_upfront" });
    expect(only.lines[0].options.map((o: any) => o.commitment_type).sort()).toEqual(["compute_savings_plan", "ec2_instance_savings_plan", "reserved_instance"]);
    expect(only.lines[0].options_count).toBe(24);
    expect(only.lines[0].options).toEqual(p.lines[0].options.filter((o: any) => o.contract_term === "three_year" && o.payment_option === "all_upfront"));
    expect(only.option_totals.every((o: any) => o.contract_term === "three_year" && o.payment_option === "all_upfront")).toBe(true);
  }, 60_000);

  test("bad lines are refused with a message saying what to give", async () => {
    expect(await callError("price_sku", { lines: [{ catalog_sku_id: crypto.randomUUID() }] })).toContain("no catalog SKU");
    expect(await callError("price_sku", { lines: [{ instance_type: "m5.large", region: "us-east-1" }] })).toContain("provider");
    expect(await callError("price_sku", { provider: "aws", lines: [{ instance_type: "m5.large", region: "mars-1" }] })).toContain("no aws SKU");
    expect(await callError("price_sku", { provider: "gcp", lines: [{ catalog_sku_id: skus.awsM5 }] })).toContain("aws SKU");
    const missing = await callError("price_sku", { lines: [{ catalog_sku_id: skus.awsM5, selected_option: { commitment_type: "reserved_instance", contract_term: "three_year", payment_option: "all_upfront" } }] });
    expect(missing).toContain("offered: reserved_instance/one_year/no_upfront/standard");
    // c4.2xlarge RIs come standard and convertible: the class must be named.
    const [c4] = (await call("search_catalog", { provider: "aws", instance_type: "c4.2xlarge", region: "us-east-1", q: "linux" })).skus;
    const sel = { commitment_type: "reserved_instance", contract_term: "one_year", payment_option: "all_upfront" };
    expect(await callError("price_sku", { lines: [{ catalog_sku_id: c4.catalog_sku_id, selected_option: sel }] })).toContain("offering_class");
    const conv = await call("price_sku", { lines: [{ catalog_sku_id: c4.catalog_sku_id, selected_option: { ...sel, offering_class: "convertible" } }] });
    expect(conv.lines[0].selected_option.offering_class).toBe("convertible");
    const tooMany: any = await client.callTool({ name: "price_sku", arguments: { lines: Array.from({ length: 51 }, () => ({ catalog_sku_id: skus.awsM5 })) } });
    expect(tooMany.isError).toBe(true);
  }, 60_000);

  test("without estimates:read the pricing tools are not listed", async () => {
    const o = await t.newOrg("No estimates scope", ["assistant:read"]);
    const c = await connectMcp(t, o.key);
    const names = (await c.listTools()).tools.map((x) => x.name);
    expect(names).not.toContain("price_sku");
    expect(names).not.toContain("search_catalog");
    await c.close();
    const all = (await client.listTools()).tools.map((x) => x.name);
    expect(all).toContain("price_sku");
    expect(all).toContain("search_catalog");
  }, 60_000);
});

/**
 * The planning tools through the MCP client and the real app: a plan with no purchases says
 * why (each reason code triggered by data that causes it, one organization per case), and
 * price_cost_estimate returns the document REST GET /cost-estimates/{id} shows, rounded the
 * same way (whole structure compared).
 */
import { expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { catalogSkus, leaseMenuItems, offers, skuPriceTiers } from "../../lib/db/schema/index.ts";
import { runDueAutoPurchases } from "../../lib/purchasing/autoPurchase.ts";
import { OFFERS, seedCatalog, seedUsage, spec } from "../planning/fixtures.ts";
import { line, seedCatalog as seedPublicCatalog } from "../estimates/helpers.ts";
import { isCents, sumCents } from "../purchasing/halfCents.ts";
import { NOW, connectMcp } from "./fixtures.ts";

type Org = { id: string; key: string };
const HOURS = 30 * 24;

describeEachDb("mcp planning: why a plan buys nothing; estimates as REST shows them", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });

  async function call(o: Org, name: string, args: Record<string, unknown> = {}) {
    const client = await connectMcp(t, o.key);
    try {
      const r: any = await client.callTool({ name, arguments: args });
      if (r.isError) throw new Error(`${name}: ${r.content?.[0]?.text}`);
      expect(JSON.parse(r.content[1].text)).toEqual(r.structuredContent);
      return { ...r.structuredContent, _summary: r.content[0].text as string };
    } finally {
      await client.close();
    }
  }

  /** An org with the m5.large catalog of tests/planning/fixtures.ts and `count(h)` instances every hour of the 30 days before NOW. */
  async function orgWith(name: string, count: ((h: number) => number) | null, instanceType = "m5.large"): Promise<Org> {
    const o = await t.newOrg(name);
    await seedCatalog(t.s.db, o.id);
    if (count) await seedUsage(t.s.db, o.id, NOW, HOURS, (h) => count(h), instanceType);
    return o;
  }

  let named = 0;
  async function template(o: Org, body: Record<string, unknown>) {
    const r = await t.request("POST", `/beta/v1/org/${o.id}/commitment-plan-templates`, { key: o.key, body: { provider: "aws", name: `Custom ${++named}`, ...body } });
    expect(r.status).toBe(200);
    return r.json() as Promise<any>;
  }

  async function planOf(o: Org, configuration: Record<string, unknown>, extra: Record<string, unknown> = {}) {
    const tpl = await template(o, { configuration: { lookback_days: 30, ...configuration }, ...extra });
    return call(o, "generate_commitment_plan", { template_id: tpl.id });
  }

  /** The plan buys nothing, and says why: one reason, for the m5 group. */
  function expectOnlyReason(plan: any, reason: string, groups = ["us-east-1|m5"]) {
    expect(plan.items).toEqual([]);
    expect(plan.totals).toEqual({ upfront_cost: 0, monthly_cost: 0, monthly_net_savings: 0 });
    expect(plan.no_purchase_reasons.map((r: any) => r.reason)).toEqual([reason]);
    expect(plan.groups_without_purchase.map((g: any) => [g.group_key, g.reason])).toEqual(groups.map((g) => [g, reason]));
    expect(plan._summary).toContain(reason);
    return plan.no_purchase_reasons[0].message as string;
  }

  test("no_eligible_usage: no usage at all, or none a commitment can cover", async () => {
    const none = await orgWith("No usage", null);
    const p = await planOf(none, { contract_specs: [spec(OFFERS.oneYearNoUpfront)] });
    expect(p.items).toEqual([]);
    expect(p.usage_groups).toBe(0);
    expect(p.no_purchase_reasons).toEqual([{ reason: "no_eligible_usage", group_count: 0, message: "No aws usage was billed in the last two months: there is nothing to size commitments on." }]);
    expect(p.groups_without_purchase).toEqual([]);

    // Usage without an instance type (storage, say): billed, but nothing a commitment covers.
    const storage = await orgWith("Storage only", () => 3, "");
    const s = await planOf(storage, { contract_specs: [spec(OFFERS.oneYearNoUpfront)] });
    expect(s.usage_groups).toBe(0);
    expect(s.no_purchase_reasons.map((r: any) => r.reason)).toEqual(["no_eligible_usage"]);
    expect(s.no_purchase_reasons[0].message).toContain("30-day lookback");
  }, 60_000);

  test("no_catalog_offer: a family the catalog cannot price; the other group is still bought", async () => {
    const o = await orgWith("Unknown family", () => 4);
    await seedUsage(t.s.db, o.id, NOW, HOURS, () => 2, "x9.large");
    const p = await planOf(o, { contract_specs: [spec(OFFERS.oneYearNoUpfront)] });
    expect(p.usage_groups).toBe(2);
    expect(p.groups_analyzed).toBe(1);
    expect(p.items.map((i: any) => i.group_key)).toEqual(["us-east-1|m5"]);
    expect(p.groups_without_purchase).toEqual([
      { group_key: "us-east-1|x9", region: "us-east-1", instance_family: "x9", instance_type: null, reason: "no_catalog_offer", message: expect.stringContaining("no priced aws SKU with a commitment offer for the x9 family in us-east-1") },
    ]);
    expect(p.no_purchase_reasons.map((r: any) => [r.reason, r.group_count])).toEqual([["no_catalog_offer", 1]]);
  }, 60_000);

  test("no_offer_for_contract_specs: the catalog offers other commitments than the template's", async () => {
    const o = await orgWith("Other specs", () => 4);
    const p = await planOf(o, { contract_specs: [{ commitment_type: "compute_savings_plan", contract_term: "one_year", payment_option: "no_upfront" }] });
    expect(p.groups_analyzed).toBe(0);
    const m = expectOnlyReason(p, "no_offer_for_contract_specs");
    expect(m).toContain("reserved_instance one_year no_upfront");
    expect(m).toContain("reserved_instance three_year all_upfront");
    expect(m).toContain("none of the template's contract specs (compute_savings_plan one_year no_upfront)");
  }, 60_000);

  test("no_discount: the allowed offer costs more than on-demand", async () => {
    const o = await orgWith("Dear offer", () => 4);
    const common = { source: "test", feed: "test", asOf: "2026-01" };
    const [sku] = await t.s.db.select().from(catalogSkus).where(eq(catalogSkus.catalogSkuOrgId, o.id));
    const [offer] = await t.s.db
      .insert(offers)
      .values({ offerOrgId: o.id, provider: "aws", offerKey: "test:dear", commitmentType: "reserved_instance", contractTerm: "one_year", paymentOption: "all_upfront", offeringClass: "standard", durationSeconds: 31_536_000, region: "us-east-1", instanceType: "m5.large", instanceFamily: "m5", displayName: "dear", feeRate: "0", lockInDays: 365, isInsured: false, ...common })
      .returning();
    // 1000 upfront for a year = 0.114/h, above the 0.10/h on-demand price.
    await t.s.db.insert(leaseMenuItems).values({ offerId: offer!.id, catalogSkuId: sku!.id, recurringHourlyRate: "0", upfrontCost: "1000", ...common });
    const p = await planOf(o, { contract_specs: [{ commitment_type: "reserved_instance", contract_term: "one_year", payment_option: "all_upfront" }], max_upfront_cost: 1_000_000 });
    expect(p.groups_analyzed).toBe(1);
    expect(expectOnlyReason(p, "no_discount")).toContain("cheaper than on-demand");
  }, 60_000);

  test("covered_by_active_commitments: what the auto-purchase bought covers the usage", async () => {
    const o = await orgWith("Covered", () => 4);
    const tpl = await template(o, { name: "Nightly", configuration: { contract_specs: [spec(OFFERS.oneYearNoUpfront)], lookback_days: 30 }, auto_purchase: { schedule: "daily", start_date: "2026-06-17", enabled: true } });
    const first = await call(o, "generate_commitment_plan", { template_id: tpl.id });
    expect(first.items.map((i: any) => i.amount)).toEqual([4]);
    expect(first.no_purchase_reasons).toEqual([]);
    // The schedule buys it (no purchasing connection: the ledger adds 4 RIs to the inventory).
    const [run] = await runDueAutoPurchases(t.s);
    expect(run!.outcome).toBe("purchased");
    const again = await call(o, "generate_commitment_plan", { template_id: tpl.id });
    expect(expectOnlyReason(again, "covered_by_active_commitments")).toContain("cover 100.0% of this usage");
  }, 60_000);

  test("usage_too_intermittent and usage_below_one_unit: usage a commitment would not pay for", async () => {
    const bursty = await orgWith("Two hours a day", (h) => (h % 24 < 2 ? 5 : 0));
    const b = await planOf(bursty, { contract_specs: [spec(OFFERS.oneYearNoUpfront)] });
    expect(expectOnlyReason(b, "usage_too_intermittent")).toContain("38.0%");
    const small = await orgWith("Under one instance", () => 0.4);
    const s = await planOf(small, { contract_specs: [spec(OFFERS.oneYearNoUpfront)] });
    expect(expectOnlyReason(s, "usage_below_one_unit")).toContain("below one whole m5.large");
    // The same steady usage, one instance more: bought.
    const enough = await orgWith("Over one instance", () => 1.4);
    expect((await planOf(enough, { contract_specs: [spec(OFFERS.oneYearNoUpfront)] })).items.map((i: any) => i.amount)).toEqual([1]);
  }, 60_000);

  test("upfront_budget_exhausted: only an upfront option saves and the budget does not reach one unit", async () => {
    const o = await orgWith("Small budget", () => 4);
    const p = await planOf(o, { contract_specs: [spec(OFFERS.threeYearAllUpfront)], max_upfront_cost: 500 });
    expect(expectOnlyReason(p, "upfront_budget_exhausted")).toContain("max_upfront_cost 500.00 USD");
    // With a budget for two units, two are bought.
    const two = await planOf(o, { contract_specs: [spec(OFFERS.threeYearAllUpfront)], max_upfront_cost: 2200 });
    expect(two.items.map((i: any) => [i.amount, i.upfront_cost])).toEqual([[2, 2102.4]]);
    expect(two.no_purchase_reasons).toEqual([]);
  }, 60_000);

  test("below_min_monthly_savings: the plan has items but its schedule would not buy it (as the run decides)", async () => {
    const o = await orgWith("High bar", () => 4);
    const tpl = await template(o, { name: "High bar", configuration: { contract_specs: [spec(OFFERS.oneYearNoUpfront)], lookback_days: 30 }, auto_purchase: { schedule: "daily", start_date: "2026-06-17", enabled: true, min_monthly_savings: 1000 } });
    const p = await call(o, "generate_commitment_plan", { template_id: tpl.id });
    expect(p.items).toHaveLength(1);
    expect(p.totals.monthly_net_savings).toBeLessThan(1000);
    expect(p.no_purchase_reasons).toEqual([
      { reason: "below_min_monthly_savings", group_count: 0, message: `The plan saves ${p.totals.monthly_net_savings.toFixed(2)} USD a month, below the template's auto-purchase minimum (min_monthly_savings 1000.00 USD): a scheduled run stores it without buying it.` },
    ]);
    const reports = await runDueAutoPurchases(t.s);
    expect(reports.find((r) => r.template_id === tpl.id)!.outcome).toBe("below_min_monthly_savings");
    const runs = await (await t.request("GET", `/beta/v1/org/${o.id}/purchase-runs`, { key: o.key })).json();
    expect(runs.map((r: any) => r.outcome)).toEqual(["below_min_monthly_savings"]);
    // At the bar it is bought: no reason then.
    const low = await template(o, { name: "Low bar", configuration: { contract_specs: [spec(OFFERS.oneYearNoUpfront)], lookback_days: 30 }, auto_purchase: { schedule: "daily", start_date: "2026-06-17", enabled: true, min_monthly_savings: p.totals.monthly_net_savings } });
    expect((await call(o, "generate_commitment_plan", { template_id: low.id })).no_purchase_reasons).toEqual([]);
  }, 60_000);

  test("get_recommendations: every usage group is either bought or has its reason, in each built-in plan", async () => {
    const o = await orgWith("Mixed", () => 4);
    await seedUsage(t.s.db, o.id, NOW, HOURS, () => 2, "x9.large");
    const rec = await call(o, "get_recommendations", { provider: "aws" });
    expect(rec.plans.map((p: any) => p.template.name)).toEqual(["Recommended", "Balanced", "High Savings"]);
    for (const p of rec.plans) {
      const bought = new Set(p.items.map((i: any) => i.group_key));
      const left = p.groups_without_purchase.map((g: any) => g.group_key);
      expect(left.filter((k: string) => bought.has(k))).toEqual([]);
      expect(bought.size + left.length).toBe(p.usage_groups);
      expect(p.usage_groups).toBe(2);
      expect(p.currency).toBe("USD");
      expect(p.no_purchase_reasons.reduce((a: number, r: any) => a + r.group_count, 0)).toBe(left.length);
    }
    expect(rec._summary).toContain("no_catalog_offer");
  }, 60_000);

  // --- price_cost_estimate -------------------------------------------------------------------

  test("price_cost_estimate is REST GET /cost-estimates/{id} (whole document, every option), plus its currency", async () => {
    const skus = await seedPublicCatalog(t.s);
    const common = { source: "test", feed: "test", asOf: "2026-01" };
    const [own] = await t.s.db
      .insert(catalogSkus)
      .values({ catalogSkuOrgId: t.org.id, provider: "aws", providerSkuId: "test:halfcent:t9.micro", displayName: "t9.micro", instanceType: "t9.micro", instanceFamily: "t9", service: "compute", providerService: "AmazonEC2", regionCode: "us-east-1", operatingSystem: "Linux", usageType: "BoxUsage:t9.micro", ...common })
      .returning();
    await t.s.db.insert(skuPriceTiers).values({ catalogSkuId: own!.id, startQuantity: "0", unitPrice: "0.005", ...common });
    const created = await t.orgRequest("POST", "/cost-estimates", {
      body: {
        provider: "aws",
        name: "Whole document",
        line_items: [
          line(skus.awsC5Win, { quantity: 7, label: "windows" }),
          line(skus.awsM5, { quantity: 1001.5, quantity_basis: "usage_hours" }),
          { ...line(own!.id, { quantity: 1, quantity_basis: "usage_hours" }), catalog_sku_org_id: t.org.id },
          { ...line(own!.id, { quantity: 1, quantity_basis: "usage_hours" }), catalog_sku_org_id: t.org.id },
          line(skus.awsM5, { quantity: 2, is_enabled: false }),
        ],
      },
    });
    expect(created.status).toBe(200);
    const est = await created.json();
    // Select an upfront savings plan on the first line (its grid from REST).
    const grid = (await (await t.orgRequest("GET", `/cost-estimates/${est.id}/line-items/${est.line_items[0].id}`)).json()).pricing.commitment_options;
    const sp = grid.find((o: any) => o.commitment_type === "compute_savings_plan" && o.contract_term === "three_year" && o.payment_option === "partial_upfront");
    const patched = await t.orgRequest("PATCH", `/cost-estimates/${est.id}/line-items/${est.line_items[0].id}`, {
      body: { selected_commitment_option: { commitment_type: sp.commitment_type, contract_term: sp.contract_term, payment_option: sp.payment_option, lease_menu_item_id: sp.lease_menu_item_id, offer_id: sp.offer_id, offer_org_id: sp.offer_org_id } },
    });
    expect(patched.status).toBe(200);

    for (const [args, query] of [
      [{}, ""],
      [{ include_options: true }, "?include_options=true"],
      [{ include_options: true, only_most_flexible_commitment_type: true }, "?include_options=true&only_most_flexible_commitment_type=true"],
    ] as const) {
      const rest = await (await t.orgRequest("GET", `/cost-estimates/${est.id}${query}`)).json();
      const { _summary, currency, ...doc } = await call(t.org, "price_cost_estimate", { estimate_id: est.id, ...args });
      expect(currency).toBe("USD");
      expect(doc).toEqual(rest);
      expect(_summary).toContain(`estimated USD ${rest.pricing.totals.estimated_monthly_cost}/month`);
    }
    const { pricing } = await call(t.org, "price_cost_estimate", { estimate_id: est.id, include_options: true });
    // Shown money: cents everywhere; the half-cent lines show 0.01 each, so the on-demand total is
    // the sum of the shown lines (the disabled one left out), not the total rounded from 0.01.
    const money = (o: any) => [o.commitment_upfront_cost, o.commitment_financials_monthly_rate.commitment_cost.total, o.commitment_financials_monthly_rate.covered_ondemand_cost, o.commitment_financials_monthly_rate.commitment_savings.net];
    for (const l of pricing.line_items) {
      for (const v of [l.ondemand_monthly_cost, l.estimated_monthly_cost, l.monthly_net_savings, ...l.commitment_options.flatMap(money)]) expect(isCents(v)).toBe(true);
    }
    expect(pricing.line_items.slice(2, 4).map((l: any) => l.ondemand_monthly_cost)).toEqual([0.01, 0.01]);
    expect(pricing.totals.ondemand_monthly_cost).toBe(sumCents(pricing.line_items.slice(0, 4).map((l: any) => l.ondemand_monthly_cost)));
    expect(pricing.totals.estimated_monthly_cost).toBe(sumCents(pricing.line_items.slice(0, 4).map((l: any) => l.estimated_monthly_cost)));
    expect(pricing.totals.commitment_upfront_cost).toBe(pricing.line_items[0].matched_commitment_option.commitment_upfront_cost);
    expect(pricing.line_items[0].matched_commitment_option.commitment_type).toBe("compute_savings_plan");
  }, 60_000);
});

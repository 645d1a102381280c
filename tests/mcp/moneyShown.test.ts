/**
 * Money at the edge in the MCP tools (DESIGN §12), through the SDK client and the real HTTP
 * app: money in cents, ratios/amounts to 6 decimals, and every total derived from the rounded
 * parts shown. The data carry sub-cent remainders (10.004-style), so totals rounded from full
 * precision would not add up as displayed.
 */
import { expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp, type TestContext } from "../helpers/app.ts";
import { billingLineItems } from "../../lib/db/schema/index.ts";
import { generatePlan, savePlan } from "../../lib/planning/generate.ts";
import { getSegment } from "../../lib/segments/service.ts";
import { NOW } from "./fixtures.ts";
import { HALF_CENT_SPEC, isCents, isRate6, seedHalfCentWorkloads, sumCents } from "../purchasing/halfCents.ts";

const DAY = 86_400_000;
const rate6 = (x: number) => Math.round(x * 1e6) / 1e6;

async function connect(t: TestContext, key: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL("http://localhost/mcp"), {
    fetch: (url, init) => t.app.handle(new Request(url, init)),
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  const client = new Client({ name: "money-shown", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

async function callTool(client: Client, name: string, args: Record<string, unknown> = {}) {
  const r: any = await client.callTool({ name, arguments: args });
  if (r.isError) throw new Error(`${name}: ${r.content?.[0]?.text}`);
  expect(JSON.parse(r.content[1].text)).toEqual(r.structuredContent);
  return r.structuredContent;
}

/** One FOCUS row of the org's AWS billing data on `day`. */
function row(orgId: string, day: string, o: Record<string, unknown>) {
  const s = new Date(`${day}T00:00:00Z`);
  return {
    orgId, provider: "aws" as const, billingAccountId: "900000000000", subAccountId: "900000000001", billingPeriod: `${day.slice(0, 7)}-01`,
    chargePeriodStart: s, chargePeriodEnd: new Date(s.getTime() + DAY), chargeCategory: "Usage", regionId: "us-east-1", serviceName: "AmazonEC2", pricingCategory: "Standard",
    billedCost: "0", effectiveCost: "0",
    ...o,
  };
}

const SP = "arn:aws:savingsplans::900000000000:savingsplan/sp-halfcent";
const used = { pricingCategory: "Committed", commitmentDiscountId: SP, commitmentDiscountCategory: "Spend", commitmentDiscountType: "Compute Savings Plans" };

describeEachDb("mcp: money as shown (cents, 6-decimal ratios, totals from the shown parts)", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });

  test("get_spend: a row's effective cost is its shown on-demand + commitment + other; totals are the sums of every shown row, also past the limit", async () => {
    const org = await t.newOrg("Spend org");
    const rows = [];
    for (const day of ["2026-06-15", "2026-06-16"]) {
      rows.push(row(org.id, day, { billedCost: "10.004", effectiveCost: "10.004", listCost: "10.004" }));
      rows.push(row(org.id, day, { ...used, commitmentDiscountStatus: "Used", effectiveCost: "10.004", listCost: "12" }));
      rows.push(row(org.id, day, { chargeCategory: "Tax", serviceName: null, billedCost: "10.004", effectiveCost: "10.004" }));
    }
    await t.s.db.insert(billingLineItems).values(rows as any);
    const client = await connect(t, org.key);
    const window = { start_date: "2026-06-15", end_date: "2026-06-17" };
    const d = await callTool(client, "get_spend", { group_by: "day", ...window });
    expect(d.rows.map((r: any) => r.key)).toEqual(["2026-06-15", "2026-06-16"]);
    for (const r of d.rows) {
      expect([r.ondemand_cost, r.commitment_cost, r.other_cost]).toEqual([10, 10, 10]);
      // 30.012 at full precision would show 30.01: the row shows what its parts add up to.
      expect(r.effective_cost).toBe(30);
      expect(r.billed_cost).toBe(20.01);
    }
    // 60.024 / 20.008 at full precision would show 60.02 / 20.01.
    expect(d.totals).toEqual({ billed_cost: 40.02, effective_cost: 60, ondemand_cost: 20, commitment_cost: 20, other_cost: 20 });
    const limited = await callTool(client, "get_spend", { group_by: "day", limit: 1, ...window });
    expect(limited.rows).toHaveLength(1);
    expect(limited.truncated).toBe(true);
    expect(limited.totals).toEqual(d.totals);

    // Whatever the grouping, every shown document adds up.
    for (const group_by of ["month", "day", "account", "service"]) {
      const doc = await callTool(client, "get_spend", { group_by, ...window });
      for (const r of doc.rows) {
        for (const k of ["billed_cost", "effective_cost", "ondemand_cost", "commitment_cost", "other_cost"]) expect(isCents(r[k])).toBe(true);
        expect(r.effective_cost).toBe(sumCents([r.ondemand_cost, r.commitment_cost, r.other_cost]));
      }
      for (const k of ["billed_cost", "effective_cost", "ondemand_cost", "commitment_cost", "other_cost"]) expect(doc.totals[k]).toBe(sumCents(doc.rows.map((r: any) => r[k])));
      expect(doc.totals.effective_cost).toBe(sumCents([doc.totals.ondemand_cost, doc.totals.commitment_cost, doc.totals.other_cost]));
    }
    const tool = (await client.listTools()).tools.find((x) => x.name === "get_spend")!;
    expect(tool.description).toContain("totals are the sums of every row");
    await client.close();
  }, 60_000);

  test("get_coverage_and_utilization: ratios to 6 decimals from the shown costs; totals the sums of the shown monthly rows, whatever the grouping", async () => {
    const org = await t.newOrg("Coverage org");
    const rows = [];
    for (const day of ["2026-05-20", "2026-06-10"]) {
      rows.push(row(org.id, day, { ...used, commitmentDiscountStatus: "Used", effectiveCost: "10.004", listCost: "20.004" }));
      rows.push(row(org.id, day, { ...used, commitmentDiscountStatus: "Unused", effectiveCost: "5.001", listCost: "0" }));
      rows.push(row(org.id, day, { billedCost: "7.003", effectiveCost: "7.003", listCost: "7.003" }));
    }
    await t.s.db.insert(billingLineItems).values(rows as any);
    const client = await connect(t, org.key);
    const window = { start_date: "2026-05-01", end_date: "2026-07-01" };
    const p = await callTool(client, "get_coverage_and_utilization", { group_by: "period", ...window });
    expect(p.rows.map((r: any) => r.key)).toEqual(["2026-05", "2026-06"]);
    for (const r of p.rows) {
      expect(r).toMatchObject({ used_cost: 10, unused_cost: 5, covered_ondemand_cost: 20, uncovered_ondemand_cost: 7, savings: 10 });
      // 10.00 / (10.00 + 5.00) and 20.00 / (20.00 + 7.00), to 6 decimals (not 0.6667 / 0.7407).
      expect(r.utilization).toBe(0.666667);
      expect(r.coverage).toBe(0.740741);
    }
    // 20.008 / 40.008 / 14.006 at full precision would show 20.01 / 40.01 / 14.01.
    expect(p.totals).toEqual({ used_cost: 20, unused_cost: 10, utilization: 0.666667, covered_ondemand_cost: 40, uncovered_ondemand_cost: 14, coverage: 0.740741, savings: 20 });
    for (const k of ["used_cost", "unused_cost", "covered_ondemand_cost", "uncovered_ondemand_cost", "savings"]) expect(p.totals[k]).toBe(sumCents(p.rows.map((r: any) => r[k])));

    // Grouped by commitment the rows leave out uncovered usage; the totals still cover it all.
    const c = await callTool(client, "get_coverage_and_utilization", { group_by: "commitment", ...window });
    expect(c.rows.map((r: any) => r.key)).toEqual([SP]);
    expect(c.totals).toEqual(p.totals);
    for (const group_by of ["period", "account", "service", "commitment"]) {
      const doc = await callTool(client, "get_coverage_and_utilization", { group_by, ...window });
      for (const r of [...doc.rows, doc.totals]) {
        for (const k of ["used_cost", "unused_cost", "covered_ondemand_cost", "uncovered_ondemand_cost", "savings"]) expect(isCents(r[k])).toBe(true);
        expect(r.utilization).toBe(rate6(r.used_cost / (r.used_cost + r.unused_cost)));
        expect(r.coverage).toBe(rate6(r.covered_ondemand_cost / (r.covered_ondemand_cost + r.uncovered_ondemand_cost)));
      }
    }
    const tool = (await client.listTools()).tools.find((x) => x.name === "get_coverage_and_utilization")!;
    expect(tool.description).toContain("totals cover all of the window's usage");
    await client.close();
  }, 60_000);

  test("planning tools: items rounded (money to cents, amounts and ratios to 6 decimals), plan totals the sums of the shown items, stored plans as REST shows them", async () => {
    const org = await t.newOrg("Planning org");
    await seedHalfCentWorkloads(t.s.db, org.id, new Date("2026-06-17T00:00:00Z"));
    const created = await t.request("POST", `/beta/v1/org/${org.id}/commitment-plan-templates`, {
      key: org.key,
      body: { provider: "aws", name: "Half cents", configuration: { contract_specs: [HALF_CENT_SPEC], lookback_days: 30 } },
    });
    expect(created.status).toBe(200);
    const tpl = await created.json();
    const client = await connect(t, org.key);

    const plan = await callTool(client, "generate_commitment_plan", { template_id: tpl.id });
    expect(plan.items).toHaveLength(2);
    for (const i of plan.items) {
      expect(i.commitment_type).toBe("compute_savings_plan");
      // $/h 0.0137041096 → 0.013704 (not 0.0137); coverage 720/727 → 0.990371 (not 0.9904).
      expect(i.amount).toBe(0.013704);
      expect(i.expected_coverage).toBe(0.990371);
      expect(i.expected_utilization).toBe(1);
      expect([i.upfront_cost, i.monthly_cost, i.monthly_net_savings]).toEqual([0, 10, 63]);
    }
    // 20.008 / 125.992 at full precision would show 20.01 / 125.99.
    expect(plan.totals).toEqual({ upfront_cost: 0, monthly_cost: 20, monthly_net_savings: 126 });

    const rec = await callTool(client, "get_recommendations", { provider: "aws" });
    expect(rec.plans.length).toBeGreaterThan(0);
    for (const p of [plan, ...rec.plans]) {
      for (const k of ["upfront_cost", "monthly_cost", "monthly_net_savings"]) expect(p.totals[k]).toBe(sumCents(p.items.map((i: any) => i[k])));
      for (const i of p.items) {
        for (const k of ["upfront_cost", "monthly_cost", "monthly_net_savings"]) expect(isCents(i[k])).toBe(true);
        for (const k of ["amount", "expected_coverage", "expected_utilization"]) expect(isRate6(i[k])).toBe(true);
      }
    }

    // Stored (as a schedule does): list_latest_plans shows the same totals as REST, summed from the items.
    const segment = await getSegment(t.s.db, org.id, tpl.segment_id);
    const generated = await generatePlan(t.s.db, org.id, segment, tpl.configuration, NOW);
    expect(generated.sizing.monthlyCost).toBeGreaterThan(20.005);
    const planId = await t.s.db.transaction((tx) =>
      savePlan(tx, { orgId: org.id, segmentId: segment.id, templateId: tpl.id, executionDate: "2026-06-17", status: "generated", statusReason: null, lookbackDays: 30, maxUpfrontCost: 0, plan: generated }),
    );
    const stored = await callTool(client, "list_latest_plans", { provider: "aws", system_templates_only: false });
    expect(stored.plans).toHaveLength(1);
    expect(stored.plans[0]).toMatchObject({ plan_id: planId, item_count: 2, total_upfront_cost: 0, monthly_cost: 20, monthly_net_savings: 126 });
    const rest = await (await t.request("GET", `/beta/v1/org/${org.id}/commitment-plans/${planId}`, { key: org.key })).json();
    expect({ total_upfront_cost: rest.total_upfront_cost, monthly_cost: rest.monthly_cost, monthly_net_savings: rest.monthly_net_savings }).toEqual({
      total_upfront_cost: stored.plans[0].total_upfront_cost,
      monthly_cost: stored.plans[0].monthly_cost,
      monthly_net_savings: stored.plans[0].monthly_net_savings,
    });
    expect(rest.monthly_cost).toBe(sumCents(rest.items.map((i: any) => i.monthly_cost)));
    await client.close();
  }, 60_000);
});

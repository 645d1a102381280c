/**
 * Money at the edge in the MCP tools (DESIGN §12), through the SDK client and the real HTTP
 * app: money in cents, ratios/amounts to 6 decimals, and every total derived from the rounded
 * parts shown. The data carry sub-cent remainders (10.004-style), so totals rounded from full
 * precision would not add up as displayed.
 */
import { expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { billingLineItems } from "../../lib/db/schema/index.ts";
import { generatePlan, savePlan } from "../../lib/planning/generate.ts";
import { getSegment } from "../../lib/segments/service.ts";
import { rebuildAllBillingSummaries } from "../../lib/billing/summaries.ts";
import { NOW, connectMcp } from "./fixtures.ts";
import { HALF_CENT_SPEC, isCents, isRate6, seedHalfCentWorkloads, sumCents } from "../purchasing/halfCents.ts";

const DAY = 86_400_000;
const rate6 = (x: number) => Math.round(x * 1e6) / 1e6;

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

/** An amount with at most 3 decimals, in thousandths (integers: no float noise). */
const mills = (v: unknown) => Math.round(Number(v ?? 0) * 1000);

/** `n` extra cents to the cells of largest remainder (ties: the earlier cell). Amounts in mills. */
function spread(exact: number[], target: number): number[] {
  const floors = exact.map((x) => Math.floor(x / 10));
  let extra = target - floors.reduce((a, b) => a + b, 0);
  const order = exact.map((x, i) => ({ i, r: x - 10 * Math.floor(x / 10) })).sort((a, b) => b.r - a.r || a.i - b.i);
  for (const o of order) if (extra-- > 0) floors[o.i]! += 1;
  return floors;
}

/**
 * The reports' rounding (DESIGN §12), on its own here: per invoice, the total of on-demand +
 * commitment + other is its exact sum to the cent (half up), shared among the three by largest
 * remainder; each part, and billed cost (its own total), is spread over the invoice's cells by
 * largest remainder (ties: cells in key order). Returns the cents of each cell.
 */
function reportCents(lines: { invoice: string; cell: string; billed: number; parts: number[] }[]): Map<string, { billed: number; parts: number[] }> {
  const out = new Map<string, { billed: number; parts: number[] }>();
  for (const invoice of [...new Set(lines.map((l) => l.invoice))]) {
    const mine = lines.filter((l) => l.invoice === invoice);
    const cells = [...new Set(mine.map((l) => l.cell))].sort();
    const sum = (f: (l: (typeof mine)[number]) => number, cell?: string) => mine.filter((l) => cell === undefined || l.cell === cell).reduce((a, l) => a + f(l), 0);
    const partTotals = [0, 1, 2].map((p) => sum((l) => l.parts[p]!));
    const targets = spread(partTotals, Math.round(partTotals.reduce((a, b) => a + b, 0) / 10));
    const parts = [0, 1, 2].map((p) => spread(cells.map((c) => sum((l) => l.parts[p]!, c)), targets[p]!));
    const billedCells = cells.map((c) => sum((l) => l.billed, c));
    const billed = spread(billedCells, Math.round(billedCells.reduce((a, b) => a + b, 0) / 10));
    cells.forEach((c, i) => out.set(c, { billed: billed[i]!, parts: parts.map((p) => p[i]!) }));
  }
  return out;
}

const SP = "arn:aws:savingsplans::900000000000:savingsplan/sp-halfcent";
const used = { pricingCategory: "Committed", commitmentDiscountId: SP, commitmentDiscountCategory: "Spend", commitmentDiscountType: "Compute Savings Plans" };

describeEachDb("mcp: money as shown (cents, 6-decimal ratios, totals from the shown parts)", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });

  test("get_spend: the reports' cents (largest remainder per invoice); a row's effective cost is its shown on-demand + commitment + other; totals are the sums of every shown row, also past the limit", async () => {
    const org = await t.newOrg("Spend org");
    const rows = [];
    for (const day of ["2026-06-15", "2026-06-16"]) {
      rows.push(row(org.id, day, { billedCost: "10.004", effectiveCost: "10.004", listCost: "10.004" }));
      rows.push(row(org.id, day, { ...used, commitmentDiscountStatus: "Used", effectiveCost: "10.004", listCost: "12" }));
      rows.push(row(org.id, day, { chargeCategory: "Tax", serviceName: null, billedCost: "10.004", effectiveCost: "10.004" }));
    }
    await t.s.db.insert(billingLineItems).values(rows as any);
    // What the reports show, computed here from the rows (one invoice: aws, USD, June).
    const expected = reportCents(
      rows.map((r) => ({
        invoice: "aws/USD/2026-06",
        cell: r.chargePeriodStart.toISOString().slice(0, 10),
        billed: mills(r.billedCost),
        parts: [r.chargeCategory === "Usage" && !("commitmentDiscountId" in r) ? mills(r.effectiveCost) : 0, "commitmentDiscountId" in r ? mills(r.effectiveCost) : 0, r.chargeCategory === "Tax" ? mills(r.effectiveCost) : 0],
      })),
    );
    const client = await connectMcp(t, org.key);
    const window = { start_date: "2026-06-15", end_date: "2026-06-17" };
    const d = await callTool(client, "get_spend", { group_by: "day", ...window });
    expect(d.rows.map((r: any) => r.key)).toEqual(["2026-06-15", "2026-06-16"]);
    for (const r of d.rows) {
      const e = expected.get(r.key)!;
      expect([r.ondemand_cost, r.commitment_cost, r.other_cost, r.billed_cost]).toEqual([...e.parts, e.billed].map((c) => c / 100));
      expect(r.effective_cost).toBe(sumCents([r.ondemand_cost, r.commitment_cost, r.other_cost]));
    }
    // The invoice's parts are 20.008 each (60.024): its total shows 60.02, one extra cent each to on-demand and
    // commitment, given to the first day; rounded on its own, each day would show 10 + 10 + 10 = 30.
    expect(d.rows[0]).toMatchObject({ ondemand_cost: 10.01, commitment_cost: 10.01, other_cost: 10, effective_cost: 30.02, billed_cost: 20.01 });
    expect(d.rows[1]).toMatchObject({ ondemand_cost: 10, commitment_cost: 10, other_cost: 10, effective_cost: 30, billed_cost: 20.01 });
    expect(d.totals).toEqual([{ currency: "USD", billed_cost: 40.02, effective_cost: 60.02, ondemand_cost: 20.01, commitment_cost: 20.01, other_cost: 20 }]);
    const limited = await callTool(client, "get_spend", { group_by: "day", limit: 1, ...window });
    expect(limited.rows.map((r: any) => r.key)).toEqual(["2026-06-16"]);
    expect(limited.truncated).toBe(true);
    expect(limited.totals).toEqual(d.totals);

    // Whatever the grouping, every shown document adds up, to the invoice's exact total to the cent.
    for (const group_by of ["month", "day", "account", "service"]) {
      const doc = await callTool(client, "get_spend", { group_by, ...window });
      for (const r of doc.rows) {
        for (const k of ["billed_cost", "effective_cost", "ondemand_cost", "commitment_cost", "other_cost"]) expect(isCents(r[k])).toBe(true);
        expect(r.effective_cost).toBe(sumCents([r.ondemand_cost, r.commitment_cost, r.other_cost]));
      }
      expect(doc.totals).toEqual(d.totals);
      for (const k of ["billed_cost", "effective_cost", "ondemand_cost", "commitment_cost", "other_cost"]) expect(doc.totals[0][k]).toBe(sumCents(doc.rows.map((r: any) => r[k])));
    }
    const tool = (await client.listTools()).tools.find((x) => x.name === "get_spend")!;
    expect(tool.description).toContain("totals are the sums of every row");
    await client.close();
  }, 60_000);

  test("get_coverage_and_utilization: ratios to 6 decimals from the shown costs; money as the reports show it; totals the sums of the shown rows, whatever the grouping", async () => {
    const org = await t.newOrg("Coverage org");
    const rows = [];
    for (const day of ["2026-05-20", "2026-06-10"]) {
      rows.push(row(org.id, day, { ...used, commitmentDiscountStatus: "Used", effectiveCost: "10.004", listCost: "20.004" }));
      rows.push(row(org.id, day, { ...used, commitmentDiscountStatus: "Unused", effectiveCost: "5.001", listCost: "0" }));
      rows.push(row(org.id, day, { billedCost: "7.003", effectiveCost: "7.003", listCost: "7.003" }));
    }
    await t.s.db.insert(billingLineItems).values(rows as any);
    // The tool reads the allocation reports: the summaries and billing periods an import would write.
    await rebuildAllBillingSummaries(t.s.db, org.id);
    await t.s.handle.query(`INSERT INTO billing_periods (org_id, provider, month, status) SELECT DISTINCT org_id, provider, billing_period, 'open' FROM billing_line_items WHERE org_id = $1`, [org.id]);
    const client = await connectMcp(t, org.key);
    const window = { start_month: "2026-05", end_month: "2026-06" };
    const p = await callTool(client, "get_coverage_and_utilization", { group_by: "period", ...window });
    expect(p.rows.map((r: any) => r.key)).toEqual(["2026-05", "2026-06"]);
    for (const r of p.rows) {
      // The month's cents as commitment_cost_by_account / cloud_bill_by_service (REST) show them (one account, one service).
      const get = async (type: string) => {
        const res = await t.request("GET", `/beta/v1/org/${org.id}/allocation-reports/${type}?year=2026&month=${Number(r.month.slice(5))}`, { key: org.key });
        expect(res.status).toBe(200);
        return ((await res.json()) as any).rows[0];
      };
      const c = await get("commitment_cost_by_account");
      const b = await get("cloud_bill_by_service");
      expect(r).toMatchObject({
        commitment_used_cost: c.commitment_used_cost, commitment_unused_allocated_cost: c.commitment_unused_allocated_cost, commitment_cost: c.commitment_cost,
        covered_ondemand_cost: c.covered_ondemand_cost, savings: c.savings, ondemand_cost: b.ondemand_cost,
      });
      // Savings are the invoice's exact 10.000 (as in commitment_cost_daily); used 10.004 takes the
      // cent of used + unused (15.005 → 15.01), so covered = used + savings = 10.01 + 10.00.
      // 20.01 / (20.01 + 7.00), from the shown cents, to 6 decimals (not 0.7407).
      expect(r.savings).toBe(10);
      expect(r.covered_ondemand_cost).toBe(20.01);
      expect(r.ondemand_cost).toBe(7);
      expect(r.coverage).toBe(0.740837);
      expect(r.utilization).toBe(rate6(r.commitment_used_cost / (r.commitment_used_cost + r.commitment_unused_allocated_cost)));
    }
    const [tot] = p.totals;
    expect(p.totals.map((x: any) => x.currency)).toEqual(["USD"]);
    // 40.008 / 14.006 at full precision would show 40.01 / 14.01: the totals are the sums of the shown rows.
    expect(tot.covered_ondemand_cost).toBe(40.02);
    expect(tot.ondemand_cost).toBe(14);
    expect(tot.coverage).toBe(0.740837);
    const money = ["commitment_used_cost", "commitment_unused_allocated_cost", "commitment_cost", "covered_ondemand_cost", "ondemand_cost", "savings"];
    for (const k of money) expect(tot[k]).toBe(sumCents(p.rows.map((r: any) => r[k])));

    // Grouped by commitment (no report has that grain): no on-demand, no coverage; the commitment's own cost.
    const c = await callTool(client, "get_coverage_and_utilization", { group_by: "commitment", ...window });
    expect(c.rows.map((r: any) => r.key)).toEqual([SP, SP]);
    expect(c.totals[0].coverage).toBeNull();
    for (const group_by of ["period", "account", "service", "commitment"]) {
      const doc = await callTool(client, "get_coverage_and_utilization", { group_by, ...window });
      for (const r of [...doc.rows, ...doc.totals]) {
        for (const k of money) expect(isCents(r[k])).toBe(true);
        expect(r.commitment_cost).toBe(sumCents([r.commitment_used_cost, r.commitment_unused_allocated_cost]));
        expect(r.utilization).toBe(rate6(r.commitment_used_cost / (r.commitment_used_cost + r.commitment_unused_allocated_cost)));
        if (group_by !== "commitment") expect(r.coverage).toBe(rate6(r.covered_ondemand_cost / (r.covered_ondemand_cost + r.ondemand_cost)));
      }
      for (const tt of doc.totals) for (const k of money) expect(tt[k]).toBe(sumCents(doc.rows.filter((r: any) => r.currency === tt.currency).map((r: any) => r[k])));
    }
    const tool = (await client.listTools()).tools.find((x) => x.name === "get_coverage_and_utilization")!;
    expect(tool.description).toContain("the sums of all shown rows");
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
    const client = await connectMcp(t, org.key);

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

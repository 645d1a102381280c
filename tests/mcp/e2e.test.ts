import { expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { NOW, seedOrgBilling, type SeededOrg, connectMcp } from "./fixtures.ts";
import { line, seedCatalog } from "../estimates/helpers.ts";
import { generatePlan, savePlan } from "../../lib/planning/generate.ts";
import { getSegment } from "../../lib/segments/service.ts";
import { rebuildAllBillingSummaries } from "../../lib/billing/summaries.ts";

const DAY = 86_400_000;

describeEachDb("mcp end to end with the SDK client", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });
  let seeded: SeededOrg;
  let client: Client;

  const call = async (name: string, args: Record<string, unknown> = {}) => {
    const r: any = await client.callTool({ name, arguments: args });
    if (r.isError) throw new Error(`${name}: ${r.content?.[0]?.text}`);
    // Structured content and its text fallback say the same thing.
    expect(JSON.parse(r.content[1].text)).toEqual(r.structuredContent);
    return r.structuredContent;
  };

  test("initialize and tools/list: every area, read-only, with input and output schemas", async () => {
    seeded = await seedOrgBilling(t.s.db, t.org.id, { scale: 1, tag: "123" });
    client = await connectMcp(t, t.org.key);
    expect(client.getServerVersion()?.name).toBe("commitops");
    expect(client.getInstructions()).toContain("read-only");
    const { tools } = await client.listTools();
    const names = tools.map((x) => x.name);
    for (const n of ["list_commitments", "get_commitment", "list_expiring_commitments", "get_coverage_and_utilization", "get_recommendations", "generate_commitment_plan", "price_cost_estimate", "get_spend", "forecast_spend", "list_linked_accounts", "get_organization"]) {
      expect(names).toContain(n);
    }
    for (const tool of tools) {
      expect(tool.description!.length).toBeGreaterThan(40);
      expect(tool.annotations?.readOnlyHint).toBe(true);
      expect(tool.inputSchema.type).toBe("object");
      expect(tool.outputSchema?.type).toBe("object");
    }
    await client.ping();
  }, 60_000);

  test("commitments: list, filters, one by provider id with its utilization, expiring soon", async () => {
    const active = await call("list_commitments");
    expect(active.total_count).toBe(2);
    expect(active.commitments.map((c: any) => c.provider_commitment_id).sort()).toEqual([seeded.riId, seeded.spArn].sort());
    const all = await call("list_commitments", { status: "all" });
    expect(all.total_count).toBe(3);
    expect(all.commitments.find((c: any) => c.provider_commitment_id === seeded.expiredId).status).toBe("expired");
    const ris = await call("list_commitments", { commitment_type: "reserved_instance", limit: 1, status: "all" });
    expect(ris.total_count).toBe(2);
    expect(ris.returned_count).toBe(1);
    expect(ris.truncated).toBe(true);
    const held = await call("list_commitments", { holding_account_id: seeded.accountIds[1] });
    expect(held.commitments.map((c: any) => c.provider_commitment_id)).toEqual([seeded.riId]);

    const one = await call("get_commitment", { commitment_id: seeded.spArn, lookback_days: 30 });
    expect(one.commitment.commitment_type).toBe("compute_savings_plan");
    expect(one.commitment.days_until_expiry).toBe(20);
    // 30 days of Used 8/day and Unused 2/day on this savings plan.
    expect(one.performance.used_cost).toBeCloseTo(30 * seeded.usedPerDay, 2);
    expect(one.performance.unused_cost).toBeCloseTo(30 * seeded.unusedPerDay, 2);
    expect(one.performance.utilization).toBeCloseTo(0.8, 4);
    expect(one.performance.savings).toBeCloseTo(30 * (seeded.listOfUsedPerDay - seeded.usedPerDay), 2);
    const byUuid = await call("get_commitment", { commitment_id: one.commitment.id });
    expect(byUuid.commitment.provider_commitment_id).toBe(seeded.spArn);

    const soon = await call("list_expiring_commitments", { within_days: 30 });
    expect(soon.commitments.map((c: any) => c.provider_commitment_id)).toEqual([seeded.spArn]);
    expect(soon.lapsing_recurring_hourly_cost).toBeCloseTo(0.4166, 4);
    expect((await call("list_expiring_commitments", { within_days: 365 })).count).toBe(2);

    const bad: any = await client.callTool({ name: "get_commitment", arguments: { commitment_id: "nope" } });
    expect(bad.isError).toBe(true);
  }, 60_000);

  test("coverage and utilization by period, account, service and commitment", async () => {
    // The tool reads the allocation reports, which read the per-period summaries and billing
    // periods an import writes; the fixture inserts raw rows, so build those here.
    await rebuildAllBillingSummaries(t.s.db, t.org.id);
    await t.s.handle.query(
      `INSERT INTO billing_periods (org_id, provider, month, status) SELECT DISTINCT org_id, provider, billing_period, 'open' FROM billing_line_items WHERE org_id = $1 ON CONFLICT DO NOTHING`,
      [t.org.id],
    );
    const today = Date.UTC(NOW.getUTCFullYear(), NOW.getUTCMonth(), NOW.getUTCDate());
    let od = 0;
    for (let i = 1; i <= seeded.days; i++) od += seeded.ondemandPerDay(new Date(today - i * DAY));
    const covered = seeded.days * seeded.listOfUsedPerDay;
    const p = await call("get_coverage_and_utilization", { group_by: "period" });
    expect(p.window).toEqual({ start_month: "2026-04", end_month: "2026-06" });
    expect(p.rows.map((r: any) => r.key)).toEqual(["2026-04", "2026-05", "2026-06"]);
    expect(p.totals.map((x: any) => x.currency)).toEqual(["USD"]);
    const [tot] = p.totals;
    expect(tot.commitment_used_cost).toBeCloseTo(seeded.days * seeded.usedPerDay, 2);
    expect(tot.commitment_unused_allocated_cost).toBeCloseTo(seeded.days * seeded.unusedPerDay, 2);
    expect(tot.utilization).toBeCloseTo(0.8, 4);
    expect(tot.coverage).toBeCloseTo(covered / (covered + od), 4);
    expect(tot.savings).toBeCloseTo(seeded.days * 4, 2);

    const byCommitment = await call("get_coverage_and_utilization", { group_by: "commitment" });
    expect([...new Set(byCommitment.rows.map((r: any) => r.key))]).toEqual([seeded.spArn]);
    expect(byCommitment.totals[0].commitment_used_cost).toBe(tot.commitment_used_cost);
    expect(byCommitment.totals[0].coverage).toBeNull();
    const byAccount = await call("get_coverage_and_utilization", { group_by: "account", start_month: "2026-06", end_month: "2026-06" });
    expect(byAccount.window).toEqual({ start_month: "2026-06", end_month: "2026-06" });
    // June 1-16: the user (accountIds[1]) carries the Unused cost, not the holding account (accountIds[0]).
    const user = byAccount.rows.find((r: any) => r.key === seeded.accountIds[1]);
    expect(user.commitment_used_cost).toBeCloseTo(16 * seeded.usedPerDay, 2);
    expect(user.commitment_unused_allocated_cost).toBeCloseTo(16 * seeded.unusedPerDay, 2);
    expect(byAccount.rows.find((r: any) => r.key === seeded.accountIds[0]).commitment_unused_allocated_cost).toBe(0);
    const byService = await call("get_coverage_and_utilization", { group_by: "service" });
    expect([...new Set(byService.rows.map((r: any) => r.key))]).toEqual(["AmazonEC2"]);

    const bad: any = await client.callTool({ name: "get_coverage_and_utilization", arguments: { start_month: "2026-06", end_month: "2026-05" } });
    expect(bad.isError).toBe(true);
    expect(bad.content[0].text).toContain("end_month");
  }, 60_000);

  test("spend by month, day, account and service", async () => {
    const today = Date.UTC(NOW.getUTCFullYear(), NOW.getUTCMonth(), NOW.getUTCDate());
    let expected = 0;
    for (let i = 1; i <= seeded.days; i++) expected += seeded.ondemandPerDay(new Date(today - i * DAY)) + seeded.usedPerDay + seeded.unusedPerDay;
    const m = await call("get_spend", { group_by: "month" });
    expect(m.totals.map((x: any) => x.currency)).toEqual(["USD"]);
    expect(m.rows.every((r: any) => r.currency === "USD")).toBe(true);
    expect(m.totals[0].effective_cost).toBeCloseTo(expected, 2);
    expect(m.rows.reduce((a: number, r: any) => a + r.effective_cost, 0)).toBeCloseTo(expected, 2);
    const d = await call("get_spend", { group_by: "day", start_date: "2026-06-15", end_date: "2026-06-17" });
    expect(d.rows.map((r: any) => r.key)).toEqual(["2026-06-15", "2026-06-16"]);
    // 2026-06-15 is a Monday: weekday on-demand.
    expect(d.rows[0].ondemand_cost).toBeCloseTo(seeded.ondemandPerDay(new Date("2026-06-15T00:00:00Z")), 4);
    expect(d.rows[0].commitment_cost).toBeCloseTo(10, 4);
    // The cents of the daily bill report (REST; its summaries were built above), every money column.
    const daily = (await (await t.orgRequest("GET", "/allocation-reports/cloud_bill_daily?year=2026&month=6")).json()).rows as any[];
    for (const r of d.rows) {
      const line = daily.find((x) => x.date === r.key && x.provider === r.provider && x.billing_currency === r.currency);
      expect(r).toEqual({ key: line.date, provider: line.provider, currency: line.billing_currency, billed_cost: line.billed_cost, effective_cost: line.total_cost, ondemand_cost: line.ondemand_cost, commitment_cost: line.commitment_cost, other_cost: line.other_cost });
    }
    const recent = await call("get_spend", { group_by: "day", limit: 3 });
    expect(recent.rows.map((r: any) => r.key)).toEqual(["2026-06-14", "2026-06-15", "2026-06-16"]);
    expect(recent.truncated).toBe(true);
    expect(recent.totals[0].effective_cost).toBeCloseTo(expected, 2);
    const acc = await call("get_spend", { group_by: "account", limit: 1 });
    expect(acc.rows).toHaveLength(1);
    expect(acc.truncated).toBe(true);
    const svc = await call("get_spend", { group_by: "service" });
    expect(svc.rows[0]).toMatchObject({ key: "AmazonEC2", provider: "aws" });
    expect((await call("get_spend", { provider: "gcp" })).rows).toEqual([]);
  }, 60_000);

  test("forecast: weekday-seasonal data is forecast almost exactly and the back-test says so", async () => {
    const f = await call("forecast_spend", { horizon_days: 14, history_days: 60 });
    expect(f.model).toBe("trend_weekday");
    expect(f.history.last_data_date).toBe("2026-06-16");
    expect(f.forecast.start_date).toBe("2026-06-17");
    expect(f.forecast.daily).toHaveLength(14);
    let truth = 0;
    for (let i = 0; i < 14; i++) truth += seeded.ondemandPerDay(new Date(Date.UTC(2026, 5, 17 + i))) + seeded.usedPerDay + seeded.unusedPerDay;
    expect(Math.abs(f.forecast.total - truth) / truth).toBeLessThan(0.02);
    expect(f.forecast.total_low_80).toBeLessThanOrEqual(f.forecast.total);
    expect(f.forecast.total_high_80).toBeGreaterThanOrEqual(f.forecast.total);
    expect(f.backtest.holdout_days).toBe(14);
    expect(f.backtest.wape).toBeLessThan(0.02);
    expect(f.method).toContain("day-of-week");
    // Month end: June actuals to the 16th plus the forecast of the 17th-30th.
    expect(f.month_end.month).toBe("2026-06");
    expect(f.month_end.projected_total).toBeCloseTo(f.month_end.actual_to_date + f.month_end.forecast_remaining, 2);
    expect(f.month_end.forecast_remaining).toBeCloseTo(f.forecast.total, 0);
  }, 60_000);

  test("accounts and organization", async () => {
    const a = await call("list_linked_accounts");
    expect(a.count).toBe(2);
    expect(a.by_provider).toEqual({ aws: 2 });
    expect(a.accounts[0]).toMatchObject({ provider: "aws", account_id: seeded.accountIds[0], name: "123-account-1", billing_account_id: "1230000000000" });
    const o = await call("get_organization");
    expect(o.organization.id).toBe(t.org.id);
    expect(o.access.credential).toBe("api_key");
  }, 60_000);

  test("planning: built-in recommendations, a plan from a template, a priced estimate (same services as the REST API)", async () => {
    const skus = await seedCatalog(t.s);
    const rec = await call("get_recommendations", { provider: "aws" });
    expect(rec.plans.map((p: any) => p.template.name)).toEqual(["Recommended", "Balanced", "High Savings"]);
    for (const p of rec.plans) {
      expect(p.totals.monthly_net_savings).toBeGreaterThanOrEqual(0);
      expect(p.totals.monthly_net_savings).toBeCloseTo(p.items.reduce((a: number, i: any) => a + i.monthly_net_savings, 0), 1);
    }
    // 60 days of m5.large usage beyond the inventory: Balanced (1-year no upfront, offered for
    // m5 in the bundled catalog) buys some.
    expect(rec.plans[1].items.length).toBeGreaterThan(0);
    expect(rec.plans[1].items.every((i: any) => i.contract_term === "one_year" && i.payment_option === "no_upfront")).toBe(true);
    expect(rec.plans[0].items.every((i: any) => i.contract_term === "thirty_day_gris")).toBe(true);

    const templates = await (await t.orgRequest("GET", "/commitment-plan-templates?provider=aws")).json();
    const balanced = templates.find((x: any) => x.name === "Balanced");
    const plan = await call("generate_commitment_plan", { template_id: balanced.id });
    expect(plan.template.id).toBe(balanced.id);
    expect(plan.totals).toEqual(rec.plans[1].totals);
    const missing: any = await client.callTool({ name: "generate_commitment_plan", arguments: { template_id: crypto.randomUUID() } });
    expect(missing.isError).toBe(true);
    // Nothing was stored or bought.
    const [{ n }] = await t.s.handle.query<{ n: number }>("SELECT count(*)::int AS n FROM commitment_plans");
    expect(n).toBe(0);
    expect((await call("list_latest_plans")).plans).toEqual([]);

    // Plans stored by the planning service (as a schedule or `plans generate` does): the latest
    // per template is listed.
    const segment = await getSegment(t.s.db, t.org.id, balanced.segment_id);
    const store = async (at: Date, status: "generated" | "not_purchased", reason: string | null) => {
      const generated = await generatePlan(t.s.db, t.org.id, segment, balanced.configuration, at);
      return t.s.db.transaction((tx) => savePlan(tx, { orgId: t.org.id, segmentId: segment.id, templateId: balanced.id, executionDate: at.toISOString().slice(0, 10), status, statusReason: reason, lookbackDays: 60, maxUpfrontCost: 0, plan: generated }));
    };
    await store(new Date(NOW.getTime() - 2 * DAY), "generated", null);
    await new Promise((r) => setTimeout(r, 5));
    const latestId = await store(NOW, "not_purchased", "below_min_monthly_savings");
    const stored = await call("list_latest_plans", { provider: "aws" });
    expect(stored.plans).toHaveLength(1);
    expect(stored.plans[0]).toMatchObject({ plan_id: latestId, template_id: balanced.id, template_name: "Balanced", status: "not_purchased", status_reason: "below_min_monthly_savings", execution_date: "2026-06-17" });
    expect(stored.plans[0].monthly_net_savings).toBeCloseTo(plan.totals.monthly_net_savings, 2);
    expect(stored.plans[0].item_count).toBe(plan.items.length);
    // Another org sees none of them.
    const other = await t.newOrg("Other", ["assistant:read", "templates:read"]);
    const otherClient = await connectMcp(t, other.key);
    const none: any = await otherClient.callTool({ name: "list_latest_plans", arguments: {} });
    expect(none.structuredContent.plans).toEqual([]);
    await otherClient.close();

    const created = await t.orgRequest("POST", "/cost-estimates", { body: { provider: "aws", name: "Web tier", line_items: [line(skus.awsM5, { quantity: 3, quantity_basis: "resource_count" })] } });
    expect(created.status).toBe(200);
    const est = await created.json();
    const rest = await (await t.orgRequest("GET", `/cost-estimates/${est.id}`)).json();
    const priced = await call("price_cost_estimate", { estimate_id: est.id });
    expect(priced.pricing.totals).toEqual(rest.pricing.totals);
    expect(priced.pricing.totals.ondemand_monthly_cost).toBeGreaterThan(0);
    const listed = await call("list_cost_estimates", { provider: "aws" });
    expect(listed.estimates.map((e: any) => e.id)).toContain(est.id);
    await client.close();
  }, 60_000);
});

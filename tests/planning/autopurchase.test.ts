import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { runDueAutoPurchases } from "../../lib/purchasing/autoPurchase.ts";
import { ledgerPurchaser, type Purchaser } from "../../lib/purchasing/purchaser.ts";
import { generatePlan } from "../../lib/planning/generate.ts";
import { createCustomSegment, ensureProviderSegment } from "../../lib/segments/service.ts";
import { commitments } from "../../lib/db/schema/index.ts";
import { OD, OFFERS, seedCatalog, seedUsage, spec } from "./fixtures.ts";

const START = new Date("2026-06-10T12:00:00Z");

describeEachDb("plan generation and auto-purchase", (driver) => {
  let clock = START;
  const t = useTestApp(driver, { now: () => clock });

  async function count(table: string, where = "true", params: unknown[] = []): Promise<number> {
    const [r] = await t.s.handle.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${table} WHERE ${where}`, params);
    return Number(r!.n);
  }

  async function newOrgWithUsage(profile: (h: number, at: Date) => number) {
    const org = await t.newOrg("Planning org");
    await seedCatalog(t.s.db, org.id);
    await seedUsage(t.s.db, org.id, START, 30 * 24, profile);
    return org;
  }

  async function createTemplate(org: { id: string; key: string }, body: Record<string, unknown>) {
    const r = await t.request("POST", `/beta/v1/org/${org.id}/commitment-plan-templates`, { key: org.key, body: { provider: "aws", name: "Auto", ...body } });
    expect(r.status).toBe(200);
    return r.json();
  }

  test("plan: flat usage of 10 instances buys 10 one-year RIs priced by lib/pricing", async () => {
    const org = await newOrgWithUsage(() => 10);
    const seg = await ensureProviderSegment(t.s.db, org.id, "aws");
    const plan = await generatePlan(t.s.db, org.id, seg, { max_upfront_cost: 0, lookback_days: 30, contract_specs: [spec(OFFERS.oneYearNoUpfront)] as any, resource_ids: [], renewal_commitment_ids: [] }, clock);
    expect(plan.sizing.items).toHaveLength(1);
    const item = plan.sizing.items[0]!;
    expect(item.units).toBe(10);
    expect(item.amount).toBe(10);
    expect(item.expectedUtilization).toBeCloseTo(1, 9);
    expect(item.expectedCoverage).toBeCloseTo(1, 9);
    expect(item.monthlyNetSavings).toBeCloseTo(10 * (OD - OFFERS.oneYearNoUpfront.recurring) * 730, 6);
    expect(item.monthlyCost).toBeCloseTo(10 * OFFERS.oneYearNoUpfront.recurring * 730, 6);
  });

  test("plan: business-hours usage sizes at the quantile; the upfront budget is never exceeded", async () => {
    const org = await newOrgWithUsage((_h, d) => {
      const wd = d.getUTCDay();
      return wd >= 1 && wd <= 5 && d.getUTCHours() >= 9 && d.getUTCHours() < 18 ? 25 : 3;
    });
    const seg = await ensureProviderSegment(t.s.db, org.id, "aws");
    const base = { lookback_days: 30, resource_ids: [], renewal_commitment_ids: [] };
    const oneYear = await generatePlan(t.s.db, org.id, seg, { ...base, max_upfront_cost: 0, contract_specs: [spec(OFFERS.oneYearNoUpfront), spec(OFFERS.threeYearAllUpfront)] as any }, clock);
    // Busy share 27% < 1 − 0.38: only the always-on 3; no upfront allowed so no 3-year.
    expect(oneYear.sizing.items.map((i) => [i.quote.contractTerm, i.units])).toEqual([["one_year", 3]]);
    const capped = await generatePlan(t.s.db, org.id, seg, { ...base, max_upfront_cost: 2200, contract_specs: [spec(OFFERS.oneYearNoUpfront), spec(OFFERS.threeYearAllUpfront)] as any }, clock);
    expect(capped.sizing.totalUpfront).toBeLessThanOrEqual(2200);
    expect(capped.sizing.items.find((i) => i.quote.contractTerm === "three_year")!.units).toBe(2);
    expect(capped.sizing.monthlyNetSavings).toBeGreaterThan(oneYear.sizing.monthlyNetSavings);
  });

  test("plan: active commitments reduce what is bought; renewal_commitment_ids count as expiring", async () => {
    const org = await newOrgWithUsage(() => 10);
    const seg = await ensureProviderSegment(t.s.db, org.id, "aws");
    const [c] = await t.s.db
      .insert(commitments)
      .values({ orgId: org.id, provider: "aws", providerCommitmentId: "ri-1", commitmentType: "reserved_instance", region: "us-east-1", instanceType: "m5.large", amount: "4", startsAt: new Date("2026-01-01T00:00:00Z"), endsAt: new Date("2027-01-01T00:00:00Z") })
      .returning();
    const cfg = { max_upfront_cost: 0, lookback_days: 30, contract_specs: [spec(OFFERS.oneYearNoUpfront)] as any, resource_ids: [], renewal_commitment_ids: [] as string[] };
    expect((await generatePlan(t.s.db, org.id, seg, cfg, clock)).sizing.items[0]!.units).toBe(6);
    expect((await generatePlan(t.s.db, org.id, seg, { ...cfg, renewal_commitment_ids: [c!.id] }, clock)).sizing.items[0]!.units).toBe(10);
    // resource_ids narrows the usage read
    expect((await generatePlan(t.s.db, org.id, seg, { ...cfg, resource_ids: ["i-other"] }, clock)).sizing.items).toHaveLength(0);
  });

  test("plan: an active savings plan covers its $/hour at its own term's discount, not the template's", async () => {
    const org = await newOrgWithUsage(() => 10);
    const seg = await ensureProviderSegment(t.s.db, org.id, "aws");
    // A 3-year compute savings plan offer at $0.06/h for the $0.10/h m5.large: 40 % off.
    const [sku] = await t.s.handle.query<{ id: string }>(`SELECT id FROM catalog_skus WHERE catalog_sku_org_id = $1`, [org.id]);
    const [offer] = await t.s.handle.query<{ id: string }>(
      `INSERT INTO offers (offer_org_id, provider, offer_key, commitment_type, contract_term, payment_option, duration_seconds, region, instance_type, instance_family, display_name, fee_rate, lock_in_days, is_insured, source, feed, as_of)
       VALUES ($1, 'aws', 'test:sp3', 'compute_savings_plan', 'three_year', 'no_upfront', 94608000, 'us-east-1', 'm5.large', 'm5', 'sp3', '0', 1095, false, 'test', 'test', '2026-01') RETURNING id`,
      [org.id],
    );
    await t.s.handle.query(`INSERT INTO lease_menu_items (offer_id, catalog_sku_id, recurring_hourly_rate, upfront_cost, source, feed, as_of) VALUES ($1, $2, '0.06', '0', 'test', 'test', '2026-01')`, [offer!.id, sku!.id]);
    // Active plan committing $0.24/h → covers $0.24 / 0.6 = $0.40/h of on-demand = 4 instances.
    await t.s.db.insert(commitments).values({ orgId: org.id, provider: "aws", providerCommitmentId: "sp-1", commitmentType: "compute_savings_plan", contractTerm: "three_year", paymentOption: "no_upfront", region: "us-east-1", amount: "0.24", startsAt: new Date("2026-01-01T00:00:00Z"), endsAt: new Date("2029-01-01T00:00:00Z") });
    // The template may only buy 1-year RIs; valuing the plan at face value ($0.24 = 2.4
    // instances) would buy more than the 6 still uncovered.
    const cfg = { max_upfront_cost: 0, lookback_days: 30, contract_specs: [spec(OFFERS.oneYearNoUpfront)] as any, resource_ids: [], renewal_commitment_ids: [] as string[] };
    const plan = await generatePlan(t.s.db, org.id, seg, cfg, clock);
    expect(plan.sizing.items).toHaveLength(1);
    expect(plan.sizing.items[0]!.quote.contractTerm).toBe("one_year");
    expect(plan.sizing.items[0]!.units).toBe(6);
  });

  test("plan: a custom segment's filters (account, region, service) narrow the usage", async () => {
    const org = await newOrgWithUsage(() => 10);
    const cfg = { max_upfront_cost: 0, lookback_days: 30, contract_specs: [spec(OFFERS.oneYearNoUpfront)] as any, resource_ids: [], renewal_commitment_ids: [] };
    const units = async (filters: Record<string, string[]>) => {
      const seg = await createCustomSegment(t.s.db, org.id, { provider: "aws", name: "S", filters });
      return (await generatePlan(t.s.db, org.id, seg, cfg, clock)).sizing.items.map((i) => i.units);
    };
    expect(await units({ account_ids: ["200000000001"], regions: ["us-east-1"], services: ["AmazonEC2"] })).toEqual([10]);
    expect(await units({ account_ids: ["999"] })).toEqual([]);
    expect(await units({ regions: ["eu-west-1"] })).toEqual([]);
    expect(await units({ services: ["AmazonRDS"] })).toEqual([]);
  });

  test("a schedule changed to start in the past does not buy for slots before the change", async () => {
    clock = START;
    const org = await newOrgWithUsage(() => 10);
    const tpl = await createTemplate(org, { configuration: { contract_specs: [spec(OFFERS.oneYearNoUpfront)] }, auto_purchase: { schedule: "monthly", start_date: "2026-05-20", enabled: true } });
    expect(tpl.auto_purchase.next_execution_date).toBe("2026-06-20");
    expect((await runDueAutoPurchases(t.s)).filter((r) => r.template_id === tpl.id)).toHaveLength(0);
    // toggling enabled keeps the schedule; the 20th runs once
    await t.request("PUT", `/beta/v1/org/${org.id}/commitment-plan-templates/${tpl.id}`, { key: org.key, body: { auto_purchase: { enabled: false } } });
    clock = new Date("2026-06-20T00:05:00Z");
    expect((await runDueAutoPurchases(t.s)).filter((r) => r.template_id === tpl.id).map((r) => [r.execution_date, r.outcome])).toEqual([["2026-06-20", "disabled"]]);
    clock = START;
  });

  test("a due schedule buys once: ledger + inventory, and the template shows the execution", async () => {
    clock = START;
    const org = await newOrgWithUsage(() => 10);
    const tpl = await createTemplate(org, {
      configuration: { contract_specs: [spec(OFFERS.oneYearNoUpfront)], lookback_days: 30 },
      auto_purchase: { schedule: "daily", start_date: "2026-06-10", enabled: true, min_monthly_savings: 100 },
    });
    expect(tpl.auto_purchase.next_execution_date).toBe("2026-06-10");
    const [a, b] = await Promise.all([runDueAutoPurchases(t.s), runDueAutoPurchases(t.s)]);
    const mine = [...a, ...b].filter((r) => r.template_id === tpl.id);
    expect(mine.filter((r) => r.outcome === "purchased")).toHaveLength(1);
    expect(await count("purchases", "template_id = $1", [tpl.id])).toBe(1);
    const inv = await t.s.handle.query<any>("SELECT amount, source, commitment_type, contract_term, purchase_id FROM commitments WHERE org_id = $1", [org.id]);
    expect(inv).toHaveLength(1);
    expect(Number(inv[0].amount)).toBe(10);
    expect(inv[0].source).toBe("purchase");
    // a second tick the same day finds nothing to do
    const again = await runDueAutoPurchases(t.s);
    expect(again.filter((r) => r.template_id === tpl.id)).toHaveLength(0);
    expect(await count("purchases", "template_id = $1", [tpl.id])).toBe(1);
    const got = await (await t.request("GET", `/beta/v1/org/${org.id}/commitment-plan-templates/${tpl.id}`, { key: org.key })).json();
    expect(got.auto_purchase.last_executed_at).toBe(START.toISOString());
    expect(got.auto_purchase.next_execution_date).toBe("2026-06-11");
    const plans = await t.s.handle.query<any>("SELECT status, monthly_net_savings FROM commitment_plans WHERE template_id = $1", [tpl.id]);
    expect(plans.map((p) => p.status)).toEqual(["purchased"]);
    expect(Number(plans[0].monthly_net_savings)).toBeCloseTo(277.4, 6);
  });

  test("enabled=false regenerates without buying; savings below min_monthly_savings do not buy", async () => {
    clock = START;
    const org = await newOrgWithUsage(() => 10);
    const off = await createTemplate(org, { configuration: { contract_specs: [spec(OFFERS.oneYearNoUpfront)] }, auto_purchase: { schedule: "daily", start_date: "2026-06-01", enabled: false } });
    const low = await createTemplate(org, { configuration: { contract_specs: [spec(OFFERS.oneYearNoUpfront)] }, auto_purchase: { schedule: "daily", start_date: "2026-06-01", enabled: true, min_monthly_savings: 277.41 } });
    const runs = await runDueAutoPurchases(t.s);
    expect(runs.find((r) => r.template_id === off.id)!.outcome).toBe("disabled");
    expect(runs.find((r) => r.template_id === low.id)!.outcome).toBe("below_min_monthly_savings");
    expect(await count("purchases", "org_id = $1", [org.id])).toBe(0);
    expect(await count("commitments", "org_id = $1", [org.id])).toBe(0);
    expect(await count("commitment_plans", "template_id = $1 AND status = 'not_purchased'", [off.id])).toBe(1);
  });

  test("missed ticks: after 5 days down, one catch-up run (the latest slot), not five", async () => {
    clock = START;
    const org = await newOrgWithUsage(() => 10);
    const tpl = await createTemplate(org, { configuration: { contract_specs: [spec(OFFERS.oneYearNoUpfront)] }, auto_purchase: { schedule: "daily", start_date: "2026-06-10", enabled: false } });
    await runDueAutoPurchases(t.s);
    clock = new Date(START.getTime() + 5 * 86_400_000);
    const runs = (await runDueAutoPurchases(t.s)).filter((r) => r.template_id === tpl.id);
    expect(runs.map((r) => r.execution_date)).toEqual(["2026-06-15"]);
    expect((await runDueAutoPurchases(t.s)).filter((r) => r.template_id === tpl.id)).toHaveLength(0);
    const dates = await t.s.handle.query<any>("SELECT execution_date::text AS d FROM purchase_runs WHERE template_id = $1 ORDER BY 1", [tpl.id]);
    expect(dates.map((r) => r.d)).toEqual(["2026-06-10", "2026-06-15"]);
    clock = START;
  });

  test("a crash inside the purchase rolls everything back; the next tick buys exactly once", async () => {
    clock = START;
    const org = await newOrgWithUsage(() => 10);
    const tpl = await createTemplate(org, { configuration: { contract_specs: [spec(OFFERS.oneYearNoUpfront)] }, auto_purchase: { schedule: "weekly", start_date: "2026-06-03", enabled: true } });
    const crashing: Purchaser = {
      name: "crashing",
      async purchase(tx, order) {
        await ledgerPurchaser.purchase(tx, order); // rows written, then the process "dies"
        throw new Error("connection lost mid-purchase");
      },
    };
    const first = (await runDueAutoPurchases(t.s, { purchaser: crashing })).filter((r) => r.template_id === tpl.id);
    expect(first.map((r) => r.outcome)).toEqual(["error"]);
    expect(await count("purchases", "template_id = $1", [tpl.id])).toBe(0);
    expect(await count("commitments", "org_id = $1", [org.id])).toBe(0);
    expect(await count("commitment_plans", "template_id = $1", [tpl.id])).toBe(0);
    expect(await count("purchase_runs", "template_id = $1 AND status = 'pending' AND attempts = 1", [tpl.id])).toBe(1);
    const second = (await runDueAutoPurchases(t.s)).filter((r) => r.template_id === tpl.id);
    expect(second.map((r) => [r.execution_date, r.outcome])).toEqual([["2026-06-10", "purchased"]]);
    await runDueAutoPurchases(t.s);
    expect(await count("purchases", "template_id = $1", [tpl.id])).toBe(1);
    expect(await count("commitments", "org_id = $1", [org.id])).toBe(1);
  });

  test("a deleted template's pending run is dropped; purchases keep their rows", async () => {
    clock = START;
    const org = await newOrgWithUsage(() => 10);
    const tpl = await createTemplate(org, { configuration: { contract_specs: [spec(OFFERS.oneYearNoUpfront)] }, auto_purchase: { schedule: "monthly", start_date: "2026-05-10", enabled: true } });
    await runDueAutoPurchases(t.s);
    expect(await count("purchases", "template_id = $1", [tpl.id])).toBe(1);
    const del = await t.request("DELETE", `/beta/v1/org/${org.id}/commitment-plan-templates/${tpl.id}`, { key: org.key });
    expect(del.status).toBe(204);
    expect(await count("purchases", "org_id = $1", [org.id])).toBe(1);
    expect(await count("commitment_plans", "org_id = $1", [org.id])).toBe(1);
  });
});

/**
 * Money at the edge (DESIGN §12) in what purchasing and planning show over REST, and in the
 * auto-purchase decision: a purchase's totals are the sums of its items' shown cents, $/hour
 * costs and amounts have 6 decimals, stored plans' amounts/units 6 decimals, and
 * `min_monthly_savings` is held against the plan's savings as shown. Values carry sub-cent
 * remainders (10.004-style) so full-precision totals would not add up as displayed.
 */
import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { runDueAutoPurchases } from "../../lib/purchasing/autoPurchase.ts";
import { HALF_CENT_SPEC, isCents, isRate6, seedHalfCentWorkloads, sumCents } from "./halfCents.ts";

const START = new Date("2026-06-10T12:00:00Z");

describeEachDb("money as shown: purchases, stored plans, the auto-purchase threshold", (driver) => {
  const t = useTestApp(driver, { now: () => START });

  /** A stored plan of the org with two items (units 2.1234567891, amount 0.0137041096, money 10.004-style). */
  async function storedPlan(orgId: string): Promise<string> {
    const [plan] = await t.s.handle.query<{ id: string }>(
      `INSERT INTO commitment_plans (org_id, provider, status, lookback_days, total_upfront_cost, monthly_cost, monthly_net_savings)
       VALUES ($1, 'aws', 'generated', 30, '20.008', '20.008', '10.008') RETURNING id`,
      [orgId],
    );
    for (const g of ["aws|c5|us-west-2", "aws|m5|us-east-1"])
      await t.s.handle.query(
        `INSERT INTO commitment_plan_items (plan_id, org_id, group_key, commitment_type, contract_term, payment_option, units, amount, upfront_cost, monthly_cost, monthly_net_savings, expected_coverage, expected_utilization, duration_seconds)
         VALUES ($1, $2, $3, 'compute_savings_plan', 'one_year', 'partial_upfront', '2.1234567891', '0.0137041096', '10.004', '10.004', '5.004', '0.990371383', '1', 31536000)`,
        [plan!.id, orgId, g],
      );
    return plan!.id;
  }

  test("GET /purchases/{id} and /purchases: totals are the sums of the items' shown cents; $/hour costs and amounts to 6 decimals", async () => {
    const org = await t.newOrg("Orders org");
    const planId = await storedPlan(org.id);
    const [p] = await t.s.handle.query<{ id: string }>(
      `INSERT INTO purchases (org_id, provider, plan_id, idempotency_key, purchaser, status, total_upfront_cost, monthly_net_savings, item_count)
       VALUES ($1, 'aws', $2, 'half-cents', 'ledger', 'confirmed', '20.008', '10.008', 2) RETURNING id`,
      [org.id, planId],
    );
    for (const position of [1, 2])
      await t.s.handle.query(
        `INSERT INTO purchase_items (org_id, purchase_id, position, provider, status, token, commitment_type, contract_term, payment_option, region, amount,
           planned_upfront, planned_hourly, monthly_net_savings, duration_seconds, quoted_upfront, quoted_hourly, actual_upfront, actual_hourly, currency)
         VALUES ($1, $2, $3, 'aws', 'confirmed', $4, 'compute_savings_plan', 'one_year', 'partial_upfront', 'us-east-1', '0.0137041096',
           '10.004', '0.0123456789', '5.004', 31536000, '10.004', '0.0123456789', '10.004', '0.0123456789', 'USD')`,
        [org.id, p!.id, position, crypto.randomUUID()],
      );

    const r = await t.request("GET", `/beta/v1/org/${org.id}/purchases/${p!.id}`, { key: org.key });
    expect(r.status).toBe(200);
    const body = (await r.json()) as any;
    expect(body.items).toHaveLength(2);
    for (const i of body.items) {
      expect([i.planned_upfront_cost, i.quoted_upfront_cost, i.actual_upfront_cost, i.monthly_net_savings]).toEqual([10, 10, 10, 5]);
      // Not the stored 10 decimals.
      expect([i.amount, i.planned_hourly_cost, i.quoted_hourly_cost, i.actual_hourly_cost]).toEqual([0.013704, 0.012346, 0.012346, 0.012346]);
    }
    // As displayed: 2 × 10.00 and 2 × 5.00 (the stored 20.008 / 10.008 would show 20.01 / 10.01).
    expect([body.total_upfront_cost, body.monthly_net_savings]).toEqual([20, 10]);
    expect(body.total_upfront_cost).toBe(sumCents(body.items.map((i: any) => i.planned_upfront_cost)));
    expect(body.monthly_net_savings).toBe(sumCents(body.items.map((i: any) => i.monthly_net_savings)));

    // The list shows the same summary as the detail.
    const list = (await (await t.request("GET", `/beta/v1/org/${org.id}/purchases`, { key: org.key })).json()) as any[];
    const { items, events, ...summary } = body;
    expect(list).toEqual([summary]);
  });

  test("GET /commitment-plans/{id}: units and amount to 6 decimals (not the stored 10), totals the sums of the shown items", async () => {
    const org = await t.newOrg("Plans org");
    const planId = await storedPlan(org.id);
    const body = (await (await t.request("GET", `/beta/v1/org/${org.id}/commitment-plans/${planId}`, { key: org.key })).json()) as any;
    expect(body.items).toHaveLength(2);
    for (const i of body.items) {
      expect([i.units, i.amount]).toEqual([2.123457, 0.013704]);
      expect([i.expected_coverage, i.expected_utilization]).toEqual([0.990371, 1]);
      for (const k of ["units", "amount", "expected_coverage", "expected_utilization", "fee_rate"]) expect(isRate6(i[k])).toBe(true);
      for (const k of ["upfront_cost", "monthly_cost", "monthly_net_savings"]) expect(isCents(i[k])).toBe(true);
    }
    expect([body.total_upfront_cost, body.monthly_cost, body.monthly_net_savings]).toEqual([20, 20, 10]);
  });

  test("min_monthly_savings is held against the plan's savings as shown: 2 × 63.00 = 126.00 buys at a threshold of 126 (125.992 at full precision would not)", async () => {
    const buyer = await t.newOrg("Threshold org");
    const above = await t.newOrg("Above-threshold org");
    const templates: Record<string, string> = {};
    for (const [o, min] of [[buyer, 126], [above, 126.01]] as const) {
      await seedHalfCentWorkloads(t.s.db, o.id, START);
      const r = await t.request("POST", `/beta/v1/org/${o.id}/commitment-plan-templates`, {
        key: o.key,
        body: {
          provider: "aws",
          name: "Half cents",
          configuration: { contract_specs: [HALF_CENT_SPEC], lookback_days: 30 },
          auto_purchase: { schedule: "daily", start_date: "2026-06-10", enabled: true, min_monthly_savings: min },
        },
      });
      expect(r.status).toBe(200);
      templates[o.id] = ((await r.json()) as any).id;
    }
    const runs = await runDueAutoPurchases(t.s);
    const run = runs.find((x) => x.template_id === templates[buyer.id])!;
    expect(run.outcome).toBe("purchased");
    expect(run.monthly_net_savings).toBe(126);
    const notBought = runs.find((x) => x.template_id === templates[above.id])!;
    expect(notBought.outcome).toBe("below_min_monthly_savings");
    expect(notBought.monthly_net_savings).toBe(126);

    // The decision agrees with what REST shows for the plan and the purchase.
    const plan = (await (await t.request("GET", `/beta/v1/org/${buyer.id}/commitment-plans/${run.plan_id}`, { key: buyer.key })).json()) as any;
    expect(plan.items.map((i: any) => i.monthly_net_savings)).toEqual([63, 63]);
    expect(plan.monthly_net_savings).toBe(126);
    expect(plan.purchase_id).toBe(run.purchase_id);
    const purchase = (await (await t.request("GET", `/beta/v1/org/${buyer.id}/purchases/${run.purchase_id}`, { key: buyer.key })).json()) as any;
    expect(purchase.monthly_net_savings).toBe(126);
    expect(purchase.items.map((i: any) => i.amount)).toEqual([0.013704, 0.013704]);
    expect(purchase.items.every((i: any) => isRate6(i.planned_hourly_cost))).toBe(true);
  });
});

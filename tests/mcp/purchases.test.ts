/**
 * Purchase history through the MCP client and the real app, after real auto-purchase activity:
 * a ledger purchase (bought), an order rejected by an admin through REST, one that failed at a
 * disabled purchasing connection, and runs that did not buy. list_purchases, get_purchase and
 * list_purchase_runs are compared with REST /purchases and /purchase-runs to the cent.
 */
import { beforeAll, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { purchasingConnections } from "../../lib/db/schema/index.ts";
import { runPurchasingTick } from "../../lib/purchasing/autoPurchase.ts";
import { OFFERS, seedCatalog, seedUsage, spec } from "../planning/fixtures.ts";
import { GCP_N2, seedWorkload } from "../purchasing/fixtures.ts";
import { isCents, sumCents } from "../purchasing/halfCents.ts";
import { connectMcp } from "./fixtures.ts";

const START = new Date("2026-06-10T12:00:00Z");
const DAY = 86_400_000;
type Org = { id: string; key: string };

describeEachDb("mcp: purchase history (list_purchases, get_purchase, list_purchase_runs)", (driver) => {
  let clock = START;
  const t = useTestApp(driver, { now: () => clock });
  let org: Org;
  let client: Client;
  const tpl: Record<string, any> = {};

  const call = async (name: string, args: Record<string, unknown> = {}) => {
    const r: any = await client.callTool({ name, arguments: args });
    if (r.isError) throw new Error(`${name}: ${r.content?.[0]?.text}`);
    expect(JSON.parse(r.content[1].text)).toEqual(r.structuredContent);
    return { ...r.structuredContent, _summary: r.content[0].text as string };
  };
  const rest = async (path: string) => {
    const r = await t.request("GET", `/beta/v1/org/${org.id}${path}`, { key: org.key });
    expect(r.status).toBe(200);
    return r.json() as Promise<any>;
  };
  const template = async (provider: string, name: string, contractSpec: object, autoPurchase: Record<string, unknown>) => {
    const r = await t.request("POST", `/beta/v1/org/${org.id}/commitment-plan-templates`, {
      key: org.key,
      body: { provider, name, configuration: { contract_specs: [contractSpec], lookback_days: 30 }, auto_purchase: { schedule: "daily", start_date: "2026-06-10", enabled: true, min_monthly_savings: 0, ...autoPurchase } },
    });
    expect(r.status).toBe(200);
    return r.json();
  };

  beforeAll(async () => {
    clock = START;
    org = await t.newOrg("Purchases org");
    // AWS: 4 m5.large every hour, no purchasing connection (the ledger buys).
    await seedCatalog(t.s.db, org.id);
    await seedUsage(t.s.db, org.id, START, 30 * 24, () => 4);
    // GCP: 3 n2-standard-4, bought through a purchasing connection that is switched off.
    await seedWorkload(t.s.db, org.id, GCP_N2, START, 30 * 24, 3);
    await t.s.db.insert(purchasingConnections).values({ orgId: org.id, name: "GCP buyer", kind: "gcp_purchasing", provider: "gcp", config: {}, dryRun: false, enabled: false });
    const gcpSpec = { commitment_type: "resource_cud", contract_term: "one_year", payment_option: "no_upfront" };
    tpl.ledger = await template("aws", "Nightly RIs", spec(OFFERS.oneYearNoUpfront), {});
    tpl.idle = await template("aws", "Idle", spec(OFFERS.oneYearNoUpfront), { enabled: false });
    tpl.approve = await template("gcp", "Needs approval", gcpSpec, { require_approval: true });
    tpl.direct = await template("gcp", "Direct", gcpSpec, { require_approval: false });
    // Day 1: the ledger buys the AWS plan, one GCP order waits for approval, the other is approved
    // and fails at the disabled connection, the idle schedule stores its plan only.
    await runPurchasingTick(t.s);
    // Day 2: the approval is rejected by an admin through REST.
    clock = new Date(START.getTime() + DAY);
    const pending = (await rest("/purchases?status=pending_approval"))[0];
    const rejected = await t.request("POST", `/beta/v1/org/${org.id}/purchases/${pending.id}/reject`, { key: org.key, body: { note: "Too early" } });
    expect(rejected.status).toBe(200);
    client = await connectMcp(t, org.key);
  });

  test("list_purchases is REST /purchases: bought, rejected and failed orders with their money in USD cents", async () => {
    const all = await rest("/purchases");
    expect(all.map((p: any) => p.status).sort()).toEqual(["confirmed", "failed", "rejected"]);
    const mcp = await call("list_purchases");
    expect(mcp.total_count).toBe(3);
    expect(mcp.purchases.map((p: any) => p.id)).toEqual(all.map((p: any) => p.id));
    for (const [i, p] of mcp.purchases.entries()) {
      const r = all[i];
      for (const k of ["provider", "status", "purchaser", "dry_run", "template_id", "execution_date", "plan_id", "item_count", "total_upfront_cost", "monthly_net_savings", "requires_approval", "decided_by", "decided_at", "decision_note", "created_at"]) expect(p[k]).toEqual(r[k]);
      expect(p.currency).toBe("USD");
      expect(isCents(p.monthly_net_savings)).toBe(true);
    }
    const byId = new Map<string, any>(mcp.purchases.map((p: any) => [p.template_id, p]));
    expect(byId.get(tpl.ledger.id)).toMatchObject({ status: "confirmed", template_name: "Nightly RIs", purchaser: "ledger" });
    expect(byId.get(tpl.approve.id)).toMatchObject({ status: "rejected", decision_note: "Too early", status_meaning: expect.stringContaining("rejected") });
    expect(byId.get(tpl.direct.id)).toMatchObject({ status: "failed", purchaser: "gcp_purchasing" });
    // Totals: per currency, the sums of every shown order; by status likewise.
    expect(mcp.totals).toEqual([{ currency: "USD", count: 3, total_upfront_cost: sumCents(all.map((p: any) => p.total_upfront_cost)), monthly_net_savings: sumCents(all.map((p: any) => p.monthly_net_savings)) }]);
    expect(mcp.by_status.map((b: any) => [b.status, b.count])).toEqual([["confirmed", 1], ["failed", 1], ["rejected", 1]]);
    expect(mcp.by_status.find((b: any) => b.status === "confirmed").monthly_net_savings).toBe(byId.get(tpl.ledger.id).monthly_net_savings);
    expect(mcp._summary).toContain("1 confirmed");

    // Filters: status (as REST's), provider, creation window, limit (totals still over all).
    const bought = await call("list_purchases", { status: "confirmed" });
    expect(bought.purchases.map((p: any) => p.id)).toEqual((await rest("/purchases?status=confirmed")).map((p: any) => p.id));
    expect((await call("list_purchases", { provider: "gcp" })).purchases.map((p: any) => p.status).sort()).toEqual(["failed", "rejected"]);
    expect((await call("list_purchases", { start_date: "2026-06-10", end_date: "2026-06-11" })).total_count).toBe(3);
    expect((await call("list_purchases", { start_date: "2026-06-11" })).total_count).toBe(0);
    expect((await call("list_purchases", { end_date: "2026-06-10" })).total_count).toBe(0);
    const one = await call("list_purchases", { limit: 1 });
    expect(one).toMatchObject({ total_count: 3, returned_count: 1, truncated: true });
    expect(one.totals).toEqual(mcp.totals);
    const bad: any = await client.callTool({ name: "list_purchases", arguments: { start_date: "2026-06-11", end_date: "2026-06-10" } });
    expect(bad.isError).toBe(true);
  }, 60_000);

  test("include_items and get_purchase: what was bought, at what price and currency, and why an item failed (as REST /purchases/{id})", async () => {
    const withItems = await call("list_purchases", { include_items: true });
    for (const p of withItems.purchases) {
      const r = await rest(`/purchases/${p.id}`);
      expect(p.items.map((i: any) => [i.id, i.status, i.amount, i.planned_upfront_cost, i.monthly_net_savings, i.actual_upfront_cost, i.actual_currency, i.failure_cause])).toEqual(
        r.items.map((i: any) => [i.id, i.status, i.amount, i.planned_upfront_cost, i.monthly_net_savings, i.actual_upfront_cost, i.currency, i.failure_cause]),
      );
      // The order's money is the sum of its items' shown cents.
      expect(p.monthly_net_savings).toBe(sumCents(p.items.map((i: any) => i.monthly_net_savings)));
    }
    const ledger = withItems.purchases.find((p: any) => p.template_id === tpl.ledger.id);
    expect(ledger.items[0]).toMatchObject({ status: "confirmed", commitment_type: "reserved_instance", amount: 4, currency: "USD", actual_currency: "USD" });
    expect(ledger.items[0].commitment_id).not.toBeNull();
    const failed = withItems.purchases.find((p: any) => p.template_id === tpl.direct.id);
    expect(failed.items[0]).toMatchObject({ status: "failed", failure_cause: "refused", actual_currency: null });
    expect(failed.items[0].failure_message).toContain("disabled");

    const one = await call("get_purchase", { purchase_id: failed.id });
    const r = await rest(`/purchases/${failed.id}`);
    expect(one.purchase.items).toEqual(failed.items);
    expect(one.events.map((e: any) => [e.event, e.message])).toEqual(r.events.map((e: any) => [e.event, e.message]));
    expect(one._summary).toContain("disabled");
    const missing: any = await client.callTool({ name: "get_purchase", arguments: { purchase_id: crypto.randomUUID() } });
    expect(missing.isError).toBe(true);
    expect((await call("list_purchases", { include_items: false })).purchases[0].items).toBeUndefined();
    const tooMany: any = await client.callTool({ name: "list_purchases", arguments: { include_items: true, limit: 100 } });
    expect(tooMany.isError).toBe(true);
  }, 60_000);

  test("list_purchase_runs is REST /purchase-runs, with what each run decided and its plan's money (as /commitment-plans)", async () => {
    const all = await rest("/purchase-runs");
    const mcp = await call("list_purchase_runs");
    expect(mcp.runs.map((r: any) => [r.id, r.template_id, r.execution_date, r.status, r.outcome, r.plan_id, r.purchase_id])).toEqual(all.map((r: any) => [r.id, r.template_id, r.execution_date, r.status, r.outcome, r.plan_id, r.purchase_id]));
    const idle = mcp.runs.find((r: any) => r.template_id === tpl.idle.id);
    expect(idle).toMatchObject({ outcome: "disabled", template_name: "Idle", purchase_id: null, currency: "USD" });
    expect(idle.outcome_meaning).toContain("disabled");
    for (const run of mcp.runs) {
      const plan = await rest(`/commitment-plans/${run.plan_id}`);
      expect([run.plan_monthly_net_savings, run.plan_total_upfront_cost]).toEqual([plan.monthly_net_savings, plan.total_upfront_cost]);
    }
    // The bought run's plan is what its purchase shows.
    const bought = mcp.runs.find((r: any) => r.template_id === tpl.ledger.id);
    const purchase = await rest(`/purchases/${bought.purchase_id}`);
    expect(bought.plan_monthly_net_savings).toBeGreaterThan(0);
    expect([bought.plan_monthly_net_savings, bought.plan_total_upfront_cost]).toEqual([purchase.monthly_net_savings, purchase.total_upfront_cost]);
    expect((await call("list_purchase_runs", { outcome: "disabled" })).runs.map((r: any) => r.id)).toEqual([idle.id]);
    expect((await call("list_purchase_runs", { template_id: tpl.ledger.id })).runs.map((r: any) => r.outcome)).toEqual(["purchased"]);
    expect((await call("list_purchase_runs", { start_date: "2026-06-11" })).total_count).toBe(0);
    expect(mcp._summary).toContain("1 disabled");
  }, 60_000);

  test("scopes and isolation: without purchases:read no purchase tool; another org sees none", async () => {
    const noScope = await t.newOrg("No purchases scope", ["assistant:read", "templates:read"]);
    const c = await connectMcp(t, noScope.key);
    const names = (await c.listTools()).tools.map((x) => x.name);
    for (const n of ["list_purchases", "get_purchase", "list_purchase_runs"]) expect(names).not.toContain(n);
    await c.close();
    const other = await t.newOrg("Other purchases org", ["assistant:read", "purchases:read"]);
    const o = await connectMcp(t, other.key);
    const list: any = await o.callTool({ name: "list_purchases", arguments: {} });
    expect(list.structuredContent.total_count).toBe(0);
    const runs: any = await o.callTool({ name: "list_purchase_runs", arguments: {} });
    expect(runs.structuredContent.total_count).toBe(0);
    const mine = (await call("list_purchases")).purchases[0].id;
    const theirs: any = await o.callTool({ name: "get_purchase", arguments: { purchase_id: mine } });
    expect(theirs.isError).toBe(true);
    await o.close();
  }, 60_000);
});

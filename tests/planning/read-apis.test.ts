/**
 * Read APIs of what planning holds (DESIGN §12): GET /segments, /segments/{id},
 * /commitment-plans and /commitment-plans/{id}, through the real HTTP app and database, after
 * real activity (auto-purchase runs that generate, store and buy plans): content, money at the
 * edge, paging (X-Pagination, Link), filters, org isolation, scopes and malformed ids.
 */
import { beforeAll, expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { linksOf, paginationOf, walkPages } from "../helpers/paging.ts";
import { runDueAutoPurchases } from "../../lib/purchasing/autoPurchase.ts";
import { createCustomSegment, ensureProviderSegment } from "../../lib/segments/service.ts";
import { hoistComponents } from "../../lib/http/openapiComponents.ts";
import { OD, OFFERS, seedCatalog, seedUsage, createTemplate as createTemplateOf, getJson, spec } from "./fixtures.ts";
import { isCents, sumCents } from "../purchasing/halfCents.ts";

const START = new Date("2026-06-10T12:00:00Z");
const DAY = 86_400_000;

describeEachDb("read APIs: segments and commitment plans", (driver) => {
  let clock = START;
  const t = useTestApp(driver, { now: () => clock });
  let org: { id: string; key: string };
  let other: { id: string; key: string };
  const P = () => `/beta/v1/org/${org.id}`;
  let buying: any;
  let idle: any;
  let customA: string;
  let customB: string;
  let otherSegment: string;
  let otherPlan: string;

  const get = (path: string, key = org.key) => getJson(t, path, key);
  const createTemplate = (o: { id: string; key: string }, body: Record<string, unknown>) => createTemplateOf(t, o, body);

  beforeAll(async () => {
    clock = START;
    org = await t.newOrg("Read APIs org");
    other = await t.newOrg("Other org");
    for (const o of [org, other]) {
      await seedCatalog(t.s.db, o.id);
      await seedUsage(t.s.db, o.id, START, 30 * 24, () => 7);
    }
    customA = (await createCustomSegment(t.s.db, org.id, { provider: "aws", name: "Production", filters: { account_ids: ["200000000001"], regions: ["us-east-1"] } })).id;
    customB = (await createCustomSegment(t.s.db, org.id, { provider: "gcp", name: "Data", filters: { services: ["BigQuery"] } })).id;
    otherSegment = (await createCustomSegment(t.s.db, other.id, { provider: "aws", name: "Theirs" })).id;
    // Two schedules: one buys (1-year RIs, daily), one only regenerates (enabled: false).
    buying = await createTemplate(org, { name: "Buys", configuration: { contract_specs: [spec(OFFERS.oneYearNoUpfront)] }, auto_purchase: { schedule: "daily", start_date: "2026-06-10", enabled: true } });
    idle = await createTemplate(org, { name: "Idle", configuration: { contract_specs: [spec(OFFERS.oneYearNoUpfront)] }, auto_purchase: { schedule: "daily", start_date: "2026-06-10", enabled: false } });
    const theirs = await createTemplate(other, { name: "Theirs", configuration: { contract_specs: [spec(OFFERS.oneYearNoUpfront)] }, auto_purchase: { schedule: "daily", start_date: "2026-06-10", enabled: false } });
    // Four daily ticks: 8 plans of the org (day 1 bought; later days find the usage covered).
    for (let d = 0; d < 4; d++) {
      clock = new Date(START.getTime() + d * DAY);
      await runDueAutoPurchases(t.s);
    }
    clock = START;
    const [p] = await t.s.handle.query<{ id: string }>("SELECT id FROM commitment_plans WHERE template_id = $1 LIMIT 1", [theirs.id]);
    otherPlan = p!.id;
  });

  // --- segments -------------------------------------------------------------------------------

  test("GET /segments: the provider-resources segment of each provider (created on first use) and the custom ones", async () => {
    const { status, body } = await get(`${P()}/segments`);
    expect(status).toBe(200);
    expect(body.map((s: any) => [s.provider, s.kind])).toEqual([
      ["aws", "provider_resources"],
      ["aws", "custom"],
      ["azure", "provider_resources"],
      ["gcp", "provider_resources"],
      ["gcp", "custom"],
    ]);
    const aws = await ensureProviderSegment(t.s.db, org.id, "aws");
    expect(body[0]).toEqual({ id: aws.id, provider: "aws", kind: "provider_resources", name: "All AWS resources", filters: {}, created_at: aws.createdAt.toISOString() });
    expect(body[1]).toMatchObject({ id: customA, name: "Production", filters: { account_ids: ["200000000001"], regions: ["us-east-1"] } });
    // The templates' segment ids are listed.
    expect(body.map((s: any) => s.id)).toContain(buying.segment_id);
    expect(body.map((s: any) => s.id)).not.toContain(otherSegment);
  });

  test("GET /segments pages (page 2 of 5 with page_size 2; Link next until the last page) and filters by provider", async () => {
    const all = await walkPages(t, `${P()}/segments`, 2, { key: org.key, expectTotal: 5 });
    const page2 = await get(`${P()}/segments?page=2&page_size=2`);
    expect(page2.body.map((s: any) => s.id)).toEqual(all.slice(2, 4).map((s) => s.id));
    expect(paginationOf(page2.r)).toEqual({ page: 2, page_size: 2, total_count: 5, total_pages: 3 });
    const gcp = await get(`${P()}/segments?provider=gcp`);
    expect(gcp.body.map((s: any) => s.id)).toEqual([all[3].id, customB]);
    expect(paginationOf(gcp.r).total_count).toBe(2);
    await walkPages(t, `${P()}/segments?provider=aws`, 1, { key: org.key, expectTotal: 2 });
    expect((await get(`${P()}/segments?provider=oracle`)).status).toBe(400);
    expect((await get(`${P()}/segments?page_size=0`)).status).toBe(400);
    expect((await get(`${P()}/segments?page_size=501`)).status).toBe(400);
  });

  test("GET /segments/{id}: one segment; another org's → 404; a malformed id → 400", async () => {
    const one = await get(`${P()}/segments/${customB}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id: customB, provider: "gcp", kind: "custom", name: "Data", filters: { services: ["BigQuery"] } });
    expect((await get(`${P()}/segments/${customB.toUpperCase()}`)).body.id).toBe(customB);
    const foreign = await get(`${P()}/segments/${otherSegment}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe("not_found");
    expect(JSON.stringify(foreign.body)).not.toContain("Theirs");
    expect((await get(`${P()}/segments/${crypto.randomUUID()}`)).status).toBe(404);
    expect((await get(`${P()}/segments/not-a-uuid`)).status).toBe(400);
  });

  // --- commitment plans ------------------------------------------------------------------------

  test("GET /commitment-plans: every stored plan of the org, newest first, linked to its purchase; money in cents", async () => {
    const { status, body } = await get(`${P()}/commitment-plans`);
    expect(status).toBe(200);
    expect(body).toHaveLength(8);
    const rows = await t.s.handle.query<any>("SELECT id FROM commitment_plans WHERE org_id = $1 ORDER BY created_at DESC, id DESC", [org.id]);
    expect(body.map((p: any) => p.id)).toEqual(rows.map((r) => r.id));
    expect(body.map((p: any) => p.id)).not.toContain(otherPlan);
    for (const p of body) {
      for (const k of ["total_upfront_cost", "monthly_cost", "monthly_net_savings", "max_upfront_cost"]) expect(isCents(p[k])).toBe(true);
      expect(p.created_at).toBe(new Date(p.created_at).toISOString());
      expect(p.provider).toBe("aws");
      expect(p.lookback_days).toBe(30);
    }
    const bought = body.filter((p: any) => p.status === "purchased");
    expect(bought).toHaveLength(1);
    expect(bought[0]).toMatchObject({ template_id: buying.id, segment_id: buying.segment_id, execution_date: "2026-06-10", status_reason: "purchased", item_count: 1 });
    // 7 instances × ($0.10 − $0.062) × 730 h
    expect(bought[0].monthly_net_savings).toBe(Math.round(7 * (OD - OFFERS.oneYearNoUpfront.recurring) * 730 * 100) / 100);
    expect(bought[0].monthly_cost).toBe(Math.round(7 * OFFERS.oneYearNoUpfront.recurring * 730 * 100) / 100);
    expect(bought[0].total_upfront_cost).toBe(0);
    const purchase = await get(`${P()}/purchases/${bought[0].purchase_id}`);
    expect(purchase.status).toBe(200);
    expect(purchase.body.plan_id).toBe(bought[0].id);
    // The others were not bought: the idle template's (disabled) and the buying one's later days (covered).
    const notBought = body.filter((p: any) => p.status !== "purchased");
    expect(notBought.every((p: any) => p.purchase_id === null && p.status === "not_purchased")).toBe(true);
    expect(notBought.filter((p: any) => p.template_id === idle.id).map((p: any) => p.status_reason)).toEqual(["disabled", "disabled", "disabled", "disabled"]);
    expect(notBought.filter((p: any) => p.template_id === buying.id).map((p: any) => [p.status_reason, p.item_count, p.monthly_net_savings])).toEqual([
      ["nothing_to_buy", 0, 0],
      ["nothing_to_buy", 0, 0],
      ["nothing_to_buy", 0, 0],
    ]);
  });

  test("GET /commitment-plans/{id}: the plan with its items; totals add up from the rounded items", async () => {
    const list = (await get(`${P()}/commitment-plans?status=purchased`)).body;
    const { status, body } = await get(`${P()}/commitment-plans/${list[0].id}`);
    expect(status).toBe(200);
    const { items, ...summary } = body;
    expect(summary).toEqual(list[0]);
    expect(items).toHaveLength(1);
    const [db] = await t.s.handle.query<any>("SELECT * FROM commitment_plan_items WHERE plan_id = $1", [body.id]);
    expect(items[0]).toEqual({
      id: db.id,
      group_key: db.group_key,
      commitment_type: "reserved_instance",
      contract_term: "one_year",
      payment_option: "no_upfront",
      region: "us-east-1",
      instance_type: "m5.large",
      units: 7,
      amount: 7,
      upfront_cost: 0,
      monthly_cost: Math.round(Number(db.monthly_cost) * 100) / 100,
      monthly_net_savings: Math.round(Number(db.monthly_net_savings) * 100) / 100,
      expected_coverage: 1,
      expected_utilization: 1,
      duration_seconds: OFFERS.oneYearNoUpfront.durationSeconds,
      fee_rate: 0,
      lock_in_days: 365,
      offer_id: db.offer_id,
      lease_menu_item_id: db.lease_menu_item_id,
    });
    expect(body.total_upfront_cost).toBe(sumCents(items.map((i: any) => i.upfront_cost)));
    expect(body.monthly_cost).toBe(sumCents(items.map((i: any) => i.monthly_cost)));
    expect(body.monthly_net_savings).toBe(sumCents(items.map((i: any) => i.monthly_net_savings)));
    expect(body.usage_to).toBe(START.toISOString());
    expect(body.usage_from).toBe(new Date(START.getTime() - 30 * DAY).toISOString());
    // A plan without items reads too.
    const empty = (await get(`${P()}/commitment-plans?template_id=${idle.id}&page_size=1`)).body[0];
    const e = await get(`${P()}/commitment-plans/${empty.id}`);
    expect(e.status).toBe(200);
    expect([e.body.item_count, e.body.items]).toEqual([0, []]);
  });

  test("money at the edge: items rounded to cents, rates to 6 decimals, totals the sums of the rounded items", async () => {
    const scratch = await t.newOrg("Rounding org");
    const [plan] = await t.s.handle.query<{ id: string }>(
      `INSERT INTO commitment_plans (org_id, provider, status, lookback_days, total_upfront_cost, monthly_cost, monthly_net_savings, max_upfront_cost)
       VALUES ($1, 'aws', 'generated', 30, '30.012', '3.3333333333', '1.0050000001', '1000.005') RETURNING id`,
      [scratch.id],
    );
    for (const g of ["aws|m5|us-east-1", "aws|m6|us-east-1", "aws|c5|us-east-1"])
      await t.s.handle.query(
        `INSERT INTO commitment_plan_items (plan_id, org_id, group_key, commitment_type, contract_term, payment_option, units, amount, upfront_cost, monthly_cost, monthly_net_savings, expected_coverage, expected_utilization, duration_seconds, fee_rate)
         VALUES ($1, $2, $3, 'reserved_instance', 'one_year', 'all_upfront', '2.5', '2.5', '10.004', '1.1111111111', '0.335', '0.123456789', '0.99999999', 31536000, '0.0000004')`,
        [plan!.id, scratch.id, g],
      );
    const r = await t.request("GET", `/beta/v1/org/${scratch.id}/commitment-plans/${plan!.id}`, { key: scratch.key });
    expect(r.status).toBe(200);
    const body = (await r.json()) as any;
    expect(body.items.map((i: any) => i.group_key)).toEqual(["aws|c5|us-east-1", "aws|m5|us-east-1", "aws|m6|us-east-1"]);
    for (const i of body.items) {
      expect([i.upfront_cost, i.monthly_cost, i.monthly_net_savings]).toEqual([10, 1.11, 0.34]);
      expect([i.expected_coverage, i.expected_utilization, i.fee_rate]).toEqual([0.123457, 1, 0]);
      expect([i.units, i.amount]).toEqual([2.5, 2.5]);
    }
    // As displayed: 3 × 10.00, 3 × 1.11, 3 × 0.34 (not the stored 30.012 / 3.33 / 1.01).
    expect([body.total_upfront_cost, body.monthly_cost, body.monthly_net_savings]).toEqual([30, 3.33, 1.02]);
    expect(body.max_upfront_cost).toBe(1000.01);
    const list = (await (await t.request("GET", `/beta/v1/org/${scratch.id}/commitment-plans`, { key: scratch.key })).json()) as any[];
    const { items, ...summary } = body;
    expect(list).toEqual([summary]);
    expect(items).toHaveLength(3);
  });

  test("GET /commitment-plans pages: page 2 of 8 with page_size 3, Link next until the last page, and the links work", async () => {
    const all = await walkPages(t, `${P()}/commitment-plans`, 3, { key: org.key, expectTotal: 8 });
    const page2 = await get(`${P()}/commitment-plans?page=2&page_size=3`);
    expect(page2.body.map((p: any) => p.id)).toEqual(all.slice(3, 6).map((p) => p.id));
    expect(paginationOf(page2.r)).toEqual({ page: 2, page_size: 3, total_count: 8, total_pages: 3 });
    const links = linksOf(page2.r);
    expect(new URL(links.next!).searchParams.get("page")).toBe("3");
    expect(new URL(links.prev!).searchParams.get("page")).toBe("1");
    const last = await get(`${P()}/commitment-plans?page=3&page_size=3`);
    expect(last.body).toHaveLength(2);
    expect(linksOf(last.r).next).toBeUndefined();
    // Past the end: an empty page, still with the totals.
    const beyond = await get(`${P()}/commitment-plans?page=9&page_size=3`);
    expect(beyond.body).toEqual([]);
    expect(paginationOf(beyond.r).total_count).toBe(8);
    // Filters are kept in the links.
    await walkPages(t, `${P()}/commitment-plans?template_id=${idle.id}`, 3, { key: org.key, expectTotal: 4 });
  });

  test("GET /commitment-plans filters: provider, template_id, status", async () => {
    const n = async (q: string) => (await get(`${P()}/commitment-plans?${q}`)).body.length;
    expect(await n("provider=aws")).toBe(8);
    expect(await n("provider=gcp")).toBe(0);
    expect(await n(`template_id=${buying.id}`)).toBe(4);
    expect(await n(`template_id=${buying.id}&status=not_purchased`)).toBe(3);
    expect(await n("status=purchased")).toBe(1);
    expect(await n("status=generated")).toBe(0);
    // Another org's template id selects nothing here.
    const [theirs] = await t.s.handle.query<any>("SELECT template_id FROM commitment_plans WHERE id = $1", [otherPlan]);
    expect(await n(`template_id=${theirs.template_id}`)).toBe(0);
    expect((await get(`${P()}/commitment-plans?status=bought`)).status).toBe(400);
    expect((await get(`${P()}/commitment-plans?template_id=not-a-uuid`)).status).toBe(400);
    expect((await get(`${P()}/commitment-plans?provider=oracle`)).status).toBe(400);
  });

  test("another org's plan → 404, never its data; a malformed id → 400; the other org sees only its own", async () => {
    const foreign = await get(`${P()}/commitment-plans/${otherPlan}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe("not_found");
    expect((await get(`${P()}/commitment-plans/${crypto.randomUUID()}`)).status).toBe(404);
    const bad = await get(`${P()}/commitment-plans/not-a-uuid`);
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBeDefined();
    const theirs = await get(`/beta/v1/org/${other.id}/commitment-plans`, other.key);
    expect(theirs.body).toHaveLength(4);
    expect(theirs.body.map((p: any) => p.id)).toContain(otherPlan);
    const ours = (await get(`${P()}/commitment-plans`)).body.map((p: any) => p.id);
    expect(theirs.body.some((p: any) => ours.includes(p.id))).toBe(false);
    expect((await get(`/beta/v1/org/${other.id}/segments`, other.key)).body.map((s: any) => s.id)).not.toContain(customA);
  });

  test("scopes: templates:read is required; a key of another org gets 403", async () => {
    const reportsOnly = await t.newOrg("Reports only", ["reports:read"]);
    for (const path of ["/segments", `/segments/${customA}`, "/commitment-plans", `/commitment-plans/${otherPlan}`]) {
      const r = await t.request("GET", `/beta/v1/org/${reportsOnly.id}${path}`, { key: reportsOnly.key });
      expect(r.status).toBe(403);
      const foreign = await t.request("GET", `${P()}${path}`, { key: other.key });
      expect(foreign.status).toBe(403);
      expect((await t.request("GET", `${P()}${path}`, { key: null })).status).toBe(401);
    }
    const readOnly = await t.newOrg("Templates reader", ["templates:read"]);
    expect((await t.request("GET", `/beta/v1/org/${readOnly.id}/commitment-plans`, { key: readOnly.key })).status).toBe(200);
    expect((await t.request("GET", `/beta/v1/org/${readOnly.id}/segments`, { key: readOnly.key })).status).toBe(200);
  });

  test("the OpenAPI document names the response components and the scopes", async () => {
    // The generator's document, completed as /openapi.json completes it, on these operations.
    const generated = (await (await t.request("GET", "/openapi/generated.json", { key: null })).json()) as any;
    const mine = Object.fromEntries(Object.entries(generated.paths).filter(([p]) => /\/(segments|commitment-plans)(\/|$)/.test(p)));
    const doc = hoistComponents({ ...generated, paths: mine, components: {} });
    for (const name of ["Segment", "CommitmentPlanSummary", "CommitmentPlan", "CommitmentPlanItem"]) expect(doc.components.schemas[name]).toBeDefined();
    const list = doc.paths["/beta/v1/org/{org_id}/commitment-plans"].get;
    expect(JSON.stringify(list.responses["200"])).toContain("#/components/schemas/CommitmentPlanSummary");
    expect(JSON.stringify(doc.paths["/beta/v1/org/{org_id}/commitment-plans/{plan_id}"].get.responses["200"])).toContain("#/components/schemas/CommitmentPlan\"");
    expect(JSON.stringify(doc.paths["/beta/v1/org/{org_id}/segments"].get.responses["200"])).toContain("#/components/schemas/Segment");
    for (const [p, item] of Object.entries<any>(doc.paths)) if (item.get) expect(item.get["x-required-scope"], p).toBe("templates:read");
  });
});

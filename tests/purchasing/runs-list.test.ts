/**
 * GET /purchase-runs (the auto-purchase claims per template and execution date) and the paging
 * of GET /purchases (DESIGN §12), through the real HTTP app and database after real auto-purchase
 * ticks: content and links to plans and purchases, a failed attempt, paging, filters, org
 * isolation and scopes.
 */
import { beforeAll, expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { linksOf, paginationOf, walkPages } from "../helpers/paging.ts";
import { runDueAutoPurchases } from "../../lib/purchasing/autoPurchase.ts";
import { ledgerPurchaser, type Purchaser } from "../../lib/purchasing/purchaser.ts";
import { OFFERS, seedCatalog, seedUsage, createTemplate as createTemplateOf, getJson, spec } from "../planning/fixtures.ts";

const START = new Date("2026-06-10T12:00:00Z");
const DAY = 86_400_000;
const SECRET_ERROR = "connection lost mid-purchase at /srv/secret/path.ts:42";

describeEachDb("read APIs: purchase runs and paged purchases", (driver) => {
  let clock = START;
  const t = useTestApp(driver, { now: () => clock });
  let org: { id: string; key: string };
  let other: { id: string; key: string };
  const P = () => `/beta/v1/org/${org.id}`;
  let buyer: any;
  let idle: any;
  let theirTemplate: any;

  const get = (path: string, key = org.key) => getJson(t, path, key);
  const createTemplate = (o: { id: string; key: string }, body: Record<string, unknown>) => createTemplateOf(t, o, body);

  beforeAll(async () => {
    org = await t.newOrg("Runs org");
    other = await t.newOrg("Other runs org");
    for (const o of [org, other]) {
      await seedCatalog(t.s.db, o.id);
      await seedUsage(t.s.db, o.id, START, 30 * 24, () => 5);
    }
    buyer = await createTemplate(org, { name: "Buyer", configuration: { contract_specs: [spec(OFFERS.oneYearNoUpfront)] }, auto_purchase: { schedule: "daily", start_date: "2026-06-10", enabled: true } });
    idle = await createTemplate(org, { name: "Idle", configuration: { contract_specs: [spec(OFFERS.oneYearNoUpfront)] }, auto_purchase: { schedule: "daily", start_date: "2026-06-10", enabled: false } });
    theirTemplate = await createTemplate(other, { name: "Theirs", configuration: { contract_specs: [spec(OFFERS.oneYearNoUpfront)] }, auto_purchase: { schedule: "daily", start_date: "2026-06-10", enabled: true } });
    // Four daily ticks; the bought commitments are retired between days, so each day buys again.
    for (let d = 0; d < 4; d++) {
      clock = new Date(START.getTime() + d * DAY);
      await runDueAutoPurchases(t.s);
      await t.s.handle.query("UPDATE commitments SET provider_state = 'retired'");
    }
    // Day five: the buyer's purchase fails (the run stays pending, to be retried).
    clock = new Date(START.getTime() + 4 * DAY);
    const crashing: Purchaser = {
      name: "crashing",
      async purchase(tx, order) {
        await ledgerPurchaser.purchase(tx, order);
        throw new Error(SECRET_ERROR);
      },
    };
    await runDueAutoPurchases(t.s, { purchaser: crashing });
    clock = START;
  });

  test("GET /purchase-runs: one run per template and execution date, latest first, linked to its plan and purchase", async () => {
    const { status, body } = await get(`${P()}/purchase-runs`);
    expect(status).toBe(200);
    expect(body).toHaveLength(10);
    expect(body.map((r: any) => r.execution_date)).toEqual(["2026-06-14", "2026-06-14", "2026-06-13", "2026-06-13", "2026-06-12", "2026-06-12", "2026-06-11", "2026-06-11", "2026-06-10", "2026-06-10"]);
    const rows = await t.s.handle.query<any>("SELECT id FROM purchase_runs WHERE org_id = $1 ORDER BY execution_date DESC, created_at DESC, id DESC", [org.id]);
    expect(body.map((r: any) => r.id)).toEqual(rows.map((r) => r.id));
    const bought = body.filter((r: any) => r.template_id === buyer.id && r.status === "done");
    expect(bought).toHaveLength(4);
    for (const run of bought) {
      expect(run).toMatchObject({ outcome: "purchased", attempts: 1, last_attempt_failed: false });
      expect(run.completed_at).toBe(new Date(run.completed_at).toISOString());
      const plan = await get(`${P()}/commitment-plans/${run.plan_id}`);
      expect(plan.status).toBe(200);
      expect(plan.body).toMatchObject({ template_id: buyer.id, execution_date: run.execution_date, status: "purchased", purchase_id: run.purchase_id });
      const purchase = await get(`${P()}/purchases/${run.purchase_id}`);
      expect(purchase.status).toBe(200);
      expect(purchase.body).toMatchObject({ plan_id: run.plan_id, template_id: buyer.id, execution_date: run.execution_date, status: "confirmed" });
    }
    const disabled = body.filter((r: any) => r.template_id === idle.id);
    expect(disabled.map((r: any) => [r.status, r.outcome, r.purchase_id === null, r.plan_id !== null])).toEqual(Array(5).fill(["done", "disabled", true, true]));
  });

  test("a failed attempt: the run stays pending, says its last attempt failed, never shows the error text", async () => {
    const { r, body } = await get(`${P()}/purchase-runs?status=pending`);
    expect(body).toHaveLength(1);
    expect(body[0]).toMatchObject({ template_id: buyer.id, execution_date: "2026-06-14", status: "pending", outcome: null, plan_id: null, purchase_id: null, attempts: 1, last_attempt_failed: true, completed_at: null });
    expect(paginationOf(r).total_count).toBe(1);
    const all = await (await t.request("GET", `${P()}/purchase-runs`)).text();
    expect(all).not.toContain("secret");
    expect(all).not.toContain("connection lost");
  });

  test("GET /purchase-runs pages: page 2 of 10 with page_size 4; Link next until the last page; the links work", async () => {
    const all = await walkPages(t, `${P()}/purchase-runs`, 4, { key: org.key, expectTotal: 10 });
    const page2 = await get(`${P()}/purchase-runs?page=2&page_size=4`);
    expect(page2.body.map((r: any) => r.id)).toEqual(all.slice(4, 8).map((r) => r.id));
    expect(paginationOf(page2.r)).toEqual({ page: 2, page_size: 4, total_count: 10, total_pages: 3 });
    expect(linksOf(page2.r).next).toContain("page=3");
    const last = await get(`${P()}/purchase-runs?page=3&page_size=4`);
    expect(last.body).toHaveLength(2);
    expect(linksOf(last.r).next).toBeUndefined();
    await walkPages(t, `${P()}/purchase-runs?template_id=${buyer.id}&status=done`, 3, { key: org.key, expectTotal: 4 });
  });

  test("GET /purchase-runs filters: template_id and status; another org's template selects nothing; bad values → 400", async () => {
    const n = async (q: string) => (await get(`${P()}/purchase-runs?${q}`)).body.length;
    expect(await n(`template_id=${buyer.id}`)).toBe(5);
    expect(await n(`template_id=${idle.id}`)).toBe(5);
    expect(await n(`template_id=${idle.id}&status=pending`)).toBe(0);
    expect(await n("status=done")).toBe(9);
    expect(await n("status=failed")).toBe(0);
    expect(await n(`template_id=${theirTemplate.id}`)).toBe(0);
    expect((await get(`${P()}/purchase-runs?template_id=not-a-uuid`)).status).toBe(400);
    expect((await get(`${P()}/purchase-runs?status=finished`)).status).toBe(400);
    // The other org sees only its own runs.
    const theirs = await get(`/beta/v1/org/${other.id}/purchase-runs`, other.key);
    expect(theirs.status).toBe(200);
    expect(theirs.body.length).toBeGreaterThan(0);
    expect(theirs.body.every((r: any) => r.template_id === theirTemplate.id)).toBe(true);
  });

  test("GET /purchases pages with page and page_size (page 2 of 4 with page_size 3), newest first, status filter kept", async () => {
    const all = await walkPages(t, `${P()}/purchases`, 3, { key: org.key, expectTotal: 4 });
    expect(all.map((p) => p.execution_date)).toEqual(["2026-06-13", "2026-06-12", "2026-06-11", "2026-06-10"]);
    const page2 = await get(`${P()}/purchases?page=2&page_size=3`);
    expect(page2.body.map((p: any) => p.id)).toEqual([all[3].id]);
    expect(paginationOf(page2.r)).toEqual({ page: 2, page_size: 3, total_count: 4, total_pages: 2 });
    expect(linksOf(page2.r).next).toBeUndefined();
    expect(linksOf(page2.r).prev).toContain("page=1");
    await walkPages(t, `${P()}/purchases?status=confirmed`, 1, { key: org.key, expectTotal: 4 });
    expect((await get(`${P()}/purchases?status=rejected`)).body).toEqual([]);
    expect((await get(`${P()}/purchases?page=0`)).status).toBe(400);
    // Another org's purchase → 404.
    const [theirs] = await t.s.handle.query<{ id: string }>("SELECT id FROM purchases WHERE org_id = $1 LIMIT 1", [other.id]);
    expect((await get(`${P()}/purchases/${theirs!.id}`)).status).toBe(404);
    expect(all.map((p) => p.id)).not.toContain(theirs!.id);
  });

  test("scopes: purchases:read is required (templates:read is not enough); another org's key → 403", async () => {
    for (const scopes of [["reports:read"], ["templates:read"]]) {
      const o = await t.newOrg("Scoped", scopes);
      for (const path of ["/purchase-runs", "/purchases"]) expect((await t.request("GET", `/beta/v1/org/${o.id}${path}`, { key: o.key })).status).toBe(403);
    }
    const reader = await t.newOrg("Purchases reader", ["purchases:read"]);
    expect((await t.request("GET", `/beta/v1/org/${reader.id}/purchase-runs`, { key: reader.key })).status).toBe(200);
    expect((await t.request("GET", `${P()}/purchase-runs`, { key: other.key })).status).toBe(403);
    expect((await t.request("GET", `${P()}/purchase-runs`, { key: null })).status).toBe(401);
  });
});

/**
 * Approval under concurrency (issue 26, item 5), through the real HTTP app on both drivers with
 * an AWS purchasing connection pointed at the loopback EC2 server: one decision wins and every
 * other is told which and by whom; parallel approvals and parallel workers buy each item of a
 * 4-item order exactly once and record every one (recording never deadlocks); a template that
 * asks for approval waits for it even without a purchasing connection (the ledger).
 */
import { afterAll, beforeAll, beforeEach, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { startAwsPurchasingServer, type AwsPurchasingServer } from "../helpers/awsPurchasingServer.ts";
import { runPurchasingTick } from "../../lib/purchasing/autoPurchase.ts";
import { backgroundPurchasesSettled, processPurchaseItems, type PurchaseHooks } from "../../lib/purchasing/executor.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { createServices } from "../../lib/services.ts";
import { seedWorkload, type Workload } from "./fixtures.ts";

const SECRET_KEY = randomBytes(32).toString("base64");
const START = new Date("2026-06-10T12:00:00Z");

/** Four EC2 workloads the loopback server has offerings for: a plan of four items (one per family and region). */
const EC2_TYPES: [string, string, string, number][] = [
  ["us-east-1", "m5.large", "m5", 0.096],
  ["us-east-1", "c5.xlarge", "c5", 0.17],
  ["us-east-1", "r5.large", "r5", 0.126],
  ["us-west-2", "m5.large", "m5", 0.096],
];
const ec2Workload = ([region, instanceType, instanceFamily, od]: [string, string, string, number]): Workload => ({
  provider: "aws",
  region,
  instanceType,
  instanceFamily,
  od,
  offer: { commitmentType: "reserved_instance", contractTerm: "one_year", paymentOption: "no_upfront", durationSeconds: 31_536_000, recurring: Math.round(od * 0.6 * 1e6) / 1e6, upfront: 0 },
});

/** A hook that holds every worker after its provider call until `n` workers are there: they then record at once. */
function recordTogether(n: number): PurchaseHooks & { reached: number; release(): void } {
  let release!: () => void;
  const all = new Promise<void>((r) => (release = r));
  const hooks = {
    reached: 0,
    release,
    async afterProviderCall() {
      if (++hooks.reached >= n) release();
      await all;
    },
  };
  return hooks;
}

describeEachDb("approval races and the ledger's approval", (driver) => {
  const t = useTestApp(driver, { now: () => START, config: { secretKey: SECRET_KEY, connectionsAllowPrivateEndpoints: true } });
  let aws: AwsPurchasingServer;

  beforeAll(async () => {
    aws = await startAwsPurchasingServer();
  });
  afterAll(async () => {
    await backgroundPurchasesSettled(t.s);
    await aws?.close();
  });
  beforeEach(async () => {
    await backgroundPurchasesSettled(t.s);
    delete t.s.extras.purchaseHooks;
    aws.reset();
    aws.setNow(START);
    // Each test's ticks see only its own org's schedules.
    await t.s.handle.query("UPDATE commitment_plan_templates SET schedule = NULL, start_date = NULL");
  });

  const api = (org: { id: string; key: string }) => ({
    get: async (path: string, key = org.key) => t.request("GET", `/beta/v1/org/${org.id}${path}`, { key }),
    post: async (path: string, body?: unknown, key = org.key) => t.request("POST", `/beta/v1/org/${org.id}${path}`, { key, body }),
  });

  /** An org running the four workloads, a live AWS purchasing connection (unless `connection: false`) and a daily template. */
  async function setup(opts: { connection?: boolean; requireApproval?: boolean | null } = {}) {
    const org = await t.newOrg("Approval org");
    for (const w of EC2_TYPES) await seedWorkload(t.s.db, org.id, ec2Workload(w), START, 30 * 24, 2);
    if (opts.connection !== false) {
      const conn = await api(org).post("/purchasing-connections", {
        name: "AWS buyer",
        kind: "aws_purchasing",
        dry_run: false,
        config: { region: "us-east-1", access_key_id: "AKIARACETEST00000001", endpoint_url: aws.url },
        secrets: { secret_access_key: "race-secret" },
      });
      expect(conn.status).toBe(201);
    }
    const tpl = await api(org).post("/commitment-plan-templates", {
      provider: "aws",
      name: "Nightly RIs",
      configuration: { contract_specs: [{ commitment_type: "reserved_instance", contract_term: "one_year", payment_option: "no_upfront" }], lookback_days: 30 },
      auto_purchase: { schedule: "daily", start_date: "2026-06-10", enabled: true, min_monthly_savings: 0, require_approval: opts.requireApproval === undefined ? true : opts.requireApproval },
    });
    expect(tpl.status).toBe(200);
    await runPurchasingTick(t.s);
    const list = await (await api(org).get("/purchases")).json();
    expect(list).toHaveLength(1);
    return { org, purchase: list[0] };
  }

  test("20 concurrent approve/reject calls: one decision wins, the 19 others get 409 naming it and who made it", async () => {
    const { org, purchase } = await setup();
    expect(purchase).toMatchObject({ status: "pending_approval", requires_approval: true });
    const deciders = await Promise.all(Array.from({ length: 20 }, () => createApiKey(t.s.db, { orgId: org.id })));
    const answers = await Promise.all(
      deciders.map((k, n) => api(org).post(`/purchases/${purchase.id}/${n % 2 ? "reject" : "approve"}`, { note: `note ${n}` }, k.key).then(async (r) => ({ n, status: r.status, body: await r.json() }))),
    );
    const won = answers.filter((a) => a.status === 200);
    expect(won).toHaveLength(1);
    const winner = won[0]!;
    const decision = winner.n % 2 ? "rejected" : "approved";
    expect(winner.body.decided_by).toBe(`api_key:${deciders[winner.n]!.id}`);
    expect(winner.body.decision_note).toBe(`note ${winner.n}`);
    const refused = answers.filter((a) => a.status !== 200);
    expect(refused.map((a) => a.status)).toEqual(Array(19).fill(409));
    for (const a of refused) {
      expect(a.body.code).toBe("purchase_not_pending");
      expect(a.body.message).toContain(`already ${decision} by ${winner.body.decided_by}`);
      expect(a.body.detail).toMatchObject({ decision, decided_by: winner.body.decided_by, decided_at: START.toISOString() });
    }
    // The winner's note is the one kept; the story tells of one decision only.
    const view = await (await api(org).get(`/purchases/${purchase.id}`)).json();
    expect(view.decision_note).toBe(`note ${winner.n}`);
    expect(view.events.filter((e: any) => e.event === "approved" || e.event === "rejected")).toHaveLength(1);

    // A later approve is refused the same way, and buys nothing more.
    await backgroundPurchasesSettled(t.s);
    const bought = aws.purchases.ec2.length;
    const later = await api(org).post(`/purchases/${purchase.id}/approve`, { note: "late" });
    expect(later.status).toBe(409);
    const body = await later.json();
    expect(body).toMatchObject({ code: "purchase_not_pending", detail: { decision, decided_by: winner.body.decided_by } });
    expect(body.message).toContain(winner.body.decided_by);
    await backgroundPurchasesSettled(t.s);
    expect(aws.purchases.ec2).toHaveLength(bought);
    expect((await (await api(org).get(`/purchases/${purchase.id}`)).json()).decision_note).toBe(`note ${winner.n}`);
  }, 60_000);

  test("10 parallel approvals of a 4-item order, with workers recording at once: every item bought once and confirmed", async () => {
    const { org, purchase } = await setup();
    expect(purchase.item_count).toBe(4);
    // Every worker (the approval's own and the job ticks beside it) waits after its provider call
    // until four have bought: then all four record in the same instant.
    const together = recordTogether(4);
    t.s.extras.purchaseHooks = together;
    let approvals: Response[];
    let workers: PromiseSettledResult<unknown>[];
    try {
      approvals = await Promise.all(Array.from({ length: 10 }, (_, n) => api(org).post(`/purchases/${purchase.id}/approve`, { note: `approval ${n}` })));
      // Replicas' job ticks beside the approval's worker: each takes an item the others hold no lease on.
      workers = await Promise.allSettled(Array.from({ length: 4 }, () => processPurchaseItems(t.s, { purchaseId: purchase.id })));
    } finally {
      together.release();
      await backgroundPurchasesSettled(t.s);
    }
    expect(together.reached).toBe(4);
    expect(workers.filter((w) => w.status === "rejected")).toEqual([]);
    expect(approvals.map((r) => r.status).sort()).toEqual([200, ...Array(9).fill(409)]);

    const view = await (await api(org).get(`/purchases/${purchase.id}`)).json();
    expect(view.status).toBe("confirmed");
    expect(view.items.map((i: any) => i.status)).toEqual(["confirmed", "confirmed", "confirmed", "confirmed"]);
    // Each item bought exactly once at the provider, under its own token, and recorded with that purchase's id.
    expect(aws.purchases.ec2).toHaveLength(4);
    const realCalls = aws.calls("PurchaseReservedInstancesOffering").filter((c) => c.params.DryRun !== "true" && c.status === 200);
    expect(realCalls).toHaveLength(4);
    for (const item of view.items) {
      const atProvider = aws.purchases.ec2.filter((ri) => ri.tags["commitops:purchase-token"] === item.idempotency_token);
      expect(atProvider).toHaveLength(1);
      expect(item.provider_purchase_id).toBe(atProvider[0]!.reservedInstancesId);
      expect(item.attempts).toBe(1);
    }
    const [{ n }] = await t.s.handle.query<{ n: string }>("SELECT count(*)::text AS n FROM commitments WHERE org_id = $1 AND source = 'purchase'", [org.id]);
    expect(Number(n)).toBe(4);
    expect(view.events.filter((e: any) => e.event === "item_confirmed")).toHaveLength(4);
    expect(view.events.filter((e: any) => e.event === "confirmed")).toHaveLength(1);
  }, 60_000);

  test("a replica stopping between its claim and the provider call gives the item back: another replica buys it at once, exactly once", async () => {
    const { org, purchase } = await setup();
    // The approval's own buyer (this replica) takes an item and waits before its provider call.
    let arrived!: () => void;
    const waiting = new Promise<void>((r) => (arrived = r));
    let go!: () => void;
    const gate = new Promise<void>((r) => (go = r));
    t.s.extras.purchaseHooks = {
      async beforeProviderCall() {
        arrived();
        await gate;
      },
    } satisfies PurchaseHooks;
    try {
      expect((await api(org).post(`/purchases/${purchase.id}/approve`)).status).toBe(200);
      await waiting;

      // A second replica claims the next item, and its process is told to stop right then.
      const stopping = createServices(t.s.handle, t.s.config, t.s.log, { now: t.s.now });
      let givenBack = "";
      const reports = await processPurchaseItems(stopping, {
        purchaseId: purchase.id,
        hooks: {
          beforeProviderCall(item) {
            givenBack = item.id;
            stopping.shutdown.requestStop();
          },
        },
      });
      expect(reports).toEqual([]);
      expect(givenBack).not.toBe("");
      // Given back as it was before the claim: approved, unclaimed, the attempt not counted; nothing reached AWS.
      const [row] = await t.s.handle.query<{ status: string; claimed_by: string | null; claimed_until: string | null; attempts: number; submitted_at: string | null }>(
        "SELECT status, claimed_by, claimed_until, attempts, submitted_at FROM purchase_items WHERE id = $1",
        [givenBack],
      );
      expect(row).toEqual({ status: "approved", claimed_by: null, claimed_until: null, attempts: 0, submitted_at: null });
      expect(aws.calls("PurchaseReservedInstancesOffering").filter((c) => c.params.DryRun !== "true")).toHaveLength(0);
    } finally {
      go();
      await backgroundPurchasesSettled(t.s);
    }
    // The replica still serving takes the given-back item at once (no lease to wait out): all four bought, each once.
    const view = await (await api(org).get(`/purchases/${purchase.id}`)).json();
    expect(view.status).toBe("confirmed");
    expect(view.items.map((i: any) => [i.status, i.attempts])).toEqual(Array(4).fill(["confirmed", 1]));
    expect(aws.purchases.ec2).toHaveLength(4);
    for (const item of view.items) expect(aws.purchases.ec2.filter((ri) => ri.tags["commitops:purchase-token"] === item.idempotency_token)).toHaveLength(1);
  }, 60_000);

  test("require_approval true without a purchasing connection: the ledger order waits for approval, then is recorded", async () => {
    const { org, purchase } = await setup({ connection: false });
    expect(purchase).toMatchObject({ purchaser: "ledger", status: "pending_approval", requires_approval: true, connection_id: null, decided_by: null });
    let view = await (await api(org).get(`/purchases/${purchase.id}`)).json();
    expect(view.items.map((i: any) => i.status)).toEqual(["pending_approval", "pending_approval", "pending_approval", "pending_approval"]);
    expect(view.events.map((e: any) => e.event)).toEqual(["created", "pending_approval"]);
    // Nothing in the inventory before the approval.
    const inventory = async () => Number((await t.s.handle.query<{ n: string }>("SELECT count(*)::text AS n FROM commitments WHERE org_id = $1 AND purchase_id = $2", [org.id, purchase.id]))[0]!.n);
    expect(await inventory()).toBe(0);

    const approved = await api(org).post(`/purchases/${purchase.id}/approve`, { note: "bought by hand" });
    expect(approved.status).toBe(200);
    view = await approved.json();
    expect(view).toMatchObject({ status: "confirmed", requires_approval: true, decision_note: "bought by hand" });
    expect(view.items.every((i: any) => i.status === "confirmed" && i.provider_state === "ledger" && i.commitment_id)).toBe(true);
    expect(view.events.map((e: any) => e.event)).toEqual(["created", "pending_approval", "approved", "confirmed"]);
    expect(await inventory()).toBe(4);
    expect(aws.requests).toHaveLength(0);
    expect((await api(org).post(`/purchases/${purchase.id}/approve`)).status).toBe(409);

    // Rejected instead: nothing reaches the inventory.
    const other = await setup({ connection: false });
    expect((await api(other.org).post(`/purchases/${other.purchase.id}/reject`)).status).toBe(200);
    expect(Number((await t.s.handle.query<{ n: string }>("SELECT count(*)::text AS n FROM commitments WHERE org_id = $1", [other.org.id]))[0]!.n)).toBe(0);

    // Without require_approval the ledger still records at once.
    const direct = await setup({ connection: false, requireApproval: null });
    expect(direct.purchase).toMatchObject({ purchaser: "ledger", status: "confirmed", requires_approval: false });
  }, 60_000);
});

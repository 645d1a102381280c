/**
 * Purchasing through the providers (issue 13), end to end through the real HTTP app and a real
 * database, with an AWS purchasing connection pointed at a loopback server speaking the EC2,
 * RDS and Savings Plans wire formats behind the official SDK clients: connections, dry runs,
 * approval, rejection, expiry and regeneration, auto-approval, price changes, interrupted
 * purchases recovered by token, the inventory listing and the purchase webhook.
 */
import { afterAll, beforeAll, beforeEach, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { defaultAwsOfferings, startAwsPurchasingServer, type AwsPurchasingServer } from "../helpers/awsPurchasingServer.ts";
import { runPurchasingTick } from "../../lib/purchasing/autoPurchase.ts";
import { backgroundPurchasesSettled, processPurchaseItems } from "../../lib/purchasing/executor.ts";
import { deliverWebhooks } from "../../lib/webhooks/deliver.ts";
import { syncLegacyEndpoints } from "../../lib/webhooks/legacy.ts";
import { PurchaseEventDataSchema } from "../../lib/events/data/purchase.ts";
import { Value } from "@sinclair/typebox/value";
import { createPurchasingConnection, getPurchasingConnectionRow, purchasingSettingsOf } from "../../lib/purchasing/connections.ts";
import { rotateSecrets } from "../../lib/secrets/rotate.ts";
import { SecretBox } from "../../lib/secrets/index.ts";
import { syncDueInventories } from "../../lib/purchasing/inventory.ts";
import { secretBoxOf } from "../../lib/secrets/index.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { makeUser } from "../oauth/helpers.ts";
import { OFFERS, seedCatalog, seedUsage, spec } from "../planning/fixtures.ts";
import { addComputeSavingsPlanOffer } from "./fixtures.ts";

const SECRET_KEY = randomBytes(32).toString("base64");
const ACCESS_KEY_ID = "AKIAPURCHASETEST0001";
const SECRET_ACCESS_KEY = `purchase-secret-${randomBytes(8).toString("hex")}`;
const START = new Date("2026-06-10T12:00:00Z");
const DAY = 86_400_000;

describeEachDb("purchasing through the providers", (driver) => {
  let clock = START;
  const t = useTestApp(driver, { now: () => clock, config: { secretKey: SECRET_KEY, connectionsAllowPrivateEndpoints: true, purchaseLeaseSeconds: 60 } });
  let aws: AwsPurchasingServer;
  let hook: Server;
  let hookUrl = "";
  const delivered: { headers: Record<string, string | string[] | undefined>; body: any }[] = [];
  let hookStatus = 204;

  beforeAll(async () => {
    aws = await startAwsPurchasingServer();
    hook = createServer((req, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        if (hookStatus < 300) delivered.push({ headers: req.headers, body: JSON.parse(body) });
        res.writeHead(hookStatus).end();
      });
    });
    await new Promise<void>((r) => hook.listen(0, "127.0.0.1", r));
    hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/purchases`;
    (t.s.config as any).purchaseWebhookUrl = hookUrl;
    // PURCHASE_WEBHOOK_URL (deprecated) as its endpoint of the event system, as the server does at start.
    await syncLegacyEndpoints(t.s);
  });
  afterAll(async () => {
    await aws?.close();
    hook?.close();
  });
  beforeEach(async () => {
    // What an earlier test's approval started buying in the background ends before this one starts.
    await backgroundPurchasesSettled(t.s);
    clock = START;
    aws.reset();
    aws.setNow(START);
    // Each test's ticks see only its own org's work: earlier tests' schedules, open items and undelivered events end here.
    await t.s.handle.query("UPDATE commitment_plan_templates SET schedule = NULL, start_date = NULL");
    await t.s.handle.query("UPDATE purchase_items SET status = 'failed' WHERE status IN ('approved', 'submitting', 'pending_approval')");
    await t.s.handle.query("UPDATE purchases SET status = 'failed' WHERE status IN ('approved', 'pending_approval')");
    await t.s.handle.query("UPDATE webhook_deliveries SET status = 'failed' WHERE status = 'pending'");
    await t.s.handle.query("UPDATE webhook_endpoints SET consecutive_failures = 0, failing_since = NULL, next_attempt_at = '2000-01-01', lease_token = NULL, lease_until = NULL");
    await t.s.handle.query("UPDATE purchasing_connections SET enabled = false");
  });

  async function count(table: string, where = "true", params: unknown[] = []): Promise<number> {
    const [r] = await t.s.handle.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${table} WHERE ${where}`, params);
    return Number(r!.n);
  }

  /** An org with 30 days of 4 m5.large instances, an AWS purchasing connection and a daily template. */
  async function setup(opts: { dryRun?: boolean; autoPurchase?: Record<string, unknown>; contractSpecs?: object[]; accessKeyId?: string } = {}) {
    const org = await t.newOrg("Purchasing org");
    await seedCatalog(t.s.db, org.id);
    await seedUsage(t.s.db, org.id, START, 30 * 24, () => 4);
    const conn = await t.request("POST", `/beta/v1/org/${org.id}/purchasing-connections`, {
      key: org.key,
      body: { name: "AWS buyer", kind: "aws_purchasing", config: { region: "us-east-1", access_key_id: opts.accessKeyId ?? ACCESS_KEY_ID, endpoint_url: aws.url }, secrets: { secret_access_key: SECRET_ACCESS_KEY } },
    });
    expect(conn.status).toBe(201);
    const connection = await conn.json();
    if (opts.dryRun === false) {
      const r = await t.request("PATCH", `/beta/v1/org/${org.id}/purchasing-connections/${connection.id}`, { key: org.key, body: { dry_run: false } });
      expect(r.status).toBe(200);
      expect((await r.json()).dry_run).toBe(false);
    }
    const tpl = await t.request("POST", `/beta/v1/org/${org.id}/commitment-plan-templates`, {
      key: org.key,
      body: {
        provider: "aws",
        name: "Nightly RIs",
        configuration: { contract_specs: opts.contractSpecs ?? [spec(OFFERS.oneYearNoUpfront)], lookback_days: 30, max_upfront_cost: 100_000 },
        auto_purchase: { schedule: "daily", start_date: "2026-06-10", enabled: true, min_monthly_savings: 0, ...opts.autoPurchase },
      },
    });
    expect(tpl.status).toBe(200);
    return { org, connection, template: await tpl.json() };
  }

  const api = (org: { id: string; key: string }) => ({
    get: async (path: string) => t.request("GET", `/beta/v1/org/${org.id}${path}`, { key: org.key }),
    post: async (path: string, body?: unknown) => t.request("POST", `/beta/v1/org/${org.id}${path}`, { key: org.key, body }),
  });

  /** The purchase once the buying its approval started in the background has finished (awaited, not polled against the wall clock). */
  async function settled(org: { id: string; key: string }, id: string) {
    await backgroundPurchasesSettled(t.s);
    return (await api(org).get(`/purchases/${id}`)).json();
  }

  async function onlyPurchase(org: { id: string; key: string }) {
    const list = await (await api(org).get("/purchases")).json();
    expect(list).toHaveLength(1);
    return (await api(org).get(`/purchases/${list[0].id}`)).json();
  }

  test("a new purchasing connection is dry_run; secrets are write-only and sealed; one per provider; fields checked", async () => {
    const { org, connection } = await setup();
    expect(connection).toMatchObject({ kind: "aws_purchasing", provider: "aws", dry_run: true, enabled: true, secrets_set: ["secret_access_key"], config: { region: "us-east-1", access_key_id: ACCESS_KEY_ID } });
    expect(JSON.stringify(connection)).not.toContain(SECRET_ACCESS_KEY);
    const [row] = await t.s.handle.query<{ secret_ciphertext: string }>("SELECT secret_ciphertext FROM purchasing_connections WHERE id = $1", [connection.id]);
    expect(row!.secret_ciphertext).not.toContain(SECRET_ACCESS_KEY);
    const listed = await (await api(org).get("/purchasing-connections")).json();
    expect(JSON.stringify(listed)).not.toContain(SECRET_ACCESS_KEY);

    const second = await api(org).post("/purchasing-connections", { name: "another", kind: "aws_purchasing", config: { region: "us-west-2" } });
    expect(second.status).toBe(409);
    expect((await second.json()).code).toBe("purchasing_connection_exists");
    const sameName = await api(org).post("/purchasing-connections", { name: "aws BUYER", kind: "gcp_purchasing", config: { project_id: "acme-prod-1" } });
    expect(sameName.status).toBe(409);
    expect((await sameName.json()).code).toBe("connection_name_taken");

    const bad = await api(org).post("/purchasing-connections", { name: "az", kind: "azure_purchasing", config: { tenant_id: "not a tenant!", billing_scope_id: "/nope", region: "eastus" } });
    expect(bad.status).toBe(422);
    const errors = (await bad.json()).errors;
    expect(Object.keys(errors).sort()).toEqual(["config.billing_scope_id", "config.client_id", "config.region", "config.tenant_id"]);
    const unknown = await api(org).post("/purchasing-connections", { name: "az", kind: "azure_purchasing", config: { bucket: "x" } });
    expect(unknown.status).toBe(422);
    expect(Object.keys((await unknown.json()).errors)).toEqual(["config.bucket"]);

    // Without CONNECTIONS_ALLOW_PRIVATE_ENDPOINTS a loopback endpoint is refused.
    await expect(
      createPurchasingConnection(t.s.db, secretBoxOf(t.s.config), org.id, { name: "gcp", kind: "gcp_purchasing", config: { project_id: "acme-prod-1", endpoint_url: "http://127.0.0.1:9/" } }, { now: clock, allowPrivateEndpoints: false }),
    ).rejects.toMatchObject({ status: 422, errors: { "config.endpoint_url": [expect.stringContaining("loopback")] } });
  });

  test("test endpoint: one signed read at the provider; an unknown key is a credentials failure", async () => {
    const { org, connection } = await setup();
    const ok = await (await api(org).post(`/purchasing-connections/${connection.id}/test`)).json();
    expect(ok).toMatchObject({ ok: true, cause: null });
    expect(aws.calls("DescribeReservedInstances")).toHaveLength(1);
    expect(aws.requests.every((r) => r.signed)).toBe(true);
    const r = await t.request("PATCH", `/beta/v1/org/${org.id}/purchasing-connections/${connection.id}`, { key: org.key, body: { config: { access_key_id: "BADKEY0000000000000" }, secrets: { secret_access_key: "x" } } });
    expect(r.status).toBe(200);
    const refused = await (await api(org).post(`/purchasing-connections/${connection.id}/test`)).json();
    expect(refused).toMatchObject({ ok: false, cause: "credentials" });
    expect(aws.purchases.ec2).toHaveLength(0);
  });

  test("dry run: the provider's DryRun purchase is made and recorded, nothing is bought, no approval needed", async () => {
    const { org } = await setup();
    const tick = await runPurchasingTick(t.s);
    expect(tick.runs.find((r) => r.outcome === "purchased")).toBeTruthy();
    const p = await onlyPurchase(org);
    expect(p).toMatchObject({ status: "dry_run", dry_run: true, requires_approval: false, purchaser: "aws_purchasing", item_count: 1 });
    expect(p.items[0]).toMatchObject({ status: "dry_run", commitment_type: "reserved_instance", instance_type: "m5.large", region: "us-east-1", amount: 4, provider_purchase_id: null });
    expect(p.items[0].dry_run_summary).toContain("DryRun");
    const purchaseCalls = aws.calls("PurchaseReservedInstancesOffering");
    expect(purchaseCalls).toHaveLength(1);
    expect(purchaseCalls[0]!.params.DryRun).toBe("true");
    expect(aws.purchases.ec2).toHaveLength(0);
    expect(await count("commitments", "org_id = $1 AND source = 'purchase'", [org.id])).toBe(0);
    expect(p.events.map((e: any) => e.event)).toEqual(["created", "approved", "submitting", "item_dry_run", "dry_run"]);
  });

  test("approval: nothing is bought while pending; approve buys once with LimitPrice; inventory and story follow; webhook told", async () => {
    const { org } = await setup({ dryRun: false });
    delivered.length = 0;
    await runPurchasingTick(t.s);
    let p = await onlyPurchase(org);
    expect(p).toMatchObject({ status: "pending_approval", requires_approval: true, dry_run: false });
    expect(p.approval_expires_at).toBe(new Date(START.getTime() + 7 * DAY).toISOString());
    expect(p.items[0].status).toBe("pending_approval");
    expect(aws.calls("PurchaseReservedInstancesOffering")).toHaveLength(0);
    // Another tick while pending buys nothing either.
    await runPurchasingTick(t.s);
    expect(aws.calls("PurchaseReservedInstancesOffering")).toHaveLength(0);
    expect((await api(org).get("/purchases?status=pending_approval").then((r) => r.json())).map((x: any) => x.id)).toEqual([p.id]);

    await deliverWebhooks(t.s);
    expect(delivered.map((d) => d.body.event)).toEqual(["purchase.pending_approval"]);
    expect(delivered[0]!.headers["idempotency-key"]).toBe(delivered[0]!.body.id);
    expect(delivered[0]!.body.purchase).toMatchObject({ id: p.id, status: "pending_approval" });
    // The org's event, written with the order: a fixed document of it and links to its API resource and its approval page.
    const [pending] = await t.s.handle.query<any>("SELECT * FROM events WHERE org_id = $1 AND type = 'purchase.pending_approval'", [org.id]);
    expect(pending.id).toBe(delivered[0]!.body.id);
    expect(delivered[0]!.headers["webhook-id"]).toBe(pending.id);
    expect(pending.data).toEqual({
      purchase_id: p.id,
      status: "pending_approval",
      message: p.events.find((e: any) => e.event === "pending_approval").message,
      provider: "aws",
      purchaser: "aws_purchasing",
      dry_run: false,
      template_id: p.template_id,
      plan_id: p.plan_id,
      run_id: expect.any(String),
      execution_date: p.execution_date,
      item_count: 1,
      total_upfront_cost: p.total_upfront_cost,
      monthly_net_savings: p.monthly_net_savings,
      currency: "USD",
      requires_approval: true,
      approval_expires_at: p.approval_expires_at,
      decided_by: null,
      decided_at: null,
    });
    expect(Value.Check(PurchaseEventDataSchema, pending.data)).toBe(true);
    expect(pending.resource_path).toBe(`/beta/v1/org/${org.id}/purchases/${p.id}`);
    expect(pending.console_path).toBe(`/app/purchases/${p.id}`);

    // A member may read purchases but not approve them.
    const member = await t.newOrg("other");
    expect((await t.request("POST", `/beta/v1/org/${org.id}/purchases/${p.id}/approve`, { key: member.key })).status).toBe(403);
    const readOnly = await createApiKey(t.s.db, { orgId: org.id, scopes: ["purchases:read"] });
    expect((await t.request("GET", `/beta/v1/org/${org.id}/purchases/${p.id}`, { key: readOnly.key })).status).toBe(200);
    const denied = await t.request("POST", `/beta/v1/org/${org.id}/purchases/${p.id}/approve`, { key: readOnly.key });
    expect(denied.status).toBe(403);
    expect((await denied.json()).code).toBe("insufficient_scope");

    const approved = await api(org).post(`/purchases/${p.id}/approve`, { note: "ok for June" });
    expect(approved.status).toBe(200);
    // The approval starts buying at once in the background; a job tick running beside it must not buy again.
    await processPurchaseItems(t.s);
    p = await settled(org, p.id);
    expect(p.status).toBe("confirmed");
    expect(p.decided_by).toStartWith("api_key:");
    expect(p.decision_note).toBe("ok for June");
    const item = p.items[0];
    expect(aws.purchases.ec2).toHaveLength(1);
    const ri = aws.purchases.ec2[0]!;
    expect(ri).toMatchObject({ instanceType: "m5.large", instanceCount: 4, region: "us-east-1", durationSeconds: 31_536_000, offeringType: "No Upfront", availabilityZone: null });
    expect(ri.limitPrice).toBe(0);
    expect(ri.tags["commitops:purchase-token"]).toBe(item.idempotency_token);
    expect(item).toMatchObject({ status: "confirmed", provider_purchase_id: ri.reservedInstancesId, provider_state: "payment-pending", actual_upfront_cost: 0, currency: "USD", attempts: 1 });
    const [c] = await t.s.handle.query<any>("SELECT * FROM commitments WHERE id = $1", [item.commitment_id]);
    expect(c).toMatchObject({ provider_commitment_id: ri.reservedInstancesId, source: "purchase", purchase_id: p.id, instance_type: "m5.large", region: "us-east-1" });
    expect(Number(c.amount)).toBe(4);
    expect(p.events.map((e: any) => e.event)).toEqual(["created", "pending_approval", "approved", "submitting", "item_confirmed", "confirmed"]);

    // Approving again is refused; the next tick (same day) and a later one buy nothing more.
    expect((await api(org).post(`/purchases/${p.id}/approve`)).status).toBe(409);
    await runPurchasingTick(t.s);
    clock = new Date(START.getTime() + DAY);
    const next = await runPurchasingTick(t.s);
    expect(next.items).toEqual([]);
    expect(aws.purchases.ec2).toHaveLength(1);

    await deliverWebhooks(t.s);
    expect(delivered.map((d) => d.body.event)).toContain("purchase.confirmed");
    const types = await t.s.handle.query<any>("SELECT type, data->>'status' AS status, data->>'decided_by' AS decided_by FROM events WHERE org_id = $1 ORDER BY seq", [org.id]);
    expect(types.map((e: any) => [e.type, e.status])).toEqual([
      ["purchase.pending_approval", "pending_approval"],
      ["purchase.approved", "approved"],
      ["purchase.confirmed", "confirmed"],
    ]);
    expect(types[1].decided_by).toStartWith("api_key:");
    expect(delivered.find((d) => d.body.event === "purchase.confirmed")!.body.purchase.items[0].provider_purchase_id).toBe(ri.reservedInstancesId);
  });

  test("rejected: nothing is bought, and it cannot be approved afterwards", async () => {
    const { org } = await setup({ dryRun: false });
    await runPurchasingTick(t.s);
    const p = await onlyPurchase(org);
    const r = await api(org).post(`/purchases/${p.id}/reject`, { note: "budget freeze" });
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ status: "rejected", decision_note: "budget freeze", items: [{ status: "rejected" }] });
    const again = await api(org).post(`/purchases/${p.id}/approve`);
    expect(again.status).toBe(409);
    expect((await again.json()).code).toBe("purchase_not_pending");
    await runPurchasingTick(t.s);
    expect(aws.calls("PurchaseReservedInstancesOffering")).toHaveLength(0);
    expect(aws.purchases.ec2).toHaveLength(0);
  });

  test("expiry: a stale approval lapses unbought and its plan is regenerated as a new approval", async () => {
    const { org, template } = await setup({ dryRun: false, autoPurchase: { schedule: "monthly" } });
    await runPurchasingTick(t.s);
    const first = await onlyPurchase(org);
    clock = new Date(START.getTime() + 7 * DAY + 60_000);
    // Too late: the approval answers 409 purchase_expired and nothing is bought.
    const late = await api(org).post(`/purchases/${first.id}/approve`);
    expect(late.status).toBe(409);
    expect((await late.json()).code).toBe("purchase_expired");
    const tick = await runPurchasingTick(t.s);
    expect(tick.runs.map((r) => [r.template_id, r.execution_date, r.outcome])).toEqual([[template.id, "2026-06-17", "purchased"]]);
    const list = await (await api(org).get("/purchases")).json();
    expect(list.map((x: any) => x.status)).toEqual(["pending_approval", "expired"]);
    expect(list[0].execution_date).toBe("2026-06-17");
    expect(new Date(list[0].approval_expires_at).getTime()).toBe(clock.getTime() + 7 * DAY);
    expect(aws.calls("PurchaseReservedInstancesOffering")).toHaveLength(0);
  });

  test("a newer plan supersedes an order still waiting for approval: approving both could never buy twice", async () => {
    const { org } = await setup({ dryRun: false });
    await runPurchasingTick(t.s);
    clock = new Date(START.getTime() + DAY);
    await runPurchasingTick(t.s);
    const list = await (await api(org).get("/purchases")).json();
    expect(list.map((x: any) => x.status)).toEqual(["pending_approval", "expired"]);
    const old = await (await api(org).get(`/purchases/${list[1].id}`)).json();
    expect(old.events.at(-1).message).toContain("Superseded");
    expect((await api(org).post(`/purchases/${list[1].id}/approve`)).status).toBe(409);
  });

  test("auto_approve_max_upfront approves small orders; require_approval false buys at once", async () => {
    const a = await setup({ dryRun: false, autoPurchase: { require_approval: true, auto_approve_max_upfront: 10 } });
    expect(a.template.auto_purchase).toMatchObject({ require_approval: true, auto_approve_max_upfront: 10 });
    await runPurchasingTick(t.s);
    const p = await onlyPurchase(a.org);
    expect(p).toMatchObject({ status: "confirmed", requires_approval: true, decided_by: "auto" });
    expect(aws.purchases.ec2).toHaveLength(1);

    // A 3-year all-upfront order is above the threshold: it waits.
    const b = await setup({ dryRun: false, autoPurchase: { require_approval: true, auto_approve_max_upfront: 10 }, contractSpecs: [spec(OFFERS.threeYearAllUpfront)] });
    await runPurchasingTick(t.s);
    expect((await onlyPurchase(b.org)).status).toBe("pending_approval");
    expect(aws.purchases.ec2).toHaveLength(1);
  });

  test("price above the plan: refused before any purchase call (price_changed); the order fails", async () => {
    const pricey = defaultAwsOfferings().map((o) => (o.service === "ec2" && o.instanceType === "m5.large" && o.offeringType === "No Upfront" ? { ...o, fixedPrice: 25 } : o));
    const server = await startAwsPurchasingServer({ offerings: pricey });
    try {
      const { org, connection } = await setup({ dryRun: false, autoPurchase: { require_approval: false } });
      await t.request("PATCH", `/beta/v1/org/${org.id}/purchasing-connections/${connection.id}`, { key: org.key, body: { config: { endpoint_url: server.url } } });
      await runPurchasingTick(t.s);
      const p = await onlyPurchase(org);
      expect(p.status).toBe("failed");
      expect(p.items[0]).toMatchObject({ status: "failed", failure_cause: "price_changed" });
      expect(server.calls("PurchaseReservedInstancesOffering")).toHaveLength(0);
      expect(server.purchases.ec2).toHaveLength(0);
    } finally {
      await server.close();
    }
  });

  test("a purchase whose answer was lost is found under its token by the next attempt, never bought twice", async () => {
    const { org } = await setup({ dryRun: false, autoPurchase: { require_approval: false } });
    // The provider buys, then the connection drops before we hear the answer.
    aws.failNext("PurchaseReservedInstancesOffering", { network: true, afterEffect: true });
    await runPurchasingTick(t.s);
    let p = await onlyPurchase(org);
    expect(p.status).toBe("approved");
    expect(p.items[0]).toMatchObject({ status: "submitting", failure_cause: "unreachable", attempts: 1 });
    expect(aws.purchases.ec2).toHaveLength(1);
    // Not before its retry time.
    expect(await processPurchaseItems(t.s)).toEqual([]);
    clock = new Date(START.getTime() + 2 * 60_000);
    const reports = await processPurchaseItems(t.s);
    expect(reports.map((r) => r.status)).toEqual(["confirmed"]);
    p = await onlyPurchase(org);
    expect(p.status).toBe("confirmed");
    expect(p.items[0].provider_purchase_id).toBe(aws.purchases.ec2[0]!.reservedInstancesId);
    expect(p.events.find((e: any) => e.event === "item_confirmed").detail.recovered).toBe(true);
    expect(aws.calls("PurchaseReservedInstancesOffering").filter((c) => c.params.DryRun !== "true")).toHaveLength(1);
    expect(aws.purchases.ec2).toHaveLength(1);
  });

  test("savings plans are bought with our clientToken; a lost answer is retried under the same token", async () => {
    const sp = { commitmentType: "compute_savings_plan", contractTerm: "one_year", paymentOption: "no_upfront" };
    const org = await t.newOrg("SP org");
    await seedUsage(t.s.db, org.id, START, 30 * 24, () => 4);
    await seedCatalog(t.s.db, org.id);
    await addComputeSavingsPlanOffer(t.s.db, org.id);
    await api(org).post("/purchasing-connections", { name: "AWS", kind: "aws_purchasing", dry_run: false, config: { region: "us-east-1", access_key_id: ACCESS_KEY_ID, endpoint_url: aws.url }, secrets: { secret_access_key: SECRET_ACCESS_KEY } });
    const tpl = await api(org).post("/commitment-plan-templates", {
      provider: "aws",
      name: "SP",
      configuration: { contract_specs: [spec(sp)], lookback_days: 30 },
      auto_purchase: { schedule: "daily", start_date: "2026-06-10", enabled: true, require_approval: false },
    });
    expect(tpl.status).toBe(200);
    aws.failNext("CreateSavingsPlan", { code: "InternalServerException", status: 500, afterEffect: true, times: 3 });
    await runPurchasingTick(t.s);
    let p = await onlyPurchase(org);
    expect(p.items[0]).toMatchObject({ status: "submitting", commitment_type: "compute_savings_plan", failure_cause: "unreachable" });
    clock = new Date(START.getTime() + 5 * 60_000);
    await processPurchaseItems(t.s);
    p = await onlyPurchase(org);
    expect(p.status).toBe("confirmed");
    expect(aws.purchases.savingsPlans).toHaveLength(1);
    const tokens = new Set(aws.calls("CreateSavingsPlan").map((c) => c.idempotencyToken));
    expect([...tokens]).toEqual([p.items[0].idempotency_token]);
    expect(p.items[0].provider_purchase_id).toBe(aws.purchases.savingsPlans[0]!.savingsPlanId);
  });

  test("inventory: the provider's list adds, updates and retires commitments; planning stops counting retired ones", async () => {
    const { org, connection } = await setup({ dryRun: false, autoPurchase: { require_approval: false } });
    await runPurchasingTick(t.s);
    const ri = aws.purchases.ec2[0]!;
    aws.setState(ri.reservedInstancesId, "active");
    let r = await (await api(org).post(`/purchasing-connections/${connection.id}/inventory`)).json();
    expect(r).toMatchObject({ listed: 1, added: 0, updated: 1, retired: 0 });
    const [c1] = await t.s.handle.query<any>("SELECT provider_state, source FROM commitments WHERE org_id = $1 AND provider_commitment_id = $2", [org.id, ri.reservedInstancesId]);
    expect(c1).toEqual({ provider_state: "active", source: "purchase" });
    // Listed again unchanged: nothing counts as updated, only the reconciled time moves.
    clock = new Date(clock.getTime() + 60_000);
    r = await (await api(org).post(`/purchasing-connections/${connection.id}/inventory`)).json();
    expect(r).toMatchObject({ listed: 1, added: 0, updated: 0, retired: 0 });
    const [c1b] = await t.s.handle.query<any>("SELECT reconciled_at FROM commitments WHERE org_id = $1 AND provider_commitment_id = $2", [org.id, ri.reservedInstancesId]);
    expect(new Date(c1b.reconciled_at).getTime()).toBe(clock.getTime());

    // Bought outside commitops: it appears. Then the first one retires at the provider.
    aws.reset();
    aws.setNow(START);
    r = await (await api(org).post(`/purchasing-connections/${connection.id}/inventory`)).json();
    expect(r).toMatchObject({ listed: 0, retired: 1 });
    const [c2] = await t.s.handle.query<any>("SELECT provider_state, ends_at FROM commitments WHERE org_id = $1 AND provider_commitment_id = $2", [org.id, ri.reservedInstancesId]);
    expect(c2.provider_state).toBe("retired");
    expect(new Date(c2.ends_at).getTime()).toBe(clock.getTime());

    // A provider refusal is the caller's to know: 502 with its cause, recorded on the connection.
    aws.failNext("DescribeReservedInstances", { code: "UnauthorizedOperation", status: 403 });
    const refused = await api(org).post(`/purchasing-connections/${connection.id}/inventory`);
    expect(refused.status).toBe(502);
    expect(await refused.json()).toMatchObject({ code: "provider_error", status: "BAD_GATEWAY", detail: { cause: "permission" } });
    expect(await (await api(org).get(`/purchasing-connections/${connection.id}`)).json()).toMatchObject({ status: "error", last_error_cause: "permission" });

        // The job lists due connections only (each claimed once), then on the interval.
    clock = new Date(START.getTime() + 7 * 3_600_000);
    const ran = await syncDueInventories(t.s);
    expect(ran.filter((x) => x.connection_id === connection.id)).toHaveLength(1);
    expect((await syncDueInventories(t.s)).filter((x) => x.connection_id === connection.id)).toHaveLength(0);
    const view = await (await api(org).get(`/purchasing-connections/${connection.id}`)).json();
    expect(view).toMatchObject({ status: "ok", last_inventory_at: clock.toISOString() });
  });

  test("org isolation: another org sees none of the purchases or connections", async () => {
    const { org, connection } = await setup({ dryRun: false });
    await runPurchasingTick(t.s);
    const p = await onlyPurchase(org);
    const other = await t.newOrg("Other org");
    expect((await t.request("GET", `/beta/v1/org/${other.id}/purchases/${p.id}`, { key: other.key })).status).toBe(404);
    expect((await t.request("POST", `/beta/v1/org/${other.id}/purchases/${p.id}/approve`, { key: other.key })).status).toBe(404);
    expect((await t.request("GET", `/beta/v1/org/${other.id}/purchasing-connections/${connection.id}`, { key: other.key })).status).toBe(404);
    expect((await t.request("GET", `/beta/v1/org/${org.id}/purchases`, { key: other.key })).status).toBe(403);
    expect(await (await t.request("GET", `/beta/v1/org/${other.id}/purchases`, { key: other.key })).json()).toEqual([]);
  });

  test("secrets rotate re-seals purchasing credentials under the new key; a ciphertext moved to another row does not open", async () => {
    const { org, connection } = await setup();
    const newKey = randomBytes(32).toString("base64");
    const rotating = new SecretBox(newKey, [SECRET_KEY]);
    const before = await getPurchasingConnectionRow(t.s.db, org.id, connection.id);
    expect((await rotateSecrets(t.s.db, rotating)).resealed).toBeGreaterThanOrEqual(1);
    const after = await getPurchasingConnectionRow(t.s.db, org.id, connection.id);
    expect(after.secretKeyId).toBe(rotating.currentKeyId);
    expect(after.secretCiphertext).not.toBe(before.secretCiphertext);
    expect((purchasingSettingsOf(new SecretBox(newKey), after).secrets as any).secret_access_key).toBe(SECRET_ACCESS_KEY);
    expect(() => purchasingSettingsOf(new SecretBox(SECRET_KEY), after)).toThrow();
    expect(() => purchasingSettingsOf(rotating, { ...after, id: crypto.randomUUID() })).toThrow();
    await rotateSecrets(t.s.db, new SecretBox(SECRET_KEY, [newKey]));
    expect((purchasingSettingsOf(secretBoxOf(t.s.config), await getPurchasingConnectionRow(t.s.db, org.id, connection.id)).secrets as any).secret_access_key).toBe(SECRET_ACCESS_KEY);
  });

  test("an order still being bought holds back the template's next slot (purchase_in_progress): never two orders for one need", async () => {
    const { org, template } = await setup({ dryRun: false, autoPurchase: { require_approval: false } });
    // The connection drops before AWS hears anything: the item waits for its retry, still `submitting`.
    aws.failNext("PurchaseReservedInstancesOffering", { network: true });
    await runPurchasingTick(t.s);
    expect((await onlyPurchase(org)).items[0].status).toBe("submitting");
    expect(aws.purchases.ec2).toHaveLength(0);
    clock = new Date(START.getTime() + DAY);
    aws.setNow(clock);
    aws.failNext("PurchaseReservedInstancesOffering", { network: true, times: 5 });
    const next = await runPurchasingTick(t.s);
    expect(next.runs.map((r) => [r.template_id, r.outcome])).toEqual([[template.id, "purchase_in_progress"]]);
    const p = await onlyPurchase(org);
    expect(p.items[0].attempts).toBe(2);
    expect(aws.purchases.ec2).toHaveLength(0);
  });

  test("the webhook retries an event its receiver refused, with backoff, until a 2xx", async () => {
    const { org } = await setup({ dryRun: false });
    delivered.length = 0;
    await runPurchasingTick(t.s);
    hookStatus = 503;
    try {
      // The legacy endpoint's backoff, at the top of its jitter: 5 s after a first failure.
      const random = () => 1;
      expect(await deliverWebhooks(t.s, { random })).toMatchObject({ delivered: 0, failed: 1 });
      const [e] = await t.s.handle.query<any>(
        "SELECT d.attempts, d.last_error, w.next_attempt_at FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id WHERE w.legacy_key = 'purchase' AND d.org_id = $1",
        [org.id],
      );
      expect(e).toMatchObject({ attempts: 1, last_error: "HTTP 503" });
      expect(new Date(e.next_attempt_at).getTime()).toBe(clock.getTime() + 5_000);
      // Not before its time, even with the receiver back.
      hookStatus = 204;
      expect(await deliverWebhooks(t.s, { random })).toMatchObject({ delivered: 0, failed: 0 });
      clock = new Date(clock.getTime() + 5_000);
      expect(await deliverWebhooks(t.s, { random })).toMatchObject({ delivered: 1, failed: 0 });
      expect(delivered.map((d) => [d.body.event, d.headers["x-commitops-delivery-attempt"]])).toEqual([["purchase.pending_approval", "2"]]);
      expect(await deliverWebhooks(t.s, { random })).toMatchObject({ delivered: 0, failed: 0 });
    } finally {
      hookStatus = 204;
    }
  });

  test("a disabled connection buys nothing and the ledger does not stand in for it: the item fails as refused", async () => {
    const { org, connection } = await setup({ dryRun: false, autoPurchase: { require_approval: false } });
    expect((await t.request("PATCH", `/beta/v1/org/${org.id}/purchasing-connections/${connection.id}`, { key: org.key, body: { enabled: false } })).status).toBe(200);
    await runPurchasingTick(t.s);
    const p = await onlyPurchase(org);
    expect(p).toMatchObject({ purchaser: "aws_purchasing", status: "failed" });
    expect(p.items[0]).toMatchObject({ status: "failed", failure_cause: "refused" });
    expect(p.items[0].failure_message).toContain("disabled");
    expect(aws.calls("PurchaseReservedInstancesOffering")).toHaveLength(0);
    expect(await count("commitments", "org_id = $1 AND source = 'purchase'", [org.id])).toBe(0);
  });

  test("roles bound the purchase scopes: a member's key reads purchases, only an admin's approves", async () => {
    const { org } = await setup({ dryRun: false });
    await runPurchasingTick(t.s);
    const p = await onlyPurchase(org);
    const member = await makeUser(t, [{ orgId: org.id, role: "member" }]);
    const viewer = await makeUser(t, [{ orgId: org.id, role: "viewer" }]);
    const memberKey = await createApiKey(t.s.db, { orgId: org.id, createdBy: member.id, scopes: ["purchases:read", "purchases:write"] });
    const viewerKey = await createApiKey(t.s.db, { orgId: org.id, createdBy: viewer.id, scopes: ["purchases:read"] });
    expect((await t.request("GET", `/beta/v1/org/${org.id}/purchases/${p.id}`, { key: memberKey.key })).status).toBe(200);
    expect((await t.request("GET", `/beta/v1/org/${org.id}/purchases`, { key: viewerKey.key })).status).toBe(403);
    const denied = await t.request("POST", `/beta/v1/org/${org.id}/purchases/${p.id}/approve`, { key: memberKey.key });
    expect(denied.status).toBe(403);
    expect((await onlyPurchase(org)).status).toBe("pending_approval");
    expect((await t.request("GET", `/beta/v1/org/${org.id}/purchasing-connections`, { key: memberKey.key })).status).toBe(403);
  });
});

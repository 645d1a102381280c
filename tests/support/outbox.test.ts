/**
 * SUPPORT_WEBHOOK_URL (deprecated) on the event system: the variable becomes a process-wide
 * compatibility endpoint (lib/webhooks/legacy.ts) that receives every organization's
 * `support.ticket_created` events through the webhook delivery worker, in the body and with the
 * `Idempotency-Key` it always had. The outbox's promises hold: scheduled in the ticket's
 * transaction, delivered exactly once per ticket whatever the concurrency, retried with backoff
 * until the receiver is back, a crashed deliverer's work taken over after its lease.
 */
import { afterAll, beforeAll, beforeEach, expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { createServices, type Services } from "../../lib/services.ts";
import { createLogger } from "../../lib/log.ts";
import { openDb, type DatabaseHandle } from "../../lib/db/index.ts";
import { backoffCeilingMs, backoffMs, deliverWebhooks, type DeliverReport } from "../../lib/webhooks/deliver.ts";
import { syncLegacyEndpoints } from "../../lib/webhooks/legacy.ts";
import { webhookDeliveryJob } from "../../jobs/webhook-delivery.ts";
import { jobs } from "../../jobs/index.ts";
import { validBug, validFeature } from "./fixtures.ts";

/** A webhook receiver on a local port that fails the first `failNext` requests with 503. */
function startReceiver() {
  const state = {
    failNext: 0,
    requests: 0,
    accepted: new Map<string, number>(),
    bodies: new Map<string, any>(),
    headers: [] as Record<string, string>[],
  };
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      state.requests++;
      const body = await req.json();
      state.headers.push(Object.fromEntries(req.headers));
      if (state.failNext > 0) {
        state.failNext--;
        return new Response("down for maintenance", { status: 503 });
      }
      const key = req.headers.get("idempotency-key") ?? "(none)";
      state.accepted.set(key, (state.accepted.get(key) ?? 0) + 1);
      state.bodies.set(key, body);
      return new Response(null, { status: 204 });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/hooks/support`,
    state,
    reset() {
      state.failNext = 0;
      state.requests = 0;
      state.accepted.clear();
      state.bodies.clear();
      state.headers.length = 0;
    },
    stop: () => server.stop(true),
  };
}

const summary = (r: DeliverReport) => ({ delivered: r.delivered, failed: r.failed });

describeEachDb("support: SUPPORT_WEBHOOK_URL through the webhook delivery worker", (driver) => {
  const receiver = startReceiver();
  let clock = new Date();
  const t = useTestApp(driver, { now: () => clock, config: { supportDailyCap: 1000 } });
  const replicas: Services[] = [];
  const extraHandles: DatabaseHandle[] = [];

  beforeAll(async () => {
    replicas.push(t.s);
    // On the server, two more "replicas" with their own connection pools.
    if (driver === "postgres") {
      for (let i = 0; i < 2; i++) {
        const h = await openDb({ url: t.db.url, migrate: false });
        extraHandles.push(h);
        replicas.push(createServices(h, t.s.config, createLogger("silent"), { now: () => clock }));
      }
    }
  });
  beforeEach(async () => {
    receiver.reset();
    clock = new Date();
    t.s.config.supportWebhookUrl = receiver.url;
    await t.s.handle.query("DELETE FROM webhook_endpoints");
    await syncLegacyEndpoints(t.s);
  });
  afterAll(async () => {
    receiver.stop();
    for (const h of extraHandles) await h.close();
  });

  async function fileTickets(n: number): Promise<string[]> {
    const keys: string[] = [];
    for (let i = 0; i < n; i++) {
      const r = await t.orgRequest("POST", i % 2 ? "/support/feature-requests" : "/support/bug-reports", {
        body: i % 2 ? validFeature() : { ...validBug(), provider: "gcp", app_url: "https://app.example.com/x" },
      });
      const b = (await r.json()) as any;
      expect(b.status).toBe("created");
      keys.push(b.ticket_key);
    }
    return keys;
  }

  /** The compatibility endpoint's deliveries, by ticket. */
  async function deliveryRows() {
    return t.s.handle.query<{ key: string; attempts: number; delivered: boolean; last_error: string | null }>(
      `SELECT e.data->>'ticket_key' AS key, d.attempts, d.status = 'succeeded' AS delivered, d.last_error
         FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id JOIN events e ON e.id = d.event_id
        WHERE w.legacy_key = 'support' ORDER BY e.seq`,
    );
  }
  const endpoint = async () => (await t.s.handle.query<any>("SELECT * FROM webhook_endpoints WHERE legacy_key = 'support'"))[0];

  test("the variable is an endpoint of the event system; the delivery is scheduled with the ticket; nothing is queued without it", async () => {
    const ep = await endpoint();
    expect(ep).toMatchObject({ org_id: null, kind: "webhook", url: receiver.url, event_types: ["support.ticket_created"], enabled: true, secret_ciphertext: null });
    const [k] = await fileTickets(1);
    expect((await deliveryRows()).map((r) => r.key)).toEqual([k!]);
    // Another organization's tickets reach it too: it is process-wide.
    const other = await t.newOrg("other");
    const r = await t.request("POST", `/beta/v1/org/${other.id}/support/bug-reports`, { key: other.key, body: validBug() });
    expect(((await r.json()) as any).status).toBe("created");
    expect(await deliveryRows()).toHaveLength(2);

    // Unset: the endpoint goes (with what it had pending), nothing is queued or sent.
    t.s.config.supportWebhookUrl = undefined;
    await syncLegacyEndpoints(t.s);
    expect(await endpoint()).toBeUndefined();
    await fileTickets(1);
    expect(await deliveryRows()).toHaveLength(0);
    expect(summary(await deliverWebhooks(t.s))).toEqual({ delivered: 0, failed: 0 });
    expect(receiver.state.requests).toBe(0);
  });

  test("receiver fails the first attempts, then recovers: every ticket delivered exactly once, in order, even with concurrent deliverers", async () => {
    const keys = await fileTickets(6);
    receiver.state.failNext = 8;
    for (let round = 0; round < 20; round++) {
      // Several deliverers at once: on the server, different connection pools (replicas).
      await Promise.all([0, 1, 2].map((i) => deliverWebhooks(replicas[i % replicas.length]!)));
      if ((await deliveryRows()).every((r) => r.delivered)) break;
      clock = new Date(clock.getTime() + 60 * 60_000); // past the longest backoff
    }
    const rows = await deliveryRows();
    expect(rows.every((r) => r.delivered)).toBe(true);
    for (const k of keys) expect(receiver.state.accepted.get(k)).toBe(1);
    expect([...receiver.state.accepted.keys()]).toEqual(keys);
    // Exactly the 8 refused attempts plus one success per ticket: no ticket was ever posted twice at once.
    expect(receiver.state.requests).toBe(8 + keys.length);
    expect(rows.reduce((sum, r) => sum + r.attempts, 0)).toBe(8 + keys.length);

    // The payload carries the ticket; the idempotency key is the ticket key.
    const bug = receiver.state.bodies.get(keys[0]!);
    expect(bug.event).toBe("support_ticket.created");
    expect(bug.ticket).toMatchObject({ ticket_key: keys[0], kind: "bug", org_id: t.org.id, ...validBug(), provider: "gcp", app_url: "https://app.example.com/x" });
    expect(bug.ticket.ticket_url).toBe(`http://localhost/beta/v1/org/${t.org.id}/support/tickets/${keys[0]}`);
    expect(receiver.state.bodies.get(keys[1]!).ticket).toMatchObject({ kind: "feature", ...validFeature() });
    for (const h of receiver.state.headers) {
      expect(h["idempotency-key"]).toMatch(/^SUP-\d+$/);
      expect(h["content-type"]).toContain("application/json");
      expect(h["user-agent"]).toBe("commitops-support-webhook/1");
      // The event system's headers too; no secret, so no signature.
      expect(h["webhook-id"]).toMatch(/^[0-9a-f-]{36}$/);
      expect(h["webhook-signature"]).toBeUndefined();
    }
    // Delivered rows are never sent again.
    clock = new Date(clock.getTime() + 86_400_000);
    expect(summary(await deliverWebhooks(t.s))).toEqual({ delivered: 0, failed: 0 });
  });

  test("a failure schedules a retry with exponential backoff; nothing is sent before it is due", async () => {
    const [k] = await fileTickets(1);
    receiver.state.failNext = 2;
    const random = () => 0.5;
    const t0 = clock.getTime();
    expect(summary(await deliverWebhooks(t.s, { random }))).toEqual({ delivered: 0, failed: 1 });
    let [row] = await deliveryRows();
    expect(row).toMatchObject({ attempts: 1, delivered: false, last_error: "HTTP 503" });
    expect(new Date((await endpoint()).next_attempt_at).getTime()).toBe(t0 + backoffMs(1, random));

    clock = new Date(t0 + backoffMs(1, random) - 1);
    expect(summary(await deliverWebhooks(t.s, { random }))).toEqual({ delivered: 0, failed: 0 });
    const t1 = t0 + backoffMs(1, random);
    clock = new Date(t1);
    expect(summary(await deliverWebhooks(t.s, { random }))).toEqual({ delivered: 0, failed: 1 });
    [row] = await deliveryRows();
    expect(row!.attempts).toBe(2);
    expect(new Date((await endpoint()).next_attempt_at).getTime()).toBe(t1 + backoffMs(2, random));
    expect(backoffCeilingMs(2)).toBe(2 * backoffCeilingMs(1));

    clock = new Date(t1 + backoffMs(2, random));
    expect(summary(await deliverWebhooks(t.s, { random }))).toEqual({ delivered: 1, failed: 0 });
    [row] = await deliveryRows();
    expect(row).toMatchObject({ attempts: 3, delivered: true, last_error: null });
    expect(receiver.state.accepted.get(k!)).toBe(1);
    expect(backoffCeilingMs(50)).toBe(60 * 60_000);
  });

  test("a webhook outage (connection refused) loses nothing: delivered once it is back", async () => {
    const dead = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(null) });
    const deadUrl = `http://127.0.0.1:${dead.port}/gone`;
    dead.stop(true);
    t.s.config.supportWebhookUrl = deadUrl;
    await syncLegacyEndpoints(t.s);
    const keys = await fileTickets(3);
    // The endpoint's first event fails and the others wait behind it (order per endpoint).
    expect(summary(await deliverWebhooks(t.s))).toEqual({ delivered: 0, failed: 1 });
    const rows = await deliveryRows();
    expect(rows.map((r) => [r.attempts, r.delivered, r.last_error])).toEqual([
      [1, false, "connection refused"],
      [0, false, null],
      [0, false, null],
    ]);
    // The stored error never carries the URL (it could hold a token).
    expect(rows.some((r) => (r.last_error ?? "").includes("127.0.0.1"))).toBe(false);

    // A changed URL starts afresh: due at once.
    t.s.config.supportWebhookUrl = receiver.url;
    await syncLegacyEndpoints(t.s);
    expect(summary(await deliverWebhooks(t.s))).toEqual({ delivered: 3, failed: 0 });
    for (const k of keys) expect(receiver.state.accepted.get(k)).toBe(1);
  });

  test("an endpoint leased by a deliverer that died is taken over after the lease expires", async () => {
    const [k] = await fileTickets(1);
    const t0 = clock.getTime();
    // Another replica claimed it and crashed before recording the outcome.
    await t.s.handle.query("UPDATE webhook_endpoints SET lease_token = gen_random_uuid(), lease_until = $1 WHERE legacy_key = 'support'", [new Date(t0 + 60_000).toISOString()]);
    clock = new Date(t0 + 1000);
    expect(summary(await deliverWebhooks(t.s))).toEqual({ delivered: 0, failed: 0 });
    clock = new Date(t0 + 60_001);
    expect(summary(await deliverWebhooks(t.s))).toEqual({ delivered: 1, failed: 0 });
    expect(receiver.state.accepted.get(k!)).toBe(1);
  });

  test("the registered job follows the variable and delivers through the same path", async () => {
    expect(jobs).toContain(webhookDeliveryJob);
    await t.s.handle.query("DELETE FROM webhook_endpoints");
    const [k] = await fileTickets(1);
    // Written before the endpoint existed: not for it.
    expect(await deliveryRows()).toHaveLength(0);
    delete t.s.extras.webhookLegacySync;
    await webhookDeliveryJob.run(t.s);
    expect(await endpoint()).toMatchObject({ url: receiver.url });
    const [k2] = await fileTickets(1);
    await webhookDeliveryJob.run(t.s);
    expect(receiver.state.accepted.get(k2!)).toBe(1);
    expect(receiver.state.accepted.has(k!)).toBe(false);
    expect((await deliveryRows())[0]!.delivered).toBe(true);
  });
});

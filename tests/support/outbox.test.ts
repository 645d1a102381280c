import { afterAll, beforeAll, beforeEach, expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { createServices, type Services } from "../../lib/services.ts";
import { createLogger } from "../../lib/log.ts";
import { openDb, type DatabaseHandle } from "../../lib/db/index.ts";
import { deliverSupportOutbox } from "../../lib/support/outbox.ts";
import { backoffMs } from "../../lib/webhook.ts";
import { supportOutboxJob } from "../../jobs/support-outbox.ts";
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

describeEachDb("support: webhook outbox", (driver) => {
  const receiver = startReceiver();
  const t = useTestApp(driver, { config: { supportDailyCap: 1000 } });
  const replicas: Services[] = [];
  const extraHandles: DatabaseHandle[] = [];

  beforeAll(async () => {
    t.s.config.supportWebhookUrl = receiver.url;
    replicas.push(t.s);
    // On the server, two more "replicas" with their own connection pools.
    if (driver === "postgres") {
      for (let i = 0; i < 2; i++) {
        const h = await openDb({ url: t.db.url, migrate: false });
        extraHandles.push(h);
        replicas.push(createServices(h, t.s.config, createLogger("silent")));
      }
    }
  });
  beforeEach(async () => {
    receiver.reset();
    t.s.config.supportWebhookUrl = receiver.url;
    await t.s.handle.query("DELETE FROM support_outbox");
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

  async function outboxRows() {
    return t.s.handle.query<{ key: string; attempts: number; delivered: boolean; next_attempt_at: Date; last_error: string | null }>(
      `SELECT 'SUP-' || s.number AS key, o.attempts, o.delivered_at IS NOT NULL AS delivered, o.next_attempt_at, o.last_error
         FROM support_outbox o JOIN support_tickets s ON s.id = o.ticket_id ORDER BY s.number`,
    );
  }

  test("the outbox row is written with the ticket; nothing is queued without a webhook", async () => {
    const [k] = await fileTickets(1);
    expect((await outboxRows()).map((r) => r.key)).toEqual([k!]);
    t.s.config.supportWebhookUrl = undefined;
    await fileTickets(1);
    expect((await outboxRows()).length).toBe(1);
    expect(await deliverSupportOutbox(t.s)).toEqual({ delivered: 0, failed: 0 });
    expect(receiver.state.requests).toBe(0);
  });

  test("receiver fails the first attempts, then recovers: every ticket delivered exactly once, even with concurrent deliverers", async () => {
    const keys = await fileTickets(6);
    receiver.state.failNext = 8;
    let now = Date.now();
    for (let round = 0; round < 12; round++) {
      const at = new Date(now);
      // Several deliverers at once: on the server, different connection pools (replicas).
      await Promise.all([0, 1, 2].map((i) => deliverSupportOutbox(replicas[i % replicas.length]!, { now: at, batchSize: 2 })));
      if ((await outboxRows()).every((r) => r.delivered)) break;
      now += 60 * 60_000; // past the longest backoff
    }
    const rows = await outboxRows();
    expect(rows.every((r) => r.delivered)).toBe(true);
    for (const k of keys) expect(receiver.state.accepted.get(k)).toBe(1);
    expect([...receiver.state.accepted.keys()].sort()).toEqual([...keys].sort());
    // Exactly the 8 refused attempts plus one success per ticket: no row was ever posted twice at once.
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
    }
    // Delivered rows are never sent again.
    expect(await deliverSupportOutbox(t.s, { now: new Date(now + 86_400_000) })).toEqual({ delivered: 0, failed: 0 });
  });

  test("a failure schedules a retry with exponential backoff; nothing is sent before it is due", async () => {
    const [k] = await fileTickets(1);
    receiver.state.failNext = 2;
    const t0 = Date.now() + 1000;
    expect(await deliverSupportOutbox(t.s, { now: new Date(t0) })).toEqual({ delivered: 0, failed: 1 });
    let [row] = await outboxRows();
    expect(row).toMatchObject({ attempts: 1, delivered: false, last_error: "HTTP 503" });
    expect(new Date(row!.next_attempt_at).getTime()).toBe(t0 + backoffMs(1));

    expect(await deliverSupportOutbox(t.s, { now: new Date(t0 + backoffMs(1) - 1) })).toEqual({ delivered: 0, failed: 0 });
    const t1 = t0 + backoffMs(1);
    expect(await deliverSupportOutbox(t.s, { now: new Date(t1) })).toEqual({ delivered: 0, failed: 1 });
    [row] = await outboxRows();
    expect(row!.attempts).toBe(2);
    expect(new Date(row!.next_attempt_at).getTime()).toBe(t1 + backoffMs(2));
    expect(backoffMs(2)).toBe(2 * backoffMs(1));

    expect(await deliverSupportOutbox(t.s, { now: new Date(t1 + backoffMs(2)) })).toEqual({ delivered: 1, failed: 0 });
    [row] = await outboxRows();
    expect(row).toMatchObject({ attempts: 3, delivered: true, last_error: null });
    expect(receiver.state.accepted.get(k!)).toBe(1);
    expect(backoffMs(50)).toBe(60 * 60_000);
  });

  test("a webhook outage (connection refused) loses nothing: delivered once it is back", async () => {
    const dead = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(null) });
    const deadUrl = `http://127.0.0.1:${dead.port}/gone`;
    dead.stop(true);
    t.s.config.supportWebhookUrl = deadUrl;
    const keys = await fileTickets(3);
    const t0 = Date.now();
    expect(await deliverSupportOutbox(t.s, { now: new Date(t0) })).toEqual({ delivered: 0, failed: 3 });
    const rows = await outboxRows();
    expect(rows.every((r) => !r.delivered && r.attempts === 1 && /request failed/.test(r.last_error ?? ""))).toBe(true);
    // The stored error never carries the URL (it could hold a token).
    expect(rows.some((r) => (r.last_error ?? "").includes("127.0.0.1"))).toBe(false);

    t.s.config.supportWebhookUrl = receiver.url;
    expect(await deliverSupportOutbox(t.s, { now: new Date(t0 + 60 * 60_000) })).toEqual({ delivered: 3, failed: 0 });
    for (const k of keys) expect(receiver.state.accepted.get(k)).toBe(1);
  });

  test("a row leased by a deliverer that died is retried after the lease expires", async () => {
    const [k] = await fileTickets(1);
    const t0 = Date.now();
    // Another replica claimed it and crashed before recording the outcome.
    await t.s.handle.query("UPDATE support_outbox SET lease_until = $1, attempts = attempts + 1", [new Date(t0 + 120_000).toISOString()]);
    expect(await deliverSupportOutbox(t.s, { now: new Date(t0 + 1000) })).toEqual({ delivered: 0, failed: 0 });
    expect(await deliverSupportOutbox(t.s, { now: new Date(t0 + 120_001) })).toEqual({ delivered: 1, failed: 0 });
    expect(receiver.state.accepted.get(k!)).toBe(1);
  });

  test("the registered job delivers through the same path", async () => {
    expect(jobs).toContain(supportOutboxJob);
    const [k] = await fileTickets(1);
    await supportOutboxJob.run(t.s);
    expect(receiver.state.accepted.get(k!)).toBe(1);
    expect((await outboxRows())[0]!.delivered).toBe(true);
  });
});

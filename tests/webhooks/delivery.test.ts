/**
 * Delivery through the real app and database to a loopback receiver that verifies signatures with
 * the Standard Webhooks reference library (`standardwebhooks`) and dedupes by webhook-id:
 * signing and rotation overlap, the same webhook-id on every retry, order per endpoint, backoff,
 * auto-disable after 3 days (fixed clock) and on 410 with the `webhook_endpoint.disabled`
 * event, the delivery log, redelivery, a receiver down for an hour then back, Slack, the test
 * message, and the SSRF rule checked again at delivery.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { createServer, type Server } from "node:http";
import { Webhook } from "standardwebhooks";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp, type TestContext } from "../helpers/app.ts";
import { backoffCeilingMs, backoffMs, DISABLE_AFTER_MS } from "../../lib/webhooks/deliver.ts";
import { signMessage } from "../../lib/webhooks/signing.ts";
import { setHostResolver } from "../../lib/hosts.ts";
import { startReceiver, type Receiver } from "./receiver.ts";
import { createEndpointVia, deliveriesOf, deliverUntilIdle, emit, endpointRow, SECRET_KEY } from "./fixtures.ts";

const HOUR = 3_600_000;

describe("backoff", () => {
  test("exponential ceiling 5 s · 2^(n−1) up to 1 h, full jitter below it, never under 1 s", () => {
    expect([1, 2, 3, 4, 10, 11, 50].map(backoffCeilingMs)).toEqual([5_000, 10_000, 20_000, 40_000, 2_560_000, HOUR, HOUR]);
    for (let n = 1; n < 30; n++) {
      expect(backoffMs(n, () => 0)).toBe(1_000);
      expect(backoffMs(n, () => 0.999999)).toBe(Math.floor(0.999999 * backoffCeilingMs(n)));
      for (let i = 0; i < 20; i++) {
        const b = backoffMs(n);
        expect(b).toBeGreaterThanOrEqual(1_000);
        expect(b).toBeLessThanOrEqual(backoffCeilingMs(n));
      }
    }
  });
});

describeEachDb("webhooks: delivery", (driver) => {
  let clock = new Date();
  const t = useTestApp(driver, { now: () => clock, config: { secretKey: SECRET_KEY, connectionsAllowPrivateEndpoints: true } });
  let rx: Receiver;
  let org: { id: string; key: string };
  let seq = 0;

  beforeAll(async () => {
    rx = await startReceiver();
  });
  afterAll(async () => {
    await rx?.close();
  });
  beforeEach(async () => {
    // The wall's time: receivers check webhook-timestamp against their own clock.
    clock = new Date();
    rx.reset();
    // Each test has its own org; earlier tests' endpoints are out of the way.
    await t.s.handle.query("UPDATE webhook_endpoints SET enabled = false");
    org = await t.newOrg(`delivery ${++seq}`);
  });

  const api = (method: string, path: string, body?: unknown) => t.request(method, `/beta/v1/org/${org.id}${path}`, { key: org.key, body });
  const later = (ms: number) => (clock = new Date(clock.getTime() + ms));

  test("signed per Standard Webhooks: verified by the reference library, the library's own signature; the body is the event", async () => {
    const ep = await createEndpointVia(t, { url: rx.url("/signed"), event_types: ["purchase.confirmed"] }, org);
    rx.verifyWith("/signed", [ep.secret]);
    const e = await emit(t.s, org.id, "purchase.confirmed", clock, { purchase_id: "p-1", status: "confirmed" });
    expect(await deliverUntilIdle(t.s)).toMatchObject({ delivered: 1, failed: 0 });
    const [m] = rx.on("/signed");
    expect(m!.verified).toBe(true);
    expect(m!.id).toBe(e.id);
    expect(m!.headers["content-type"]).toBe("application/json");
    const ts = Number(m!.headers["webhook-timestamp"]);
    expect(Math.abs(ts - Date.now() / 1000)).toBeLessThan(60);
    expect(m!.headers["webhook-signature"]).toBe(new Webhook(ep.secret).sign(e.id, new Date(ts * 1000), m!.body));
    expect(m!.headers["webhook-signature"]).toBe(signMessage(ep.secret, e.id, ts, m!.body));
    expect(m!.json).toEqual({
      id: e.id,
      type: "purchase.confirmed",
      version: 1,
      timestamp: clock.toISOString(),
      org_id: org.id,
      data: { purchase_id: "p-1", status: "confirmed" },
      links: { api: `http://localhost/beta/v1/org/${org.id}/things/1`, console: "http://localhost/app/things/1" },
    });
    // A tampered body or another secret does not verify.
    expect(() => new Webhook(ep.secret).verify(m!.body.replace("p-1", "p-2"), m!.headers)).toThrow();
    const other = await createEndpointVia(t, { url: rx.url("/other"), event_types: ["purchase.failed"] }, org);
    expect(() => new Webhook(other.secret).verify(m!.body, m!.headers)).toThrow();
    // Only subscribed types go out.
    await emit(t.s, org.id, "purchase.rejected", clock);
    expect(await deliverUntilIdle(t.s)).toMatchObject({ delivered: 0 });
    expect(rx.received.length).toBe(1);
  });

  test("rotation: during the overlap both the old and the new secret verify; after it only the new one", async () => {
    const ep = await createEndpointVia(t, { url: rx.url("/rotating"), event_types: ["support.ticket_created"] }, org);
    const rotated = await (await api("POST", `/webhook-endpoints/${ep.id}/rotate-secret`, { overlap_hours: 1 })).json();
    const old = new Webhook(ep.secret);
    const fresh = new Webhook(rotated.secret);
    await emit(t.s, org.id, "support.ticket_created", clock);
    await deliverUntilIdle(t.s);
    const during = rx.on("/rotating")[0]!;
    expect(during.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    expect(() => old.verify(during.body, during.headers)).not.toThrow();
    expect(() => fresh.verify(during.body, during.headers)).not.toThrow();

    // Past the overlap (the service clock; the signing timestamp stays the wall's).
    later(HOUR + 1000);
    await emit(t.s, org.id, "support.ticket_created", clock);
    await deliverUntilIdle(t.s);
    const after = rx.on("/rotating")[1]!;
    expect(after.headers["webhook-signature"]!.split(" ")).toHaveLength(1);
    expect(() => fresh.verify(after.body, after.headers)).not.toThrow();
    expect(() => old.verify(after.body, after.headers)).toThrow();
    expect((await (await api("GET", `/webhook-endpoints/${ep.id}`)).json()).previous_secret_expires_at).toBeNull();
  });

  test("retries keep the webhook-id; the endpoint backs off (nothing before it is due); events go out in event order", async () => {
    const ep = await createEndpointVia(t, { url: rx.url("/flaky"), event_types: ["*"] }, org);
    rx.verifyWith("/flaky", [ep.secret]);
    let refusals = 3;
    rx.behave("/flaky", () => (refusals-- > 0 ? { kind: "status", status: 503, body: "busy" } : { kind: "ok" }));
    const t0 = clock.getTime();
    const e1 = await emit(t.s, org.id, "purchase.pending_approval", new Date(t0 - 5000));
    const e2 = await emit(t.s, org.id, "purchase.approved", new Date(t0 - 4000));
    const e3 = await emit(t.s, org.id, "purchase.confirmed", new Date(t0 - 3000));
    // Written last but earlier in time: it goes first.
    const e0 = await emit(t.s, org.id, "support.ticket_created", new Date(t0 - 9000));
    const random = () => 0.5;

    expect(await deliverUntilIdle(t.s, { random })).toMatchObject({ delivered: 0, failed: 1 });
    let row = await endpointRow(t.s, ep.id);
    expect(row.consecutive_failures).toBe(1);
    expect(new Date(row.failing_since).getTime()).toBe(t0);
    expect(new Date(row.next_attempt_at).getTime()).toBe(t0 + backoffMs(1, random));
    // Not before it is due.
    later(backoffMs(1, random) - 1);
    expect(await deliverUntilIdle(t.s, { random })).toMatchObject({ endpoints: 0 });
    for (let n = 1; n <= 3; n++) {
      row = await endpointRow(t.s, ep.id);
      clock = new Date(row.next_attempt_at);
      await deliverUntilIdle(t.s, { random });
      row = await endpointRow(t.s, ep.id);
      if (n < 3) expect(new Date(row.next_attempt_at).getTime()).toBe(clock.getTime() + backoffMs(n + 1, random));
    }
    expect(row.consecutive_failures).toBe(0);
    expect(row.failing_since).toBeNull();

    const got = rx.on("/flaky");
    expect(got.map((m) => m.id)).toEqual([e0.id, e0.id, e0.id, e0.id, e1.id, e2.id, e3.id]);
    expect(got.every((m) => m.verified)).toBe(true);
    // Every attempt of one event is the same message id (timestamps and signatures are per attempt).
    expect(new Set(got.slice(0, 4).map((m) => m.body)).size).toBe(1);
    expect(rx.unique("/flaky").map((m) => m.json.type)).toEqual(["support.ticket_created", "purchase.pending_approval", "purchase.approved", "purchase.confirmed"]);

    const deliveries = await (await api("GET", `/webhook-endpoints/${ep.id}/deliveries`)).json();
    expect(deliveries.map((d: any) => [d.event_id, d.status, d.attempts])).toEqual([
      [e3.id, "succeeded", 1],
      [e2.id, "succeeded", 1],
      [e1.id, "succeeded", 1],
      [e0.id, "succeeded", 4],
    ]);
    const attempts = await (await api("GET", `/webhook-endpoints/${ep.id}/deliveries/${deliveries[3].id}/attempts`)).json();
    expect(attempts.map((a: any) => [a.attempt, a.status_code, a.response_excerpt, a.error, a.manual])).toEqual([
      [1, 503, "busy", "HTTP 503", false],
      [2, 503, "busy", "HTTP 503", false],
      [3, 503, "busy", "HTTP 503", false],
      [4, 204, null, null, false],
    ]);
    for (const a of attempts) expect(a.latency_ms).toBeGreaterThanOrEqual(0);
  });

  test("failing for 3 days disables the endpoint: pending deliveries fail, webhook_endpoint.disabled is written and delivered elsewhere", async () => {
    const failing = await createEndpointVia(t, { url: rx.url("/down"), event_types: ["purchase.failed"], description: "ERP" }, org);
    const watcher = await createEndpointVia(t, { url: rx.url("/watcher"), event_types: ["webhook_endpoint.disabled"] }, org);
    rx.verifyWith("/watcher", [watcher.secret]);
    rx.behave("/down", { kind: "status", status: 500, body: "boom" });
    const t0 = clock.getTime();
    await emit(t.s, org.id, "purchase.failed", clock);
    await emit(t.s, org.id, "purchase.failed", new Date(t0 + 1));
    let passes = 0;
    for (;;) {
      const r = await deliverUntilIdle(t.s, { random: () => 1 });
      passes++;
      const row = await endpointRow(t.s, failing.id);
      if (!row.enabled) break;
      // Still enabled: less than 3 days of failures so far.
      expect(clock.getTime() - t0).toBeLessThan(DISABLE_AFTER_MS);
      expect(r.disabled).toBe(0);
      clock = new Date(row.next_attempt_at);
      expect(passes).toBeLessThan(200);
    }
    const row = await endpointRow(t.s, failing.id);
    expect(clock.getTime() - t0).toBeGreaterThanOrEqual(DISABLE_AFTER_MS);
    expect(clock.getTime() - t0).toBeLessThan(DISABLE_AFTER_MS + HOUR + 1000);
    expect(row).toMatchObject({ enabled: false, lease_token: null });
    expect(row.disabled_reason).toContain("failed for 3 days");
    expect((await deliveriesOf(t.s, failing.id)).map((d) => d.status)).toEqual(["failed", "failed"]);

    const [event] = await t.s.handle.query<any>("SELECT * FROM events WHERE org_id = $1 AND type = 'webhook_endpoint.disabled'", [org.id]);
    expect(event.data).toMatchObject({ endpoint_id: failing.id, reason: "failing", url: `http://127.0.0.1:${rx.port}`, description: "ERP", last_status_code: 500, last_error: "HTTP 500", failed_deliveries: 2 });
    expect(event.console_path).toBe(`/app/notifications/endpoints/${failing.id}`);
    expect(event.resource_path).toBe(`/beta/v1/org/${org.id}/webhook-endpoints/${failing.id}`);
    // In the transaction that disabled it: the watcher has its delivery; the disabled one does not.
    clock = new Date();
    await deliverUntilIdle(t.s);
    expect(rx.on("/watcher").map((m) => [m.json.type, m.json.data.endpoint_id, m.verified])).toEqual([["webhook_endpoint.disabled", failing.id, true]]);
    const view = await (await api("GET", `/webhook-endpoints/${failing.id}`)).json();
    expect(view).toMatchObject({ enabled: false, disabled_reason: expect.stringContaining("3 days") });
    // New events skip it; re-enabling resets its failure state and it is delivered to again.
    await emit(t.s, org.id, "purchase.failed", clock);
    expect(await deliverUntilIdle(t.s)).toMatchObject({ endpoints: 0 });
    rx.behave("/down", { kind: "ok" });
    const on = await (await api("PATCH", `/webhook-endpoints/${failing.id}`, { enabled: true })).json();
    expect(on).toMatchObject({ enabled: true, consecutive_failures: 0, failing_since: null });
    await emit(t.s, org.id, "purchase.failed", clock);
    expect(await deliverUntilIdle(t.s)).toMatchObject({ delivered: 1 });
  });

  test("410 Gone disables at once, with the event", async () => {
    const gone = await createEndpointVia(t, { url: rx.url("/gone"), event_types: ["purchase.rejected"] }, org);
    rx.behave("/gone", { kind: "status", status: 410, body: "unsubscribed" });
    await emit(t.s, org.id, "purchase.rejected", clock);
    await emit(t.s, org.id, "purchase.rejected", clock);
    expect(await deliverUntilIdle(t.s)).toMatchObject({ failed: 1, disabled: 1 });
    expect(rx.on("/gone")).toHaveLength(1);
    const row = await endpointRow(t.s, gone.id);
    expect(row.enabled).toBe(false);
    expect(row.disabled_reason).toContain("410 Gone");
    const [event] = await t.s.handle.query<any>("SELECT data FROM events WHERE org_id = $1 AND type = 'webhook_endpoint.disabled'", [org.id]);
    expect(event.data).toMatchObject({ endpoint_id: gone.id, reason: "gone", last_status_code: 410, failed_deliveries: 2 });
  });

  test("delivery log: paged, filtered by status, with attempts, last status code, latency, response excerpt, event id and type", async () => {
    const ep = await createEndpointVia(t, { url: rx.url("/log"), event_types: ["purchase.confirmed", "purchase.failed"] }, org);
    rx.behave("/log", (m) => (m.json.type === "purchase.failed" ? { kind: "status", status: 500, body: "x".repeat(5000) } : { kind: "ok", status: 200, body: "thanks" }));
    const ok = await emit(t.s, org.id, "purchase.confirmed", clock);
    const bad = await emit(t.s, org.id, "purchase.failed", new Date(clock.getTime() + 1));
    await deliverUntilIdle(t.s);
    const all = await api("GET", `/webhook-endpoints/${ep.id}/deliveries`);
    const list = await all.json();
    expect(list.map((d: any) => [d.event_id, d.event_type, d.status, d.attempts, d.last_status_code])).toEqual([
      [bad.id, "purchase.failed", "pending", 1, 500],
      [ok.id, "purchase.confirmed", "succeeded", 1, 200],
    ]);
    expect(list[1]).toMatchObject({ last_response_excerpt: "thanks", last_error: null, delivered_at: clock.toISOString(), endpoint_id: ep.id });
    expect(list[0].last_response_excerpt).toBe("x".repeat(1024));
    expect(list[0].last_latency_ms).toBeGreaterThanOrEqual(0);
    expect(JSON.parse(all.headers.get("x-pagination")!)).toMatchObject({ total_count: 2 });
    const failedOnly = await (await api("GET", `/webhook-endpoints/${ep.id}/deliveries?status=pending`)).json();
    expect(failedOnly.map((d: any) => d.event_id)).toEqual([bad.id]);
    const page = await (await api("GET", `/webhook-endpoints/${ep.id}/deliveries?page=2&page_size=1`)).json();
    expect(page.map((d: any) => d.event_id)).toEqual([ok.id]);
    expect((await api("GET", `/webhook-endpoints/${ep.id}/deliveries?status=lost`)).status).toBe(400);
    expect((await api("GET", `/webhook-endpoints/${ep.id}/deliveries?page_size=501`)).status).toBe(400);
    expect((await api("GET", `/webhook-endpoints/${ep.id}/deliveries/${crypto.randomUUID()}/attempts`)).status).toBe(404);
  });

  test("redeliver: back to pending with the same webhook-id, sent in order, its attempt marked manual; 409 while disabled", async () => {
    const ep = await createEndpointVia(t, { url: rx.url("/again"), event_types: ["support.ticket_created"] }, org);
    const e = await emit(t.s, org.id, "support.ticket_created", clock);
    await deliverUntilIdle(t.s);
    const [d] = await (await api("GET", `/webhook-endpoints/${ep.id}/deliveries`)).json();
    const r = await api("POST", `/webhook-endpoints/${ep.id}/deliveries/${d.id}/redeliver`);
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ id: d.id, status: "pending", redelivery_requested: true, delivered_at: null });
    await deliverUntilIdle(t.s);
    expect(rx.on("/again").map((m) => m.id)).toEqual([e.id, e.id]);
    expect(rx.unique("/again")).toHaveLength(1);
    const attempts = await (await api("GET", `/webhook-endpoints/${ep.id}/deliveries/${d.id}/attempts`)).json();
    expect(attempts.map((a: any) => [a.attempt, a.manual])).toEqual([
      [1, false],
      [2, true],
    ]);
    const after = await (await api("GET", `/webhook-endpoints/${ep.id}/deliveries`)).json();
    expect(after[0]).toMatchObject({ status: "succeeded", attempts: 2, redelivery_requested: false });

    await api("PATCH", `/webhook-endpoints/${ep.id}`, { enabled: false });
    const refused = await api("POST", `/webhook-endpoints/${ep.id}/deliveries/${d.id}/redeliver`);
    expect(refused.status).toBe(409);
    expect((await refused.json()).code).toBe("webhook_endpoint_disabled");
    expect((await api("POST", `/webhook-endpoints/${ep.id}/deliveries/${crypto.randomUUID()}/redeliver`)).status).toBe(404);
  });

  test("a receiver down for an hour, then back: every event delivered once, in order", async () => {
    // A port nobody listens on yet: connection refused until the receiver comes up there.
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
    const port = (probe.address() as any).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const ep = await createEndpointVia(t, { url: `http://127.0.0.1:${port}/later`, event_types: ["*"] }, org);
    const t0 = clock.getTime();
    const written: string[] = [];
    // An hour of events, one every 5 minutes, each pass failing (connection refused).
    while (clock.getTime() - t0 < HOUR) {
      written.push((await emit(t.s, org.id, "purchase.confirmed", clock, { n: written.length })).id);
      await deliverUntilIdle(t.s);
      later(5 * 60_000);
    }
    const row = await endpointRow(t.s, ep.id);
    expect(row.consecutive_failures).toBeGreaterThan(3);
    expect(row.enabled).toBe(true);
    const [d0] = await deliveriesOf(t.s, ep.id);
    expect(d0.last_error).toBe("connection refused");
    expect(d0.last_status_code).toBeNull();

    // Back up on the same port.
    const seen: { id: string; n: number }[] = [];
    const back: Server = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        try {
          new Webhook(ep.secret).verify(body, req.headers as Record<string, string>);
          seen.push({ id: String(req.headers["webhook-id"]), n: JSON.parse(body).data.n });
          res.writeHead(204).end();
        } catch {
          res.writeHead(400).end();
        }
      });
    });
    await new Promise<void>((r) => back.listen(port, "127.0.0.1", r));
    try {
      clock = new Date(Math.max(clock.getTime(), new Date(row.next_attempt_at).getTime()));
      expect(await deliverUntilIdle(t.s)).toMatchObject({ delivered: written.length, failed: 0 });
      expect(seen.map((m) => m.id)).toEqual(written);
      expect(seen.map((m) => m.n)).toEqual(written.map((_, i) => i));
      expect((await deliveriesOf(t.s, ep.id)).every((d) => d.status === "succeeded")).toBe(true);
    } finally {
      await new Promise<void>((r) => back.close(() => r()));
    }
  });

  test("slack endpoints get the Slack message, unsigned, at the URL sealed at rest", async () => {
    const ep = await createEndpointVia(t, { url: rx.url("/slack/T000/B000/secretpart"), event_types: ["purchase.pending_approval"], kind: "slack" }, org);
    expect(ep.url).not.toContain("secretpart");
    await emit(t.s, org.id, "purchase.pending_approval", clock);
    expect(await deliverUntilIdle(t.s)).toMatchObject({ delivered: 1 });
    const [m] = rx.on("/slack/T000/B000/secretpart");
    expect(typeof m!.json.text).toBe("string");
    expect(Array.isArray(m!.json.blocks)).toBe(true);
    expect(m!.headers["webhook-signature"]).toBeUndefined();
    expect(m!.headers["webhook-id"]).toBeUndefined();
    // Its test message is a Slack message too.
    expect(await (await api("POST", `/webhook-endpoints/${ep.id}/test`)).json()).toMatchObject({ ok: true, error: null });
    const ping = rx.on("/slack/T000/B000/secretpart")[1]!;
    expect(ping.json.text).toContain("webhook_endpoint.test");
  });

  test("POST /test sends a signed test message now and reports the answer; nothing enters the delivery log", async () => {
    const ep = await createEndpointVia(t, { url: rx.url("/ping"), event_types: ["purchase.failed"] }, org);
    rx.verifyWith("/ping", [ep.secret]);
    rx.behave("/ping", { kind: "ok", status: 200, body: "pong" });
    const r = await (await api("POST", `/webhook-endpoints/${ep.id}/test`)).json();
    expect(r).toMatchObject({ ok: true, status_code: 200, response_excerpt: "pong", error: null });
    expect(r.webhook_id).toMatch(/^test_/);
    const [m] = rx.on("/ping");
    expect(m!.verified).toBe(true);
    expect(m!.json).toMatchObject({ id: r.webhook_id, type: "webhook_endpoint.test", org_id: org.id });
    expect(await deliveriesOf(t.s, ep.id)).toHaveLength(0);
    rx.behave("/ping", { kind: "status", status: 401, body: "bad signature" });
    expect(await (await api("POST", `/webhook-endpoints/${ep.id}/test`)).json()).toMatchObject({ ok: false, status_code: 401, error: "HTTP 401" });
  });
});

describeEachDb("webhooks: the SSRF rule at delivery", (driver) => {
  let resolveTo = "93.184.216.34";
  const t = useTestApp(driver, { config: { secretKey: SECRET_KEY, connectionsAllowPrivateEndpoints: false } });
  let rx: Receiver;
  beforeAll(async () => {
    rx = await startReceiver();
    setHostResolver(async (host) => (host === "hooks.example.com" ? [{ address: resolveTo, family: 4 }] : Promise.reject(Object.assign(new Error("nx"), { code: "ENOTFOUND" }))));
  });
  afterAll(async () => {
    setHostResolver(null);
    await rx?.close();
  });

  test("a name public when saved, private when delivered to (DNS rebinding): refused before connecting, recorded as a failure", async () => {
    const ep = await createEndpointVia(t, { url: `https://hooks.example.com:${rx.port}/rebound`, event_types: ["purchase.failed"] });
    resolveTo = "127.0.0.1";
    await emit(t.s, t.org.id, "purchase.failed", t.s.now());
    expect(await deliverUntilIdle(t.s)).toMatchObject({ delivered: 0, failed: 1 });
    expect(rx.received).toHaveLength(0);
    const [d] = await deliveriesOf(t.s, ep.id);
    expect(d).toMatchObject({ status: "pending", attempts: 1, last_status_code: null, last_error: "refused: the host is not at a public address" });
    const test = await (await t.orgRequest("POST", `/webhook-endpoints/${ep.id}/test`)).json();
    expect(test).toMatchObject({ ok: false, error: "refused: the host is not at a public address" });
    expect(rx.received).toHaveLength(0);
  });
});

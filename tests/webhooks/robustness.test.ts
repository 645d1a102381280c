/**
 * A receiver that hangs, redirects, answers 500 or 410, or streams 100 MB back cannot slow other
 * deliveries: each endpoint is served on its own (one request in flight), every request has a
 * 10 s deadline, redirects are not followed, and at most 64 KB of an answer is read.
 */
import { afterAll, beforeAll, beforeEach, expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { deliverWebhooks } from "../../lib/webhooks/deliver.ts";
import { MAX_EXCERPT_BYTES, SEND_TIMEOUT_MS } from "../../lib/webhooks/send.ts";
import { startReceiver, type Receiver } from "./receiver.ts";
import { createEndpointVia, deliveriesOf, emit, endpointRow, SECRET_KEY, sleep } from "./fixtures.ts";

const HUGE = 100 * 1024 * 1024;

describeEachDb("webhooks: bad receivers do not slow good ones", (driver) => {
  const t = useTestApp(driver, { config: { secretKey: SECRET_KEY, connectionsAllowPrivateEndpoints: true } });
  let rx: Receiver;
  let org: { id: string; key: string };
  beforeAll(async () => {
    rx = await startReceiver();
  });
  afterAll(async () => {
    await rx?.close();
  });
  beforeEach(async () => {
    rx.reset();
    await t.s.handle.query("UPDATE webhook_endpoints SET enabled = false");
    org = await t.newOrg();
  });

  /** Resolves when `endpointId`'s deliveries all succeeded; the time it took. */
  async function succeededWithin(endpointId: string, started: number, limitMs: number): Promise<number> {
    for (;;) {
      const ds = await deliveriesOf(t.s, endpointId);
      if (ds.length && ds.every((d) => d.status === "succeeded")) return Date.now() - started;
      if (Date.now() - started > limitMs) throw new Error(`not delivered within ${limitMs} ms`);
      await sleep(20);
    }
  }

  test("hanging, redirecting, 500, 410 and 100 MB receivers in the same pass: the healthy endpoint is delivered at once; each bad one costs only itself", async () => {
    const make = (path: string) => createEndpointVia(t, { url: rx.url(path), event_types: ["purchase.confirmed"] }, org);
    const healthy = await make("/healthy");
    const hang = await make("/hang");
    const redirect = await make("/redirect");
    const fail = await make("/fail");
    const gone = await make("/gone");
    const hugeOk = await make("/huge-ok");
    const hugeFail = await make("/huge-fail");
    rx.behave("/hang", { kind: "hang" });
    rx.behave("/redirect", { kind: "redirect", to: rx.url("/healthy") });
    rx.behave("/fail", { kind: "status", status: 500, body: "internal error" });
    rx.behave("/gone", { kind: "status", status: 410 });
    rx.behave("/huge-ok", { kind: "huge", status: 200, bytes: HUGE });
    rx.behave("/huge-fail", { kind: "huge", status: 500, bytes: HUGE });
    await emit(t.s, org.id, "purchase.confirmed", t.s.now());

    const started = Date.now();
    let passDone = false;
    const pass = deliverWebhooks(t.s).then((r) => ((passDone = true), r));
    const healthyMs = await succeededWithin(healthy.id, started, 3000);
    expect(healthyMs).toBeLessThan(2000);
    // The hanging receiver still holds its own request.
    expect(passDone).toBe(false);
    const report = await pass;
    const passMs = Date.now() - started;
    expect(report).toMatchObject({ endpoints: 7, delivered: 2, failed: 5, disabled: 1 });
    // The pass lasts the one deadline of the hanging request, not a sum of them.
    expect(passMs).toBeGreaterThanOrEqual(SEND_TIMEOUT_MS - 100);
    expect(passMs).toBeLessThan(SEND_TIMEOUT_MS + 3000);

    const [h] = await deliveriesOf(t.s, hang.id);
    expect(h).toMatchObject({ status: "pending", last_status_code: null, last_error: `timed out after ${SEND_TIMEOUT_MS} ms` });
    expect(h.last_latency_ms).toBeGreaterThanOrEqual(SEND_TIMEOUT_MS - 100);

    const [r] = await deliveriesOf(t.s, redirect.id);
    expect(r).toMatchObject({ status: "pending", last_status_code: 302, last_error: "HTTP 302 (redirects are not followed)" });
    // Not followed: the healthy path got exactly its own message.
    expect(rx.on("/healthy")).toHaveLength(1);

    const [f] = await deliveriesOf(t.s, fail.id);
    expect(f).toMatchObject({ status: "pending", last_status_code: 500, last_error: "HTTP 500", last_response_excerpt: "internal error" });

    expect((await endpointRow(t.s, gone.id)).enabled).toBe(false);

    for (const [ep, status, outcome] of [
      [hugeOk, 200, "succeeded"],
      [hugeFail, 500, "pending"],
    ] as const) {
      const [d] = await deliveriesOf(t.s, ep.id);
      expect(d).toMatchObject({ status: outcome, last_status_code: status });
      expect(Buffer.byteLength(d.last_response_excerpt)).toBe(MAX_EXCERPT_BYTES);
      expect(d.last_latency_ms).toBeLessThan(3000);
    }
    // The 100 MB were never taken: the socket was destroyed after 64 KB.
    await sleep(200);
    expect(rx.bytesSent("/huge-ok")).toBeLessThan(16 * 1024 * 1024);
    expect(rx.bytesSent("/huge-fail")).toBeLessThan(16 * 1024 * 1024);
  }, 60_000);

  test("overlapping passes: while one waits on a hanging receiver, the next delivers new events to the healthy endpoint; the hanging endpoint never gets a second request in flight", async () => {
    const healthy = await createEndpointVia(t, { url: rx.url("/healthy2"), event_types: ["purchase.failed"] }, org);
    await createEndpointVia(t, { url: rx.url("/hang2"), event_types: ["purchase.failed"] }, org);
    rx.behave("/hang2", { kind: "hang" });
    await emit(t.s, org.id, "purchase.failed", t.s.now());
    const first = deliverWebhooks(t.s);
    await succeededWithin(healthy.id, Date.now(), 3000);

    // As the job does every second: more passes while the first still waits.
    for (let i = 0; i < 3; i++) {
      await emit(t.s, org.id, "purchase.failed", t.s.now());
      const started = Date.now();
      const next = await deliverWebhooks(t.s);
      expect(next).toMatchObject({ endpoints: 1, delivered: 1 });
      expect(Date.now() - started).toBeLessThan(2000);
    }
    expect(rx.on("/healthy2")).toHaveLength(4);
    expect(rx.on("/hang2")).toHaveLength(1);
    await first;
    expect(rx.on("/hang2")).toHaveLength(1);
  }, 60_000);
});

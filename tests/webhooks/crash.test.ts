/**
 * Delivered at least once and recorded once, with two replicas and crashes between send and
 * record (the quality bar), on PostgreSQL with real processes: worker processes
 * (tests/webhooks/worker.ts, the registered delivery job) deliver to one loopback receiver that
 * verifies signatures and dedupes by webhook-id. One is killed with SIGKILL right after a
 * receiver answered and before the attempt is recorded; two more replicas take over once its
 * lease lapses, while new events keep coming; one of them is SIGKILLed mid-stream too. The
 * receiver sees every event exactly once per endpoint (after dedupe), in event order, and the
 * database holds one delivery per endpoint and event with exactly one recorded success.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { useTestApp } from "../helpers/app.ts";
import { until } from "../helpers/process.ts";
import { startReceiver, type Receiver } from "./receiver.ts";
import { createEndpointVia, emit, SECRET_KEY, sleep } from "./fixtures.ts";

const ROOT = join(import.meta.dir, "..", "..");
const LEASE_MS = 2000;

interface Worker {
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: string | null }>;
  stderr: () => string;
}

// Needs a PostgreSQL server shared by several processes: skipped without TEST_DATABASE_URL.
const maybe = process.env.TEST_DATABASE_URL ? describe : describe.skip;

maybe("webhooks: replicas and SIGKILL between send and record [postgres]", () => {
  const t = useTestApp("postgres", { config: { secretKey: SECRET_KEY, connectionsAllowPrivateEndpoints: true } });
  let rx: Receiver;
  const workers: Worker[] = [];

  beforeAll(async () => {
    rx = await startReceiver();
  });
  afterAll(async () => {
    for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill("SIGKILL");
    await Promise.all(workers.map((w) => w.exited));
    await rx?.close();
  });

  function startWorker(env: Record<string, string> = {}): Worker {
    const child = spawn(process.execPath, ["tests/webhooks/worker.ts"], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: t.db.url!,
        COMMITOPS_SECRET_KEY: SECRET_KEY,
        CONNECTIONS_ALLOW_PRIVATE_ENDPOINTS: "true",
        PUBLIC_URL: "http://localhost",
        LOG_LEVEL: "silent",
        COMMITOPS_TEST_WEBHOOK_LEASE_MS: String(LEASE_MS),
        PURCHASE_WEBHOOK_URL: "",
        SUPPORT_WEBHOOK_URL: "",
        ...env,
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr!.on("data", (d) => (stderr += d));
    const w: Worker = { child, exited: new Promise((r) => child.on("exit", (code, signal) => r({ code, signal }))), stderr: () => stderr };
    workers.push(w);
    return w;
  }

  const succeeded = async () => {
    const [r] = await t.s.handle.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'succeeded'");
    return Number(r!.n);
  };

  test("each event reaches each endpoint exactly once after dedupe, in order; each delivery recorded once", async () => {
    const paths = ["/a", "/b", "/c"];
    const endpoints = [];
    for (const p of paths) {
      const ep = await createEndpointVia(t, { url: rx.url(p), event_types: ["*"] });
      rx.verifyWith(p, [ep.secret]);
      endpoints.push(ep);
    }
    const events: string[] = [];
    let at = Date.now();
    const emitSome = async (n: number) => {
      for (let i = 0; i < n; i++) events.push((await emit(t.s, t.org.id, "purchase.confirmed", new Date((at += 1000)), { n: events.length })).id);
    };
    await emitSome(10);

    // A replica dies right after its first receiver answered, before recording it.
    const a = startWorker({ COMMITOPS_TEST_WEBHOOK_CRASH: "after_send" });
    const died = await a.exited;
    expect(died.signal).toBe("SIGKILL");
    expect(a.stderr()).toContain("webhook-crash after_send");
    const crashedOn = /webhook-crash after_send (\S+)/.exec(a.stderr())![1];
    expect(crashedOn).toBe(events[0]);
    expect(rx.received.length).toBeGreaterThanOrEqual(1);
    expect(await succeeded()).toBe(0);

    // Two replicas take over once its leases lapse, while more events arrive.
    const b = startWorker();
    startWorker();
    await emitSome(10);
    await until("the first 20 events", async () => (await succeeded()) === 20 * paths.length);

    // One of them is killed mid-stream; the other carries on after its leases lapse.
    const more = emitSome(10);
    await sleep(150);
    b.child.kill("SIGKILL");
    await b.exited;
    await more;
    await until("all 30 events", async () => (await succeeded()) === 30 * paths.length);

    for (const p of paths) {
      const got = rx.on(p);
      expect(got.every((m) => m.verified)).toBe(true);
      // Deduped by webhook-id: every event once, in event order.
      expect(rx.unique(p).map((m) => m.id)).toEqual(events);
      expect(rx.unique(p).map((m) => m.json.data.n)).toEqual(events.map((_, i) => i));
      // A duplicate is only ever a message a killed worker sent and could not record.
      expect(got.length - events.length).toBeLessThanOrEqual(2);
    }
    const rows = await t.s.handle.query<{ status: string; attempts: number; successes: number }>(
      `SELECT d.status, d.attempts, (SELECT count(*)::int FROM webhook_attempts a WHERE a.delivery_id = d.id AND a.status_code BETWEEN 200 AND 299) AS successes
         FROM webhook_deliveries d`,
    );
    expect(rows).toHaveLength(30 * paths.length);
    for (const r of rows) expect([r.status, Number(r.successes)]).toEqual(["succeeded", 1]);
    const [{ n: leased }] = await t.s.handle.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_endpoints WHERE lease_token IS NOT NULL AND lease_until > now()");
    expect(Number(leased)).toBeLessThanOrEqual(paths.length);
  }, 120_000);
});

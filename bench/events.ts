// Events and webhook delivery (issue 28), each figure against a baseline in the same run:
// 1. Events written per second inside real transactions: a transaction that records a change
//    and its event (emitEvent: the event row, its delivery rows for 3 subscribed endpoints) vs
//    the same transaction without the event, sequentially and with CONCURRENCY callers.
// 2. Delivery throughput to a loopback receiver that verifies every signature with the
//    Standard Webhooks library: deliverWebhooks draining 3 endpoints vs plain signed POSTs of
//    the same bodies by one sequential client per endpoint (what the receiver alone allows).
// 3. Latency event → delivery while events are written at RATE/s for SECONDS and the delivery
//    job runs as in the server (a pass every second): p50, p99, max; baseline: the receiver's
//    own answer time.
// Env: EVENTS_BENCH_N (2000), EVENTS_BENCH_CONCURRENCY (16), EVENTS_BENCH_RATE (20),
// EVENTS_BENCH_SECONDS (20), BENCH_DATABASE_URL (a PostgreSQL database; default an in-memory
// PGlite). Usage: npx bun bench/events.ts
import { randomBytes } from "node:crypto";
import { sql } from "drizzle-orm";
import { Webhook } from "standardwebhooks";
import { loadConfig } from "../lib/config.ts";
import { createLogger } from "../lib/log.ts";
import { openDb } from "../lib/db/index.ts";
import { createServices } from "../lib/services.ts";
import { createOrganization } from "../lib/orgs/service.ts";
import { emitEvent } from "../lib/events/emit.ts";
import { createEndpoint } from "../lib/webhooks/endpoints.ts";
import { deliverWebhooks } from "../lib/webhooks/deliver.ts";

const N = Number(process.env.EVENTS_BENCH_N ?? 2000);
const CONCURRENCY = Number(process.env.EVENTS_BENCH_CONCURRENCY ?? 16);
const RATE = Number(process.env.EVENTS_BENCH_RATE ?? 20);
const SECONDS = Number(process.env.EVENTS_BENCH_SECONDS ?? 20);
const ENDPOINTS = 3;

// The receiver: verifies each request with the endpoint's secret (set once created) and records
// the delay from the event's timestamp to its arrival.
const verifiers = new Map<string, Webhook>();
let received = 0;
let rejected = 0;
const arrivals: number[] = [];
const receiver = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch(r) {
    const body = await r.text();
    const wh = verifiers.get(new URL(r.url).pathname);
    try {
      const payload = wh!.verify(body, Object.fromEntries(r.headers)) as { timestamp: string };
      received++;
      arrivals.push(Date.now() - Date.parse(payload.timestamp));
      return new Response(null, { status: 204 });
    } catch {
      rejected++;
      return new Response("bad signature", { status: 400 });
    }
  },
});
const base = `http://127.0.0.1:${receiver.port}`;

const handle = await openDb({ url: process.env.BENCH_DATABASE_URL, migrate: true });
const config = loadConfig(process.env, {
  jobsEnabled: false,
  seedDemo: false,
  connectionsAllowPrivateEndpoints: true,
  secretKey: process.env.COMMITOPS_SECRET_KEY ?? randomBytes(32).toString("base64"),
});
const s = createServices(handle, config, createLogger("silent"));
await handle.db.execute(sql`CREATE TABLE IF NOT EXISTS bench_changes (id bigserial PRIMARY KEY, org_id uuid NOT NULL, note text NOT NULL)`);

async function orgWithEndpoints(name: string, count: number) {
  const org = await createOrganization(s.db, { name });
  const secrets: { path: string; secret: string }[] = [];
  for (let i = 0; i < count; i++) {
    const path = `/${name}/${i}`;
    const ep = await createEndpoint(s, org.id, { url: `${base}${path}`, event_types: ["*"] });
    verifiers.set(path, new Webhook(ep.secret!));
    secrets.push({ path, secret: ep.secret! });
  }
  return { orgId: org.id, secrets };
}

async function timed(n: number, concurrency: number, fn: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await fn(next++);
    }),
  );
  return (n / (performance.now() - t0)) * 1000;
}

const change = (orgId: string, i: number) => sql`INSERT INTO bench_changes (org_id, note) VALUES (${orgId}::uuid, ${`change ${i}`})`;
const eventOf = (orgId: string, i: number) => ({
  orgId,
  type: "billing_sync.failed" as const,
  occurredAt: new Date(),
  data: { connection_id: crypto.randomUUID(), connection_name: `bench ${i}`, provider: "aws", error: "AccessDenied: the role cannot read the export bucket" },
  resourcePath: `/beta/v1/org/${orgId}/billing-connections`,
  consolePath: "/app/connections",
});

const rows: string[] = [];
const subscribed = await orgWithEndpoints("bench-writes", ENDPOINTS);
for (const conc of [1, CONCURRENCY]) {
  const baseline = await timed(N, conc, (i) => s.db.transaction(async (tx) => void (await tx.execute(change(subscribed.orgId, i)))));
  const withEvent = await timed(N, conc, (i) =>
    s.db.transaction(async (tx) => {
      await tx.execute(change(subscribed.orgId, i));
      await emitEvent(tx, eventOf(subscribed.orgId, i));
    }),
  );
  rows.push(`| ${handle.driver} | write, concurrency ${conc} | change + event + ${ENDPOINTS} delivery rows, one transaction: ${withEvent.toFixed(0)} tx/s | the change alone: ${baseline.toFixed(0)} tx/s | ${(baseline / withEvent).toFixed(2)}× |`);
}

// 2. Delivery throughput: the 2·N events above wait for ENDPOINTS endpoints each.
const pending = async () => Number((await handle.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'pending'"))[0]?.n ?? 0);
const toDeliver = await pending();
received = 0;
let t0 = performance.now();
while ((await deliverWebhooks(s, { maxPerClaim: 1000, claimBudgetMs: 60_000 })).delivered > 0);
const deliveryRate = (received / (performance.now() - t0)) * 1000;
const left = await pending();

// Baseline: the same number of signed POSTs, one sequential client per endpoint.
const sample = JSON.stringify({ id: crypto.randomUUID(), type: "billing_sync.failed", version: 1, timestamp: new Date().toISOString(), org_id: subscribed.orgId, data: eventOf(subscribed.orgId, 0).data, links: { api: null, console: null } });
const plainReceived = received;
t0 = performance.now();
await Promise.all(
  subscribed.secrets.map(async ({ path, secret }) => {
    const wh = new Webhook(secret);
    for (let i = 0; i < toDeliver / ENDPOINTS; i++) {
      const id = crypto.randomUUID();
      const at = new Date();
      const r = await fetch(`${base}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": wh.sign(id, at, sample) },
        body: sample,
      });
      await r.arrayBuffer();
    }
  }),
);
const plainRate = ((received - plainReceived) / (performance.now() - t0)) * 1000;
rows.push(`| ${handle.driver} | delivery throughput, ${ENDPOINTS} endpoints, ${toDeliver} deliveries (${left} left, ${rejected} bad signatures) | ${deliveryRate.toFixed(0)} deliveries/s | plain signed POSTs, one client per endpoint: ${plainRate.toFixed(0)} /s | ${(plainRate / deliveryRate).toFixed(2)}× |`);

// 3. Latency under a steady write rate with the job's cadence (a pass started every second).
const steady = await orgWithEndpoints("bench-latency", 1);
arrivals.length = 0;
const passes: Promise<unknown>[] = [];
const job = setInterval(() => passes.push(deliverWebhooks(s).catch(() => {})), 1000);
const total = RATE * SECONDS;
const writeStart = performance.now();
for (let i = 0; i < total; i++) {
  const due = writeStart + (i * 1000) / RATE;
  const wait = due - performance.now();
  if (wait > 0) await Bun.sleep(wait);
  await s.db.transaction(async (tx) => {
    await tx.execute(change(steady.orgId, i));
    await emitEvent(tx, eventOf(steady.orgId, i));
  });
}
const deadline = Date.now() + 30_000;
while (arrivals.length < total && Date.now() < deadline) await Bun.sleep(100);
clearInterval(job);
await Promise.all(passes);
const sorted = [...arrivals].sort((a, b) => a - b);
const pct = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN;
rows.push(`| ${handle.driver} | event → delivery at ${RATE} events/s for ${SECONDS} s (${arrivals.length}/${total} arrived), job every 1 s | p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms, max ${sorted.at(-1)} ms | the job's period: 1000 ms | — |`);

console.log("| Driver | What | commitops | Baseline in the same run | Ratio |");
console.log("|---|---|---|---|---|");
for (const r of rows) console.log(r);
receiver.stop(true);
await handle.close();
process.exit(0);

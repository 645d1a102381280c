// Soak under faults (issue 26): the server process (scripts/main.ts serve) behind a TCP proxy in
// front of PostgreSQL, for SOAK_MINUTES (10) of mixed traffic — REST reads and writes (with
// Idempotency-Key), CSV downloads, MCP tools/call, a FOCUS import every minute — with a fault
// injected at the start of every minute after the first (the first minute is the baseline of
// the same run): a cut (refused + reset), a blackhole, a slow path (150 ms each way), a reset of
// live connections, pg_terminate_backend of every session, an import cut mid-COPY.
// Prints, per minute: the fault, requests served, answers by status, p50/p99 latency and the
// server's RSS; then restarts (must be 0), RSS growth, downloads short-but-complete (must be 0),
// and every write answered 503 retried with its key (each must end stored exactly once).
// Env: SOAK_MINUTES (10), SOAK_WORKERS (6), BENCH_DATABASE_URL or TEST_DATABASE_URL (a
// PostgreSQL server; default postgres://postgres@127.0.0.1:5432/postgres).
// Usage: npx bun bench/soak.ts
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { startTcpProxy } from "../tests/helpers/tcpProxy.ts";
import { createTestDatabase } from "../tests/helpers/db.ts";
import { freePort, startProcess, waitFor } from "../tests/helpers/process.ts";

const MINUTES = Number(process.env.SOAK_MINUTES ?? 10);
const WORKERS = Number(process.env.SOAK_WORKERS ?? 6);
const root = join(import.meta.dir, "..");
const baseUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

const db = await createTestDatabase("postgres", baseUrl);
const dbUrl = db.url!;
const admin = postgres(dbUrl, { max: 1, onnotice: () => {} });
const dir = mkdtempSync(join(tmpdir(), "commitops-soak-"));

function cli(args: string[], env: Record<string, string>) {
  const r = spawnSync(process.execPath, [join(root, "scripts/main.ts"), ...args], { cwd: root, env: { ...process.env, LOG_LEVEL: "warn", ...env }, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`commitops ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

const { org_id: orgId, api_key: key } = JSON.parse(cli(["org", "create", "--name", "Soak", "--json"], { DATABASE_URL: dbUrl }));
const bill = join(dir, "bill.csv");
cli(["generate", "focus", "--out", bill, "--months", "1", "--accounts", "200", "--resources", "100", "--grain", "monthly", "--providers", "aws"], { DATABASE_URL: dbUrl });
cli(["import", "focus", "--org", orgId, bill], { DATABASE_URL: dbUrl });
const [p] = await admin.unsafe(`SELECT extract(year FROM month)::int AS y, extract(month FROM month)::int AS m FROM billing_periods WHERE org_id = $1 ORDER BY month DESC LIMIT 1`, [orgId]);

const target = new URL(dbUrl);
const proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const serverEnv = { DATABASE_URL: proxy.urlFor(dbUrl), PORT: String(port), HOST: "127.0.0.1", PUBLIC_URL: base, SEED_DEMO: "false", JOBS_ENABLED: "false", LOG_LEVEL: "warn", API_RATE_LIMIT_PER_MINUTE: "0" };
let server = startProcess(process.execPath, [join(root, "scripts/main.ts"), "serve"], { cwd: root, env: serverEnv });
await waitFor(`${base}/readyz`, 200, 90_000);
let restarts = 0;

const auth = { authorization: `Bearer ${key}` };
const csvUrl = `${base}/beta/v1/org/${orgId}/allocation-reports/cloud_bill_by_resource?year=${p.y}&month=${p.m}&format=csv`;
const reference = new Uint8Array(await (await fetch(csvUrl, { headers: auth })).arrayBuffer());
const referenceHash = sha(reference);

interface Minute {
  fault: string;
  statuses: Map<number, number>;
  latencies: number[];
  rssMb: number[];
  downloads: { complete: number; aborted: number; refused: number; short: number };
  imports: { ok: number; failed: number };
}
const minutes: Minute[] = [];
const newMinute = (fault: string): Minute => ({ fault, statuses: new Map(), latencies: [], rssMb: [], downloads: { complete: 0, aborted: 0, refused: 0, short: 0 }, imports: { ok: 0, failed: 0 } });
let current = newMinute("none (baseline)");
minutes.push(current);
const writes: { key: string; name: string; status: number }[] = [];

const record = (status: number, ms: number) => {
  current.statuses.set(status, (current.statuses.get(status) ?? 0) + 1);
  current.latencies.push(ms);
};

async function call(url: string, init: RequestInit = {}): Promise<{ status: number; body: string }> {
  const t0 = performance.now();
  try {
    const r = await fetch(url, { ...init, headers: { ...auth, ...(init.headers ?? {}) }, signal: AbortSignal.timeout(15_000) });
    const body = await r.text();
    record(r.status, performance.now() - t0);
    return { status: r.status, body };
  } catch {
    record(-1, performance.now() - t0);
    return { status: -1, body: "" };
  }
}

async function download() {
  const m = current;
  const t0 = performance.now();
  let r: Response;
  try {
    r = await fetch(csvUrl, { headers: auth, signal: AbortSignal.timeout(60_000) });
  } catch {
    record(-1, performance.now() - t0);
    m.downloads.aborted++;
    return;
  }
  record(r.status, performance.now() - t0);
  if (r.status !== 200) {
    await r.text().catch(() => {});
    m.downloads.refused++;
    return;
  }
  try {
    const bytes = new Uint8Array(await r.arrayBuffer());
    if (bytes.length === reference.length && sha(bytes) === referenceHash) m.downloads.complete++;
    else m.downloads.short++; // a complete-looking file that differs: must never happen
  } catch {
    m.downloads.aborted++;
  }
}

const mcpBody = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_spend", arguments: { group_by: "month" } } });
const actions: [number, () => Promise<unknown>][] = [
  [40, () => call(`${base}/beta/v1/org/${orgId}`)],
  [15, () => call(`${base}/beta/v1/org/${orgId}/cost-estimates?provider=aws&page_size=5`)],
  [15, async () => {
    const k = crypto.randomUUID();
    const name = `soak ${k}`;
    const a = await call(`${base}/beta/v1/org/${orgId}/cost-estimates`, { method: "POST", headers: { "content-type": "application/json", "idempotency-key": k }, body: JSON.stringify({ provider: "aws", name }) });
    writes.push({ key: k, name, status: a.status });
  }],
  [15, () => call(`${base}/mcp`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" }, body: mcpBody })],
  [10, download],
  [5, () => call(`${base}/beta/v1/org/${orgId}/allocation-reports/commitment_cost_by_account?year=${p.y}&month=${p.m}`)],
];
const totalWeight = actions.reduce((a, [w]) => a + w, 0);
const pick = () => {
  let r = Math.random() * totalWeight;
  for (const [w, f] of actions) if ((r -= w) < 0) return f;
  return actions[0]![1];
};

const end = Date.now() + MINUTES * 60_000;
let running = true;

async function worker() {
  while (running && Date.now() < end) {
    await pick()();
    await sleep(20);
  }
}

/** Imports whose COPY was seen running at the server and cut (a cut that came too late is not counted). */
let importCuts = 0;

function importOnce(cutMidCopy: boolean) {
  const m = current;
  return new Promise<void>((resolve) => {
    const child = spawn(process.execPath, [join(root, "scripts/main.ts"), "import", "focus", "--org", orgId, bill], { cwd: root, env: { ...process.env, DATABASE_URL: proxy.urlFor(dbUrl), LOG_LEVEL: "warn" }, stdio: "ignore" });
    child.on("exit", (code) => {
      if (code === 0) m.imports.ok++;
      else m.imports.failed++;
      resolve();
    });
    if (cutMidCopy) {
      void (async () => {
        const until = Date.now() + 30_000;
        while (Date.now() < until && child.exitCode === null) {
          const [r] = await admin.unsafe(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'COPY %' AND state <> 'idle'`);
          if (Number(r.n) > 0) {
            proxy.reset();
            importCuts++;
            return;
          }
          await sleep(5);
        }
      })();
    }
  });
}

const faults: [string, () => Promise<void>][] = [
  ["cut 5 s (refused + reset)", async () => {
    await proxy.cut();
    await sleep(5000);
    await proxy.restore();
  }],
  ["blackhole 5 s", async () => {
    proxy.blackhole();
    await sleep(5000);
    await proxy.restore();
  }],
  ["slow 150 ms each way, 20 s", async () => {
    proxy.slow(150);
    await sleep(20_000);
    proxy.slow(0);
  }],
  ["reset of live connections", async () => proxy.reset()],
  ["pg_terminate_backend of every session", async () => {
    await admin.unsafe(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`);
  }],
  ["import cut mid-COPY", async () => importOnce(true)],
];

async function sampler() {
  while (running && Date.now() < end) {
    if (server.child.exitCode !== null || server.child.signalCode !== null) {
      restarts++;
      server = startProcess(process.execPath, [join(root, "scripts/main.ts"), "serve"], { cwd: root, env: serverEnv });
      await waitFor(`${base}/readyz`, 200, 90_000).catch(() => {});
    }
    try {
      const status = readFileSync(`/proc/${server.child.pid}/status`, "utf8");
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      current.rssMb.push(kb / 1024);
    } catch {}
    await sleep(5000);
  }
}

async function scheduler() {
  let i = 0;
  // The baseline minute runs an import too.
  setTimeout(() => void importOnce(false), 30_000);
  while (Date.now() + 60_000 <= end) {
    await sleep(60_000);
    const [name, inject] = faults[i++ % faults.length]!;
    current = newMinute(name);
    minutes.push(current);
    void inject();
    if (name !== "import cut mid-COPY") setTimeout(() => void importOnce(false), 30_000);
  }
}

console.log(`soak: ${MINUTES} min, ${WORKERS} workers, server pid ${server.child.pid}, download ${(reference.length / 1e6).toFixed(1)} MB`);
await Promise.all([...[...Array(WORKERS)].map(() => worker()), sampler(), scheduler()]);
running = false;
await proxy.restore();
proxy.slow(0);

// Every write answered anything but 200 is retried with its key until it answers 200.
let retried = 0;
for (const w of writes) {
  if (w.status === 200) continue;
  retried++;
  const until = Date.now() + 60_000;
  for (;;) {
    const r = await fetch(`${base}/beta/v1/org/${orgId}/cost-estimates`, { method: "POST", headers: { ...auth, "content-type": "application/json", "idempotency-key": w.key }, body: JSON.stringify({ provider: "aws", name: w.name }) });
    await r.text();
    if (r.status === 200 || Date.now() > until) {
      w.status = r.status;
      break;
    }
    await sleep(300);
  }
}
const stored = await admin.unsafe(`SELECT name, count(*)::int AS n FROM cost_estimates WHERE org_id = $1 AND name LIKE 'soak %' GROUP BY name`, [orgId]);
const storedTwice = stored.filter((r) => Number(r.n) > 1).length;
const storedNames = new Set(stored.map((r) => r.name));
const lost = writes.filter((w) => !storedNames.has(w.name)).length;

const pct = (xs: number[], q: number) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]! : 0);
console.log(`\n| minute | fault | requests | 2xx | 503 | other | p50 ms | p99 ms | downloads whole / aborted / refused / short | imports ok / failed | RSS MB |`);
console.log(`|---|---|---:|---:|---:|---:|---:|---:|---|---|---:|`);
minutes.forEach((m, i) => {
  let ok = 0;
  let unavailable = 0;
  let other = 0;
  for (const [s, n] of m.statuses) {
    if (s >= 200 && s < 300) ok += n;
    else if (s === 503) unavailable += n;
    else other += n;
  }
  const d = m.downloads;
  console.log(
    `| ${i + 1} | ${m.fault} | ${ok + unavailable + other} | ${ok} | ${unavailable} | ${other} | ${pct(m.latencies, 0.5).toFixed(0)} | ${pct(m.latencies, 0.99).toFixed(0)} | ${d.complete} / ${d.aborted} / ${d.refused} / ${d.short} | ${m.imports.ok} / ${m.imports.failed} | ${(m.rssMb.at(-1) ?? 0).toFixed(0)} |`,
  );
});
const others = new Map<number, number>();
for (const m of minutes) for (const [s, n] of m.statuses) if (!(s >= 200 && s < 300) && s !== 503) others.set(s, (others.get(s) ?? 0) + n);
const firstRss = minutes[0]!.rssMb.at(-1) ?? 0;
const lastRss = minutes.at(-1)!.rssMb.at(-1) ?? 0;
const shortDownloads = minutes.reduce((a, m) => a + m.downloads.short, 0);
console.log(`\nrestarts: ${restarts}`);
console.log(`other statuses: ${[...others].map(([s, n]) => `${s}×${n}`).join(", ") || "none"}`);
console.log(`RSS: ${firstRss.toFixed(0)} MB after the baseline minute, ${lastRss.toFixed(0)} MB at the end (${(lastRss - firstRss >= 0 ? "+" : "")}${(lastRss - firstRss).toFixed(0)} MB)`);
console.log(`downloads complete but not byte-identical: ${shortDownloads}`);
console.log(`imports cut mid-COPY: ${importCuts} (a cut import fails whole; the others re-import the same month)`);
console.log(`writes: ${writes.length}, answered non-200 and retried with their key: ${retried}; stored twice: ${storedTwice}; lost: ${lost}; still not 200: ${writes.filter((w) => w.status !== 200).length}`);

await server.stop();
await proxy.close();
await admin.end({ timeout: 1 });
await db.drop();
rmSync(dir, { recursive: true, force: true });
process.exit(restarts || shortDownloads || storedTwice || lost ? 1 : 0);

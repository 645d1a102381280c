import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { startTcpProxy, type TcpProxy } from "../helpers/tcpProxy.ts";
import { freePort, startProcess, waitFor } from "../helpers/process.ts";

/**
 * Issue 26: the server process between a TCP proxy and PostgreSQL, under concurrent reads,
 * writes (with Idempotency-Key), CSV downloads and an import, while the proxy refuses, blackholes,
 * slows and cuts a COPY. Throughout: the process stays alive (never restarted); during an outage
 * every request answers 503 within 2 s; within 2 s of recovery requests succeed; while only slow,
 * nothing answers 503; a download is byte-identical to the healthy one or ends abnormally, never
 * a complete-looking short file; nothing is lost or half-written, and every write answered 503
 * is retried with its key to exactly one stored result.
 */
const GOAL_MS = 2000;
const HANG_MS = 8000;
const root = join(import.meta.dir, "../..");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

interface Answer {
  what: string;
  status: number;
  ms: number;
  retryAfter: string | null;
  body: string;
}

interface Download {
  status: number;
  outcome: "complete" | "aborted" | "refused";
  bytes?: Uint8Array;
}

interface Write {
  key: string;
  name: string;
  first: Answer;
}

function commitops(args: string[], env: Record<string, string>) {
  return spawnSync(process.execPath, [join(root, "scripts/main.ts"), ...args], { cwd: root, env: { ...process.env, LOG_LEVEL: "warn", ...env }, encoding: "utf8" });
}

describe.skipIf(!process.env.TEST_DATABASE_URL)("faults between the server process and PostgreSQL [postgres]", () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let server: ReturnType<typeof startProcess>;
  let base: string;
  let orgId: string;
  let key: string;
  let dir: string;
  let bill: string;
  let reference: { hash: string; length: number };
  let admin: ReturnType<typeof postgres>;
  let monitor: ReturnType<typeof setInterval>;
  const exits: (number | null)[] = [];
  const writes: Write[] = [];
  let period: { year: number; month: number };

  const auth = () => ({ authorization: `Bearer ${key}` });

  async function call(what: string, path: string, init: RequestInit = {}, hangMs = HANG_MS): Promise<Answer> {
    const t0 = performance.now();
    try {
      const r = await fetch(`${base}${path}`, { ...init, headers: { ...auth(), ...(init.headers ?? {}) }, signal: AbortSignal.timeout(hangMs) });
      const body = await r.text();
      return { what, status: r.status, ms: performance.now() - t0, retryAfter: r.headers.get("retry-after"), body };
    } catch (e) {
      return { what, status: -1, ms: performance.now() - t0, retryAfter: null, body: String(e) };
    }
  }

  const read = () => call("read", `/beta/v1/org/${orgId}`);
  const ready = () => call("readyz", `/readyz`);

  /** POST /cost-estimates named `name` with Idempotency-Key `k`. */
  const postEstimate = (what: string, k: string, name: string, hangMs = HANG_MS) =>
    call(what, `/beta/v1/org/${orgId}/cost-estimates`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": k },
      body: JSON.stringify({ provider: "aws", name }),
    }, hangMs);

  async function write(hangMs = HANG_MS): Promise<Answer> {
    const k = crypto.randomUUID();
    const name = `fault ${k}`;
    const a = await postEstimate("write", k, name, hangMs);
    writes.push({ key: k, name, first: a });
    return a;
  }

  const csvPath = () => `/beta/v1/org/${orgId}/allocation-reports/cloud_bill_by_resource?year=${period.year}&month=${period.month}&format=csv`;

  /** A CSV download read slowly to its end: complete (every byte), aborted (the transfer failed), or refused (an error status). */
  async function download(pauseMs = 0): Promise<Download> {
    let r: Response;
    try {
      r = await fetch(`${base}${csvPath()}`, { headers: auth() });
    } catch {
      return { status: -1, outcome: "aborted" };
    }
    if (r.status !== 200) {
      await r.text().catch(() => {});
      return { status: r.status, outcome: "refused" };
    }
    const reader = r.body!.getReader();
    const parts: Uint8Array[] = [];
    let length = 0;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        parts.push(value);
        length += value.length;
        if (pauseMs) await sleep(pauseMs);
      }
    } catch {
      return { status: 200, outcome: "aborted" };
    }
    const bytes = new Uint8Array(length);
    let at = 0;
    for (const p of parts) {
      bytes.set(p, at);
      at += p.length;
    }
    return { status: 200, outcome: "complete", bytes };
  }

  /** A download either has every byte of the healthy one or ended abnormally: never a short file that looks complete. */
  function expectWholeOrAborted(d: Download) {
    if (d.outcome !== "complete") return;
    expect(d.bytes!.length).toBe(reference.length);
    expect(sha(d.bytes!)).toBe(reference.hash);
  }

  function summary(answers: Answer[]) {
    return answers.map((a) => `${a.what} → ${a.status} in ${a.ms.toFixed(0)} ms ${a.status >= 400 || a.status < 0 ? a.body.slice(0, 140) : ""}`).join("\n");
  }

  async function msUntil200(since: number, limitMs = 6000): Promise<number> {
    while (performance.now() - since < limitMs) {
      const a = await read();
      if (a.status === 200) return performance.now() - since;
      await sleep(25);
    }
    return Infinity;
  }

  /** Requests made during an outage: each a 503 with Retry-After within 2 s, never hanging. */
  async function duringOutage(rounds: number): Promise<Answer[]> {
    const answers: Answer[] = [];
    for (let i = 0; i < rounds; i++) {
      answers.push(...(await Promise.all([read(), ready(), write(), read(), write()])));
      await sleep(200);
    }
    const bad = answers.filter((a) => a.status !== 503 || a.retryAfter === null || a.ms > GOAL_MS);
    expect(bad.length, summary(answers)).toBe(0);
    for (const a of answers) expect(a.body).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|stack|at \//);
    return answers;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "commitops-faults-"));
    db = await createTestDatabase("postgres");
    admin = postgres(db.url!, { max: 1, onnotice: () => {} });
    const created = commitops(["org", "create", "--name", "Faults", "--json"], { DATABASE_URL: db.url! });
    expect(created.status, created.stderr).toBe(0);
    ({ org_id: orgId, api_key: key } = JSON.parse(created.stdout));
    bill = join(dir, "bill.csv");
    const gen = commitops(["generate", "focus", "--out", bill, "--months", "1", "--accounts", "200", "--resources", "100", "--grain", "monthly", "--providers", "aws"], { DATABASE_URL: db.url! });
    expect(gen.status, gen.stderr).toBe(0);
    const imported = commitops(["import", "focus", "--org", orgId, bill], { DATABASE_URL: db.url! });
    expect(imported.status, imported.stderr).toBe(0);
    const [p] = await admin.unsafe(`SELECT extract(year FROM month)::int AS year, extract(month FROM month)::int AS month FROM billing_periods WHERE org_id = $1 ORDER BY month DESC LIMIT 1`, [orgId]);
    period = { year: Number(p.year), month: Number(p.month) };

    const target = new URL(db.url!);
    proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    server = startProcess(process.execPath, [join(root, "scripts/main.ts"), "serve"], {
      cwd: root,
      env: { DATABASE_URL: proxy.urlFor(db.url!), PORT: String(port), HOST: "127.0.0.1", PUBLIC_URL: base, SEED_DEMO: "false", JOBS_ENABLED: "false", LOG_LEVEL: "warn", API_RATE_LIMIT_PER_MINUTE: "0" },
    });
    await waitFor(`${base}/readyz`, 200, 90_000);
    monitor = setInterval(() => {
      if (server.child.exitCode !== null || server.child.signalCode !== null) exits.push(server.child.exitCode);
    }, 50);
    const healthy = await download();
    expect(healthy.outcome).toBe("complete");
    expect(healthy.bytes!.length).toBeGreaterThan(1_000_000);
    reference = { hash: sha(healthy.bytes!), length: healthy.bytes!.length };
  }, 180_000);

  afterAll(async () => {
    clearInterval(monitor);
    await server?.stop();
    await admin?.end({ timeout: 1 });
    await proxy?.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("slow, not down: with 100 ms each way, reads, writes and downloads all succeed (no 503) and downloads are whole", async () => {
    proxy.slow(100);
    // Every round trip takes 0.2 s: a write of a dozen statements takes seconds, and is waited for.
    const SLOW_HANG_MS = 60_000;
    try {
      const [answers, downloads] = await Promise.all([
        (async () => {
          const out: Answer[] = [];
          for (let i = 0; i < 2; i++) out.push(...(await Promise.all([read(), ready(), write(SLOW_HANG_MS), read()])));
          return out;
        })(),
        Promise.all([download(), download(5)]),
      ]);
      expect(answers.filter((a) => a.status !== 200).length, summary(answers)).toBe(0);
      for (const d of downloads) {
        expect(d.outcome).toBe("complete");
        expectWholeOrAborted(d);
      }
    } finally {
      proxy.slow(0);
    }
    expect(exits).toEqual([]);
  }, 120_000);

  test("a download storm (5 concurrent CSV downloads beside reads) on a busy machine: no 503, every download whole, the database never declared down", async () => {
    const [downloads, answers] = await Promise.all([
      Promise.all([download(), download(2), download(), download(2), download()]),
      (async () => {
        const out: Answer[] = [];
        for (let i = 0; i < 6; i++) out.push(...(await Promise.all([read(), ready(), read()])));
        return out;
      })(),
    ]);
    expect(answers.filter((a) => a.status !== 200).length, summary(answers)).toBe(0);
    for (const d of downloads) {
      expect(d.outcome).toBe("complete");
      expectWholeOrAborted(d);
    }
    expect(server.output()).not.toContain("database unreachable");
    expect(exits).toEqual([]);
  }, 120_000);

  test("cut (refused, live connections reset) under reads, writes and downloads: 503 within 2 s; 200 within 2 s of recovery", async () => {
    const downloads = [download(20), download(20)];
    await sleep(300); // the downloads are under way
    await proxy.cut();
    await duringOutage(6);
    const t0 = performance.now();
    await proxy.restore();
    expect(await msUntil200(t0)).toBeLessThan(GOAL_MS);
    for (const d of await Promise.all(downloads)) expectWholeOrAborted(d);
    const after = await download();
    expect(after.outcome).toBe("complete");
    expectWholeOrAborted(after);
    expect(exits).toEqual([]);
  }, 120_000);

  test("blackhole (nothing flows, live connections silent) under the same traffic: 503 within 2 s; 200 within 2 s of recovery", async () => {
    const downloads = [download(20), download(20)];
    await sleep(300);
    proxy.blackhole();
    await duringOutage(6);
    const t0 = performance.now();
    await proxy.restore();
    expect(await msUntil200(t0)).toBeLessThan(GOAL_MS);
    for (const d of await Promise.all(downloads)) expectWholeOrAborted(d);
    expect(exits).toEqual([]);
  }, 120_000);

  test("an import cut mid-COPY fails as a whole: the month keeps its rows and its download is unchanged", async () => {
    const rowsBefore = Number((await admin.unsafe(`SELECT count(*)::int AS n FROM billing_line_items WHERE org_id = $1`, [orgId]))[0].n);
    // The same rows with other line ends: another file (the same bytes again would be recognized as already imported).
    const restated = join(dir, "bill-crlf.csv");
    writeFileSync(restated, readFileSync(bill, "utf8").replace(/\n/g, "\r\n"));
    const child = spawn(process.execPath, [join(root, "scripts/main.ts"), "import", "focus", "--org", orgId, restated], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: proxy.urlFor(db.url!), LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr!.on("data", (d) => (stderr += d));
    const exited = new Promise<number | null>((r) => child.on("exit", (c) => r(c)));
    // Cut the path once the COPY (or the insert from the staged rows) is running at the server.
    const deadline = performance.now() + 60_000;
    let copying = false;
    while (!copying && performance.now() < deadline && child.exitCode === null) {
      const [r] = await admin.unsafe(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND (query ILIKE 'COPY %' OR query ILIKE 'INSERT INTO billing_line_items%') AND state <> 'idle'`);
      copying = Number(r.n) > 0;
      if (!copying) await sleep(5);
    }
    expect(copying).toBe(true);
    await proxy.cut();
    const code = await exited;
    await proxy.restore();
    expect(code).not.toBe(0);
    expect(stderr).not.toMatch(/^\s+at /m);
    const rowsAfter = Number((await admin.unsafe(`SELECT count(*)::int AS n FROM billing_line_items WHERE org_id = $1`, [orgId]))[0].n);
    expect(rowsAfter).toBe(rowsBefore);
    expect(await msUntil200(performance.now())).toBeLessThan(GOAL_MS);
    const d = await download();
    expect(d.outcome).toBe("complete");
    expectWholeOrAborted(d);
    expect(exits).toEqual([]);
  }, 120_000);

  test("a COMMIT that reached the server but whose answer was lost: 503 at once; the retry with the key replays the stored result", async () => {
    const k = crypto.randomUUID();
    const name = `fault ${k}`;
    const send = () => postEstimate("commit-lost", k, name);
    // The transaction's last statement records its commit marker on the key's claim; once the
    // server has answered it, the next chunk of that connection is the COMMIT, which reaches the
    // server; then nothing flows.
    proxy.blackholeAfterNext(/SET commit_marker/, /UPDATE 1\x00/);
    const first = await send();
    const answeredAt = performance.now();
    expect(first.status, first.body).toBe(503);
    expect(proxy.trappedAt).toBeGreaterThan(0);
    expect(answeredAt - proxy.trappedAt).toBeLessThan(GOAL_MS); // within 2 s of the outage
    const stored = await admin.unsafe(`SELECT id::text AS id FROM cost_estimates WHERE org_id = $1 AND name = $2`, [orgId, name]);
    expect(stored.length).toBe(1); // the write committed
    await proxy.restore();
    let retry = await send();
    const until = performance.now() + 30_000;
    while (retry.status !== 200 && performance.now() < until) {
      await sleep(200);
      retry = await send();
    }
    expect(retry.status, retry.body).toBe(200);
    expect(JSON.parse(retry.body).id).toBe(stored[0].id);
    expect((await admin.unsafe(`SELECT count(*)::int AS n FROM cost_estimates WHERE org_id = $1 AND name = $2`, [orgId, name]))[0].n).toBe(1);
    expect(exits).toEqual([]);
  }, 120_000);

  test("every write answered 503 is safe to retry with its Idempotency-Key: each key ends stored exactly once", async () => {
    const failed = writes.filter((w) => w.first.status !== 200);
    expect(failed.length).toBeGreaterThan(0);
    const ids = new Map<string, string>();
    for (const w of writes) {
      let a = w.first;
      const until = performance.now() + 60_000;
      while (a.status !== 200 && performance.now() < until) {
        a = await postEstimate("retry", w.key, w.name);
        if (a.status !== 200) await sleep(a.status === 409 ? 500 : 100);
      }
      expect(a.status, `${w.key}: ${a.body}`).toBe(200);
      ids.set(w.name, JSON.parse(a.body).id);
    }
    const stored = await admin.unsafe(`SELECT name, id::text AS id FROM cost_estimates WHERE org_id = $1 AND name = ANY($2::text[])`, [orgId, writes.map((w) => w.name)]);
    const byName = new Map<string, string[]>();
    for (const r of stored) byName.set(r.name, [...(byName.get(r.name) ?? []), r.id]);
    for (const w of writes) expect(byName.get(w.name), w.name).toEqual([ids.get(w.name)!]);
    expect(stored.length).toBe(writes.length);
    expect(exits).toEqual([]);
    expect(server.output()).not.toMatch(/uncaught|unhandled/i);
  }, 240_000);
});

// test:solo — asserts release times and idle cuts in seconds against the wall clock: other test files on the same cores would be measured, not the service.
/**
 * Report downloads whose clients stop reading (issue 10, point 3), through a real Bun server and
 * raw TCP clients: they must not hold database connections beyond the idle timeout, other
 * requests keep being served meanwhile, and excess downloads answer 503 before any body byte.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { listen } from "../../scripts/bun-server.ts";
import { connect, type Socket } from "node:net";
import { PassThrough } from "node:stream";
import { describeEachDb, createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { openPostgres } from "../../lib/db/postgres.ts";
import type { DatabaseHandle } from "../../lib/db/index.ts";
import { loadConfig, type Config } from "../../lib/config.ts";
import { createLogger } from "../../lib/log.ts";
import { createServices, type Services } from "../../lib/services.ts";
import { createApp } from "../../lib/http/app.ts";
import { createOrganization } from "../../lib/orgs/service.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { importFocus } from "../../lib/billing/focus.ts";
import { writeFocusCsv } from "../../lib/billing/generator.ts";
import { findReport } from "../../lib/reports/catalog.ts";
import { rebuildAllBillingSummaries } from "../../lib/billing/summaries.ts";
import { csvChunk, liveReportSql } from "../../lib/reports/service.ts";
import { downloadSlots } from "../../lib/reports/downloads.ts";

const NOW = new Date("2026-05-20T12:00:00Z");
const REPORT = "cloud_bill_by_resource";
const QUERY = "year=2026&month=5";
/** Pool of the app's handle on PostgreSQL: as many non-reading clients as connections. */
const POOL = 4;
/** Report rows; with ~300-character resource ids the CSV is ≈ 11 MB, far beyond socket buffers (≈ 4–6 MB here). */
const ROWS = 30_000;

interface Served {
  s: Services;
  url: string;
  logs: Record<string, any>[];
  stop(): void;
}

describeEachDb("slow report readers", (driver) => {
  let db: TestDatabase;
  /** The app's handle: a pool of POOL connections on PostgreSQL. */
  let handle: DatabaseHandle;
  let org: { id: string; key: string };
  let other: { id: string; key: string };
  let expectedCsv: string;
  /** How long the report's query alone takes on this machine (the single PGlite connection is busy that long). */
  let oneReportQueryMs = 0;
  const servers: Served[] = [];

  /** The real Bun adapter (scripts/bun-server.ts, as `npm start` serves the app) with its own config and captured logs. */
  function serve(config: Partial<Config>): Served {
    const logs: Record<string, any>[] = [];
    const s = createServices(
      handle,
      loadConfig({ PUBLIC_URL: "http://localhost" }, { jobsEnabled: false, seedDemo: false, apiRateLimitPerMinute: 0, ...config }),
      createLogger("info", (line) => logs.push(JSON.parse(line))),
      { now: () => NOW },
    );
    const app = createApp(s);
    const server = listen(s, app, { port: 0, hostname: "127.0.0.1" });
    const served = { s, url: `http://127.0.0.1:${server.port}`, logs, stop: () => server.stop(true) };
    servers.push(served);
    return served;
  }

  /**
   * PostgreSQL: sessions of the test database inside a transaction (any, or only report cursors);
   * PGlite: open report cursors.
   */
  async function heldByDownloads(only: "any" | "reports" = "any"): Promise<number> {
    if (driver === "postgres") {
      const r = await db.handle.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid()
            AND (xact_start IS NOT NULL OR state IN ('idle in transaction', 'idle in transaction (aborted)'))
            ${only === "reports" ? `AND query LIKE 'SELECT r.month, r.provider, %'` : ""}`,
      );
      return r[0]!.n;
    }
    const r = await handle.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_cursors WHERE name LIKE 'commitops_cursor_%'`);
    return r[0]!.n;
  }

  async function waitFor(what: string, cond: () => Promise<boolean>, timeoutMs: number): Promise<number> {
    const t0 = performance.now();
    while (!(await cond())) {
      if (performance.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await Bun.sleep(50);
    }
    return performance.now() - t0;
  }

  beforeAll(async () => {
    db = await createTestDatabase(driver);
    handle = driver === "postgres" ? await openPostgres(db.url!, { max: POOL }) : db.handle;
    const o = await createOrganization(handle.db, { name: "Slow readers" });
    org = { id: o.id, key: (await createApiKey(handle.db, { orgId: o.id })).key };
    const o2 = await createOrganization(handle.db, { name: "Someone else" });
    other = { id: o2.id, key: (await createApiKey(handle.db, { orgId: o2.id })).key };
    // A small generated month imported for real (accounts, periods), then its resources multiplied
    // in SQL with long resource ids (Azure-style ids run to hundreds of characters).
    const csv = new PassThrough();
    const written = writeFocusCsv({ now: NOW, months: 1, grain: "monthly", providers: ["aws"], accountsPerProvider: 2, resourcesPerAccount: 10, commitments: false }, csv).then(() => csv.end());
    await importFocus(handle.db, org.id, csv);
    await written;
    const cols = (
      await handle.query<{ c: string }>(
        `SELECT column_name AS c FROM information_schema.columns WHERE table_name = 'billing_line_items' AND column_name NOT IN ('id', 'resource_id') ORDER BY ordinal_position`,
      )
    ).map((r) => r.c);
    const [{ n }] = await handle.query<{ n: number }>(`SELECT count(*)::int AS n FROM billing_line_items WHERE org_id = $1 AND resource_id IS NOT NULL`, [org.id]);
    await handle.query(
      `INSERT INTO billing_line_items (${cols.join(", ")}, resource_id)
       SELECT ${cols.map((c) => `b.${c}`).join(", ")},
              '/subscriptions/' || md5(b.resource_id) || '/resourceGroups/rg-' || (g % 97) || '/providers/Microsoft.Compute/virtualMachines/' || b.resource_id || '-' || g || '/' || md5(g::text) || md5(b.resource_id || g) || md5(g::text || b.resource_id) || md5((g * 7)::text)
       FROM billing_line_items b CROSS JOIN generate_series(1, $2::int) g
       WHERE b.org_id = $1 AND b.resource_id IS NOT NULL`,
      [org.id, Math.ceil(ROWS / n)],
    );
    // Rows written other than by the import: their summaries are rebuilt (lib/billing/summaries.ts).
    await handle.db.transaction((tx) => rebuildAllBillingSummaries(tx, org.id));
    // The expected CSV, built in memory from one plain query (no cursor, no stream).
    const def = findReport(REPORT)!;
    const { text, params } = liveReportSql(def, org.id, "2026-05-01", "aws", {});
    const q0 = performance.now();
    const rows = await handle.query(text, params);
    oneReportQueryMs = performance.now() - q0;
    expectedCsv = csvChunk(def, rows, true);
    expect(expectedCsv.length).toBeGreaterThan(10_000_000);
  }, 60_000);

  afterAll(async () => {
    for (const sv of servers) sv.stop();
    if (handle && handle !== db?.handle) await handle.close();
    await db?.drop();
  });

  const path = () => `/beta/v1/org/${org.id}/allocation-reports/${REPORT}?${QUERY}`;

  /** A raw HTTP/1.1 client that sends the GET and then reads nothing. */
  function stalledClient(base: string, target: string): { sock: Socket; drain(timeoutMs: number): Promise<{ head: string; bytes: number; ending: string; tail: string }> } {
    const u = new URL(base);
    const sock = connect(Number(u.port), u.hostname);
    let ending: string | null = null;
    const ended = new Promise<string>((resolve) => {
      sock.on("error", (e: any) => resolve((ending ??= `error ${e.code ?? e.message}`)));
      sock.on("end", () => resolve((ending ??= "end")));
      sock.on("close", () => resolve((ending ??= "close")));
    });
    sock.on("connect", () => {
      sock.write(`GET ${target} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${org.key}\r\n\r\n`);
      sock.pause();
    });
    return {
      sock,
      async drain(timeoutMs) {
        let head = "";
        let bytes = 0;
        let tail = Buffer.alloc(0);
        sock.on("data", (d: Buffer) => {
          if (head.length < 200) head += d.toString("latin1", 0, Math.min(d.length, 200));
          bytes += d.length;
          tail = Buffer.concat([tail, d]).subarray(-16);
        });
        sock.resume();
        const how = await Promise.race([ended, Bun.sleep(timeoutMs).then(() => "still open")]);
        sock.destroy();
        return { head, bytes, ending: how, tail: tail.toString("latin1") };
      },
    };
  }

  test("clients that stop reading are cut after the idle timeout; /readyz and other orgs are served meanwhile", async () => {
    const sv = serve({ downloadIdleTimeoutSeconds: 1, downloadQueueTimeoutSeconds: 20 });
    // Default slots: pool − 2 on PostgreSQL, 1 on PGlite (one connection).
    const slots = driver === "postgres" ? POOL - 2 : 1;
    // As many stalled downloads as the pool has connections (PGlite: two), one of them a JSON fetch.
    const stalled = driver === "postgres" ? POOL : 2;
    const t0 = performance.now();
    const clients = Array.from({ length: stalled }, (_, i) => stalledClient(sv.url, i === 0 ? path() : `${path()}&format=csv`));
    const latencies: number[] = [];
    const probe = async (url: string, key?: string) => {
      const t = performance.now();
      const r = await fetch(url, { headers: key ? { authorization: `Bearer ${key}` } : {}, signal: AbortSignal.timeout(15_000) });
      await r.arrayBuffer();
      latencies.push(performance.now() - t);
      return r.status;
    };
    // Until every download has been cut and its database session released.
    let released = false;
    let releasedAfter = 0;
    let maxHeld = 0;
    while (!released) {
      expect(await probe(`${sv.url}/readyz`)).toBe(200);
      expect(await probe(`${sv.url}/beta/v1/org/${other.id}/allocation-reports`, other.key)).toBe(200);
      maxHeld = Math.max(maxHeld, await heldByDownloads("reports"));
      expect(downloadSlots(handle).inUse).toBeLessThanOrEqual(slots);
      const held = await heldByDownloads();
      const aborted = sv.logs.filter((l) => l.msg === "report download aborted: the client stopped reading").length;
      if (aborted === stalled && held === 0) {
        released = true;
        releasedAfter = performance.now() - t0;
      } else if (performance.now() - t0 > 20_000) throw new Error(`downloads still held after 20 s (aborted ${aborted}, held ${held})`);
      else await Bun.sleep(100);
    }
    // Never more downloads on the database than the slots.
    expect(maxHeld).toBeGreaterThan(0);
    expect(maxHeld).toBeLessThanOrEqual(slots);
    expect(downloadSlots(handle).inUse).toBe(0);
    const worst = Math.max(...latencies);
    console.log(`[${driver}] ${stalled} stalled downloads: all cut and released after ${Math.round(releasedAfter)} ms; ${latencies.length} probes, worst ${Math.round(worst)} ms (the report's query alone: ${Math.round(oneReportQueryMs)} ms)`);
    // PostgreSQL serves probes on other connections; PGlite has one connection, so a probe may wait
    // for the statement in flight: at worst the materialization of one report's cursor.
    expect(worst).toBeLessThan(driver === "postgres" ? 3000 : Math.max(3000, 2 * oneReportQueryMs));

    // Each client sees a failed transfer: a 200 head, then the connection ends without the final chunk.
    for (const c of clients) {
      const r = await c.drain(5000);
      expect(r.head).toStartWith("HTTP/1.1 200");
      expect(r.ending).not.toBe("still open");
      expect(r.tail.endsWith("\r\n0\r\n\r\n")).toBe(false);
    }
    // Logged once per download, as a warning with the report and the org, never the rows.
    const warns = sv.logs.filter((l) => l.level === "warn");
    expect(warns).toHaveLength(stalled);
    for (const w of warns) {
      expect(w).toMatchObject({ msg: "report download aborted: the client stopped reading", report_type: REPORT, org_id: org.id, idle_timeout_seconds: 1 });
      expect(JSON.stringify(w)).not.toContain("/subscriptions/");
    }
    expect(warns.filter((w) => w.format === "json")).toHaveLength(1);
  }, 30_000);

  test("every slot busy → 503 + Retry-After before any body byte; a client that disconnects frees its slot at once", async () => {
    const sv = serve({ downloadConcurrency: 1, downloadIdleTimeoutSeconds: 60, downloadQueueTimeoutSeconds: 0.5 });
    const a = stalledClient(sv.url, `${path()}&format=csv`);
    await waitFor("the stalled download to hold the database", async () => (await heldByDownloads()) > 0, 10_000);

    const t = performance.now();
    const busy = await fetch(`${sv.url}${path()}&format=csv`, { headers: { authorization: `Bearer ${org.key}` }, signal: AbortSignal.timeout(5000) });
    const waited = performance.now() - t;
    expect(busy.status).toBe(503);
    expect(busy.headers.get("retry-after")).toBe("5");
    expect(busy.headers.get("content-type")).toContain("application/json");
    const body = await busy.json();
    expect(body).toMatchObject({ code: "service_unavailable", type: "service_unavailable", status: "SERVICE_UNAVAILABLE" });
    expect(waited).toBeGreaterThanOrEqual(400);
    expect(waited).toBeLessThan(3000);

    // The client goes away: its cursor and connection are released at once (not after 60 s).
    a.sock.destroy();
    const releasedIn = await waitFor("the cancelled download to release the database", async () => (await heldByDownloads()) === 0 && downloadSlots(handle).inUse === 0, 5000);
    console.log(`[${driver}] 503 after ${Math.round(waited)} ms in the queue; cancelled download released in ${Math.round(releasedIn)} ms`);
    expect(releasedIn).toBeLessThan(2000);
    expect(sv.logs.filter((l) => l.msg === "report download cancelled by the client")).toHaveLength(1);

    const again = await fetch(`${sv.url}${path()}&format=csv`, { headers: { authorization: `Bearer ${org.key}` } });
    expect(again.status).toBe(200);
    expect((await again.text()).length).toBe(expectedCsv.length);
  }, 30_000);

  test("a slow but steady reader is never cut: the idle timeout counts from its last read", async () => {
    const sv = serve({ downloadIdleTimeoutSeconds: 1 });
    const u = new URL(sv.url);
    const sock = connect(Number(u.port), u.hostname);
    sock.on("connect", () => sock.write(`GET ${path()}&format=csv HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${org.key}\r\nConnection: close\r\n\r\n`));
    // Reads about 4 MB/s, in bursts of 100 ms: far slower than the server, never idle for 1 s.
    const parts: Buffer[] = [];
    let windowStart = performance.now();
    let windowBytes = 0;
    sock.on("data", (d: Buffer) => {
      parts.push(d);
      windowBytes += d.length;
      if (windowBytes >= 400_000) {
        sock.pause();
        setTimeout(() => ((windowStart = performance.now()), (windowBytes = 0), sock.resume()), Math.max(0, 100 - (performance.now() - windowStart)));
      }
    });
    const t = performance.now();
    const how = await new Promise<string>((resolve) => {
      sock.on("error", (e: any) => resolve(`error ${e.code}`));
      sock.on("close", () => resolve("close"));
    });
    const raw = Buffer.concat(parts);
    const headEnd = raw.indexOf("\r\n\r\n");
    expect(raw.subarray(0, headEnd).toString("latin1")).toStartWith("HTTP/1.1 200");
    expect(how).toBe("close");
    // De-chunk: the full CSV, terminated by the last chunk.
    let at = headEnd + 4;
    const body: Buffer[] = [];
    for (;;) {
      const lineEnd = raw.indexOf("\r\n", at);
      const size = parseInt(raw.subarray(at, lineEnd).toString("latin1"), 16);
      if (!size) break;
      body.push(raw.subarray(lineEnd + 2, lineEnd + 2 + size));
      at = lineEnd + 2 + size + 2;
    }
    const got = Buffer.concat(body).toString("utf8");
    console.log(`[${driver}] throttled reader: ${(raw.length / 1048576).toFixed(1)} MB in ${Math.round(performance.now() - t)} ms`);
    expect(got.length).toBe(expectedCsv.length);
    expect(got === expectedCsv).toBe(true);
    expect(sv.logs.filter((l) => l.level === "warn" || l.level === "error")).toHaveLength(0);
  }, 30_000);

  test("a reading client receives the whole CSV, byte-identical, and releases its connection", async () => {
    const sv = serve({ downloadIdleTimeoutSeconds: 1 });
    const t = performance.now();
    const r = await fetch(`${sv.url}${path()}&format=csv`, { headers: { authorization: `Bearer ${org.key}` } });
    expect(r.status).toBe(200);
    const got = await r.text();
    console.log(`[${driver}] full CSV ${(got.length / 1048576).toFixed(1)} MB in ${Math.round(performance.now() - t)} ms`);
    expect(got.length).toBe(expectedCsv.length);
    expect(got === expectedCsv).toBe(true);
    // JSON too: the same rows, a complete document.
    const j = await fetch(`${sv.url}${path()}`, { headers: { authorization: `Bearer ${org.key}` } });
    const doc = (await j.json()) as { rows: unknown[] };
    expect(doc.rows).toHaveLength(expectedCsv.split("\r\n").length - 2);
    expect(await heldByDownloads()).toBe(0);
    expect(downloadSlots(handle).inUse).toBe(0);
    expect(sv.logs.filter((l) => l.level === "warn" || l.level === "error")).toHaveLength(0);
  }, 30_000);
});

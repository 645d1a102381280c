// Graceful shutdown (docs/OPERATIONS.md, "Stopping and restarting"), through real server
// processes: SIGTERM lets a download in flight finish, bounds what never finishes by
// SHUTDOWN_GRACE_SECONDS, and gives a sync's claim back (its import rolled back) so another
// replica takes the connection at once.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { gzipSync } from "node:zlib";
import { MAIN, outputMatching, startServer } from "../helpers/process.ts";
import { useTestApp } from "../helpers/app.ts";
import { startS3, startStallingProxy, writeAwsExport, type S3Server, type StallingProxy } from "../helpers/s3.ts";
import { focusMonths, restated, toCsv } from "../connections/fixtures.ts";
import { createServices } from "../../lib/services.ts";
import { createLogger } from "../../lib/log.ts";
import { runDueSyncs } from "../../lib/connections/sync.ts";

function commitops(args: string[], env: Record<string, string>) {
  const r = spawnSync(process.execPath, [MAIN, ...args], { env: { ...process.env, DATABASE_URL: "", LOG_LEVEL: "warn", ...env }, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`commitops ${args.join(" ")} failed: ${r.stderr}`);
  return r.stdout;
}

/** Milliseconds from now until `p` exits, and its exit code. */
async function timedExit(p: { exited: Promise<number | null> }) {
  const t0 = performance.now();
  const code = await p.exited;
  return { code, ms: performance.now() - t0 };
}

describe("downloads in flight at SIGTERM (embedded database)", () => {
  const dir = mkdtempSync(join(tmpdir(), "commitops-shutdown-"));
  const env = { DATA_DIR: join(dir, "data"), JOBS_ENABLED: "false", LOG_LEVEL: "info" };
  let org = { org_id: "", api_key: "" };
  const now = new Date();
  const csvPath = () => `/beta/v1/org/${org.org_id}/allocation-reports/cloud_bill_by_resource?year=${now.getUTCFullYear()}&month=${now.getUTCMonth() + 1}&format=csv`;

  /** A client that sends the CSV download's request and reads only its first bytes, then nothing (a stalled reader). */
  async function stalledDownload(port: number): Promise<Socket> {
    const socket = connect(port, "127.0.0.1");
    socket.write(`GET ${csvPath()} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${org.api_key}\r\n\r\n`);
    const head = await new Promise<string>((resolve, reject) => {
      socket.once("data", (d: Buffer) => resolve(d.toString("latin1")));
      socket.once("error", reject);
    });
    expect(head).toStartWith("HTTP/1.1 200");
    socket.pause(); // from here nothing is read: the server's writes fill the socket and wait
    socket.on("error", () => {});
    return socket;
  }

  /** A server with this grace, a download in flight whose client has stopped reading, and `fn`; both cleaned up after. */
  async function withStalledDownload(grace: string, fn: (p: Awaited<ReturnType<typeof startServer>>) => Promise<void>) {
    const p = await startServer({ ...env, SHUTDOWN_GRACE_SECONDS: grace });
    let socket: Socket | undefined;
    try {
      socket = await stalledDownload(p.port);
      await fn(p);
    } finally {
      socket?.destroy();
      await p.stop("SIGKILL");
    }
  }

  beforeAll(() => {
    org = JSON.parse(commitops(["org", "create", "--name", "Big", "--json"], env));
    commitops(["generate", "focus", "--out", join(dir, "bill.csv"), "--months", "1", "--accounts", "500", "--resources", "200", "--grain", "monthly", "--providers", "aws"], env);
    commitops(["import", "focus", "--org", org.org_id, join(dir, "bill.csv")], env);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("SIGTERM lets an in-flight request finish: a CSV download started before it arrives completes", async () => {
    const p = await startServer(env);
    try {
      const res = await fetch(`${p.url}${csvPath()}`, { headers: { authorization: `Bearer ${org.api_key}` } });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      const first = await reader.read(); // the download is under way…
      p.child.kill("SIGTERM"); // …when the server is asked to stop, and the client reads slowly
      await outputMatching(p, /"msg":"shutting down"/);
      let text = new TextDecoder().decode(first.value);
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
      const lines = text.trimEnd().split("\r\n");
      expect(lines.length).toBeGreaterThan(100_000); // every resource row arrived, not a cut stream
      expect(lines.at(-1)!.split(",").length).toBe(lines[0]!.split(",").length);
      expect(await p.exited).toBe(0);
      expect(p.output()).not.toContain("shutdown grace over");
      // and it no longer accepts connections
      await expect(fetch(`${p.url}/healthz`)).rejects.toThrow();
    } finally {
      await p.stop();
    }
  }, 240_000);

  test("a download whose client stops reading keeps the process no longer than SHUTDOWN_GRACE_SECONDS; exit 0", async () => {
    await withStalledDownload("2", async (p) => {
      p.child.kill("SIGTERM");
      const { code, ms } = await timedExit(p);
      expect(code).toBe(0);
      // It waited for the download (the grace), then cut it: not the 30 s idle timeout of downloads.
      expect(ms).toBeGreaterThan(1800);
      expect(ms).toBeLessThan(2000 + 5000); // the grace, then at most ≈ 5 s to roll back, give back and close
      expect(p.output()).toMatch(/"msg":"shutdown grace over: cutting what still runs".*"requests_in_flight":1/);
      expect(p.output()).toContain('"msg":"stopped"');
    });
  }, 120_000);

  test("a second signal exits at once: 130 after SIGINT", async () => {
    await withStalledDownload("60", async (p) => {
      p.child.kill("SIGTERM");
      await outputMatching(p, /"msg":"shutting down"/);
      p.child.kill("SIGINT");
      const { code, ms } = await timedExit(p);
      expect(code).toBe(130);
      expect(ms).toBeLessThan(5000);
    });
  }, 120_000);
});

// Two processes on one database: PostgreSQL (PGlite is one process's database).
describe.skipIf(!process.env.TEST_DATABASE_URL)("a sync in flight at SIGTERM [postgres]", () => {
  const SECRET_KEY = randomBytes(32).toString("base64");
  const ACCESS_KEY_ID = "AKIACOMMITOPSSTOP001";
  const SECRET_ACCESS_KEY = `stop${randomBytes(12).toString("hex")}`;
  createRequire(import.meta.url)("s3rver/lib/models/account.js").DUMMY_ACCOUNT.createKeyPair(ACCESS_KEY_ID, SECRET_ACCESS_KEY);
  const NOV = focusMonths({ now: new Date("2026-11-10T00:00:00Z"), months: 1, providers: ["aws"], accountsPerProvider: 2, resourcesPerAccount: 2, grain: "daily" }).get("2026-11")!;
  const big = restated(NOV, 2);
  const rows = Array.from({ length: 300 }, () => big.rows).flat();
  const bucket = "stop-billing";

  const t = useTestApp("postgres", { config: { secretKey: SECRET_KEY, connectionsAllowPrivateEndpoints: true } });
  let s3: S3Server;
  let proxy: StallingProxy;
  beforeAll(async () => {
    s3 = await startS3();
    await s3.createBucket(bucket);
    await writeAwsExport(s3.client, { bucket, prefix: "", exportName: "focus", month: "2026-11", files: [{ name: "focus-00001.csv.gz", bytes: gzipSync(toCsv(big.header, rows)) }] });
    proxy = await startStallingProxy(s3.endpoint);
  });
  afterAll(async () => {
    await proxy?.stop();
    await s3?.stop();
  });

  const q = <T>(sql: string, params: unknown[] = []) => t.db.handle.query<T>(sql, params);
  const imported = async () => (await q<{ n: string; imports: string }>(`SELECT (SELECT count(*) FROM billing_line_items WHERE org_id = $1) AS n, (SELECT count(*) FROM billing_imports WHERE org_id = $1) AS imports`, [t.org.id]))[0]!;

  test("SIGTERM mid-import: the import rolls back at the grace's end, exit 0, the claim is given back and another replica syncs at once", async () => {
    const p = await startServer({
      DATABASE_URL: t.db.url!,
      COMMITOPS_SECRET_KEY: SECRET_KEY,
      CONNECTIONS_ALLOW_PRIVATE_ENDPOINTS: "true",
      JOBS_ENABLED: "true",
      CATALOG_REFRESH_ENABLED: "false",
      SHUTDOWN_GRACE_SECONDS: "3",
      LOG_LEVEL: "info",
    });
    try {
      const api = async (method: string, path: string, body?: unknown) => {
        const r = await fetch(`${p.url}/beta/v1/org/${t.org.id}${path}`, {
          method,
          headers: { authorization: `Bearer ${t.org.key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return { status: r.status, body: (await r.json()) as any };
      };
      const created = await api("POST", "/billing-connections", {
        name: "payer",
        kind: "aws_data_exports",
        config: { bucket, prefix: "", export_name: "focus", region: "us-east-1", access_key_id: ACCESS_KEY_ID, endpoint_url: proxy.endpoint },
        secrets: { secret_access_key: SECRET_ACCESS_KEY },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const connId: string = created.body.id;
      const sync = await api("POST", `/billing-connections/${connId}/sync`);
      expect(sync.status, JSON.stringify(sync.body)).toBe(202);

      // The sync is mid-import: half the file has arrived, its rows are being copied in an open transaction.
      await proxy.stalled;
      for (;;) {
        const copying = await q(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'COPY billing_line_items%'`);
        if (copying.length) break;
        expect(p.child.exitCode).toBeNull();
        await new Promise((r) => setTimeout(r, 50));
      }
      const [held] = await q<{ claimed_by: string | null }>(`SELECT claimed_by FROM billing_connections WHERE id = $1`, [connId]);
      expect(held!.claimed_by).toContain(`:${p.child.pid}:`);

      p.child.kill("SIGTERM");
      const { code, ms } = await timedExit(p);
      expect(code, p.output()).toBe(0);
      expect(ms).toBeGreaterThan(2800); // the import was given the grace to finish…
      expect(ms).toBeLessThan(3000 + 5000); // …and then abandoned, within ≈ 5 s more
      expect(p.output()).toMatch(/"msg":"shutting down".*"jobs_in_flight":[1-9]\d*,"job_schedules_stopped":[1-9]/); // the sync (at least), and no job will start
      expect(p.output()).toContain('"msg":"shutdown grace over: cutting what still runs"');
      expect(p.output()).toContain('"msg":"billing sync stopped by shutdown; connection released"');
      expect(p.output()).not.toContain('"level":"error"');

      // Nothing of the interrupted import was committed; the claim is free (not waiting for its lease) and the run says why it ended.
      expect(await imported()).toEqual({ n: "0", imports: "0" });
      const [after] = await q<{ claimed_by: string | null; claimed_until: string | null; consecutive_failures: number }>(`SELECT claimed_by, claimed_until, consecutive_failures FROM billing_connections WHERE id = $1`, [connId]);
      expect(after).toEqual({ claimed_by: null, claimed_until: null, consecutive_failures: 0 });
      const runs = await q<{ status: string; error_cause: string | null }>(`SELECT status, error_cause FROM billing_connection_runs WHERE connection_id = $1 ORDER BY created_at`, [connId]);
      expect(runs).toEqual([{ status: "failed", error_cause: "interrupted" }]);
      expect(p.output()).toContain('"period_rolled_back":true');

      // Another replica, at the same moment (no lease to wait out), takes the connection and imports the whole period.
      proxy.release();
      const replica = createServices(t.db.handle, t.s.config, createLogger("silent"));
      const [run] = await runDueSyncs(replica, { workerId: "replica-b" });
      expect(run).toMatchObject({ status: "succeeded", periods_imported: 1, rows_imported: rows.length });
      expect(await imported()).toEqual({ n: String(rows.length), imports: "1" });
    } finally {
      await p.stop("SIGKILL");
    }
  }, 180_000);
});

/**
 * Read replicas (DATABASE_READ_URL, lib/db/replica.ts): report reads may go to a streaming
 * replica, but only when it has caught up with the primary on the month's billing-period state,
 * so a report never shows a period older than the primary's frozen snapshot; writes stay on the
 * primary; an unreachable replica means the primary, not an error.
 *
 * The first suite needs no server (rules, configuration, fake handles). The second runs against
 * a real hot standby made with pg_basebackup (tests/helpers/replica.ts) when TEST_DATABASE_URL
 * is set.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Readable } from "node:stream";
import { openDb, readConsistent, ReadReplicaConfigError, pgErrorCode, type DatabaseHandle } from "../../lib/db/index.ts";
import { readOnlyUrl } from "../../lib/db/replica.ts";
import { loadConfig } from "../../lib/config.ts";
import { createLogger, type Logger } from "../../lib/log.ts";
import { createServices, type Services } from "../../lib/services.ts";
import { createOrganization } from "../../lib/orgs/service.ts";
import { importFocus } from "../../lib/billing/focus.ts";
import { closeBillingPeriod, freezeClosedPeriods, listBillingPeriods } from "../../lib/reports/periods.ts";
import { reportRows } from "../../lib/reports/service.ts";
import { focusCsv } from "../reports/helpers.ts";
import { startReplicaCluster, type ReplicaCluster } from "../helpers/replica.ts";

/** The freshness token of a report month (what lib/reports/service.ts passes to readConsistent). */
const PERIOD_TOKEN_SQL = `SELECT provider, status, closed_at, frozen_at FROM billing_periods
  WHERE org_id = $1::uuid AND month = $2::date AND ($3::text IS NULL OR provider = $3::text) ORDER BY provider`;

function captureLog(): { log: Logger; lines: () => Record<string, any>[]; raw: () => string } {
  const out: string[] = [];
  return { log: createLogger("debug", (l) => out.push(l)), lines: () => out.map((l) => JSON.parse(l)), raw: () => out.join("\n") };
}

/** A handle that answers `query` with `answer()` (or throws it) and counts calls. */
function fakeHandle(name: string, answer: () => unknown[] | Promise<unknown[]>): DatabaseHandle & { calls: number } {
  const h = {
    calls: 0,
    db: null as any,
    driver: "postgres" as const,
    poolSize: 1,
    description: name,
    async query(): Promise<any[]> {
      h.calls++;
      return answer() as any;
    },
    async stream() {},
    async close() {},
  };
  return h;
}

describe("read replica: configuration and the consistency rule", () => {
  test("DATABASE_READ_URL is read into the config", () => {
    expect(loadConfig({ DATABASE_READ_URL: "postgres://r@replica:5432/db" }).databaseReadUrl).toBe("postgres://r@replica:5432/db");
    expect(loadConfig({ DATABASE_READ_URL: "" }).databaseReadUrl).toBeUndefined();
  });

  test("refused at start with the embedded database, or when it is not a postgres:// URL", async () => {
    const pglite = openDb({ readUrl: "postgres://r@127.0.0.1:1/db" });
    await expect(pglite).rejects.toBeInstanceOf(ReadReplicaConfigError);
    await expect(pglite).rejects.toThrow(/DATABASE_READ_URL is set but DATABASE_URL is not a PostgreSQL server/);
    await expect(openDb({ url: "postgres://p@127.0.0.1:1/db", readUrl: "mysql://r@replica/db" })).rejects.toThrow(/DATABASE_READ_URL must be a postgres:\/\//);
  });

  test("sessions of the replica are read-only whatever the URL says", () => {
    expect(readOnlyUrl("postgres://u:p@h:5432/db")).toBe("postgres://u:p@h:5432/db?default_transaction_read_only=on");
    expect(readOnlyUrl("postgres://h/db?sslmode=require&default_transaction_read_only=off")).toBe("postgres://h/db?sslmode=require&default_transaction_read_only=off&default_transaction_read_only=on");
  });

  test("without a replica the services' report reader is the primary, and readConsistent asks nothing", async () => {
    const p = fakeHandle("p", () => [{ a: 1 }]);
    const s = createServices(p, loadConfig({}), createLogger("silent"));
    expect(s.reportReader).toBe(p);
    expect(await readConsistent(s.handle, s.reportReader, "SELECT 1")).toBe(p);
    expect(p.calls).toBe(0);
    // With one, it is the replica (createServices callers that pass none keep working).
    const r = fakeHandle("r", () => [{ a: 1 }]);
    expect(createServices({ ...p, replica: r }, loadConfig({}), createLogger("silent")).reportReader).toBe(r);
    expect(createServices(p, loadConfig({}), createLogger("silent"), { reportReader: r }).reportReader).toBe(r);
  });

  test("equal tokens → replica; different → primary; catching up within the wait → replica", async () => {
    const when = new Date("2026-05-01T00:00:00Z");
    const p = fakeHandle("p", () => [{ provider: "aws", frozen_at: when, n: 1n }]);
    const same = fakeHandle("r", () => [{ provider: "aws", frozen_at: new Date(when), n: 1n }]);
    expect(await readConsistent(p, same, "t", [], { log: createLogger("silent") })).toBe(same);
    const behind = fakeHandle("r2", () => [{ provider: "aws", frozen_at: null, n: 1n }]);
    expect(await readConsistent(p, behind, "t", [], { catchUpMs: 0, log: createLogger("silent") })).toBe(p);
    expect(behind.calls).toBe(1);
    let answers = 0;
    const catching = fakeHandle("r3", () => (++answers < 3 ? [] : [{ provider: "aws", frozen_at: when, n: 1n }]));
    expect(await readConsistent(p, catching, "t", [], { catchUpMs: 500, pollMs: 5, log: createLogger("silent") })).toBe(catching);
    expect(catching.calls).toBe(3);
    const never = fakeHandle("r4", () => []);
    const t0 = performance.now();
    expect(await readConsistent(p, never, "t", [], { catchUpMs: 60, pollMs: 10, log: createLogger("silent") })).toBe(p);
    expect(performance.now() - t0).toBeLessThan(1000);
  });

  test("a failing or silent replica → primary, one warning per outage, skipped for retryAfterMs, then back", async () => {
    const cap = captureLog();
    const p = fakeHandle("p", () => [{ x: 1 }]);
    let mode: "down" | "hang" | "up" = "down";
    const r = fakeHandle("postgres://u:***@replica/db", () => {
      if (mode === "down") throw Object.assign(new Error("connect ECONNREFUSED 10.0.0.9:5432"), { code: "ECONNREFUSED" });
      if (mode === "hang") return new Promise<unknown[]>(() => {});
      return [{ x: 1 }];
    });
    const opts = { log: cap.log, retryAfterMs: 0, replicaTimeoutMs: 50 };
    expect(await readConsistent(p, r, "t", [], opts)).toBe(p);
    expect(await readConsistent(p, r, "t", [], opts)).toBe(p);
    mode = "hang";
    expect(await readConsistent(p, r, "t", [], opts)).toBe(p); // after replicaTimeoutMs
    const warns = cap.lines().filter((l) => l.level === "warn");
    expect(warns).toHaveLength(1);
    expect(warns[0]).toMatchObject({ msg: "read replica unavailable: reading from the primary", code: "ECONNREFUSED", replica: "postgres://u:***@replica/db" });
    // While skipped (retryAfterMs), the replica is not asked at all.
    mode = "down";
    const before = r.calls;
    expect(await readConsistent(p, r, "t", [], { ...opts, retryAfterMs: 60_000 })).toBe(p);
    expect(await readConsistent(p, r, "t", [], { ...opts, retryAfterMs: 60_000 })).toBe(p);
    expect(r.calls).toBe(before + 1);
    // A primary failure is the caller's (503 as usual), not hidden.
    const pDown = fakeHandle("p", () => {
      throw new Error("primary down");
    });
    await expect(readConsistent(pDown, fakeHandle("r5", () => []), "t")).rejects.toThrow("primary down");
  });
});

// ---------------------------------------------------------------------------------------------
// A real hot standby.

const base = process.env.TEST_DATABASE_URL;
const started = base ? await startReplicaCluster(base) : null;
if (started && "skip" in started) console.warn(`[replica.test] PostgreSQL replica tests skipped: ${started.skip}`);
const cluster: ReplicaCluster | null = started && !("skip" in started) ? started : null;

const NOW = new Date("2026-06-10T12:00:00Z");
const MONTH = "2026-05-01";
const REPLICA_PASSWORD = "s3cret-replica-pw";

const usage = (account: string, cost: string) => ({
  SubAccountId: account,
  SubAccountName: `Account ${account}`,
  BillingPeriodStart: "2026-05-01T00:00:00Z",
  BillingPeriodEnd: "2026-06-01T00:00:00Z",
  ChargePeriodStart: "2026-05-02T00:00:00Z",
  ChargePeriodEnd: "2026-05-02T01:00:00Z",
  BilledCost: cost,
  EffectiveCost: cost,
  ListCost: cost,
  ContractedCost: cost,
});

describe.skipIf(!cluster)(`read replica [postgres streaming replica]`, () => {
  const c = cluster!;
  const dbName = `commitops_replica_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
  const cap = captureLog();
  let handle: DatabaseHandle;
  let s: Services;
  let orgId: string;
  const isStandby = async (h: DatabaseHandle) => ((await h.query<{ r: boolean }>(`SELECT pg_is_in_recovery() AS r`))[0]!.r);
  const params = () => [orgId, MONTH, null];
  const snapshots = async (h: DatabaseHandle) => (await h.query<{ n: number }>(`SELECT count(*)::int AS n FROM report_snapshots WHERE org_id = $1::uuid AND month = $2::date`, [orgId, MONTH]))[0]!.n;
  const bill = (h: DatabaseHandle) => reportRows(h, orgId, "cloud_bill_by_account", { year: "2026", month: "5" }, NOW);

  beforeAll(async () => {
    // Created on the primary after the base backup: CREATE DATABASE and the migrations stream over.
    await c.createDatabase(dbName);
    handle = await openDb({ url: c.primaryUrl(dbName), readUrl: c.replicaUrl(dbName, { password: REPLICA_PASSWORD }), migrate: true, log: cap.log });
    s = createServices(handle, loadConfig({ PUBLIC_URL: "http://localhost" }, { jobsEnabled: false, seedDemo: false }), cap.log, { now: () => NOW });
    orgId = (await createOrganization(s.db, { name: "Replica org" })).id;
    const r = await importFocus(s.db, orgId, Readable.from([focusCsv([usage("a1", "10"), usage("a2", "32.5")])]));
    expect(r.rows_rejected).toBe(0);
    await c.waitForReplay();
  }, 60_000);

  afterAll(async () => {
    await c.resumeReplay().catch(() => {});
    await handle?.close().catch(() => {});
    if (c.primarySource === "shared") await c.dropDatabase(dbName).catch(() => {});
    await c.destroy();
  }, 60_000);

  test("the services' report reader is the replica, read-only; the primary is not", async () => {
    expect(s.reportReader).toBe(handle.replica!);
    expect(s.reportReader).not.toBe(s.handle);
    expect(s.reportReader.description).not.toContain(REPLICA_PASSWORD);
    expect(await isStandby(s.reportReader)).toBe(true);
    expect(await isStandby(s.handle)).toBe(false);
    expect((await s.reportReader.query<{ v: string }>(`SELECT current_setting('default_transaction_read_only') AS v`))[0]!.v).toBe("on");
  });

  test("(a) caught up: the read goes to the replica and shows the same month", async () => {
    const chosen = await readConsistent(s.handle, s.reportReader, PERIOD_TOKEN_SQL, params());
    expect(chosen).toBe(s.reportReader);
    expect(await isStandby(chosen)).toBe(true);
    // An on_period_close report of an open month: no rows and no status yet, on both.
    expect(await bill(chosen)).toMatchObject({ period_status: null, rows: [] });
  }, 30_000);

  test("(b) replay paused and the month frozen on the primary: the primary answers with the frozen month; resumed: the replica again", async () => {
    let fromPrimary: Awaited<ReturnType<typeof bill>>;
    await c.pauseReplay();
    try {
      await closeBillingPeriod(s.db, orgId, "aws", MONTH, NOW);
      const frozen = await freezeClosedPeriods(s.db, NOW, { orgId });
      expect(frozen.map((f) => f.month)).toEqual([MONTH]);
      const snapshotRows = frozen[0]!.snapshot_rows;
      expect(snapshotRows).toBeGreaterThan(0);

      const chosen = await readConsistent(s.handle, s.reportReader, PERIOD_TOKEN_SQL, params(), { catchUpMs: 30 });
      expect(chosen).toBe(s.handle);
      expect(await isStandby(chosen)).toBe(false);
      fromPrimary = await bill(chosen);
      expect(fromPrimary.period_status).toBe("finalized");
      expect((await listBillingPeriods(chosen.db, orgId, "aws"))[0]!.frozen_at).not.toBeNull();
      expect(await snapshots(chosen)).toBe(snapshotRows);
      // What the lagging replica would have shown: the month before it was frozen.
      expect(await bill(s.reportReader)).toMatchObject({ period_status: null, rows: [] });
      expect((await listBillingPeriods(s.reportReader.db, orgId, "aws"))[0]!.frozen_at).toBeNull();
      expect(await snapshots(s.reportReader)).toBe(0);
    } finally {
      await c.resumeReplay();
    }
    // Resumed: the replica catches up (readConsistent waits up to catchUpMs for it), then answers.
    const chosen = await readConsistent(s.handle, s.reportReader, PERIOD_TOKEN_SQL, params(), { catchUpMs: 10_000, pollMs: 20 });
    expect(chosen).toBe(s.reportReader);
    expect(await isStandby(chosen)).toBe(true);
    expect(await bill(chosen)).toEqual(fromPrimary!);
    expect(await snapshots(chosen)).toBeGreaterThan(0);
  }, 60_000);

  test("(b') a replica a few ms behind is waited for instead of skipped", async () => {
    await c.pauseReplay();
    await s.handle.query(`UPDATE billing_periods SET closed_at = closed_at + interval '1 second' WHERE org_id = $1::uuid AND month = $2::date`, [orgId, MONTH]);
    const resume = new Promise((r) => setTimeout(r, 150)).then(() => c.resumeReplay());
    const t0 = performance.now();
    const chosen = await readConsistent(s.handle, s.reportReader, PERIOD_TOKEN_SQL, params(), { catchUpMs: 5000, pollMs: 10 });
    await resume;
    expect(chosen).toBe(s.reportReader);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(100);
  }, 30_000);

  test("(c) writes never reach the replica: the services write to the primary, the reader refuses writes", async () => {
    // Writes through the services go to the primary while a replica is configured.
    const org = await createOrganization(s.db, { name: "Written with a replica configured" });
    expect((await s.handle.query(`SELECT 1 FROM organizations WHERE id = $1::uuid`, [org.id])).length).toBe(1);
    // The reader refuses writes (SQLSTATE 25006 read_only_sql_transaction), in and out of transactions.
    const refused = async (p: Promise<unknown>) => {
      const e = await p.then(() => null, (err) => err);
      expect(e).not.toBeNull();
      expect(pgErrorCode(e)).toBe("25006");
    };
    await refused(s.reportReader.query(`INSERT INTO organizations (name) VALUES ('nope')`));
    await refused(s.reportReader.db.transaction(async (tx) => createOrganization(tx, { name: "nope" })));
    // Even when DATABASE_READ_URL points at a writable server by mistake, its sessions refuse writes.
    const misconfigured = await openDb({ url: c.primaryUrl(dbName), readUrl: c.primaryUrl(dbName), migrate: false, log: createLogger("silent") });
    try {
      expect(await isStandby(misconfigured.replica!)).toBe(false);
      await refused(misconfigured.replica!.query(`INSERT INTO organizations (name) VALUES ('nope')`));
      expect((await misconfigured.query<{ n: number }>(`SELECT count(*)::int AS n FROM organizations WHERE name = 'nope'`))[0]!.n).toBe(0);
    } finally {
      await misconfigured.close();
    }
  }, 30_000);

  test("(d) replica down → the primary, no error to the caller, one warning without secrets; back → the replica", async () => {
    await c.stopReplica();
    const before = cap.lines().length;
    try {
      for (let i = 0; i < 3; i++) {
        const chosen = await readConsistent(s.handle, s.reportReader, PERIOD_TOKEN_SQL, params(), { retryAfterMs: 0 });
        expect(chosen).toBe(s.handle);
        expect((await bill(chosen)).period_status).toBe("finalized");
      }
      const warns = cap.lines().slice(before).filter((l) => l.msg === "read replica unavailable: reading from the primary");
      expect(warns).toHaveLength(1);
      expect(warns[0]!.database).toBe("read_replica");
      expect(cap.raw()).not.toContain(REPLICA_PASSWORD);
    } finally {
      await c.startReplica();
    }
    await c.waitForReplay();
    let chosen: DatabaseHandle = s.handle;
    for (let i = 0; i < 50 && chosen !== s.reportReader; i++) {
      chosen = await readConsistent(s.handle, s.reportReader, PERIOD_TOKEN_SQL, params(), { retryAfterMs: 0 });
      if (chosen !== s.reportReader) await new Promise((r) => setTimeout(r, 100));
    }
    expect(chosen).toBe(s.reportReader);
    expect(await isStandby(chosen)).toBe(true);
    expect(cap.lines().some((l) => l.msg === "read replica reachable again")).toBe(true);
  }, 60_000);

  test("(d') a replica that is down at start does not stop the start: reads go to the primary", async () => {
    const t0 = performance.now();
    const h = await openDb({ url: c.primaryUrl(dbName), readUrl: "postgres://postgres:pw@127.0.0.1:1/nothing", migrate: false, log: createLogger("silent") });
    try {
      expect(h.replica).toBeDefined();
      expect(await readConsistent(h, h.replica!, PERIOD_TOKEN_SQL, params())).toBe(h);
      expect(performance.now() - t0).toBeLessThan(5000);
    } finally {
      await h.close();
    }
  }, 30_000);
});

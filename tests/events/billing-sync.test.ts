/**
 * The billing events through the real flow: a connection synced from an AWS Data Exports bucket
 * on a loopback S3 server (s3rver) emits billing_sync.succeeded (and, for a bucket that does not
 * exist, billing_sync.failed: once per episode, again when it turns `error`), the hourly scan
 * emits billing_sync.stale once per episode, and the sync's import of a series with a spike
 * emits anomaly.detected once per series and day (the daily scan adds nothing). Each event's data
 * validates against its catalog schema and its links open the connection / the cost explorer.
 * Both drivers.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { Value } from "@sinclair/typebox/value";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { startS3, writeAwsExport, type S3Server } from "../helpers/s3.ts";
import { focusCsv } from "../reports/helpers.ts";
import { runDueSyncs } from "../../lib/connections/sync.ts";
import { EVENT_CATALOG, type EventType } from "../../lib/events/catalog.ts";
import { anomalyScanJob, billingStaleJob } from "../../jobs/event-scans.ts";
import { jobs } from "../../jobs/index.ts";

const ACCESS_KEY_ID = "AKIACOMMITOPSEVENTS1";
const SECRET_ACCESS_KEY = `s3secret${randomBytes(12).toString("hex")}`;
createRequire(import.meta.url)("s3rver/lib/models/account.js").DUMMY_ACCOUNT.createKeyPair(ACCESS_KEY_ID, SECRET_ACCESS_KEY);

const DAY = 86_400_000;
const START = Date.parse("2026-08-01T00:00:00Z");
/** The last complete day of the data (its rows reach midnight of 2026-11-10). */
const SPIKE_DAY = "2026-11-09";
const ymd = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** One account, one service: ~100 a day (a small weekly ripple), 1000 on SPIKE_DAY. */
function monthCsv(month: string): string {
  const rows = [];
  for (let at = START; ymd(at) <= SPIKE_DAY; at += DAY) {
    const day = ymd(at);
    if (!day.startsWith(month)) continue;
    const [y, m] = month.split("-").map(Number) as [number, number];
    const cost = day === SPIKE_DAY ? 1000 : 100 + (Math.floor(at / DAY) % 5);
    rows.push({
      BillingPeriodStart: new Date(Date.UTC(y, m - 1, 1)).toISOString(),
      BillingPeriodEnd: new Date(Date.UTC(y, m, 1)).toISOString(),
      ChargePeriodStart: new Date(at).toISOString(),
      ChargePeriodEnd: new Date(at + DAY).toISOString(),
      BilledCost: cost,
      EffectiveCost: cost,
      ListCost: cost,
      ContractedCost: cost,
    });
  }
  return focusCsv(rows);
}

describeEachDb("events: billing sync, staleness and anomalies", (driver) => {
  let clock = new Date("2026-11-10T12:00:00Z");
  const t = useTestApp(driver, { now: () => clock, config: { secretKey: randomBytes(32).toString("base64"), connectionsAllowPrivateEndpoints: true, billingStaleDays: 3 } });
  let s3: S3Server;
  const bucket = `events-billing-${driver}`;

  const config = (over: Record<string, unknown> = {}) => ({ bucket, prefix: "cur", export_name: "focus", region: "us-east-1", access_key_id: ACCESS_KEY_ID, endpoint_url: s3.endpoint, ...over });

  async function eventsOf(type: EventType, org = t.org) {
    const r = await t.request("GET", `/beta/v1/org/${org.id}/events?type=${type}&order=oldest_first&page_size=500`, { key: org.key });
    expect(r.status).toBe(200);
    const list = (await r.json()) as any[];
    for (const e of list) {
      const schema = EVENT_CATALOG[type].data;
      expect(Value.Check(schema, e.data), `${type}: ${JSON.stringify([...Value.Errors(schema, e.data)].slice(0, 3))}`).toBe(true);
      // Nothing beyond the documented fields.
      expect(Object.keys(e.data).sort()).toEqual(Object.keys((schema as any).properties).sort());
    }
    return list;
  }

  /** Follows an event's API link through the app (PUBLIC_URL is http://localhost). */
  async function followApi(e: any, key = t.org.key) {
    const u = new URL(e.links.api);
    expect(u.origin).toBe("http://localhost");
    const r = await t.request("GET", `${u.pathname}${u.search}`, { key });
    expect(r.status, e.links.api).toBe(200);
    return r.json();
  }

  beforeAll(async () => {
    s3 = await startS3();
    await s3.createBucket(bucket);
    for (const month of ["2026-08", "2026-09", "2026-10", "2026-11"]) {
      await writeAwsExport(s3.client, { bucket, prefix: "cur", exportName: "focus", month, files: [{ name: "focus-00001.csv.gz", bytes: gzipSync(monthCsv(month)) }] });
    }
  });
  afterAll(async () => {
    await s3?.stop();
  });

  let connId = "";

  test("the scan jobs are registered", () => {
    for (const name of ["commitment-expiry", "billing-stale", "anomaly-scan"]) expect(jobs.map((j) => j.name)).toContain(name);
  });

  test("a sync that imports: billing_sync.succeeded with the run's figures and links to the connection", async () => {
    const created = await t.orgRequest("POST", "/billing-connections", { body: { name: "AWS payer", kind: "aws_data_exports", config: config(), secrets: { secret_access_key: SECRET_ACCESS_KEY } } });
    expect(created.status).toBe(201);
    connId = (await created.json()).id;
    const [run] = await runDueSyncs(t.s, { connectionId: connId });
    expect(run).toMatchObject({ status: "succeeded", periods_imported: 4 });
    const [e, ...more] = await eventsOf("billing_sync.succeeded");
    expect(more).toEqual([]);
    expect(e.data).toMatchObject({
      connection: { id: connId, name: "AWS payer", kind: "aws_data_exports", provider: "aws" },
      run_id: run!.id,
      trigger: "schedule",
      periods_imported: 4,
      periods_unchanged: 0,
      rows_imported: run!.rows_imported,
      months_imported: ["2026-08", "2026-09", "2026-10", "2026-11"],
      recovered: false,
    });
    expect(e.timestamp).toBe(clock.toISOString());
    expect(e.links).toEqual({ api: `http://localhost/beta/v1/org/${t.org.id}/billing-connections/${connId}`, console: `http://localhost/app/connections/billing/${connId}` });
    expect((await followApi(e)).id).toBe(connId);
  }, 60_000);

  test("the import's spike: anomaly.detected once per series (account and service) for the day, linking the cost explorer on it", async () => {
    const list = await eventsOf("anomaly.detected");
    expect(list.map((e) => [e.data.dimension, e.data.key, e.data.date, e.data.direction]).sort()).toEqual([
      ["account", "acct-1", SPIKE_DAY, "spike"],
      ["service", "Compute Service", SPIKE_DAY, "spike"],
    ]);
    const account = list.find((e) => e.data.dimension === "account");
    expect(account.data).toMatchObject({ provider: "aws", currency: "USD", name: "Account One", actual: 1000, weekday: "Monday" });
    expect(account.data.expected).toBeGreaterThan(95);
    expect(account.data.expected).toBeLessThan(110);
    expect(account.data.impact).toBeCloseTo(1000 - account.data.expected, 2);
    const q = `group_by=day&start_date=2026-10-13&end_date=2026-11-10&metric=effective_cost&provider=aws&account=acct-1`;
    expect(account.links).toEqual({ api: `http://localhost/beta/v1/org/${t.org.id}/costs?${q}`, console: `http://localhost/app/explorer?${q}` });
    const costs = await followApi(account);
    const spike = costs.rows.find((r: any) => r.keys.day === SPIKE_DAY);
    expect(spike?.effective_cost).toBe(1000);
    expect(costs.rows.length).toBe(28);
    // The daily scan, today and tomorrow: the same anomalies, not told again.
    await anomalyScanJob.run(t.s);
    clock = new Date("2026-11-11T01:00:00Z");
    await anomalyScanJob.run(t.s);
    clock = new Date("2026-11-10T12:00:00Z");
    expect((await eventsOf("anomaly.detected")).length).toBe(2);
  }, 60_000);

  test("a scheduled sync that finds nothing new says nothing; a manual one tells how it ended", async () => {
    clock = new Date("2026-11-11T00:00:00Z");
    const [run] = await runDueSyncs(t.s, { connectionId: connId });
    expect(run).toMatchObject({ status: "succeeded", periods_imported: 0, periods_unchanged: 4 });
    expect((await eventsOf("billing_sync.succeeded")).length).toBe(1);
    const queued = await t.orgRequest("POST", `/billing-connections/${connId}/sync`);
    expect(queued.status).toBe(202);
    const runId = (await queued.json()).id;
    for (let i = 0; i < 200 && !(await eventsOf("billing_sync.succeeded")).some((e) => e.data.run_id === runId); i++) await Bun.sleep(25);
    const manual = (await eventsOf("billing_sync.succeeded")).find((e) => e.data.run_id === runId);
    expect(manual.data).toMatchObject({ trigger: "manual", periods_imported: 0, months_imported: [] });
  }, 60_000);

  test("billing_sync.stale: after BILLING_STALE_DAYS without new data, once per episode (hourly scan, reruns and replicas add nothing)", async () => {
    // Imported at 2026-11-10T12:00Z: 2 days later it is not stale yet.
    clock = new Date("2026-11-12T13:00:00Z");
    await billingStaleJob.run(t.s);
    expect(await eventsOf("billing_sync.stale")).toEqual([]);
    clock = new Date("2026-11-13T12:30:00Z");
    await Promise.all([billingStaleJob.run(t.s), billingStaleJob.run(t.s)]);
    await billingStaleJob.run(t.s);
    let list = await eventsOf("billing_sync.stale");
    expect(list.length).toBe(1);
    expect(list[0].data).toMatchObject({
      connection: { id: connId, provider: "aws" },
      last_new_data_at: "2026-11-10T12:00:00.000Z",
      newest_month: "2026-11",
      days_without_new_data: 3,
      stale_after_days: 3,
      connection_status: "ok",
    });
    expect(list[0].links.console).toBe(`http://localhost/app/connections/billing/${connId}`);
    // Hours and days later, the same episode: nothing new.
    for (const at of ["2026-11-13T14:30:00Z", "2026-11-15T09:00:00Z"]) {
      clock = new Date(at);
      await billingStaleJob.run(t.s);
    }
    expect((await eventsOf("billing_sync.stale")).length).toBe(1);
    // New data (the November export delivered again) ends the episode; 3 days later a new one starts.
    await writeAwsExport(s3.client, { bucket, prefix: "cur", exportName: "focus", month: "2026-11", files: [{ name: "focus-00002.csv.gz", bytes: gzipSync(monthCsv("2026-11")) }], remove: ["focus-00001.csv.gz"] });
    clock = new Date("2026-11-16T00:00:00Z");
    const [run] = await runDueSyncs(t.s, { connectionId: connId });
    expect(run).toMatchObject({ status: "succeeded", periods_imported: 1 });
    clock = new Date("2026-11-18T00:00:00Z");
    await billingStaleJob.run(t.s);
    expect((await eventsOf("billing_sync.stale")).length).toBe(1);
    clock = new Date("2026-11-19T00:30:00Z");
    await billingStaleJob.run(t.s);
    list = await eventsOf("billing_sync.stale");
    expect(list.map((e) => e.data.last_new_data_at)).toEqual(["2026-11-10T12:00:00.000Z", "2026-11-16T00:00:00.000Z"]);
    clock = new Date("2026-11-10T12:00:00Z");
  }, 60_000);

  test("billing_sync.failed: on the first failure and when the connection turns error, not on every retry; words safe for viewers; then recovered", async () => {
    const org = await t.newOrg("Failing org");
    clock = new Date("2026-11-10T12:00:00Z");
    const created = await t.request("POST", `/beta/v1/org/${org.id}/billing-connections`, {
      key: org.key,
      body: { name: "Missing bucket", kind: "aws_data_exports", config: config({ bucket: `no-such-bucket-${driver}` }), secrets: { secret_access_key: SECRET_ACCESS_KEY } },
    });
    const id = (await created.json()).id;
    const runs: any[] = [];
    for (let i = 0; i < 4; i++) {
      const [run] = await runDueSyncs(t.s, { connectionId: id });
      expect(run!.status).toBe("failed");
      runs.push(run);
      clock = new Date(clock.getTime() + 5 * 3_600_000); // past the backoff
    }
    const list = await eventsOf("billing_sync.failed", org);
    expect(list.map((e) => [e.data.run_id, e.data.consecutive_failures, e.data.connection_status])).toEqual([
      [runs[0].id, 1, "pending"],
      [runs[2].id, 3, "error"],
    ]);
    const first = list[0];
    expect(first.data.error.cause).toBe("not_found");
    expect(first.data.error.message).not.toContain("no-such-bucket");
    expect(JSON.stringify(first)).not.toContain(SECRET_ACCESS_KEY);
    expect(first.links.api).toBe(`http://localhost/beta/v1/org/${org.id}/billing-connections/${id}`);
    expect(Date.parse(first.data.next_attempt_at)).toBeGreaterThan(Date.parse(first.timestamp));
    // The bucket appears (the export is set up at last): the next sync succeeds and says it recovered.
    await s3.createBucket(`no-such-bucket-${driver}`);
    for (const month of ["2026-08", "2026-09", "2026-10", "2026-11"]) {
      await writeAwsExport(s3.client, { bucket: `no-such-bucket-${driver}`, prefix: "cur", exportName: "focus", month, files: [{ name: "focus-00001.csv.gz", bytes: gzipSync(monthCsv(month)) }] });
    }
    const [ok] = await runDueSyncs(t.s, { connectionId: id });
    expect(ok!.status).toBe("succeeded");
    const [recovered] = await eventsOf("billing_sync.succeeded", org);
    expect(recovered.data).toMatchObject({ run_id: ok!.id, recovered: true, periods_imported: 4 });
    // Another org's events are its own.
    expect((await eventsOf("billing_sync.failed")).length).toBe(0);
    clock = new Date("2026-11-10T12:00:00Z");
  }, 60_000);
});

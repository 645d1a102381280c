import { afterAll, beforeAll, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { Readable } from "node:stream";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { startS3, writeAwsExport, type S3Server } from "../helpers/s3.ts";
import { importFocus } from "../../lib/billing/focus.ts";
import { createLogger } from "../../lib/log.ts";
import { createServices } from "../../lib/services.ts";
import { runDueSyncs } from "../../lib/connections/sync.ts";
import { expectSameReports, focusMonths, restated, toCsv, type FocusMonth } from "./fixtures.ts";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { writeFocusParquet } from "../helpers/parquetFixture.ts";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SecretBox } from "../../lib/secrets/secretBox.ts";
import { rotateSecrets } from "../../lib/secrets/rotate.ts";
import { settingsOf, getConnectionRow } from "../../lib/connections/service.ts";

const NOW = new Date("2026-11-10T00:00:00Z");
const SECRET_KEY = randomBytes(32).toString("base64");
// A key pair of the loopback S3 server's own account model: requests are signed and checked.
const ACCESS_KEY_ID = "AKIACOMMITOPSTEST01";
const SECRET_ACCESS_KEY = `s3secret${randomBytes(12).toString("hex")}`;
createRequire(import.meta.url)("s3rver/lib/models/account.js").DUMMY_ACCOUNT.createKeyPair(ACCESS_KEY_ID, SECRET_ACCESS_KEY);

const months = focusMonths({ now: NOW, months: 2, providers: ["aws"], accountsPerProvider: 2, resourcesPerAccount: 2, grain: "daily" });
const OCT = months.get("2026-10")!;
const NOV = months.get("2026-11")!;
const gz = (m: FocusMonth, from = 0, to = m.rows.length) => gzipSync(toCsv(m.header, m.rows.slice(from, to)));

describeEachDb("billing connections: AWS Data Exports in S3", (driver) => {
  const logs: string[] = [];
  const t = useTestApp(driver, { now: () => NOW, config: { secretKey: SECRET_KEY, connectionsAllowPrivateEndpoints: true } });
  let s3: S3Server;
  const bucket = `acme-billing-${driver}`;
  const bodies: string[] = [];

  /** Every response body is kept: none may hold a secret. */
  async function call(method: string, path: string, body?: unknown, key?: string) {
    const r = await t.orgRequest(method, path, { body, key });
    const text = await r.text();
    bodies.push(text);
    return { status: r.status, body: text ? JSON.parse(text) : null };
  }

  async function waitForRun(connectionId: string, runId: string) {
    for (let i = 0; i < 600; i++) {
      const runs = (await call("GET", `/billing-connections/${connectionId}/runs`)).body as any[];
      const run = runs.find((r) => r.id === runId);
      if (run && (run.status === "succeeded" || run.status === "failed")) return run;
      await Bun.sleep(50);
    }
    throw new Error("the run did not finish");
  }

  async function syncNow(connectionId: string) {
    const r = await call("POST", `/billing-connections/${connectionId}/sync`);
    expect(r.status).toBe(202);
    return waitForRun(connectionId, r.body.id);
  }

  const rowCount = async (orgId: string) => Number((await t.s.handle.query<{ n: string }>(`SELECT count(*) AS n FROM billing_line_items WHERE org_id = $1`, [orgId]))[0]!.n);
  const importsOf = async (orgId: string) => Number((await t.s.handle.query<{ n: string }>(`SELECT count(*) AS n FROM billing_imports WHERE org_id = $1`, [orgId]))[0]!.n);

  const awsConfig = (over: Record<string, unknown> = {}) => ({
    bucket,
    prefix: "cur",
    export_name: "focus-daily",
    region: "us-east-1",
    access_key_id: ACCESS_KEY_ID,
    endpoint_url: s3.endpoint,
    ...over,
  });

  beforeAll(async () => {
    t.s.log = createLogger("debug", (l) => (logs.push(l), process.env.DEBUG_LOGS && console.error(l)));
    s3 = await startS3();
    await s3.createBucket(bucket);
    await writeAwsExport(s3.client, { bucket, prefix: "cur", exportName: "focus-daily", month: "2026-10", files: [{ name: "focus-daily-00001.csv.gz", bytes: gz(OCT) }] });
    const half = Math.floor(NOV.rows.length / 2);
    await writeAwsExport(s3.client, {
      bucket,
      prefix: "cur",
      exportName: "focus-daily",
      month: "2026-11",
      files: [
        { name: "focus-daily-00001.csv.gz", bytes: gz(NOV, 0, half) },
        { name: "focus-daily-00002.csv.gz", bytes: gz(NOV, half) },
      ],
    });
  });
  afterAll(async () => {
    await s3?.stop();
  });

  let connId = "";
  let cli: { id: string; key: string };

  test("created through the API: 201, the secret is write-only and stored encrypted", async () => {
    const r = await call("POST", "/billing-connections", { name: "AWS payer", kind: "aws_data_exports", config: awsConfig(), secrets: { secret_access_key: SECRET_ACCESS_KEY } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ name: "AWS payer", kind: "aws_data_exports", status: "pending", secrets_set: ["secret_access_key"] });
    expect(r.body.config).toEqual(awsConfig());
    connId = r.body.id;
    const [row] = await t.s.handle.query<{ secret_ciphertext: string; secret_key_id: string; config: unknown }>(`SELECT secret_ciphertext, secret_key_id, config::text FROM billing_connections WHERE id = $1`, [connId]);
    expect(row!.secret_ciphertext).not.toContain(SECRET_ACCESS_KEY);
    expect(Buffer.from(row!.secret_ciphertext, "base64").toString("latin1")).not.toContain(SECRET_ACCESS_KEY);
    expect(row!.secret_key_id).toMatch(/^k[0-9a-f]{12}$/);
    expect(String(row!.config)).not.toContain(SECRET_ACCESS_KEY);
  });

  test("test: reaches the export, lists its periods and reads the FOCUS header", async () => {
    const r = await call("POST", `/billing-connections/${connId}/test`);
    expect(r.status).toBe(200);
    expect(r.body.ok).toBe(true);
    expect(r.body.cause).toBeNull();
    expect(r.body.periods.map((p: any) => [p.month, p.files])).toEqual([["2026-10", 1], ["2026-11", 2]]);
    expect(r.body.columns).toContain("BilledCost");
  });

  test("first sync imports every period; the reports equal a CLI import of the same files to the cent", async () => {
    const run = await syncNow(connId);
    expect(run).toMatchObject({ status: "succeeded", trigger: "manual", periods_seen: 2, periods_imported: 2, periods_unchanged: 0, rows_imported: OCT.rows.length + NOV.rows.length, error: null });
    expect(run.bytes_read).toBeGreaterThan(0);
    expect(run.duration_ms).toBeGreaterThanOrEqual(0);
    expect(await rowCount(t.org.id)).toBe(OCT.rows.length + NOV.rows.length);

    cli = await t.newOrg("same files through the CLI import");
    for (const m of [OCT, NOV]) await importFocus(t.s.db, cli.id, Readable.from([toCsv(m.header, m.rows)]), { now: NOW });
    await expectSameReports(t, t.org, cli, ["commitment_cost_by_account", "cloud_bill_by_service", "cloud_bill_by_account"], [10, 11]);
    const c = (await call("GET", `/billing-connections/${connId}`)).body;
    expect(c).toMatchObject({ status: "ok", consecutive_failures: 0, last_error: null, last_synced_at: NOW.toISOString() });
  });

  test("a Parquet export (row groups read by ranged GETs) gives the same reports as the CSV import", async () => {
    for (const [month, m] of [["2026-10", OCT], ["2026-11", NOV]] as const) {
      const half = Math.floor(m.rows.length / 2);
      await writeAwsExport(s3.client, {
        bucket,
        prefix: "parquet",
        exportName: "focus-daily",
        month,
        files: [
          { name: "focus-daily-00001.snappy.parquet", bytes: writeFocusParquet(m.header, m.rows.slice(0, half), { rowGroupSize: 50 }) },
          { name: "focus-daily-00002.snappy.parquet", bytes: writeFocusParquet(m.header, m.rows.slice(half), { rowGroupSize: 50 }) },
        ],
      });
    }
    const org = await t.newOrg("parquet");
    const created = await t.request("POST", `/beta/v1/org/${org.id}/billing-connections`, { key: org.key, body: { name: "parquet", kind: "aws_data_exports", config: awsConfig({ prefix: "parquet" }), secrets: { secret_access_key: SECRET_ACCESS_KEY } } });
    expect(created.status).toBe(201);
    const id = (await created.json()).id;
    const [run] = await runDueSyncs(t.s, { connectionId: id });
    expect(run).toMatchObject({ status: "succeeded", periods_imported: 2, rows_imported: OCT.rows.length + NOV.rows.length });
    await expectSameReports(t, org, cli, ["commitment_cost_by_account", "cloud_bill_by_service", "cloud_bill_by_resource"], [10, 11]);
  });

  test("an unchanged re-sync imports nothing", async () => {
    const before = await importsOf(t.org.id);
    const run = await syncNow(connId);
    expect(run).toMatchObject({ status: "succeeded", periods_seen: 2, periods_imported: 0, periods_unchanged: 2, rows_imported: 0, bytes_read: 0 });
    expect(await importsOf(t.org.id)).toBe(before);
  });

  test("an overwritten current month is re-imported, alone, replacing its rows", async () => {
    const before = await importsOf(t.org.id);
    const nov2 = restated(NOV, 1.5);
    // The overwriting export rewrites the month as one file and drops the second.
    await writeAwsExport(s3.client, { bucket, prefix: "cur", exportName: "focus-daily", month: "2026-11", files: [{ name: "focus-daily-00001.csv.gz", bytes: gz(nov2) }], remove: ["focus-daily-00002.csv.gz"] });
    const run = await syncNow(connId);
    expect(run).toMatchObject({ status: "succeeded", periods_imported: 1, periods_unchanged: 1, rows_imported: NOV.rows.length });
    expect(await importsOf(t.org.id)).toBe(before + 1);
    expect(await rowCount(t.org.id)).toBe(OCT.rows.length + NOV.rows.length);
    const at = nov2.header.indexOf("BilledCost");
    const expected = nov2.rows.reduce((s, r) => s + Number(r[at] || 0), 0);
    const [{ s }] = await t.s.handle.query<{ s: string }>(`SELECT sum(billed_cost) AS s FROM billing_line_items WHERE org_id = $1 AND billing_period = '2026-11-01'`, [t.org.id]);
    expect(Number(s)).toBeCloseTo(expected, 6);
  });

  test("a late change to the previous month is picked up; a closed invoice (InvoiceId on every row) closes the period", async () => {
    const invoiced: FocusMonth = { header: [...OCT.header, "InvoiceId"], rows: OCT.rows.map((r) => [...r, "INV-2026-10-001"]) };
    await writeAwsExport(s3.client, { bucket, prefix: "cur", exportName: "focus-daily", month: "2026-10", files: [{ name: "focus-daily-00001.csv.gz", bytes: gz(invoiced) }] });
    const run = await syncNow(connId);
    expect(run).toMatchObject({ status: "succeeded", periods_imported: 1, periods_unchanged: 1, rows_imported: OCT.rows.length });
    const periods = await t.s.handle.query<{ month: string; status: string }>(`SELECT to_char(month, 'YYYY-MM') AS month, status FROM billing_periods WHERE org_id = $1 ORDER BY month`, [t.org.id]);
    expect(periods).toEqual([{ month: "2026-10", status: "closed" }, { month: "2026-11", status: "open" }]);
  });

  test("a corrupt file fails the run with cause format and keeps the previous data", async () => {
    const before = await rowCount(t.org.id);
    const sumBefore = (await t.s.handle.query<{ s: string }>(`SELECT sum(billed_cost) AS s FROM billing_line_items WHERE org_id = $1`, [t.org.id]))[0]!.s;
    const good = gz(NOV);
    await writeAwsExport(s3.client, { bucket, prefix: "cur", exportName: "focus-daily", month: "2026-11", files: [{ name: "focus-daily-00001.csv.gz", bytes: good.subarray(0, Math.floor(good.length / 2)) }] });
    const run = await syncNow(connId);
    expect(run.status).toBe("failed");
    expect(run.error_cause).toBe("format");
    expect(run.error).toMatch(/gzip|CSV/);
    expect(await rowCount(t.org.id)).toBe(before);
    expect((await t.s.handle.query<{ s: string }>(`SELECT sum(billed_cost) AS s FROM billing_line_items WHERE org_id = $1`, [t.org.id]))[0]!.s).toBe(sumBefore);
    const c = (await call("GET", `/billing-connections/${connId}`)).body;
    expect(c).toMatchObject({ status: "ok", consecutive_failures: 1, last_error_cause: "format" });
    expect(new Date(c.next_sync_at).getTime()).toBe(NOW.getTime() + 5 * 60_000);
    // Repaired by the provider's next delivery: the next sync brings it in.
    await writeAwsExport(s3.client, { bucket, prefix: "cur", exportName: "focus-daily", month: "2026-11", files: [{ name: "focus-daily-00001.csv.gz", bytes: good }] });
    expect((await syncNow(connId)).status).toBe("succeeded");
  });

  test("two replicas syncing at once: one claims the connection, the period is imported once", async () => {
    await writeAwsExport(s3.client, { bucket, prefix: "cur", exportName: "focus-daily", month: "2026-11", files: [{ name: "focus-daily-00001.csv.gz", bytes: gz(restated(NOV, 2)) }] });
    await t.s.handle.query(`UPDATE billing_connections SET next_sync_at = $2 WHERE id = $1`, [connId, NOW.toISOString()]);
    const before = await importsOf(t.org.id);
    const replicaA = createServices(t.s.handle, t.s.config, createLogger("silent"), { now: () => NOW });
    const replicaB = createServices(t.s.handle, t.s.config, createLogger("silent"), { now: () => NOW });
    const [a, b] = await Promise.all([runDueSyncs(replicaA, { workerId: "replica-a" }), runDueSyncs(replicaB, { workerId: "replica-b" })]);
    const runs = [...a, ...b];
    expect(runs.length).toBe(1);
    expect(runs[0]).toMatchObject({ status: "succeeded", periods_imported: 1 });
    expect(await importsOf(t.org.id)).toBe(before + 1);
  });

  test("wrong credentials: test and sync name the cause; after repeated failures the connection shows status error", async () => {
    // s3rver checks the access key id (it does not compute SigV4 signatures): an unknown key pair.
    const r = await call("POST", "/billing-connections", { name: "wrong key", kind: "aws_data_exports", config: awsConfig({ access_key_id: "AKIAUNKNOWNKEY000000" }), secrets: { secret_access_key: "not-the-secret-0123456789" } });
    expect(r.status).toBe(201);
    const tested = (await call("POST", `/billing-connections/${r.body.id}/test`)).body;
    expect(tested).toMatchObject({ ok: false, cause: "credentials" });
    expect(tested.message).toContain("credentials");
    for (let i = 1; i <= 3; i++) {
      const run = await syncNow(r.body.id);
      expect(run).toMatchObject({ status: "failed", error_cause: "credentials" });
      const c = (await call("GET", `/billing-connections/${r.body.id}`)).body;
      expect(c.consecutive_failures).toBe(i);
      expect(c.status).toBe(i < 3 ? "pending" : "error");
      // Backoff: 5, 10, 20 minutes.
      expect(new Date(c.next_sync_at).getTime()).toBe(NOW.getTime() + 5 * 2 ** (i - 1) * 60_000);
    }
  });

  test("a missing bucket and an empty export have their own causes", async () => {
    const missing = await call("POST", "/billing-connections", { name: "no bucket", kind: "aws_data_exports", config: awsConfig({ bucket: "no-such-bucket" }), secrets: { secret_access_key: SECRET_ACCESS_KEY } });
    const tested = (await call("POST", `/billing-connections/${missing.body.id}/test`)).body;
    expect(tested).toMatchObject({ ok: false, cause: "not_found" });
    expect(tested.message).toContain("no-such-bucket");
    const empty = await call("POST", "/billing-connections", { name: "wrong export", kind: "aws_data_exports", config: awsConfig({ export_name: "other" }), secrets: { secret_access_key: SECRET_ACCESS_KEY } });
    expect((await call("POST", `/billing-connections/${empty.body.id}/test`)).body).toMatchObject({ ok: false, cause: "no_export" });
  });

  test("a CSV export that is not FOCUS is refused by test with cause not_focus", async () => {
    await writeAwsExport(s3.client, { bucket, prefix: "legacy", exportName: "cur", month: "2026-10", files: [{ name: "cur-00001.csv.gz", bytes: gzipSync("identity/LineItemId,lineItem/UnblendedCost\nabc,1.0\n") }] });
    const r = await call("POST", "/billing-connections", { name: "legacy CUR", kind: "aws_data_exports", config: awsConfig({ prefix: "legacy", export_name: "cur" }), secrets: { secret_access_key: SECRET_ACCESS_KEY } });
    const tested = (await call("POST", `/billing-connections/${r.body.id}/test`)).body;
    expect(tested).toMatchObject({ ok: false, cause: "not_focus" });
    expect(tested.message).toContain("BilledCost");
  });

  test("unreachable endpoint", async () => {
    const r = await call("POST", "/billing-connections", { name: "down", kind: "aws_data_exports", config: awsConfig({ endpoint_url: "http://127.0.0.1:9" }), secrets: { secret_access_key: SECRET_ACCESS_KEY } });
    expect((await call("POST", `/billing-connections/${r.body.id}/test`)).body).toMatchObject({ ok: false, cause: "unreachable" });
  }, 60_000);

  test("settings are checked per kind (422 naming each field); secrets only with a secret key (503)", async () => {
    const bad = await call("POST", "/billing-connections", { name: "bad", kind: "aws_data_exports", config: { bucket: "Bad_Bucket", region: "moon", tenant_id: "x" } });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.errors ?? bad.body.detail?.errors ?? {}).length).toBeGreaterThan(0);
    expect(JSON.stringify(bad.body)).toContain("config.export_name");
    expect(JSON.stringify(bad.body)).toContain("config.tenant_id");
    // The service's own network is out of reach unless the operator allows it.
    const strict = createServices(t.s.handle, { ...t.s.config, connectionsAllowPrivateEndpoints: false }, createLogger("silent"));
    const { createApp } = await import("../../lib/http/app.ts");
    const strictApp = createApp(strict);
    const post = async (body: unknown) => {
      const res = await strictApp.handle(
        new Request(`http://localhost/beta/v1/org/${t.org.id}/billing-connections`, {
          method: "POST",
          headers: { authorization: `Bearer ${t.org.key}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        }),
      );
      return { status: res.status, text: await res.text() };
    };
    for (const endpoint of ["http://169.254.169.254/latest", "http://127.0.0.1:9000", "http://[::1]:9000", "http://localhost:4566", "http://10.0.0.8"]) {
      const r = await post({ name: "ssrf", kind: "aws_data_exports", config: awsConfig({ endpoint_url: endpoint }), secrets: { secret_access_key: SECRET_ACCESS_KEY } });
      expect(r.status).toBe(422);
      expect(r.text).toContain("config.endpoint_url");
    }
    // A GCP key file is checked by the reader's own parser, its token endpoint by the same rule.
    const privateKey = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }) as string;
    const gcp = (key: unknown) => ({ name: "gcp", kind: "gcp_bigquery_focus", config: { project_id: "acme-billing", dataset: "billing", table: "focus" }, secrets: { service_account_key: JSON.stringify(key) } });
    const internalToken = await post(gcp({ type: "service_account", client_email: "a@acme-billing.iam.gserviceaccount.com", private_key: privateKey, token_uri: "http://127.0.0.1:8080/token" }));
    expect(internalToken.status).toBe(422);
    expect(internalToken.text).toContain("token_uri must not point at a loopback");
    const notPem = await post(gcp({ type: "service_account", client_email: "a@acme-billing.iam.gserviceaccount.com", private_key: "not a key" }));
    expect(notPem.status).toBe(422);
    expect(notPem.text).toContain("not a PEM private key");
    expect(notPem.text).not.toContain("not a key\"");
    const unsealable = createServices(t.s.handle, { ...t.s.config, secretKey: undefined }, createLogger("silent"));
    const app = createApp(unsealable);
    const r = await app.handle(
      new Request(`http://localhost/beta/v1/org/${t.org.id}/billing-connections`, {
        method: "POST",
        headers: { authorization: `Bearer ${t.org.key}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "no key", kind: "aws_data_exports", config: awsConfig(), secrets: { secret_access_key: SECRET_ACCESS_KEY } }),
      }),
    );
    expect(r.status).toBe(503);
    expect((await r.json()).code).toBe("secret_key_missing");
  });

  test("PATCH merges settings and re-seals secrets; DELETE keeps the imported data", async () => {
    const r = await call("PATCH", `/billing-connections/${connId}`, { name: "AWS payer (prod)", config: { prefix: "cur" }, secrets: { secret_access_key: SECRET_ACCESS_KEY } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ name: "AWS payer (prod)", secrets_set: ["secret_access_key"] });
    // Without secrets in the body the stored ones count as set (the key pair stays whole).
    const paused = await call("PATCH", `/billing-connections/${connId}`, { enabled: false });
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ enabled: false, secrets_set: ["secret_access_key"] });
    expect((await call("PATCH", `/billing-connections/${connId}`, { enabled: true })).body.enabled).toBe(true);
    const halfPair = await call("PATCH", `/billing-connections/${connId}`, { secrets: { secret_access_key: null } });
    expect(halfPair.status).toBe(422);
    expect(JSON.stringify(halfPair.body)).toContain("secrets.secret_access_key");
    const removed = await call("PATCH", `/billing-connections/${connId}`, { config: { access_key_id: null }, secrets: { secret_access_key: null } });
    expect(removed.status).toBe(200);
    expect(removed.body.secrets_set).toEqual([]);
    expect(removed.body.config.access_key_id).toBeUndefined();
    const other = await call("POST", "/billing-connections", { name: "to delete", kind: "aws_data_exports", config: awsConfig(), secrets: { secret_access_key: SECRET_ACCESS_KEY } });
    const rows = await rowCount(t.org.id);
    expect((await call("DELETE", `/billing-connections/${other.body.id}`)).status).toBe(204);
    expect((await call("GET", `/billing-connections/${other.body.id}`)).status).toBe(404);
    expect(await rowCount(t.org.id)).toBe(rows);
  });

  test("org isolation and scopes: another org sees 404, a key without connections scopes 403", async () => {
    const other = await t.newOrg("other");
    const r = await t.request("GET", `/beta/v1/org/${other.id}/billing-connections/${connId}`, { key: other.key });
    expect(r.status).toBe(404);
    const cross = await t.request("GET", `/beta/v1/org/${t.org.id}/billing-connections`, { key: other.key });
    expect(cross.status).toBe(403);
    const reader = await t.newOrg("reports only", ["reports:read"]);
    expect((await t.request("GET", `/beta/v1/org/${reader.id}/billing-connections`, { key: reader.key })).status).toBe(403);
    const ro = await t.newOrg("read connections", ["connections:read"]);
    expect((await t.request("GET", `/beta/v1/org/${ro.id}/billing-connections`, { key: ro.key })).status).toBe(200);
    expect((await t.request("POST", `/beta/v1/org/${ro.id}/billing-connections`, { key: ro.key, body: { name: "x", kind: "aws_data_exports", config: awsConfig() } })).status).toBe(403);
  });

  test("the assistant's freshness tool shows each connection's state, nothing of its settings", async () => {
    const transport = new StreamableHTTPClientTransport(new URL("http://localhost/mcp"), {
      fetch: (url, init) => t.app.handle(new Request(url, init)),
      requestInit: { headers: { authorization: `Bearer ${t.org.key}` } },
    });
    const client = new Client({ name: "freshness", version: "1.0.0" });
    await client.connect(transport);
    const r: any = await client.callTool({ name: "get_billing_data_freshness", arguments: {} });
    await client.close();
    expect(r.isError).toBeFalsy();
    bodies.push(JSON.stringify(r));
    const prod = r.structuredContent.connections.find((c: any) => c.name === "AWS payer (prod)");
    expect(prod).toMatchObject({ kind: "aws_data_exports", status: "ok", newest_month: "2026-11", closed_months: ["2026-10"], last_synced_at: NOW.toISOString() });
    const wrong = r.structuredContent.connections.find((c: any) => c.name === "wrong key");
    expect(wrong).toMatchObject({ status: "error", last_error_cause: "credentials", newest_month: null });
    expect(JSON.stringify(r)).not.toContain(bucket);
  });

  test("secrets rotate: every secret re-sealed under the new key, readable only with it", async () => {
    const newKey = randomBytes(32).toString("base64");
    const before = await getConnectionRow(t.s.db, t.org.id, (await call("GET", "/billing-connections")).body.find((c: any) => c.name === "wrong key").id);
    const rotating = new SecretBox(newKey, [SECRET_KEY]);
    const r = await rotateSecrets(t.s.db, rotating);
    expect(r.resealed).toBeGreaterThanOrEqual(4);
    expect(r.current_key_id).toBe(rotating.currentKeyId!);
    const after = await getConnectionRow(t.s.db, t.org.id, before.id);
    expect(after.secretKeyId).toBe(rotating.currentKeyId);
    expect(after.secretCiphertext).not.toBe(before.secretCiphertext);
    expect((settingsOf(new SecretBox(newKey), after).secrets as any).secret_access_key).toBe("not-the-secret-0123456789");
    expect(() => settingsOf(new SecretBox(SECRET_KEY), after)).toThrow();
    expect((await rotateSecrets(t.s.db, rotating)).resealed).toBe(0);
    // A ciphertext moved to another row does not open (the row is its authenticated context).
    expect(() => settingsOf(rotating, { ...after, id: connId })).toThrow();
    // Back to the suite's key for the tests after this one.
    await rotateSecrets(t.s.db, new SecretBox(SECRET_KEY, [newKey]));
  });

  test("no secret in any response or log line", () => {
    expect(bodies.length).toBeGreaterThan(20);
    expect(logs.length).toBeGreaterThan(0);
    for (const text of [...bodies, ...logs]) {
      expect(text).not.toContain(SECRET_ACCESS_KEY);
      expect(text).not.toContain("not-the-secret-0123456789");
      expect(text).not.toContain(SECRET_KEY);
    }
  });
});

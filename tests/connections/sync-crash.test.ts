import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { join } from "node:path";
import { writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { useTestApp } from "../helpers/app.ts";
import { startProcess } from "../helpers/process.ts";
import { startS3, writeAwsExport, type S3Server } from "../helpers/s3.ts";
import { createServices } from "../../lib/services.ts";
import { createLogger } from "../../lib/log.ts";
import { runDueSyncs } from "../../lib/connections/sync.ts";
import { focusMonths, restated, toCsv } from "./fixtures.ts";

const MAIN = join(import.meta.dir, "../../scripts/main.ts");
const SECRET_KEY = randomBytes(32).toString("base64");
const ACCESS_KEY_ID = "AKIACOMMITOPSCRASH01";
const SECRET_ACCESS_KEY = `crash${randomBytes(12).toString("hex")}`;
createRequire(import.meta.url)("s3rver/lib/models/account.js").DUMMY_ACCOUNT.createKeyPair(ACCESS_KEY_ID, SECRET_ACCESS_KEY);

const NOV = focusMonths({ now: new Date("2026-11-10T00:00:00Z"), months: 1, providers: ["aws"], accountsPerProvider: 2, resourcesPerAccount: 2, grain: "daily" }).get("2026-11")!;

// A second process needs a PostgreSQL server (PGlite is one process's database).
describe.skipIf(!process.env.TEST_DATABASE_URL)("billing sync across processes [postgres]", () => {
  const t = useTestApp("postgres", { config: { secretKey: SECRET_KEY, connectionsAllowPrivateEndpoints: true } });
  let s3: S3Server;
  let connId = "";
  const bucket = "crash-billing";
  const env = () => ({ DATABASE_URL: t.db.url!, COMMITOPS_SECRET_KEY: SECRET_KEY, LOG_LEVEL: "error", JOBS_ENABLED: "false", CONNECTIONS_ALLOW_PRIVATE_ENDPOINTS: "true" });
  // Asynchronous: the S3 server the child talks to runs in this process.
  const cli = async (...args: string[]) => {
    const p = startProcess(process.execPath, [MAIN, ...args, "--json"], { env: env() });
    const code = await p.exited;
    const text = p.output();
    const json = text.slice(text.search(/[[{]/));
    return { code, out: code === 0 ? JSON.parse(json) : null, err: text };
  };
  const rows = async () => (await t.s.handle.query<{ n: string; s: string }>(`SELECT count(*) AS n, sum(billed_cost)::text AS s FROM billing_line_items WHERE org_id = $1`, [t.org.id]))[0]!;

  beforeAll(async () => {
    s3 = await startS3();
    await s3.createBucket(bucket);
    await writeAwsExport(s3.client, { bucket, prefix: "", exportName: "focus", month: "2026-11", files: [{ name: "focus-00001.csv.gz", bytes: gzipSync(toCsv(NOV.header, NOV.rows)) }] });
  });
  afterAll(async () => {
    await s3?.stop();
  });

  test("the CLI adds, tests and syncs a connection; secrets come from a file, never the command line", async () => {
    const secretsFile = join(mkdtempSync(join(tmpdir(), "commitops-secrets-")), "aws.json");
    writeFileSync(secretsFile, JSON.stringify({ secret_access_key: SECRET_ACCESS_KEY }));
    const add = await cli("connections", "add", "--org", t.org.id, "--name", "payer", "--kind", "aws_data_exports", "--config", `bucket=${bucket}`, "--config", "export_name=focus", "--config", "region=us-east-1", "--config", `access_key_id=${ACCESS_KEY_ID}`, "--config", `endpoint_url=${s3.endpoint}`, "--secrets-file", secretsFile);
    expect(add.code, add.err).toBe(0);
    expect(add.out.secrets_set).toEqual(["secret_access_key"]);
    connId = add.out.id;
    const tested = await cli("connections", "test", connId, "--org", t.org.id);
    expect(tested.out).toMatchObject({ ok: true, periods: [{ month: "2026-11", files: 1 }] });
    const synced = await cli("connections", "sync", connId, "--org", t.org.id);
    expect(synced.code, synced.err).toBe(0);
    expect(synced.out).toMatchObject({ status: "succeeded", periods_imported: 1, rows_imported: NOV.rows.length });
    const listed = await cli("connections", "list", "--org", t.org.id);
    expect(listed.out).toEqual([expect.objectContaining({ id: connId, status: "ok" })]);
    for (const r of [add, tested, synced, listed]) expect(JSON.stringify(r)).not.toContain(SECRET_ACCESS_KEY);
  }, 120_000);

  test("a sync killed mid-import leaves the previous data; after its lease lapses another replica imports the period", async () => {
    const before = await rows();
    // A large re-statement, so the import is still running when the process is killed.
    const big = restated(NOV, 3);
    const many = Array.from({ length: 600 }, () => big.rows).flat();
    await writeAwsExport(s3.client, { bucket, prefix: "", exportName: "focus", month: "2026-11", files: [{ name: "focus-00001.csv.gz", bytes: gzipSync(toCsv(big.header, many)) }] });
    const child = startProcess(process.execPath, [MAIN, "connections", "sync", connId, "--org", t.org.id, "--json"], { env: env() });
    let copying = false;
    for (let i = 0; i < 600 && !copying; i++) {
      await Bun.sleep(50);
      copying = (await t.s.handle.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'COPY billing_line_items%'`)).length > 0;
    }
    expect(copying).toBe(true);
    await child.stop("SIGKILL");
    await Bun.sleep(200);
    expect(await rows()).toEqual(before);
    const [claim] = await t.s.handle.query<{ claimed_by: string | null; status: string }>(`SELECT claimed_by, (SELECT status FROM billing_connection_runs r WHERE r.connection_id = c.id ORDER BY created_at DESC LIMIT 1) AS status FROM billing_connections c WHERE id = $1`, [connId]);
    expect(claim!.claimed_by).not.toBeNull();
    expect(claim!.status).toBe("running");
    // While the dead replica's lease holds, nobody else takes the connection.
    expect(await runDueSyncs(createServices(t.s.handle, t.s.config, createLogger("silent")))).toEqual([]);
    const later = createServices(t.s.handle, t.s.config, createLogger("silent"), { now: () => new Date(Date.now() + 10 * 60_000) });
    const [run] = await runDueSyncs(later, { workerId: "replica-b" });
    expect(run).toMatchObject({ status: "succeeded", trigger: "schedule", periods_imported: 1, rows_imported: many.length });
    expect(Number((await rows()).n)).toBe(many.length);
    const runs = await t.s.handle.query<{ status: string; error_cause: string | null }>(`SELECT status, error_cause FROM billing_connection_runs WHERE connection_id = $1 ORDER BY created_at`, [connId]);
    expect(runs.map((r) => [r.status, r.error_cause])).toEqual([["succeeded", null], ["failed", "interrupted"], ["succeeded", null]]);
  }, 180_000);
});

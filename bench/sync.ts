/**
 * Billing sync at real size (issue 12): one month of SYNC_ROWS FOCUS rows (default 1,000,000; aws,
 * daily grain) written as an AWS Data Exports FOCUS export in Parquet (files of 100,000 rows,
 * row groups of 25,000, snappy) into a local S3 server (s3rver on loopback), synced through the
 * CLI (`connections sync`, a child process: wall time and peak RSS), against importing the same
 * rows from a local CSV file (`import focus`) in the same run, each into a fresh database on the
 * same PostgreSQL server. Then an unchanged re-sync (listing + fingerprints only).
 *
 *   npx bun bench/sync.ts
 *   SYNC_ROWS=200000 npx bun bench/sync.ts
 *   BENCH_DATABASE_URL=postgres://… (default postgres://postgres@127.0.0.1:5432/test)
 *
 * Not part of `npm run bench`: it takes a few minutes.
 */
import postgres from "postgres";
import { runChild } from "./lib/child.ts";
import { createRequire } from "node:module";
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync, createReadStream } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { randomBytes } from "node:crypto";

const ROWS = Number(process.env.SYNC_ROWS ?? 1_000_000);
const BASE = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const ROWS_PER_FILE = 100_000;
const root = join(import.meta.dir, "..");
const sec = (ms: number) => (ms / 1000).toFixed(1);
const mb = (b: number) => (b / 1048576).toFixed(0);

if (process.argv[2] === "parquet") {
  // Child: CSV → Parquet files of ROWS_PER_FILE rows (one file's rows in memory at a time).
  const [, , , csv, outDir] = process.argv;
  const { readCsvBatches } = await import("../lib/billing/csvReader.ts");
  const { writeFocusParquet } = await import("../tests/helpers/parquetFixture.ts");
  let header: string[] | null = null;
  let rows: string[][] = [];
  let n = 0;
  const flush = () => {
    if (!rows.length) return;
    writeFileSync(join(outDir!, `focus-${String(++n).padStart(5, "0")}.snappy.parquet`), writeFocusParquet(header!, rows, { rowGroupSize: 25_000 }));
    rows = [];
  };
  for await (const batch of readCsvBatches(createReadStream(csv!, { highWaterMark: 1 << 20 }))) {
    let recs = batch.records;
    if (!header) {
      header = recs[0]!;
      recs = recs.slice(1);
    }
    for (const r of recs) {
      rows.push(r);
      if (rows.length === ROWS_PER_FILE) flush();
    }
  }
  flush();
  console.log(JSON.stringify({ files: n }));
  process.exit(0);
}

async function freshDatabase(label: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `commitops_bench_sync_${label}_${Date.now().toString(36)}`;
  const admin = postgres(BASE, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = Object.assign(new URL(BASE), { pathname: `/${name}` }).toString();
  await runChild([join(root, "scripts/migrate.ts")], { DATABASE_URL: url });
  return {
    url,
    async drop() {
      const a = postgres(BASE, { max: 1, onnotice: () => {} });
      await a.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await a.end();
    },
  };
}

async function newOrg(url: string): Promise<string> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const [org] = await sql`INSERT INTO organizations (name) VALUES ('bench') RETURNING id`;
  await sql.end();
  return org!.id;
}

const dir = mkdtempSync(join(tmpdir(), "commitops-sync-bench-"));
const csv = join(dir, "focus.csv");
const parquetDir = join(dir, "parquet");
const dbs: { drop(): Promise<void> }[] = [];
let s3: { stop(): Promise<void> } | null = null;
try {
  const gen = await runChild([join(import.meta.dir, "scale.ts"), "generate", csv, String(Math.max(1, Math.ceil(ROWS / 3100))), String(ROWS)]);
  const rows = JSON.parse(gen.stdout).rows as number;
  (await import("node:fs")).mkdirSync(parquetDir);
  const pq = await runChild([import.meta.path, "parquet", csv, parquetDir]);
  const files = readdirSync(parquetDir).sort();
  const parquetBytes = files.reduce((n, f) => n + statSync(join(parquetDir, f)).size, 0);
  console.log(`${rows.toLocaleString("en-US")} rows: CSV ${mb(statSync(csv).size)} MB; Parquet ${files.length} files, ${mb(parquetBytes)} MB (written in ${sec(pq.ms)} s)`);

  const { startS3, writeAwsExport } = await import("../tests/helpers/s3.ts");
  const server = await startS3();
  s3 = server;
  const accessKeyId = "AKIACOMMITOPSBENCH01";
  const secret = randomBytes(16).toString("hex");
  createRequire(import.meta.url)("s3rver/lib/models/account.js").DUMMY_ACCOUNT.createKeyPair(accessKeyId, secret);
  await server.createBucket("bench-billing");
  const month = "2026-10";
  await writeAwsExport(server.client, { bucket: "bench-billing", prefix: "exports", exportName: "focus", month, files: files.map((f) => ({ name: f, bytes: readFileSync(join(parquetDir, f)) })) });

  // Baseline: the same rows from a local CSV file through the CLI import.
  const csvDb = await freshDatabase("csv");
  dbs.push(csvDb);
  const csvOrg = await newOrg(csvDb.url);
  const imported = await runChild([join(root, "scripts/main.ts"), "import", "focus", "--org", csvOrg, csv, "--json"], { DATABASE_URL: csvDb.url });
  const importRows = JSON.parse(imported.stdout).rows_imported;

  const syncDb = await freshDatabase("sync");
  dbs.push(syncDb);
  const syncOrg = await newOrg(syncDb.url);
  const env = { DATABASE_URL: syncDb.url, COMMITOPS_SECRET_KEY: randomBytes(32).toString("base64"), CONNECTIONS_ALLOW_PRIVATE_ENDPOINTS: "true" };
  const secretsFile = join(dir, "secrets.json");
  writeFileSync(secretsFile, JSON.stringify({ secret_access_key: secret }));
  const add = await runChild(
    [join(root, "scripts/main.ts"), "connections", "add", "--org", syncOrg, "--name", "bench", "--kind", "aws_data_exports", "--config", "bucket=bench-billing", "--config", "prefix=exports", "--config", "export_name=focus", "--config", "region=us-east-1", "--config", `access_key_id=${accessKeyId}`, "--config", `endpoint_url=${(server as any).endpoint}`, "--secrets-file", secretsFile, "--json"],
    env,
  );
  const connection = JSON.parse(add.stdout).id;
  const sync = await runChild([join(root, "scripts/main.ts"), "connections", "sync", connection, "--org", syncOrg, "--json"], env);
  const run = JSON.parse(sync.stdout);
  const resync = await runChild([join(root, "scripts/main.ts"), "connections", "sync", connection, "--org", syncOrg, "--json"], env);
  const rerun = JSON.parse(resync.stdout);
  if (run.status !== "succeeded" || run.rows_imported !== importRows) throw new Error(`sync: ${JSON.stringify(run)}`);
  const result = {
    rows,
    csv_import_s: Number(sec(imported.ms)),
    csv_import_peak_rss_mb: Number(mb(imported.peakRss)),
    parquet_sync_s: Number(sec(sync.ms)),
    parquet_sync_peak_rss_mb: Number(mb(sync.peakRss)),
    ratio: Number((sync.ms / imported.ms).toFixed(2)),
    unchanged_resync_s: Number(sec(resync.ms)),
    unchanged_resync_periods_imported: rerun.periods_imported,
  };
  console.log(`CSV import (CLI, local file)      ${sec(imported.ms).padStart(6)} s   peak RSS ${mb(imported.peakRss)} MB`);
  console.log(`Parquet sync from local S3 (CLI)  ${sec(sync.ms).padStart(6)} s   peak RSS ${mb(sync.peakRss)} MB   ratio ${result.ratio}×`);
  console.log(`unchanged re-sync                 ${sec(resync.ms).padStart(6)} s   (${rerun.periods_imported} periods imported)`);
  console.log(JSON.stringify(result));
} finally {
  await s3?.stop();
  for (const d of dbs) await d.drop().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
}

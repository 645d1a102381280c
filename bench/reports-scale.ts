/**
 * Every open-month report at real size, right after import (issue 29): one FOCUS file imported
 * once through the CLI into a fresh PostgreSQL database, then per `daily` report, through the
 * real HTTP app: time to the first body chunk of JSON and the whole CSV, with its rows stored
 * ahead (lib/reports/rowCache.ts) and computed from the summaries (stored rows dropped, as before
 * this change), against `COPY (the report's SQL) TO STDOUT` of the same month in the same run.
 *
 *   SCALE_FILE=/tmp/bench/focus1m.csv npx bun bench/reports-scale.ts
 *   BENCH_DATABASE_URL=postgres://… (default postgres://postgres@127.0.0.1:5432/test; a fresh database is created and dropped)
 *   REPEAT=3 (timings per measurement; min–max printed)
 *
 * Generate a file with `npx bun bench/scale.ts generate <out.csv> <accounts> <rows>`.
 */
import postgres from "postgres";
import { join } from "node:path";
import { runChild } from "./lib/child.ts";

const BASE = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const FILE = process.env.SCALE_FILE;
const REPEAT = Number(process.env.REPEAT ?? 3);
if (!FILE) throw new Error("SCALE_FILE is required");
const root = join(import.meta.dir, "..");
const dbName = `commitops_bench_reports_${Date.now().toString(36)}`;
const admin = postgres(BASE, { max: 1, onnotice: () => {} });
await admin.unsafe(`CREATE DATABASE ${dbName}`);
const url = Object.assign(new URL(BASE), { pathname: `/${dbName}` }).toString();
const range = (xs: number[]) => `${Math.round(Math.min(...xs))}–${Math.round(Math.max(...xs))} ms`;

try {
  await runChild([join(root, "scripts/migrate.ts")], { DATABASE_URL: url });
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  const [org] = await sql`INSERT INTO organizations (name) VALUES ('scale') RETURNING id`;
  const imp = await runChild([join(root, "scripts/main.ts"), "import", "focus", "--org", org.id, FILE, "--json"], { DATABASE_URL: url });
  const imported = JSON.parse(imp.stdout);
  console.log(`import: ${imported.rows_imported.toLocaleString("en-US")} rows in ${(imp.ms / 1000).toFixed(1)} s`);

  const { openDb } = await import("../lib/db/index.ts");
  const { loadConfig } = await import("../lib/config.ts");
  const { createLogger } = await import("../lib/log.ts");
  const { createServices } = await import("../lib/services.ts");
  const { createApp } = await import("../lib/http/app.ts");
  const { createApiKey } = await import("../lib/auth/apiKeys.ts");
  const { REPORTS } = await import("../lib/reports/catalog.ts");
  const { liveReportSql } = await import("../lib/reports/service.ts");
  const { storable, storeRowSet } = await import("../lib/reports/rowCache.ts");
  const handle = await openDb({ url, migrate: false });
  const month = String(imported.periods[0].month).slice(0, 7);
  const provider = imported.periods[0].provider;
  const [year, mon] = month.split("-").map(Number) as [number, number];
  const now = new Date(Date.UTC(year, mon - 1, 28, 12));
  const services = createServices(handle, loadConfig({ ...process.env, PUBLIC_URL: "http://localhost" }, { jobsEnabled: false, seedDemo: false, logLevel: "silent" }), createLogger("silent"), { now: () => now });
  const app = createApp(services);
  const key = await createApiKey(handle.db, { orgId: org.id, scopes: ["reports:read"] });
  const [sets] = await sql`SELECT count(*)::int AS n, COALESCE(SUM(row_count), 0)::int AS rows FROM report_row_sets WHERE org_id = ${org.id}`;
  console.log(`stored by the import: ${sets.n} report sets, ${sets.rows.toLocaleString("en-US")} rows`);

  /** Time to the first body chunk (first page) and to the end. */
  const fetchReport = async (type: string, format: "json" | "csv") => {
    const t = performance.now();
    const res = await app.handle(new Request(`http://localhost/beta/v1/org/${org.id}/allocation-reports/${type}?year=${year}&month=${mon}&format=${format}`, { headers: { authorization: `Bearer ${key.key}` } }));
    if (res.status !== 200) throw new Error(`${type} answered ${res.status}: ${await res.text()}`);
    const reader = res.body!.getReader();
    let first = 0;
    let bytes = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!first) first = performance.now() - t;
      bytes += value.length;
    }
    return { first, all: performance.now() - t, bytes };
  };
  const copyMs = async (text: string, params: unknown[]) => {
    const literal = (v: unknown) => (v === null ? "NULL" : `'${String(v).replace(/'/g, "''")}'`);
    const t = performance.now();
    await handle.copyOut!(`COPY (${text.replace(/\$(\d+)/g, (_, i) => literal(params[Number(i) - 1]))}) TO STDOUT WITH (FORMAT csv, HEADER true)`, () => {});
    return performance.now() - t;
  };
  const times = async (f: () => Promise<number>) => {
    const out: number[] = [];
    for (let i = 0; i < REPEAT; i++) out.push(await f());
    return out;
  };

  console.log(`\n| report | rows | JSON first page, stored | JSON first page, computed (before) | CSV whole, stored | COPY of the report SQL (baseline) | CSV ratio |`);
  console.log(`|---|---|---|---|---|---|---|`);
  for (const def of REPORTS.filter(storable)) {
    const [set] = await sql`SELECT row_count FROM report_row_sets WHERE org_id = ${org.id} AND report_type = ${def.report_type} AND provider = ${provider}`;
    await fetchReport(def.report_type, "json"); // warm
    const storedFirst = await times(async () => (await fetchReport(def.report_type, "json")).first);
    const csv = await times(async () => (await fetchReport(def.report_type, "csv")).all);
    const { text, params } = liveReportSql(def, org.id, `${month}-01`, provider, {});
    const copy = await times(() => copyMs(text, params));
    // Before: the same request computing the month's rounding first (the stored set dropped).
    await sql`DELETE FROM report_row_sets WHERE org_id = ${org.id} AND report_type = ${def.report_type}`;
    const computedFirst = await times(async () => (await fetchReport(def.report_type, "json")).first);
    await handle.db.transaction((tx) => storeRowSet(tx, org.id, def, provider, `${month}-01`));
    const ratio = Math.min(...csv) / Math.min(...copy);
    console.log(`| ${def.report_type} | ${set?.row_count ?? "-"} | ${range(storedFirst)} | ${range(computedFirst)} | ${range(csv)} | ${range(copy)} | ${ratio.toFixed(2)}× |`);
  }
  await handle.close();
  await sql.end();
} finally {
  await admin.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
}
process.exit(0);

/**
 * One month at real billing size, end to end (issue 11): SCALE_ROWS FOCUS rows (default
 * 10,000,000; aws, daily grain, 100 resources per linked account, commitments on) are generated,
 * imported through the CLI (wall time, CPU of the CLI and of the PostgreSQL server, peak RSS of
 * the CLI), imported again unchanged (the content digest), and once more with one row restated
 * (the replace path of a re-delivered month); every report is fetched through the real HTTP app.
 * Baselines in the same run and on the same server, timed and CPU-measured alike: psql's `\copy`
 * of the same file into a text table, `\copy` of the imported rows into a typed, indexed table of
 * billing_line_items' shape (the floor the schema sets), and `COPY (the report's SQL) TO STDOUT`
 * for the resource-grain CSV.
 *
 *   SCALE_ROWS=2000000 npx bun bench/scale.ts
 *   BENCH_DATABASE_URL=postgres://… (default postgres://postgres@127.0.0.1:5432/test; a fresh database is created and dropped)
 *   SCALE_FILE=/path.csv reuses a generated file (kept when given).
 *
 * Not part of `npm test`. `npm run bench` runs it at 1 M rows (SCALE_ROWS=1000000); at 10 M rows
 * it takes a quarter of an hour.
 */
import postgres from "postgres";
import { runChild } from "./lib/child.ts";
import { cpuSince, readCpu, type CpuReading } from "./lib/cpu.ts";
import { addHeadline } from "./lib/summary.ts";
import { spawnSync } from "node:child_process";
import { closeSync, createReadStream, createWriteStream, existsSync, mkdtempSync, openSync, readSync, rmSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { pipeline } from "node:stream/promises";

const ROWS = Number(process.env.SCALE_ROWS ?? 10_000_000);
const BASE = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const RESOURCES = 100;
/** A complete month: the generator's data ends at `now`. */
const NOW = new Date("2026-10-31T23:00:00Z");
const mb = (b: number) => (b / 1048576).toFixed(0);
const sec = (ms: number) => (ms / 1000).toFixed(2);
const rate = (rows: number, ms: number) => Math.round(rows / (ms / 1000)).toLocaleString("en-US");

if (process.argv[2] === "generate") {
  const [, , , out, accounts, maxRows] = process.argv;
  const { writeFocusCsv } = await import("../lib/billing/generator.ts");
  const stream = createWriteStream(out!);
  const rows = await writeFocusCsv(
    { now: NOW, months: 1, grain: "daily", providers: ["aws"], accountsPerProvider: Number(accounts), resourcesPerAccount: RESOURCES, commitments: true, maxRows: Number(maxRows) },
    stream,
  );
  await new Promise<void>((r) => stream.end(r));
  console.log(JSON.stringify({ rows }));
  process.exit(0);
}

const dbName = `commitops_bench_scale_${Date.now().toString(36)}`;
const admin = postgres(BASE, { max: 1, onnotice: () => {} });
await admin.unsafe(`CREATE DATABASE ${dbName}`);
const url = Object.assign(new URL(BASE), { pathname: `/${dbName}` }).toString();
const dir = mkdtempSync(join(tmpdir(), "commitops-scale-"));
const file = process.env.SCALE_FILE ?? join(dir, "focus.csv");
const root = join(import.meta.dir, "..");
let exitCode = 0;

try {
  if (!existsSync(file)) {
    // 100 resources per account, one row per resource and day, plus the commitments' rows.
    const accounts = Math.max(1, Math.ceil(ROWS / (RESOURCES * 31)));
    const gen = await runChild([import.meta.path, "generate", file, String(accounts), String(ROWS)]);
    console.log(`generated ${JSON.parse(gen.stdout).rows.toLocaleString("en-US")} rows in ${sec(gen.ms)} s`);
  }
  const bytes = statSync(file).size;

  await runChild([join(root, "scripts/migrate.ts")], { DATABASE_URL: url });
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  const [org] = await sql`INSERT INTO organizations (name) VALUES ('scale') RETURNING id`;
  const head = Buffer.alloc(16384);
  const fd = openSync(file, "r");
  readSync(fd, head, 0, head.length, 0);
  closeSync(fd);
  const header = head.toString("utf8").split("\n")[0]!.split(",");

  /** psql's \copy, timed, with its CPU and the server's. */
  // An ended backend's CPU reaches the postmaster's children once it is reaped: read a moment later.
  const settled = () => new Promise((r) => setTimeout(r, 500));
  const psqlCopy = async (command: string) => {
    await settled();
    const before = readCpu();
    const t = performance.now();
    const r = spawnSync("psql", [url, "-v", "ON_ERROR_STOP=1", "-qc", command], { stdio: ["ignore", "ignore", "pipe"] });
    if (r.status !== 0) throw new Error(`psql ${command}: ${r.stderr}`);
    const ms = performance.now() - t;
    await settled();
    return { ms, cpu: cpuSince(before) };
  };
  const cli = async (args: string[]) => {
    await settled();
    const before = readCpu();
    const r = await runChild(args, { DATABASE_URL: url });
    await settled();
    return { ...r, cpu: cpuSince(before), out: JSON.parse(r.stdout) };
  };
  const cpuText = (c: CpuReading) => `CPU ${c.children.toFixed(1)} s client + ${c.postgres.toFixed(1)} s server`;
  const cpuTotal = (c: CpuReading) => c.children + c.postgres;

  // Baseline 1: PostgreSQL parsing the same CSV into a table of text columns.
  await sql.unsafe(`CREATE TABLE copy_baseline (${header.map((_, i) => `c${i} text`).join(", ")})`);
  const textCopy = await psqlCopy(`\\copy copy_baseline FROM '${file}' WITH (FORMAT csv, HEADER true)`);
  await sql.unsafe(`DROP TABLE copy_baseline`);

  const importArgs = (f: string) => [join(root, "scripts/main.ts"), "import", "focus", "--org", org.id, f, "--json"];
  const first = await cli(importArgs(file));
  const imported = first.out;
  const again = await cli(importArgs(file));

  // Baseline 2: the rows as imported, \copy'd into a typed table of billing_line_items' shape and indexes.
  const typedFile = join(dir, "typed.copy");
  await psqlCopy(`\\copy (SELECT * FROM billing_line_items) TO '${typedFile}'`);
  await sql.unsafe(`CREATE TABLE copy_typed (LIKE billing_line_items INCLUDING ALL)`);
  const typedCopy = await psqlCopy(`\\copy copy_typed FROM '${typedFile}'`);
  await sql.unsafe(`DROP TABLE copy_typed`);
  rmSync(typedFile, { force: true });

  // The same month restated: one row's cost changed (a new digest), so the month is replaced.
  const restatedFile = join(dir, "restated.csv");
  {
    const out = openSync(restatedFile, "w");
    let firstChunk = true;
    for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) {
      let b = chunk as Buffer;
      if (firstChunk) {
        const text = b.toString("latin1");
        const second = text.indexOf("\n", text.indexOf("\n") + 1);
        b = Buffer.from(text.slice(0, second).replace(/,(\d+)\.(\d)/, ",$1.9") + text.slice(second), "latin1");
        firstChunk = false;
      }
      writeSync(out, b);
    }
    closeSync(out);
  }
  const restated = await cli(importArgs(restatedFile));
  rmSync(restatedFile, { force: true });
  const reimported = restated.out;

  const [{ size }] = await sql`SELECT pg_total_relation_size('billing_line_items') + pg_total_relation_size('billing_cost_summaries') + pg_total_relation_size('commitment_usage_summaries') AS size`;

  // Every report through the real app (JSON), and the resource-grain one as CSV vs COPY TO.
  const { openDb } = await import("../lib/db/index.ts");
  const { loadConfig } = await import("../lib/config.ts");
  const { createLogger } = await import("../lib/log.ts");
  const { createServices } = await import("../lib/services.ts");
  const { createApp } = await import("../lib/http/app.ts");
  const { createApiKey } = await import("../lib/auth/apiKeys.ts");
  const { REPORTS, findReport } = await import("../lib/reports/catalog.ts");
  const { liveReportSql } = await import("../lib/reports/service.ts");
  const { closeBillingPeriod, freezeClosedPeriods } = await import("../lib/reports/periods.ts");
  const handle = await openDb({ url, migrate: false });
  const month = String(imported.periods[0].month).slice(0, 7);
  const [year, mon] = month.split("-").map(Number) as [number, number];
  const after = new Date(Date.UTC(year, mon, 1, 12));
  const services = createServices(handle, loadConfig({ ...process.env, PUBLIC_URL: "http://localhost" }, { jobsEnabled: false, seedDemo: false, logLevel: "silent" }), createLogger("silent"), { now: () => after });
  const app = createApp(services);
  const key = await createApiKey(handle.db, { orgId: org.id, scopes: ["reports:read"] });
  const fetchReport = async (type: string, format: "json" | "csv") => {
    const t = performance.now();
    const res = await app.handle(new Request(`http://localhost/beta/v1/org/${org.id}/allocation-reports/${type}?year=${year}&month=${mon}&format=${format}`, { headers: { authorization: `Bearer ${key.key}` } }));
    let n = 0;
    const reader = res.body!.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      n += value.length;
    }
    if (res.status !== 200) throw new Error(`${type} answered ${res.status}`);
    return { ms: performance.now() - t, bytes: n };
  };
  const reports: { type: string; ms: number; bytes: number; frozen: boolean }[] = [];
  const timeReports = async (frozen: boolean) => {
    for (const def of REPORTS) {
      if (def.report_type === "cloud_bill_by_resource" || (def.update_cadence === "on_period_close") !== frozen) continue;
      await fetchReport(def.report_type, "json"); // warm (JIT, plan cache)
      reports.push({ type: def.report_type, frozen, ...(await fetchReport(def.report_type, "json")) });
    }
  };
  // The open month, live: the daily and static reports (on_period_close ones show it empty until it is finalized).
  await timeReports(false);
  const { text, params } = liveReportSql(findReport("cloud_bill_by_resource")!, org.id, `${month}-01`, "aws", {});
  const literal = (v: unknown) => (v === null ? "NULL" : `'${String(v).replace(/'/g, "''")}'`);
  let copyOutBytes = 0;
  // Through the handle's copyOut: postgres.js's own COPY stream can leave its socket paused (see lib/db/postgres.ts).
  const copyOut = () => handle.copyOut!(`COPY (${text.replace(/\$(\d+)/g, (_, i) => literal(params[Number(i) - 1]))}) TO STDOUT WITH (FORMAT csv, HEADER true)`, (chunk) => void (copyOutBytes += chunk.length));
  // Both read the whole month: warm the cache once, so neither pays for the first read from disk.
  await copyOut();
  const csv = await fetchReport("cloud_bill_by_resource", "csv");
  copyOutBytes = 0;
  let t0 = performance.now();
  await copyOut();
  const copyOutMs = performance.now() - t0;
  // Close and freeze the month (as `periods close` does): the on_period_close reports then answer it, from the snapshot.
  await closeBillingPeriod(handle.db, org.id, "aws", month, after);
  t0 = performance.now();
  const frozen = await freezeClosedPeriods(handle.db, after, { orgId: org.id });
  const freezeMs = performance.now() - t0;
  await timeReports(true);
  await handle.close();
  await sql.end();

  const rows = imported.rows_imported as number;
  const ok = (b: boolean) => (b ? "ok" : "MISSED");
  const importCpu = cpuTotal(first.cpu);
  const typedCpu = cpuTotal(typedCopy.cpu);
  console.log(`\n${rows.toLocaleString("en-US")} rows, ${mb(bytes)} MB of FOCUS CSV, one month, parsed by ${imported.parsed_by}; database size after import ${mb(Number(size))} MB\n`);
  console.log(`| step | commitops | baseline (same run) | ratio | target |`);
  console.log(`|---|---|---|---|---|`);
  console.log(`| import (CLI), wall | ${sec(first.ms)} s, ${rate(rows, first.ms)} rows/s, peak RSS ${mb(first.peakRss)} MB | \\copy of the imported rows into a typed, indexed table ${sec(typedCopy.ms)} s; of the file into a text table ${sec(textCopy.ms)} s | ${(first.ms / typedCopy.ms).toFixed(2)}× typed, ${(first.ms / textCopy.ms).toFixed(2)}× text | ≤ 2× typed, RSS < 200 MB ${ok(first.ms / typedCopy.ms <= 2 && first.peakRss < 200 * 1048576)} |`);
  console.log(`| import (CLI), CPU | ${importCpu.toFixed(1)} s (${cpuText(first.cpu)}) | typed \\copy ${typedCpu.toFixed(1)} s (${cpuText(typedCopy.cpu)}); text \\copy ${cpuTotal(textCopy.cpu).toFixed(1)} s | ${(importCpu / typedCpu).toFixed(2)}× typed, ${(importCpu / cpuTotal(textCopy.cpu)).toFixed(2)}× text | ≤ 2× typed ${ok(importCpu / typedCpu <= 2)} |`);
  console.log(`| the same file again (unchanged: content digest) | ${sec(again.ms)} s, ${again.out.unchanged ? "nothing written" : "IMPORTED AGAIN"}, ${cpuText(again.cpu)} | the import | ${((again.ms / first.ms) * 100).toFixed(1)} % | < 10 % ${ok(again.out.unchanged && again.ms / first.ms < 0.1)} |`);
  console.log(`| the month restated (one row changed) | ${sec(restated.ms)} s, ${Number(reimported.rows_replaced).toLocaleString("en-US")} rows replaced, ${cpuText(restated.cpu)}, peak RSS ${mb(restated.peakRss)} MB | typed \\copy | ${(restated.ms / typedCopy.ms).toFixed(2)}× | |`);
  addHeadline({ figure: `import of ${rows.toLocaleString("en-US")} FOCUS rows (CLI), wall`, value: `${sec(first.ms)} s`, baseline: `typed \\copy ${sec(typedCopy.ms)} s`, ratio: `${(first.ms / typedCopy.ms).toFixed(2)}×`, goal: `≤ 2× ${ok(first.ms / typedCopy.ms <= 2)}` });
  addHeadline({ figure: `import of ${rows.toLocaleString("en-US")} FOCUS rows (CLI), CPU client + server`, value: `${importCpu.toFixed(1)} s`, baseline: `typed \\copy ${typedCpu.toFixed(1)} s`, ratio: `${(importCpu / typedCpu).toFixed(2)}×`, goal: `≤ 2× ${ok(importCpu / typedCpu <= 2)}` });
  addHeadline({ figure: "import peak RSS", value: `${mb(first.peakRss)} MB`, baseline: "", ratio: "", goal: `< 200 MB ${ok(first.peakRss < 200 * 1048576)}` });
  addHeadline({ figure: "the same month again, unchanged", value: `${sec(again.ms)} s`, baseline: `import ${sec(first.ms)} s`, ratio: `${((again.ms / first.ms) * 100).toFixed(1)} %`, goal: `< 10 % ${ok(again.out.unchanged && again.ms / first.ms < 0.1)}` });
  for (const r of reports) console.log(`| ${r.type} (JSON${r.frozen ? ", finalized month" : ""}) | ${Math.round(r.ms)} ms, ${(r.bytes / 1024).toFixed(0)} KB | | | < 300 ms ${ok(r.ms < 300)} |`);
  console.log(`| freeze of the month (every report's rows snapshotted) | ${sec(freezeMs)} s, ${frozen.reduce((n, f) => n + f.snapshot_rows, 0).toLocaleString("en-US")} rows | | | |`);
  const slowest = reports.reduce((m, r) => (r.ms > m.ms ? r : m), reports[0]!);
  addHeadline({ figure: `slowest report JSON, ${rows.toLocaleString("en-US")}-row month (${slowest.type})`, value: `${Math.round(slowest.ms)} ms`, baseline: "", ratio: "", goal: `< 300 ms ${ok(slowest.ms < 300)}` });
  addHeadline({ figure: "cloud_bill_by_resource CSV, whole month", value: `${sec(csv.ms)} s`, baseline: `COPY (query) TO STDOUT ${sec(copyOutMs)} s`, ratio: `${(csv.ms / copyOutMs).toFixed(2)}×`, goal: `≤ 1.5× ${ok(csv.ms / copyOutMs <= 1.5)}` });
  console.log(`| cloud_bill_by_resource (CSV) | ${sec(csv.ms)} s, ${mb(csv.bytes)} MB | COPY (query) TO STDOUT ${sec(copyOutMs)} s, ${mb(copyOutBytes)} MB | ${(csv.ms / copyOutMs).toFixed(2)}× | ≤ 1.5× ${ok(csv.ms / copyOutMs <= 1.5)} |`);
} catch (e) {
  console.error(e);
  exitCode = 1;
} finally {
  if (!process.env.SCALE_FILE) rmSync(dir, { recursive: true, force: true });
  await admin.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => {});
  await admin.end();
}
process.exit(exitCode);

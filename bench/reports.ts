/**
 * Billing import and report export against PostgreSQL's own bulk paths, in the same run:
 *  1. a generated FOCUS file of BENCH_ROWS usage rows (one month, one row per resource:
 *     monthly-grain, aws, 100 resources per linked account, no commitments so every usage row
 *     is its own resource) is imported with `importFocusFile` vs bare `COPY … FROM STDIN` of the
 *     same file into a text table (target: within 1.5×; also printed: COPY + INSERT … SELECT);
 *  2. the `cloud_bill_by_resource` report of that month (≈ BENCH_ROWS rows, one per resource)
 *     is downloaded as CSV through the real HTTP app (COPY of the formatted query → CRLF →
 *     stream on PostgreSQL) vs `COPY (the same SQL) TO STDOUT WITH CSV` (target: within 1.5×;
 *     peak RSS growth < 100 MB).
 *
 *   BENCH_ROWS=1000000 npx bun bench/reports.ts
 *   BENCH_DATABASE_URL=postgres://… (default postgres://postgres@127.0.0.1:5432/test; a fresh database is created and dropped)
 */
import postgres from "postgres";
import { closeSync, createReadStream, createWriteStream, mkdtempSync, openSync, readSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { spawnSync } from "node:child_process";
import { pipeline } from "node:stream/promises";
import { openDb } from "../lib/db/index.ts";
import { loadConfig } from "../lib/config.ts";
import { createLogger } from "../lib/log.ts";
import { createServices } from "../lib/services.ts";
import { createApp } from "../lib/http/app.ts";
import { createOrganization } from "../lib/orgs/service.ts";
import { createApiKey } from "../lib/auth/apiKeys.ts";
import { importFocusFile } from "../lib/billing/focus.ts";
import { findReport } from "../lib/reports/catalog.ts";
import { liveReportSql } from "../lib/reports/service.ts";

const ROWS = Number(process.env.BENCH_ROWS ?? 20_000);
const BASE = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const PER_ACCOUNT = 100;
const mb = (b: number) => (b / 1048576).toFixed(1);
const s = (ms: number) => (ms / 1000).toFixed(2);

if (process.argv[2] === "generate") {
  // Child process: write the FOCUS file and print {rows}.
  const [, , , out, accounts] = process.argv;
  const { writeFocusCsv } = await import("../lib/billing/generator.ts");
  const stream = createWriteStream(out!);
  const rows = await writeFocusCsv({ now: new Date(), months: 1, grain: "monthly", providers: ["aws"], accountsPerProvider: Number(accounts), resourcesPerAccount: PER_ACCOUNT, commitments: false }, stream);
  await new Promise<void>((r) => stream.end(r));
  console.log(JSON.stringify({ rows }));
  process.exit(0);
}

const dbName = `commitops_bench_reports_${Date.now().toString(36)}`;
const admin = postgres(BASE, { max: 1, onnotice: () => {} });
await admin.unsafe(`CREATE DATABASE ${dbName}`);
const url = Object.assign(new URL(BASE), { pathname: `/${dbName}` }).toString();
const dir = mkdtempSync(join(tmpdir(), "commitops-bench-"));
const file = join(dir, "focus.csv");
let exitCode = 0;

try {
  // The generator runs in its own process (this file with `generate`) so its memory does not count against the export.
  const now = new Date();
  const accounts = Math.max(1, Math.ceil(ROWS / PER_ACCOUNT));
  const gen = spawnSync(process.execPath, [import.meta.path, "generate", file, String(accounts)], { encoding: "utf8", maxBuffer: 1 << 24 });
  if (gen.status !== 0) throw new Error(`generator failed: ${gen.stderr}`);
  const fileRows = JSON.parse(gen.stdout.slice(gen.stdout.indexOf("{"))).rows as number;
  console.log(`generated ${fileRows.toLocaleString("en-US")} FOCUS rows (${mb(statSync(file).size)} MB) — ${accounts} accounts × ${PER_ACCOUNT} resources, commitments off`);

  const handle = await openDb({ url, migrate: true });
  const services = createServices(handle, loadConfig({ ...process.env, PUBLIC_URL: "http://localhost" }, { jobsEnabled: false, seedDemo: false }), createLogger("silent"));
  const org = await createOrganization(handle.db, { name: "bench" });
  const key = await createApiKey(handle.db, { orgId: org.id, scopes: ["reports:read"] });

  // 1. Import vs COPY FROM.
  const fd = openSync(file, "r");
  const head = Buffer.alloc(8192);
  readSync(fd, head, 0, head.length, 0);
  closeSync(fd);
  const header = head.toString("utf8").split("\n")[0]!.split(",");
  const raw = postgres(url, { max: 1, onnotice: () => {} });
  await raw.unsafe(`CREATE UNLOGGED TABLE copy_staging (${header.map((h, i) => `c${i} text`).join(", ")})`);
  let t0 = performance.now();
  await pipeline(createReadStream(file), await raw.unsafe(`COPY copy_staging FROM STDIN WITH (FORMAT csv, HEADER true)`).writable());
  const copyInMs = performance.now() - t0;
  // Same rows landing in billing_line_items with SQL only: INSERT … SELECT with casts from the staging table (rolled back).
  const c = (name: string) => `NULLIF(c${header.indexOf(name)}, '')`;
  const cast: [string, string][] = [
    ["billing_account_id", c("BillingAccountId")], ["billing_account_name", c("BillingAccountName")], ["sub_account_id", c("SubAccountId")], ["sub_account_name", c("SubAccountName")],
    ["billing_currency", c("BillingCurrency")], ["billing_period", `date_trunc('month', ${c("BillingPeriodStart")}::timestamptz AT TIME ZONE 'UTC')::date`],
    ["charge_period_start", `${c("ChargePeriodStart")}::timestamptz`], ["charge_period_end", `${c("ChargePeriodEnd")}::timestamptz`], ["charge_category", c("ChargeCategory")],
    ["charge_frequency", c("ChargeFrequency")], ["charge_description", c("ChargeDescription")], ["billed_cost", `${c("BilledCost")}::numeric`], ["effective_cost", `${c("EffectiveCost")}::numeric`],
    ["list_cost", `${c("ListCost")}::numeric`], ["contracted_cost", `${c("ContractedCost")}::numeric`], ["pricing_category", c("PricingCategory")], ["pricing_quantity", `${c("PricingQuantity")}::numeric`],
    ["pricing_unit", c("PricingUnit")], ["consumed_quantity", `${c("ConsumedQuantity")}::numeric`], ["consumed_unit", c("ConsumedUnit")], ["service_category", c("ServiceCategory")], ["service_name", c("ServiceName")],
    ["sku_id", c("SkuId")], ["sku_price_id", c("SkuPriceId")], ["resource_id", c("ResourceId")], ["resource_type", c("ResourceType")], ["region_id", c("RegionId")], ["region_name", c("RegionName")],
    ["instance_type", `${c("SkuPriceDetails")}::jsonb->>'InstanceType'`], ["tags", `${c("Tags")}::jsonb`], ["extra", `jsonb_build_object('SkuPriceDetails', ${c("SkuPriceDetails")}::jsonb)`],
  ];
  t0 = performance.now();
  await raw.begin(async (tx) => {
    await tx.unsafe(`INSERT INTO billing_line_items (org_id, provider, ${cast.map(([k]) => k).join(", ")}) SELECT '${org.id}', 'aws', ${cast.map(([, v]) => v).join(", ")} FROM copy_staging`);
    throw new Error("rollback");
  }).catch((e) => {
    if (e.message !== "rollback") throw e;
  });
  const copyInsertMs = copyInMs + (performance.now() - t0);
  await raw.unsafe(`DROP TABLE copy_staging`);
  t0 = performance.now();
  const imp = await importFocusFile(handle.db, org.id, file);
  const importMs = performance.now() - t0;
  if (imp.rows_imported !== fileRows) throw new Error(`imported ${imp.rows_imported} of ${fileRows}`);

  // 2. CSV export vs COPY TO.
  const def = findReport("cloud_bill_by_resource")!;
  const month = `${now.getUTCFullYear()}-${String(now.getUTCMonth() + 1).padStart(2, "0")}-01`;
  const { text, params } = liveReportSql(def, org.id, month, "aws", {});
  const literal = (v: unknown) => (v === null ? "NULL" : `'${String(v).replace(/'/g, "''")}'`);
  const copySql = text.replace(/\$(\d+)/g, (_, i) => literal(params[Number(i) - 1]));
  t0 = performance.now();
  let copyBytes = 0;
  // Through the handle's copyOut: postgres.js's own COPY stream can leave its socket paused (see lib/db/postgres.ts).
  await handle.copyOut!(`COPY (${copySql}) TO STDOUT WITH (FORMAT csv, HEADER true)`, (chunk) => void (copyBytes += chunk.length));
  const copyOutMs = performance.now() - t0;
  await raw.end();

  const app = createApp(services);
  // Warm-up (route, auth, JIT) with a one-account export, so RSS growth measures the rows only.
  const warm = await app.handle(
    new Request(`http://localhost/beta/v1/org/${org.id}/allocation-reports/cloud_bill_by_resource?year=${month.slice(0, 4)}&month=${Number(month.slice(5, 7))}&format=csv&account_id=210000000000`, {
      headers: { authorization: `Bearer ${key.key}` },
    }),
  );
  await warm.arrayBuffer();
  (globalThis as any).Bun?.gc?.(true);
  const rss0 = process.memoryUsage().rss;
  let peak = rss0;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  t0 = performance.now();
  const res = await app.handle(
    new Request(`http://localhost/beta/v1/org/${org.id}/allocation-reports/cloud_bill_by_resource?year=${month.slice(0, 4)}&month=${Number(month.slice(5, 7))}&format=csv`, {
      headers: { authorization: `Bearer ${key.key}` },
    }),
  );
  if (res.status !== 200) throw new Error(`export answered ${res.status}: ${await res.text()}`);
  let bytes = 0;
  let lines = 0;
  const reader = res.body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.length;
    for (let i = 0; i < value.length; i++) if (value[i] === 10) lines++;
  }
  const exportMs = performance.now() - t0;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  const reportRows = lines - 1;

  const importRatio = importMs / copyInMs;
  const exportRatio = exportMs / copyOutMs;
  const rssGrowth = peak - rss0;
  const ok = (b: boolean) => (b ? "ok" : "MISSED");
  console.log(`\n| step | rows | commitops | PostgreSQL COPY | ratio | target |`);
  console.log(`|---|---|---|---|---|---|`);
  console.log(`| FOCUS import | ${fileRows.toLocaleString("en-US")} | ${s(importMs)} s (${Math.round(fileRows / (importMs / 1000)).toLocaleString("en-US")} rows/s) | bare COPY FROM into a text table ${s(copyInMs)} s (+ INSERT … SELECT with casts into billing_line_items: ${s(copyInsertMs)} s) | ${importRatio.toFixed(2)}× (vs COPY+INSERT ${(importMs / copyInsertMs).toFixed(2)}×) | ≤ 1.5× ${ok(importRatio <= 1.5)} |`);
  console.log(`| CSV export cloud_bill_by_resource | ${reportRows.toLocaleString("en-US")} | ${s(exportMs)} s, ${mb(bytes)} MB | ${s(copyOutMs)} s, ${mb(copyBytes)} MB (COPY TO) | ${exportRatio.toFixed(2)}× | ≤ 1.5× ${ok(exportRatio <= 1.5)} |`);
  console.log(`| export peak RSS growth | | ${mb(rssGrowth)} MB | | | < 100 MB ${ok(rssGrowth < 100 * 1048576)} |`);
  await handle.close();
} catch (e) {
  console.error(e);
  exitCode = 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
  await admin.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => {});
  await admin.end();
}
process.exit(exitCode);

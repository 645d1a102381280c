/**
 * Catalog refresh of a large AWS offer file (issue 16): a real-format EC2 region offer file of
 * BENCH_AWS_OFFER_MB (default 220 MB; bench/fixtures/awsOfferFile.ts) read
 *   (a) streamed as the refresh reads it (fetchPriceDocument on a file: URL → streamAwsOfferFile)
 *       into a counting sink: the parser alone;
 *   (b) the whole `catalog refresh --from DIR` of that file (stream → spool → one transaction)
 *       into a fresh PostgreSQL database (BENCH_DATABASE_URL, default the local server), then
 *       again with nothing new (skipped by version) and forced (re-read, nothing written);
 *   (c) the same refresh into the embedded PGlite (its database lives in the process's memory);
 *   (d) the baseline: the file as one string, JSON.parse, then the same mapping (awsOfferFileBatch);
 * each in its own child process, so each peak RSS (VmHWM) is its own. Fails when the streaming
 * parse or the PostgreSQL refresh reaches 150 MB peak RSS, or the reads disagree.
 *
 *   npx bun bench/catalog-refresh.ts
 *   BENCH_AWS_OFFER_MB=400 npx bun bench/catalog-refresh.ts
 *   BENCH_AWS_OFFER_FILE=/path/index.json npx bun bench/catalog-refresh.ts   (an existing file)
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { runChild } from "./lib/child.ts";

const STREAM_RSS_BUDGET = 150 * 1024 * 1024;

interface ChildResult {
  seconds: number;
  skus: number;
  offers: number;
  peakRss: number;
  /** Refresh modes: the first refresh alone, then a second (unchanged version) and a forced re-read. */
  firstSeconds?: number;
  unchangedSeconds?: number;
  forcedSeconds?: number;
  rows?: number;
  forcedChanged?: number;
}

const VERSION = "20261101000000";

/** An offline tree (`catalog refresh --from DIR`) whose only feed is the file, linked in place. */
function offlineTree(file: string): string {
  const dir = mkdtempSync(join(tmpdir(), "commitops-refresh-bench-"));
  const base = join(dir, "aws", "offers", "v1.0", "aws");
  mkdirSync(join(base, "AmazonEC2", "current"), { recursive: true });
  mkdirSync(join(base, "AmazonEC2", VERSION, "us-east-1"), { recursive: true });
  writeFileSync(join(base, "index.json"), JSON.stringify({ formatVersion: "v1.0", disclaimer: "bench", publicationDate: "2026-11-01T00:00:00Z", offers: { AmazonEC2: { offerCode: "AmazonEC2", versionIndexUrl: "/offers/v1.0/aws/AmazonEC2/index.json", currentVersionUrl: "/offers/v1.0/aws/AmazonEC2/current/index.json", currentRegionIndexUrl: "/offers/v1.0/aws/AmazonEC2/current/region_index.json" } } }));
  writeFileSync(join(base, "AmazonEC2", "current", "region_index.json"), JSON.stringify({ formatVersion: "v1.0", disclaimer: "bench", publicationDate: "2026-11-01T00:00:00Z", regions: { "us-east-1": { regionCode: "us-east-1", currentVersionUrl: `/offers/v1.0/aws/AmazonEC2/${VERSION}/us-east-1/index.json` } } }));
  symlinkSync(file, join(base, "AmazonEC2", VERSION, "us-east-1", "index.json"));
  return dir;
}

async function refreshChild(mode: string, file: string): Promise<Partial<ChildResult>> {
  const { openDb } = await import("../lib/db/index.ts");
  const { refreshCatalog } = await import("../lib/catalog/refresh/index.ts");
  const { createLogger } = await import("../lib/log.ts");
  const postgres = (await import("postgres")).default;
  let url: string | undefined;
  let dropDb: (() => Promise<void>) | null = null;
  if (mode === "refresh-postgres") {
    const base = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
    const name = `commitops_bench_${Date.now().toString(36)}`;
    const admin = postgres(base, { max: 1, onnotice: () => {} });
    await admin.unsafe(`CREATE DATABASE ${name}`);
    await admin.end();
    const u = new URL(base);
    u.pathname = `/${name}`;
    url = u.toString();
    dropDb = async () => {
      const a = postgres(base, { max: 1, onnotice: () => {} });
      await a.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await a.end();
    };
  }
  const handle = await openDb({ url, migrate: true });
  const dir = offlineTree(file);
  try {
    const opts = {
      sources: { awsBaseUrl: "https://pricing.invalid", azureBaseUrl: "https://prices.invalid", gcpBaseUrl: "https://billing.invalid", gcpApiKey: null, offlineDir: dir },
      scope: { awsRegions: ["us-east-1"], awsServices: ["AmazonEC2"], awsSavingsPlans: [], azureRegions: [], azureServices: [], gcpRegions: [], gcpServices: [] },
      providers: ["aws" as const],
      holder: "bench",
      log: createLogger("warn", (l) => process.stderr.write(l + "\n")),
    };
    let t = performance.now();
    const first = await refreshCatalog(handle.db, opts);
    const firstSeconds = (performance.now() - t) / 1000;
    const feed = first.feeds[0];
    if (first.status !== "completed" || !feed?.applied) throw new Error(`refresh ${first.status}: ${JSON.stringify(first.feeds)}`);
    t = performance.now();
    const second = await refreshCatalog(handle.db, opts);
    const unchangedSeconds = (performance.now() - t) / 1000;
    if (second.feeds[0]?.status !== "unchanged") throw new Error("the second refresh was not skipped");
    t = performance.now();
    const forced = await refreshCatalog(handle.db, { ...opts, force: true });
    const forcedSeconds = (performance.now() - t) / 1000;
    const [{ n }] = (await handle.query<{ n: number }>(`SELECT ((SELECT count(*) FROM catalog_skus) + (SELECT count(*) FROM offers) + (SELECT count(*) FROM lease_menu_items) + (SELECT count(*) FROM sku_price_tiers))::int AS n`)) as [{ n: number }];
    return {
      skus: feed.applied.skus,
      // Provider offers only, as the other modes count them (the refresh adds the insured ones).
      offers: (await handle.query<{ n: number }>(`SELECT count(*)::int AS n FROM offers WHERE NOT is_insured`))[0]!.n,
      firstSeconds,
      unchangedSeconds,
      forcedSeconds,
      rows: n,
      forcedChanged: forced.feeds[0]?.applied?.changed ?? -1,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await handle.close();
    await dropDb?.();
  }
}

const peakRssOfSelf = () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? 0) * 1024;

if (process.argv[2] === "--child") {
  const [, , , mode, file] = process.argv;
  const t0 = performance.now();
  let skus = 0;
  let offers = 0;
  if (mode === "stream") {
    const { fetchPriceDocument } = await import("../lib/catalog/refresh/fetch.ts");
    const { streamAwsOfferFile } = await import("../lib/catalog/refresh/awsOfferStream.ts");
    const doc = await fetchPriceDocument(pathToFileURL(file!).href);
    await streamAwsOfferFile(doc.body!, { sku: () => void skus++, offer: () => void offers++ }, { offerCode: "AmazonEC2" });
  } else if (mode === "parse") {
    const { awsOfferFileBatch } = await import("../lib/catalog/importers.ts");
    const batch = awsOfferFileBatch(JSON.parse(readFileSync(file!, "utf8")));
    skus = batch.skus.length;
    offers = batch.offers.filter((o) => !o.isInsured).length;
  }
  let extra: Partial<ChildResult> = {};
  if (mode === "refresh-postgres" || mode === "refresh-pglite") extra = await refreshChild(mode, file!);
  const result: ChildResult = { seconds: (performance.now() - t0) / 1000, skus, offers, peakRss: peakRssOfSelf(), ...extra };
  console.log(JSON.stringify(result));
  process.exit(0);
}

const given = process.env.BENCH_AWS_OFFER_FILE;
const work = given ? null : mkdtempSync(join(tmpdir(), "commitops-offer-bench-"));
const file = given ?? join(work!, "index.json");
try {
  if (!given) {
    const { writeAwsOfferFile } = await import("./fixtures/awsOfferFile.ts");
    const mb = Number(process.env.BENCH_AWS_OFFER_MB ?? 220);
    const t0 = performance.now();
    const stats = writeAwsOfferFile(file, mb * 1024 * 1024);
    console.log(`generated ${(stats.bytes / 1048576).toFixed(1)} MB: ${stats.products} products (${stats.keptProducts} become SKUs), ${stats.reservedSkus} with reserved terms, in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  const size = statSync(file).size;
  const run = async (mode: string): Promise<ChildResult> => {
    const r = await runChild([import.meta.path, "--child", mode, file]);
    const out: ChildResult = JSON.parse(r.stdout.trim().split("\n").pop()!);
    // The child's own VmHWM at its end; the parent's polling is a floor check of it.
    return { ...out, peakRss: Math.max(out.peakRss, r.peakRss) };
  };
  const stream = await run("stream");
  const refreshPg = await run("refresh-postgres");
  const refreshPglite = await run("refresh-pglite");
  const whole = await run("parse");
  const mbOf = (b: number) => (b / 1048576).toFixed(0);
  console.log(`\nAWS EC2 region offer file, ${(size / 1048576).toFixed(1)} MB (Bun ${Bun.version})\n`);
  console.log("| read | seconds | MB/s | peak RSS (MB) | SKUs | provider offers |");
  console.log("|---|---:|---:|---:|---:|---:|");
  for (const [label, r] of [["streamed (awsOfferStream)", stream], ["JSON.parse whole + awsOfferFileBatch", whole]] as const) {
    console.log(`| ${label} | ${r.seconds.toFixed(2)} | ${(size / 1048576 / r.seconds).toFixed(1)} | ${mbOf(r.peakRss)} | ${r.skus} | ${r.offers} |`);
  }
  for (const [label, r] of [["`catalog refresh --from` into PostgreSQL (first)", refreshPg], ["`catalog refresh --from` into PGlite (first)", refreshPglite]] as const) {
    console.log(`| ${label} | ${r.firstSeconds!.toFixed(2)} | ${(size / 1048576 / r.firstSeconds!).toFixed(1)} | ${mbOf(r.peakRss)} | ${r.skus} | ${r.offers} |`);
  }
  console.log(`\nrefresh into PostgreSQL: ${refreshPg.rows} catalog rows; the same version again ${refreshPg.unchangedSeconds!.toFixed(2)} s (not downloaded); forced re-read ${refreshPg.forcedSeconds!.toFixed(2)} s, ${refreshPg.forcedChanged} rows written`);
  console.log(`refresh into PGlite: the same version again ${refreshPglite.unchangedSeconds!.toFixed(2)} s; forced re-read ${refreshPglite.forcedSeconds!.toFixed(2)} s, ${refreshPglite.forcedChanged} rows written`);
  console.log(`streaming: ${(whole.peakRss / stream.peakRss).toFixed(1)}× less peak memory, ${(stream.seconds / whole.seconds).toFixed(1)}× the time of JSON.parse`);
  let failed = false;
  if (stream.peakRss >= STREAM_RSS_BUDGET) {
    console.error(`streaming peak RSS ${mbOf(stream.peakRss)} MB is over the ${mbOf(STREAM_RSS_BUDGET)} MB budget`);
    failed = true;
  }
  if (refreshPg.peakRss >= STREAM_RSS_BUDGET) {
    console.error(`refresh peak RSS ${mbOf(refreshPg.peakRss)} MB is over the ${mbOf(STREAM_RSS_BUDGET)} MB budget`);
    failed = true;
  }
  if (refreshPg.forcedChanged !== 0 || refreshPglite.forcedChanged !== 0) {
    console.error("a forced re-read of the same file wrote rows");
    failed = true;
  }
  if (refreshPg.skus !== whole.skus || refreshPg.offers !== whole.offers || refreshPglite.skus !== whole.skus) {
    console.error(`the refresh disagrees with the whole-file read: ${refreshPg.skus}/${refreshPg.offers} vs ${whole.skus}/${whole.offers}`);
    failed = true;
  }
  if (stream.skus !== whole.skus || stream.offers !== whole.offers) {
    console.error(`the two reads disagree: ${stream.skus}/${stream.offers} vs ${whole.skus}/${whole.offers}`);
    failed = true;
  }
  if (failed) process.exitCode = 1;
} finally {
  if (work) rmSync(work, { recursive: true, force: true });
}

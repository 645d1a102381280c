/**
 * `catalog refresh` end to end (issue 16): the three providers' price APIs served in their real
 * shapes on loopback (tests/helpers/*PricingServer, *PricesServer, *CatalogServer), refreshed into
 * a real database, and the estimates priced through the HTTP app.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { openDb, type DatabaseHandle } from "../../lib/db/index.ts";
import { createLogger } from "../../lib/log.ts";
import { commands } from "../../scripts/cli/index.ts";
import { refreshCatalog, type RefreshOptions } from "../../lib/catalog/refresh/index.ts";
import { catalogRefreshJob } from "../../jobs/catalog-refresh.ts";
import { createServices } from "../../lib/services.ts";
import type { RefreshScope } from "../../lib/catalog/refresh/types.ts";
import { AWS_REFRESH_SERVICES, AWS_SAVINGS_PLAN_OFFERS } from "../../lib/catalog/refresh/scope.ts";
import { AWS_MAPPING_REVISION } from "../../lib/catalog/refresh/aws.ts";
import { startAwsPricingServer, awsSkuOf, type AwsPricingServer } from "../helpers/awsPricingServer.ts";
import { startAzurePricesServer, type AzurePricesServer } from "../helpers/azurePricesServer.ts";
import { startGcpCatalogServer, type GcpCatalogServer } from "../helpers/gcpCatalogServer.ts";
import { line } from "../estimates/helpers.ts";
import { ensurePublicCatalog } from "../../lib/catalog/seed.ts";

const M5 = "aws:ec2:us-east-1:m5.large:linux";
const SCOPE: RefreshScope = {
  awsRegions: ["us-east-1"],
  awsServices: AWS_REFRESH_SERVICES,
  awsSavingsPlans: AWS_SAVINGS_PLAN_OFFERS,
  azureRegions: ["eastus"],
  azureServices: ["Virtual Machines"],
  gcpRegions: ["us-central1"],
  gcpServices: ["Compute Engine"],
};

function rowsOf<T>(res: unknown): T[] {
  return (Array.isArray(res) ? res : (res as { rows: T[] }).rows) as T[];
}

/** The on-demand USD price of the product whose attributes match, read from the offer file as served. */
function onDemandOf(doc: any, awsSku: string): number {
  const term: any = Object.values(doc.terms.OnDemand[awsSku])[0];
  return Number((Object.values(term.priceDimensions)[0] as any).pricePerUnit.USD);
}

const isM5Linux = (a: Record<string, string>, family: string) =>
  family === "Compute Instance" && a.instanceType === "m5.large" && a.operatingSystem === "Linux" && a.tenancy === "Shared" && a.preInstalledSw === "NA" && a.capacitystatus === "Used";

describeEachDb("catalog refresh from the providers' price APIs", (driver) => {
  const t = useTestApp(driver);
  let aws: AwsPricingServer;
  let azure: AzurePricesServer;
  let gcp: GcpCatalogServer;
  const logs: Record<string, any>[] = [];
  const log = createLogger("info", (l) => logs.push(JSON.parse(l)));

  beforeAll(async () => {
    [aws, azure, gcp] = await Promise.all([startAwsPricingServer(), startAzurePricesServer({ pageSize: 20 }), startGcpCatalogServer({ skusPageSize: 40 })]);
  });
  afterAll(async () => {
    await Promise.all([aws?.close(), azure?.close(), gcp?.close()]);
  });

  const options = (over: Partial<RefreshOptions> = {}): RefreshOptions => ({
    sources: { awsBaseUrl: aws.url, azureBaseUrl: azure.url, gcpBaseUrl: gcp.url, gcpApiKey: gcp.apiKey, offlineDir: null },
    scope: SCOPE,
    holder: "test",
    log,
    ...over,
  });
  const skuRow = async (providerSkuId: string) =>
    rowsOf<{ id: string; source: string; feed: string; as_of: string; is_available: boolean; updated_at: string }>(
      await t.s.db.execute(sql`SELECT id, source, feed, as_of, is_available, updated_at::text FROM catalog_skus WHERE catalog_sku_org_id = 'public' AND provider_sku_id = ${providerSkuId}`),
    )[0]!;
  const catalogFingerprint = async () =>
    rowsOf<{ f: string }>(
      await t.s.db.execute(sql`SELECT (SELECT version FROM catalog_seed_state WHERE name = 'catalog_generation')
        || '|' || (SELECT count(*) || '/' || max(updated_at)::text FROM catalog_skus) || '|' || (SELECT count(*) || '/' || max(updated_at)::text FROM offers)
        || '|' || (SELECT count(*) || '/' || max(updated_at)::text FROM lease_menu_items) || '|' || (SELECT count(*)::text FROM sku_price_tiers) AS f`),
    )[0]!.f;
  const pricingOf = async (estimateId: string) => {
    const r = await t.orgRequest("GET", `/cost-estimates/${estimateId}`);
    expect(r.status).toBe(200);
    return (await r.json()).pricing;
  };
  let estimateId: string;

  test("first refresh: every provider's feeds applied, ids of the snapshot kept, source/as_of/feed on every price; an estimate is priced with the new rate", async () => {
    // An estimate on the snapshot's m5.large, made before any refresh.
    await ensurePublicCatalog(t.s.db);
    const before = await skuRow(M5);
    expect(before.feed).toBe("public_snapshot");
    const created = await t.orgRequest("POST", "/cost-estimates", { body: { provider: "aws", name: "m5", line_items: [line(before.id, { quantity: 2 })] } });
    expect(created.status).toBe(200);
    estimateId = (await created.json()).id;

    const report = await refreshCatalog(t.s.db, options());
    expect(report.status).toBe("completed");
    expect(report.providers.map((p) => [p.provider, p.feeds > 0])).toEqual([["aws", true], ["azure", true], ["gcp", true]]);
    expect(report.feeds.every((f) => f.status === "updated")).toBe(true);
    expect(report.feeds.map((f) => f.feed)).toContain("aws:AmazonEC2:us-east-1");

    const after = await skuRow(M5);
    expect(after.id).toBe(before.id); // repriced in place
    expect(after.feed).toBe("aws:AmazonEC2:us-east-1");
    expect(after.source).toStartWith("aws_price_list:AmazonEC2:");
    const offer = aws.offer("AmazonEC2", "us-east-1");
    const rate = onDemandOf(offer.doc, awsSkuOf(offer.doc, isM5Linux));
    // Hand-check: 2 instances × 730 h × the file's hourly rate.
    const pricing = await pricingOf(estimateId);
    expect(pricing.totals.ondemand_monthly_cost).toBeCloseTo(Math.round(2 * 730 * rate * 100) / 100, 2);
    // The day the database confirmed the feeds (its clock, not this process's: no flake at midnight).
    const [{ day }] = rowsOf<{ day: string }>(await t.s.db.execute(sql`SELECT to_char(min(checked_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day FROM catalog_feeds`));
    expect(pricing.prices_as_of).toBe(day);
    expect(pricing.stale).toBe(false);

    // Every refreshed price row says where it comes from and as of when.
    const unlabelled = rowsOf<{ n: number }>(
      await t.s.db.execute(sql`SELECT (SELECT count(*) FROM catalog_skus WHERE feed <> 'public_snapshot' AND (source = '' OR as_of = ''))
        + (SELECT count(*) FROM lease_menu_items WHERE feed <> 'public_snapshot' AND (source = '' OR as_of = '')) AS n`),
    )[0]!;
    expect(Number(unlabelled.n)).toBe(0);
    const feeds = rowsOf<{ feed: string; checked_at: string | null; version: string | null }>(await t.s.db.execute(sql`SELECT feed, checked_at::text, version FROM catalog_feeds ORDER BY feed`));
    expect(feeds.length).toBe(report.feeds.length);
    expect(feeds.every((f) => f.checked_at && f.version)).toBe(true);
    // Insured offers derived from the refreshed 3-year no-upfront rates.
    const insured = rowsOf<{ n: number }>(await t.s.db.execute(sql`SELECT count(*)::int AS n FROM offers WHERE is_insured AND feed = 'aws:AmazonEC2:us-east-1' AND is_available`))[0]!;
    expect(Number(insured.n)).toBeGreaterThan(0);
  });

  test("a refresh that finds nothing new writes nothing: no download of unchanged AWS files, no catalog row touched", async () => {
    const fingerprint = await catalogFingerprint();
    const offerPath = aws.offer("AmazonEC2", "us-east-1").path;
    const hits = aws.hits(offerPath);
    const checkedBefore = rowsOf<{ c: string }>(await t.s.db.execute(sql`SELECT max(checked_at)::text AS c FROM catalog_feeds`))[0]!.c;
    await Bun.sleep(20);
    const report = await refreshCatalog(t.s.db, options());
    expect(report.status).toBe("completed");
    expect(report.feeds.every((f) => f.status === "unchanged")).toBe(true);
    expect(aws.hits(offerPath)).toBe(hits);
    expect(await catalogFingerprint()).toBe(fingerprint);
    // …but the feeds were confirmed current.
    const checkedAfter = rowsOf<{ c: string }>(await t.s.db.execute(sql`SELECT min(checked_at)::text AS c FROM catalog_feeds`))[0]!.c;
    expect(checkedAfter > checkedBefore).toBe(true);
  });

  test("a price change reprices the estimate and moves as_of; only that feed is written", async () => {
    const offer = aws.offer("AmazonEC2", "us-east-1");
    const sku = awsSkuOf(offer.doc, isM5Linux);
    const azureFeedRow = rowsOf<{ changed_at: string | null }>(await t.s.db.execute(sql`SELECT changed_at::text FROM catalog_feeds WHERE feed LIKE 'azure:%'`))[0]!;
    aws.publishOffer("AmazonEC2", "us-east-1", "20261201000000", (doc) => {
      const term: any = Object.values(doc.terms.OnDemand[sku])[0];
      term.effectiveDate = "2026-12-01T00:00:00Z";
      (Object.values(term.priceDimensions)[0] as any).pricePerUnit.USD = "0.1234000000";
    });
    const spPath = aws.savingsPlan("AWSComputeSavingsPlan", "us-east-1").path;
    const spHits = aws.hits(spPath);
    const report = await refreshCatalog(t.s.db, options());
    expect(report.status).toBe("completed");
    const ec2 = report.feeds.find((f) => f.feed === "aws:AmazonEC2:us-east-1")!;
    expect(ec2.status).toBe("updated");
    // The region's Savings Plans file prices the offer file's SKUs: read again although its version
    // is the same (and, its rates unchanged, nothing written); no other region's is.
    expect(aws.hits(spPath)).toBe(spHits + 1);
    expect(report.feeds.find((f) => f.feed === "aws_sp:AWSComputeSavingsPlan:us-east-1")!.applied?.changed).toBe(0);
    expect(ec2.version).toBe(`20261201000000+m${AWS_MAPPING_REVISION}`);
    expect(report.feeds.filter((f) => f.feed !== ec2.feed).every((f) => f.status === "unchanged")).toBe(true);
    const pricing = await pricingOf(estimateId);
    expect(pricing.totals.ondemand_monthly_cost).toBe(180.16); // 2 × 730 × 0.1234
    const row = await skuRow(M5);
    expect(row.as_of).toBe("2026-12-01");
    expect(row.source).toBe("aws_price_list:AmazonEC2:20261201000000");
    const azureAfter = rowsOf<{ changed_at: string | null }>(await t.s.db.execute(sql`SELECT changed_at::text FROM catalog_feeds WHERE feed LIKE 'azure:%'`))[0]!;
    expect(azureAfter.changed_at).toBe(azureFeedRow.changed_at);
  });

  test("a SKU the provider withdraws is marked unavailable (never deleted) and its line shows sku_unavailable", async () => {
    const offer = aws.offer("AmazonEC2", "us-east-1");
    const sku = awsSkuOf(offer.doc, isM5Linux);
    aws.publishOffer("AmazonEC2", "us-east-1", "20261202000000", (doc) => {
      delete doc.products[sku];
      delete doc.terms.OnDemand[sku];
      delete doc.terms.Reserved?.[sku];
    });
    const report = await refreshCatalog(t.s.db, options({ providers: ["aws"] }));
    const ec2 = report.feeds.find((f) => f.feed === "aws:AmazonEC2:us-east-1")!;
    expect(ec2.applied?.withdrawnSkus).toBe(1);
    expect(ec2.applied?.withdrawnLeaseMenuItems).toBeGreaterThan(0);
    const row = await skuRow(M5);
    expect(row.is_available).toBe(false);
    const pricing = await pricingOf(estimateId);
    expect(pricing.line_items[0].status).toBe("sku_unavailable");
  });

  test("a refresh cut half-way keeps the previous prices and cursor, records the cause, and the next refresh recovers", async () => {
    const offer = aws.offer("AmazonEC2", "us-east-1");
    // A new version whose download is cut in the middle of the file.
    const version = aws.publishOffer("AmazonEC2", "us-east-1", "20261203000000", (doc) => doc);
    aws.fail(aws.offer("AmazonEC2", "us-east-1").path, "cut");
    const fingerprint = await catalogFingerprint();
    const report = await refreshCatalog(t.s.db, options({ providers: ["aws"] }));
    expect(report.status).toBe("partial");
    const ec2 = report.feeds.find((f) => f.feed === "aws:AmazonEC2:us-east-1")!;
    expect(ec2.status).toBe("failed");
    expect(ec2.error).toBeString();
    expect(await catalogFingerprint()).toBe(fingerprint);
    const feed = rowsOf<{ version: string; last_error: string | null }>(await t.s.db.execute(sql`SELECT version, last_error FROM catalog_feeds WHERE feed = 'aws:AmazonEC2:us-east-1'`))[0]!;
    expect(feed.version).toBe(`20261202000000+m${AWS_MAPPING_REVISION}`);
    expect(feed.last_error).toBe(ec2.error!);
    expect(logs.some((l) => l.level === "warn" && l.feed === "aws:AmazonEC2:us-east-1")).toBe(true);

    aws.fail(aws.offer("AmazonEC2", "us-east-1").path, null);
    const again = await refreshCatalog(t.s.db, options({ providers: ["aws"] }));
    const ok = again.feeds.find((f) => f.feed === "aws:AmazonEC2:us-east-1")!;
    // The same prices as the version before: only the cursor moves, no row is rewritten.
    expect(ok.status).toBe("unchanged");
    expect(ok.applied?.changed).toBe(0);
    expect(ok.version).toBe(`${version}+m${AWS_MAPPING_REVISION}`);
    expect(await catalogFingerprint()).toBe(fingerprint);
    const healed = rowsOf<{ version: string; last_error: string | null }>(await t.s.db.execute(sql`SELECT version, last_error FROM catalog_feeds WHERE feed = 'aws:AmazonEC2:us-east-1'`))[0]!;
    expect(healed).toEqual({ version: `${version}+m${AWS_MAPPING_REVISION}`, last_error: null });
    void offer;
  });

  test("a failure inside the database apply rolls the whole feed back: SKUs already written in it, tiers, cursor", async () => {
    const c5 = "aws:ec2:us-east-1:c5.xlarge:linux";
    const tierOf = async () =>
      rowsOf<{ unit_price: string }>(
        await t.s.db.execute(sql`SELECT p.unit_price::text FROM sku_price_tiers p JOIN catalog_skus s ON s.id = p.catalog_sku_id WHERE s.provider_sku_id = ${c5}`),
      )[0]!.unit_price;
    const before = await tierOf();
    const cursor = rowsOf<{ version: string }>(await t.s.db.execute(sql`SELECT version FROM catalog_feeds WHERE feed = 'aws:AmazonEC2:us-east-1'`))[0]!.version;
    const fingerprint = await catalogFingerprint();
    // A new on-demand price for c5.xlarge (written first, with the SKUs) and a reserved price the
    // database cannot hold (numeric overflow when the offers are written, after the SKUs).
    aws.publishOffer("AmazonEC2", "us-east-1", "20261203120000", (doc) => {
      const sku = awsSkuOf(doc, (a, f) => f === "Compute Instance" && a.instanceType === "c5.xlarge" && a.operatingSystem === "Linux" && a.tenancy === "Shared" && a.preInstalledSw === "NA" && a.capacitystatus === "Used");
      const od: any = Object.values(doc.terms.OnDemand[sku])[0];
      (Object.values(od.priceDimensions)[0] as any).pricePerUnit.USD = "0.9999000000";
      const ri: any = Object.values(doc.terms.Reserved[sku])[0];
      for (const d of Object.values<any>(ri.priceDimensions)) d.pricePerUnit.USD = "1e25";
    });
    const report = await refreshCatalog(t.s.db, options({ providers: ["aws"] }));
    const ec2 = report.feeds.find((f) => f.feed === "aws:AmazonEC2:us-east-1")!;
    expect(ec2.status).toBe("failed");
    expect(ec2.error).toStartWith("could not be applied");
    expect(await tierOf()).toBe(before);
    expect(await catalogFingerprint()).toBe(fingerprint);
    const after = rowsOf<{ version: string; last_error: string }>(await t.s.db.execute(sql`SELECT version, last_error FROM catalog_feeds WHERE feed = 'aws:AmazonEC2:us-east-1'`))[0]!;
    expect(after).toEqual({ version: cursor, last_error: ec2.error! });
    // The provider corrects the file: the next refresh applies it.
    aws.publishOffer("AmazonEC2", "us-east-1", "20261203130000", (doc) => {
      const sku = awsSkuOf(doc, (a, f) => f === "Compute Instance" && a.instanceType === "c5.xlarge" && a.operatingSystem === "Linux" && a.tenancy === "Shared" && a.preInstalledSw === "NA" && a.capacitystatus === "Used");
      const ri: any = Object.values(doc.terms.Reserved[sku])[0];
      for (const d of Object.values<any>(ri.priceDimensions)) d.pricePerUnit.USD = d.unit === "Quantity" ? "0" : "0.1000000000";
    });
    const fixed = await refreshCatalog(t.s.db, options({ providers: ["aws"] }));
    expect(fixed.feeds.find((f) => f.feed === "aws:AmazonEC2:us-east-1")!.status).toBe("updated");
    expect(Number(await tierOf())).toBe(0.9999);
  });

  test("Azure and GCP: a changed price is applied, an unchanged feed is not rewritten", async () => {
    const gcpFeed = rowsOf<{ changed_at: string | null }>(await t.s.db.execute(sql`SELECT changed_at::text FROM catalog_feeds WHERE feed LIKE 'gcp:%'`))[0]!;
    const changed = azure.setPrice((i) => i.armSkuName === "Standard_D2s_v5" && i.type === "Consumption" && !/Windows/.test(i.productName ?? ""), 0.5, "2026-11-01T00:00:00Z");
    expect(changed).toBeGreaterThan(0);
    const report = await refreshCatalog(t.s.db, options({ providers: ["azure", "gcp"] }));
    expect(report.feeds.find((f) => f.provider === "azure")!.status).toBe("updated");
    expect(report.feeds.find((f) => f.provider === "gcp")!.status).toBe("unchanged");
    const tier = rowsOf<{ unit_price: string; as_of: string }>(
      await t.s.db.execute(sql`SELECT p.unit_price::text, p.as_of FROM sku_price_tiers p JOIN catalog_skus s ON s.id = p.catalog_sku_id WHERE s.provider_sku_id = 'azure:vm:eastus:standard_d2s_v5:linux'`),
    )[0]!;
    expect(Number(tier.unit_price)).toBe(0.5);
    expect(tier.as_of).toBe("2026-11-01");
    const gcpAfter = rowsOf<{ changed_at: string | null }>(await t.s.db.execute(sql`SELECT changed_at::text FROM catalog_feeds WHERE feed LIKE 'gcp:%'`))[0]!;
    expect(gcpAfter.changed_at).toBe(gcpFeed.changed_at);
  });

  test("offline: `catalog refresh --from DIR` loads files already downloaded, with no network", async () => {
    const dir = await mkdtemp(join(tmpdir(), "commitops-offline-"));
    try {
      aws.publishOffer("AmazonEC2", "us-east-1", "20261204000000", (doc) => {
        const sku = awsSkuOf(doc, (a, f) => f === "Compute Instance" && a.instanceType === "c5.xlarge" && a.operatingSystem === "Linux" && a.tenancy === "Shared");
        const term: any = Object.values(doc.terms.OnDemand[sku])[0];
        (Object.values(term.priceDimensions)[0] as any).pricePerUnit.USD = "0.2000000000";
      });
      await Promise.all([aws.writeTo(dir), azure.writeOffline(join(dir, "azure")), gcp.writeOffline(join(dir, "gcp"))]);
      const requests = aws.requests.length + azure.requests.length + gcp.requests.length;
      const cmd = commands.find((c) => c.group === "catalog" && c.name === "refresh")!;
      const configured = { ...t.s, config: { ...t.s.config, catalogRefreshAwsRegions: ["us-east-1"], catalogRefreshAzureRegions: ["eastus"], catalogRefreshGcpRegions: ["us-central1"] } };
      const report: any = await cmd.run(configured, { from: dir }, []);
      expect(report.status).toBe("completed");
      expect(aws.requests.length + azure.requests.length + gcp.requests.length).toBe(requests);
      expect(cmd.exitCode!(report)).toBe(0);
      const tier = rowsOf<{ unit_price: string }>(
        await t.s.db.execute(sql`SELECT p.unit_price::text FROM sku_price_tiers p JOIN catalog_skus s ON s.id = p.catalog_sku_id WHERE s.provider_sku_id = 'aws:ec2:us-east-1:c5.xlarge:linux'`),
      )[0]!;
      expect(Number(tier.unit_price)).toBe(0.2);
      await expect(cmd.run(configured, { from: join(dir, "missing") }, [])).rejects.toThrow("not a directory");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("two replicas: one refresh at a time (the other is busy and writes nothing); the daily job refreshes once a day", async () => {
    let second: DatabaseHandle | null = null;
    // PostgreSQL: a second handle (its own pool), as a second replica has; PGlite: one process, two callers.
    if (driver === "postgres") second = await openDb({ url: t.db.url!, migrate: false });
    const other = second?.db ?? t.s.db;
    try {
      aws.publishOffer("AmazonEC2", "us-east-1", "20261205000000", (doc) => doc);
      const [a, b] = await Promise.all([refreshCatalog(t.s.db, options({ holder: "replica-a", providers: ["aws"] })), refreshCatalog(other, options({ holder: "replica-b", providers: ["aws"] }))]);
      expect([a.status, b.status].sort()).toEqual(["busy", "completed"]);
      const busy = a.status === "busy" ? a : b;
      expect(busy.feeds).toHaveLength(0);
      expect(busy.busy_with?.holder).toMatch(/^replica-[ab]$/);

      // The daily job on two replicas at the same wake: one refreshes, the other is busy or finds the day done.
      const config = { ...t.s.config, catalogRefreshEnabled: true, awsPricingBaseUrl: aws.url, azurePricesBaseUrl: azure.url, gcpBillingCatalogBaseUrl: gcp.url, gcpPricingApiKey: gcp.apiKey, catalogRefreshAwsRegions: ["us-east-1"], catalogRefreshAzureRegions: ["eastus"], catalogRefreshGcpRegions: ["us-central1"] };
      const day = new Date("2026-12-06T03:17:00Z");
      const replicaLogs: Record<string, any>[] = [];
      const replica = (db: typeof t.s.db, h: DatabaseHandle) => ({ ...createServices(h, config as any, createLogger("info", (l) => replicaLogs.push(JSON.parse(l))), { now: () => day }), db });
      const r1 = replica(t.s.db, t.s.handle);
      const r2 = replica(other, second ?? t.s.handle);
      await Promise.all([catalogRefreshJob.run(r1), catalogRefreshJob.run(r2)]);
      const finished = () => replicaLogs.filter((l) => l.msg === "catalog refresh finished").length;
      expect(finished()).toBe(1);
      // Later wakes the same day do nothing; the next day refreshes again.
      await catalogRefreshJob.run(r1);
      await catalogRefreshJob.run(r2);
      expect(finished()).toBe(1);
      const nextDay = { ...r2, now: () => new Date("2026-12-07T00:17:00Z") };
      await catalogRefreshJob.run(nextDay);
      expect(finished()).toBe(2);
      // Disabled: nothing at all.
      await catalogRefreshJob.run({ ...nextDay, config: { ...config, catalogRefreshEnabled: false } as any, now: () => new Date("2026-12-08T00:17:00Z") });
      expect(finished()).toBe(2);
    } finally {
      await second?.close();
    }
  });

  test("a forced re-read of unchanged feeds goes through the apply and writes nothing", async () => {
    const fingerprint = await catalogFingerprint();
    const report = await refreshCatalog(t.s.db, options({ force: true }));
    expect(report.status).toBe("completed");
    expect(report.feeds.length).toBeGreaterThan(3);
    for (const f of report.feeds) {
      expect(f.status).toBe("unchanged");
      expect(f.applied?.changed).toBe(0);
      expect(f.applied!.skus + f.applied!.offers).toBeGreaterThan(0);
    }
    expect(await catalogFingerprint()).toBe(fingerprint);
  });

  test("an answer that would withdraw most of a feed is refused (nothing written) unless forced", async () => {
    const fingerprint = await catalogFingerprint();
    const removed = azure.withdraw((i) => i.armRegionName === "eastus");
    expect(removed).toBeGreaterThan(0);
    const report = await refreshCatalog(t.s.db, options({ providers: ["azure"] }));
    const feed = report.feeds.find((f) => f.provider === "azure")!;
    expect(feed.status).toBe("failed");
    expect(feed.error).toContain("refused: it would withdraw");
    expect(await catalogFingerprint()).toBe(fingerprint);
    const forced = await refreshCatalog(t.s.db, options({ providers: ["azure"], force: true }));
    const applied = forced.feeds.find((f) => f.provider === "azure")!;
    expect(applied.status).toBe("updated");
    expect(applied.applied!.withdrawnSkus).toBeGreaterThan(0);
  });

  test("re-seeding a newer bundled snapshot never overwrites a price a refresh owns", async () => {
    const live = await skuRow("aws:ec2:us-east-1:c5.xlarge:linux");
    expect(live.feed).toBe("aws:AmazonEC2:us-east-1");
    const tierOf = async () =>
      rowsOf<{ unit_price: string }>(await t.s.db.execute(sql`SELECT unit_price::text FROM sku_price_tiers WHERE catalog_sku_id = ${live.id}`))[0]!.unit_price;
    const price = await tierOf();
    // As a new build would: the snapshot's version no longer matches, so start re-applies it.
    await t.s.db.execute(sql`DELETE FROM catalog_seed_state WHERE name = 'public_catalog'`);
    const seeded = await ensurePublicCatalog(t.s.db);
    expect(seeded.applied).toBe(true);
    const after = await skuRow("aws:ec2:us-east-1:c5.xlarge:linux");
    expect(after.feed).toBe("aws:AmazonEC2:us-east-1");
    expect(after.source).toBe(live.source);
    expect(await tierOf()).toBe(price);
  });
});

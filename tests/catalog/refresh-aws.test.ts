import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { awsCacheEngineKey, awsOfferFileBatch, awsSavingsPlansBatch } from "../../lib/catalog/importers.ts";
import type { OfferInput, SkuInput } from "../../lib/catalog/model.ts";
import { AWS_MAPPING_REVISION, awsVersionOf, listAwsFeeds } from "../../lib/catalog/refresh/aws.ts";
import { streamAwsOfferFile } from "../../lib/catalog/refresh/awsOfferStream.ts";
import { streamAwsSavingsPlans } from "../../lib/catalog/refresh/awsSavingsPlans.ts";
import { RefreshSourceError, type FeedReadResult, type FeedUnit, type RefreshContext, type RefreshScope } from "../../lib/catalog/refresh/types.ts";
import { awsSkuOf, INITIAL_VERSION, regionIndexPath, savingsPlanIndexPath, startAwsPricingServer, type AwsPricingServer } from "../helpers/awsPricingServer.ts";

const SERVICES = ["AmazonEC2", "AmazonRDS", "AmazonElastiCache", "AmazonES", "AmazonRedshift"];
const PLANS = ["AWSComputeSavingsPlan", "AWSDatabaseSavingsPlans"];
/** A feed's version: AWS's version of the file and the revision of the mapping that read it. */
const feedVersion = (awsVersion: string) => `${awsVersion}+m${AWS_MAPPING_REVISION}`;

/** Collects a feed's rows; checks what every reader owes the orchestrator as rows arrive. */
class MemorySink {
  skus: SkuInput[] = [];
  offers: OfferInput[] = [];
  private seen = new Set<string>();
  sku(s: SkuInput) {
    expect(this.seen.has(s.providerSkuId)).toBe(false);
    this.seen.add(s.providerSkuId);
    this.skus.push(s);
  }
  offer(o: OfferInput) {
    expect(o.isInsured ?? false).toBe(false);
    // Reserved offers price SKUs of their own file: those come first.
    if (o.commitmentType === "reserved_instance") for (const l of o.leases) expect(this.seen.has(l.providerSkuId)).toBe(true);
    this.offers.push(o);
  }
  skuById(id: string): SkuInput {
    const s = this.skus.find((x) => x.providerSkuId === id);
    if (!s) throw new Error(`no SKU ${id}`);
    return s;
  }
  offerByKey(key: string): OfferInput {
    const o = this.offers.find((x) => x.offerKey === key);
    if (!o) throw new Error(`no offer ${key}`);
    return o;
  }
}

const byId = (skus: SkuInput[]) => [...skus].sort((a, b) => a.providerSkuId.localeCompare(b.providerSkuId));
const byKey = (offers: OfferInput[]) => [...offers].sort((a, b) => a.offerKey.localeCompare(b.offerKey));

let server: AwsPricingServer;
beforeAll(async () => {
  server = await startAwsPricingServer();
});
afterAll(async () => {
  await server?.close();
});

const scopeOf = (s: Partial<RefreshScope> = {}): RefreshScope => ({
  awsRegions: "all",
  awsServices: SERVICES,
  awsSavingsPlans: PLANS,
  azureRegions: "all",
  azureServices: [],
  gcpRegions: "all",
  gcpServices: [],
  ...s,
});
const ctxOf = (scope: Partial<RefreshScope> = {}, offlineDir: string | null = null, awsBaseUrl = server.url): RefreshContext => ({
  sources: { awsBaseUrl, azureBaseUrl: "http://127.0.0.1:9", gcpBaseUrl: "http://127.0.0.1:9", gcpApiKey: null, offlineDir },
  scope: scopeOf(scope),
  signal: new AbortController().signal,
});
const signal = new AbortController().signal;

async function feed(name: string, ctx = ctxOf()): Promise<FeedUnit> {
  const f = (await listAwsFeeds(ctx)).find((u) => u.feed === name);
  if (!f) throw new Error(`no feed ${name}`);
  return f;
}
async function readFeed(name: string, ctx = ctxOf()): Promise<{ sink: MemorySink; result: FeedReadResult }> {
  const sink = new MemorySink();
  const result = await (await feed(name, ctx)).read(sink, null, signal);
  if (result === "unchanged") throw new Error("unexpected unchanged");
  return { sink, result };
}

describe("AWS Price List reader", () => {
  test("listing follows index → region index → file, filtered by scope; no offer file is read", async () => {
    const filesBefore = server.requests.filter((r) => /\/\d{14}\//.test(r.path)).length;
    const feeds = await listAwsFeeds(ctxOf({ awsRegions: ["us-east-1", "eu-central-1"] }));
    expect(feeds.map((f) => f.feed).sort()).toEqual(
      [
        "aws:AmazonEC2:us-east-1",
        "aws:AmazonES:us-east-1",
        "aws:AmazonElastiCache:eu-central-1",
        "aws:AmazonElastiCache:us-east-1",
        "aws:AmazonRDS:eu-central-1",
        "aws:AmazonRDS:us-east-1",
        "aws:AmazonRedshift:us-east-1",
        "aws_sp:AWSComputeSavingsPlan:us-east-1",
        "aws_sp:AWSDatabaseSavingsPlans:us-east-1",
      ].sort(),
    );
    expect(feeds.every((f) => f.provider === "aws")).toBe(true);
    // Listing reads indexes only; the out-of-scope service's region index is never asked for.
    expect(server.requests.filter((r) => /\/\d{14}\//.test(r.path)).length).toBe(filesBefore);
    expect(server.hits(regionIndexPath("AmazonS3"))).toBe(0);

    const all = await listAwsFeeds(ctxOf());
    expect(all.map((f) => f.feed)).toContain("aws:AmazonEC2:sa-east-1");
    expect(all.map((f) => f.feed)).toContain("aws_sp:AWSComputeSavingsPlan:sa-east-1");

    const ec2Index = server.hits(regionIndexPath("AmazonEC2"));
    const rdsOnly = await listAwsFeeds(ctxOf({ awsServices: ["AmazonRDS"], awsSavingsPlans: [] }));
    expect(rdsOnly.map((f) => f.feed).sort()).toEqual(["aws:AmazonRDS:eu-central-1", "aws:AmazonRDS:us-east-1"]);
    expect(server.hits(regionIndexPath("AmazonEC2"))).toBe(ec2Index);

    // An offer code the index does not list (a partial mirror) has no feeds; the others are listed as usual.
    const nope = await listAwsFeeds(ctxOf({ awsServices: ["AmazonNope", "AmazonRedshift"], awsSavingsPlans: [] }));
    expect(nope.map((f) => f.feed)).toEqual(["aws:AmazonRedshift:us-east-1"]);

    // A Savings Plans code that no service names and AWS does not publish: no feed, no failure.
    const plans = await listAwsFeeds(ctxOf({ awsServices: [], awsSavingsPlans: ["AWSNopeSavingsPlans", "AWSDatabaseSavingsPlans"], awsRegions: ["us-east-1"] }));
    expect(plans.map((f) => f.feed)).toEqual(["aws_sp:AWSDatabaseSavingsPlans:us-east-1"]);
    expect(server.requests.some((r) => r.path === savingsPlanIndexPath("AWSNopeSavingsPlans") && r.status === 404)).toBe(true);
  });

  test("EC2: the catalog's instance variant per type and OS, tiered other products, the RI grid", async () => {
    const { sink, result } = await readFeed("aws:AmazonEC2:us-east-1");
    expect(result).toEqual({ version: feedVersion(INITIAL_VERSION), etag: expect.stringMatching(/^"[0-9a-f]{32}"$/), publishedAt: "2026-11-01" });
    const instances = sink.skus.filter((s) => s.service === "compute").map((s) => s.providerSkuId);
    // Dedicated tenancy, capacity reservations, SQL Server and BYOL variants of m5.large are not SKUs.
    expect(instances.sort()).toEqual(["aws:ec2:us-east-1:c5.xlarge:linux", "aws:ec2:us-east-1:m4.large:linux", "aws:ec2:us-east-1:m5.large:linux", "aws:ec2:us-east-1:m5.large:windows"]);
    expect(sink.skuById("aws:ec2:us-east-1:m5.large:linux")).toMatchObject({ displayName: "AWS m5.large Linux us-east-1", instanceType: "m5.large", usageType: "BoxUsage:m5.large", usageUnit: "Hrs", tiers: [{ startQuantity: 0, endQuantity: null, unitPrice: 0.096 }] });
    expect(sink.skuById("aws:ec2:us-east-1:m5.large:windows").tiers[0]!.unitPrice).toBe(0.188);
    const transfer = sink.skus.find((s) => s.usageType === "DataTransfer-Out-Bytes")!;
    expect(transfer.providerSkuId).toMatch(/^aws:AmazonEC2:[0-9A-F]{16}$/);
    expect(transfer.usageUnit).toBe("GB");
    expect(transfer.tiers.map((t) => [t.startQuantity, t.endQuantity, t.unitPrice])).toEqual([
      [0, 10240, 0.09],
      [10240, 51200, 0.085],
      [51200, 153600, 0.07],
      [153600, null, 0.05],
    ]);
    expect(sink.skus.find((s) => s.usageType === "EBS:VolumeUsage.gp3")!.tiers).toEqual([{ startQuantity: 0, endQuantity: null, unitPrice: 0.08 }]);
    // A Dedicated Host is priced as a usage SKU; its host reservations are not Reserved Instance offers.
    const host = sink.skus.find((s) => s.usageType === "HostUsage:m5")!;
    expect(host).toMatchObject({ providerSkuId: expect.stringMatching(/^aws:AmazonEC2:[0-9A-F]{16}$/), service: "Dedicated Host", tiers: [{ startQuantity: 0, endQuantity: null, unitPrice: 5.069 }] });
    expect(sink.offers.filter((o) => o.leases.some((l) => l.providerSkuId === host.providerSkuId))).toEqual([]);
    expect(sink.offers.every((o) => o.commitmentType === "reserved_instance" && o.leases.every((l) => l.providerSkuId.startsWith("aws:ec2:us-east-1:")))).toBe(true);

    const c5 = sink.offers.filter((o) => o.leases[0]!.providerSkuId === "aws:ec2:us-east-1:c5.xlarge:linux");
    expect(c5.length).toBe(12);
    // Standard 1-year partial upfront: effective 0.102/h × 8,760 = 893.52; half upfront → 447, the rest (446.52) / 8,760 → 0.0510/h.
    const partial = sink.offerByKey("reserved_instance|standard|one_year|partial_upfront|aws:ec2:us-east-1:c5.xlarge:linux");
    expect(partial).toMatchObject({ commitmentType: "reserved_instance", offeringClass: "standard", contractTerm: "one_year", paymentOption: "partial_upfront", durationSeconds: 365 * 86400, region: "us-east-1", instanceType: "c5.xlarge", instanceFamily: "c5", productDescription: "Linux", isFlexible: false, lockInDays: 365 });
    expect(partial.leases).toEqual([{ providerSkuId: "aws:ec2:us-east-1:c5.xlarge:linux", recurringHourlyRate: 0.051, upfrontCost: 447, source: `aws_price_list:AmazonEC2:${INITIAL_VERSION}`, asOf: "2026-11-01" }]);
    // Convertible 3-year all upfront: 0.074 × 26,280 = 1,944.72 → 1,945 upfront, nothing hourly.
    const convertible = sink.offerByKey("reserved_instance|convertible|three_year|all_upfront|aws:ec2:us-east-1:c5.xlarge:linux");
    expect(convertible.isFlexible).toBe(true);
    expect(convertible.displayName).toBe("AWS 3-year Convertible Reserved Instance, all upfront (c5.xlarge us-east-1)");
    expect(convertible.leases[0]).toMatchObject({ recurringHourlyRate: 0, upfrontCost: 1945 });
    expect(sink.offerByKey("reserved_instance|standard|three_year|no_upfront|aws:ec2:us-east-1:c5.xlarge:linux").leases[0]).toMatchObject({ recurringHourlyRate: 0.071, upfrontCost: 0 });
    // The dedicated m5.large's reserved terms are not offers; the shared one's is.
    expect(sink.offers.filter((o) => o.instanceType === "m5.large").map((o) => o.offerKey).sort()).toEqual([
      "reserved_instance|standard|one_year|no_upfront|aws:ec2:us-east-1:m5.large:linux",
      "reserved_instance|standard|one_year|no_upfront|aws:ec2:us-east-1:m5.large:windows",
    ]);
    for (const s of sink.skus) expect([s.source, s.asOf]).toEqual([`aws_price_list:AmazonEC2:${INITIAL_VERSION}`, "2026-11-01"]);
    for (const o of sink.offers) for (const x of [o, ...o.leases]) expect([x.source, x.asOf]).toEqual([`aws_price_list:AmazonEC2:${INITIAL_VERSION}`, "2026-11-01"]);
  });

  test("RDS: Single-AZ instances by engine, storage kept as usage SKU, reserved DB instances with their splits", async () => {
    const us = (await readFeed("aws:AmazonRDS:us-east-1")).sink;
    // RDS on Outposts is not a SKU; SQL Server is, at the price of RDS proper, not of the RDS Custom instance listed before it.
    expect(us.skus.filter((s) => s.service === "database").map((s) => s.providerSkuId).sort()).toEqual([
      "aws:rds:us-east-1:db.m5.large:mysql",
      "aws:rds:us-east-1:db.m5.large:postgresql",
      "aws:rds:us-east-1:db.m5.large:sql-server-standard",
      "aws:rds:us-east-1:db.m6g.12xlarge:mysql",
    ]);
    expect(us.skuById("aws:rds:us-east-1:db.m5.large:sql-server-standard")).toMatchObject({ displayName: "AWS db.m5.large SQL Server Standard us-east-1", usageType: "InstanceUsage:db.m5.large", tiers: [{ startQuantity: 0, endQuantity: null, unitPrice: 0.977 }] });
    // The Multi-AZ product (0.342/h) is not the SKU: the Single-AZ price is.
    expect(us.skuById("aws:rds:us-east-1:db.m5.large:mysql")).toMatchObject({ displayName: "AWS db.m5.large MySQL us-east-1", databaseEngine: "MySQL", usageType: "InstanceUsage:db.m5.large", tiers: [{ startQuantity: 0, endQuantity: null, unitPrice: 0.171 }] });
    expect(us.skuById("aws:rds:us-east-1:db.m5.large:postgresql").tiers[0]!.unitPrice).toBe(0.178);
    expect(us.skus.find((s) => s.service === "Database Storage")).toMatchObject({ usageType: "RDS:GP2-Storage", usageUnit: "GB-Mo", tiers: [{ startQuantity: 0, endQuantity: null, unitPrice: 0.115 }] });
    expect(us.offerByKey("reserved_instance|standard|three_year|partial_upfront|aws:rds:us-east-1:db.m6g.12xlarge:mysql").leases[0]).toMatchObject({ recurringHourlyRate: 0.7482, upfrontCost: 19663 });
    expect(us.offers.some((o) => o.offerKey.includes("db.m5.large"))).toBe(false);

    const eu = (await readFeed("aws:AmazonRDS:eu-central-1")).sink;
    const pg = "aws:rds:eu-central-1:db.m6g.xlarge:postgresql";
    expect(eu.skuById(pg).tiers[0]!.unitPrice).toBe(0.379);
    const ri = (term: string, payment: string) => eu.offerByKey(`reserved_instance|standard|${term}|${payment}|${pg}`);
    expect(ri("one_year", "partial_upfront")).toMatchObject({ displayName: "AWS 1-year Standard Reserved DB Instance, partial upfront (db.m6g.xlarge eu-central-1)", instanceFamily: "m6g", productDescription: "PostgreSQL", region: "eu-central-1" });
    expect(ri("one_year", "partial_upfront").leases[0]).toMatchObject({ recurringHourlyRate: 0.1287, upfrontCost: 1128 });
    expect(ri("one_year", "all_upfront").leases[0]).toMatchObject({ recurringHourlyRate: 0, upfrontCost: 2212 });
    expect(ri("one_year", "no_upfront").leases[0]).toMatchObject({ recurringHourlyRate: 0.2705, upfrontCost: 0 });
    expect(ri("three_year", "partial_upfront").leases[0]).toMatchObject({ recurringHourlyRate: 0.0928, upfrontCost: 2438 });
    expect(eu.skuById("aws:rds:eu-central-1:db.m5.large:mysql").usageType).toBe("EUC1-InstanceUsage:db.m5.large");
  });

  test("ElastiCache, OpenSearch, Redshift: node SKUs and reservations; legacy purchase options skipped", async () => {
    const cache = (await readFeed("aws:AmazonElastiCache:us-east-1")).sink;
    const node = "aws:elasticache:us-east-1:cache.m5.large:redis";
    // The node's price, not the Extended Support surcharges listed before it under the same type and engine.
    expect(cache.skus.map((s) => s.providerSkuId)).toEqual([node]);
    expect(cache.skuById(node)).toMatchObject({ displayName: "AWS cache.m5.large Redis us-east-1", service: "cache", cacheEngine: "Redis", usageType: "NodeUsage:cache.m5.large", tiers: [{ startQuantity: 0, endQuantity: null, unitPrice: 0.156 }] });
    // Five current reservations; the file's "Heavy Utilization" one is not an offer.
    expect(cache.offers.map((o) => `${o.contractTerm}|${o.paymentOption}`).sort()).toEqual(["one_year|no_upfront", "one_year|partial_upfront", "three_year|all_upfront", "three_year|no_upfront", "three_year|partial_upfront"]);
    // 3-year all upfront: 0.070396 × 26,280 = 1,850.01 → 1,850. 1-year partial: 0.101685 × 8,760 = 890.76; 445 upfront, 445.76 / 8,760 → 0.0509/h.
    expect(cache.offerByKey(`reserved_instance|standard|three_year|all_upfront|${node}`).leases[0]).toMatchObject({ recurringHourlyRate: 0, upfrontCost: 1850 });
    expect(cache.offerByKey(`reserved_instance|standard|one_year|partial_upfront|${node}`)).toMatchObject({ displayName: "AWS 1-year Standard Reserved Cache Node, partial upfront (cache.m5.large us-east-1)", instanceFamily: "m5", productDescription: "Redis" });
    expect(cache.offerByKey(`reserved_instance|standard|one_year|partial_upfront|${node}`).leases[0]).toMatchObject({ recurringHourlyRate: 0.0509, upfrontCost: 445 });

    // "Redis OSS" keeps the snapshot's id (…:redis); Valkey nodes have their own.
    const eu = (await readFeed("aws:AmazonElastiCache:eu-central-1")).sink;
    expect(eu.skus.map((s) => s.providerSkuId).sort()).toEqual(["aws:elasticache:eu-central-1:cache.m5.large:redis", "aws:elasticache:eu-central-1:cache.m5.large:valkey", "aws:elasticache:eu-central-1:cache.t3.micro:redis"]);
    expect(eu.skuById("aws:elasticache:eu-central-1:cache.m5.large:redis")).toMatchObject({ cacheEngine: "Redis OSS", displayName: "AWS cache.m5.large Redis OSS eu-central-1", tiers: [{ startQuantity: 0, endQuantity: null, unitPrice: 0.186 }] });
    expect(eu.skuById("aws:elasticache:eu-central-1:cache.m5.large:valkey").tiers[0]!.unitPrice).toBe(0.1488);
    expect(["Redis", "Redis OSS", "Valkey", "Memcached", "redis"].map(awsCacheEngineKey)).toEqual(["redis", "redis", "valkey", "memcached", "redis"]);

    const search = (await readFeed("aws:AmazonES:us-east-1")).sink;
    expect(search.skus.filter((s) => s.service === "search").map((s) => s.providerSkuId).sort()).toEqual(["aws:opensearch:us-east-1:m5.large.search", "aws:opensearch:us-east-1:r6g.large.search"]);
    expect(search.skuById("aws:opensearch:us-east-1:m5.large.search")).toMatchObject({ displayName: "AWS OpenSearch m5.large.search us-east-1", providerService: "AmazonES", tiers: [{ startQuantity: 0, endQuantity: null, unitPrice: 0.142 }] });
    const searchRi = search.offerByKey("reserved_instance|standard|three_year|partial_upfront|aws:opensearch:us-east-1:m5.large.search");
    expect(searchRi).toMatchObject({ instanceFamily: "m5", durationSeconds: 3 * 365 * 86400 });
    expect(searchRi.leases[0]).toMatchObject({ recurringHourlyRate: 0.0316, upfrontCost: 832 });
    expect(search.skus.find((s) => s.service === "Amazon OpenSearch Service Volume")!.usageUnit).toBe("GB-Mo");

    const warehouse = (await readFeed("aws:AmazonRedshift:us-east-1")).sink;
    expect(warehouse.skus.filter((s) => s.service === "data_warehouse").map((s) => s.providerSkuId).sort()).toEqual(["aws:redshift:us-east-1:dc2.large", "aws:redshift:us-east-1:ra3.xlplus"]);
    expect(warehouse.skuById("aws:redshift:us-east-1:ra3.xlplus").tiers[0]!.unitPrice).toBe(1.086);
    expect(warehouse.offerByKey("reserved_instance|standard|three_year|all_upfront|aws:redshift:us-east-1:dc2.large").leases[0]).toMatchObject({ recurringHourlyRate: 0, upfrontCost: 2740 });
    expect(warehouse.offerByKey("reserved_instance|standard|one_year|partial_upfront|aws:redshift:us-east-1:ra3.xlplus")).toMatchObject({ displayName: "AWS 1-year Standard Reserved Node, partial upfront (ra3.xlplus us-east-1)", instanceFamily: "ra3" });
    expect(warehouse.offerByKey("reserved_instance|standard|one_year|partial_upfront|aws:redshift:us-east-1:ra3.xlplus").leases[0]).toMatchObject({ recurringHourlyRate: 0.4073, upfrontCost: 3568 });
  });

  test("Savings Plans: compute and EC2 instance rates on EC2 SKUs, database rates on RDS SKUs", async () => {
    const { sink, result } = await readFeed("aws_sp:AWSComputeSavingsPlan:us-east-1");
    expect(result.version).toBe(feedVersion(INITIAL_VERSION));
    expect(sink.skus).toEqual([]);
    const source = `aws_savings_plans:AWSComputeSavingsPlan:${INITIAL_VERSION}`;
    const compute1 = sink.offerByKey("compute_savings_plan||one_year|no_upfront|all");
    expect(compute1).toMatchObject({ planType: "compute", region: null, instanceFamily: null, isFlexible: true, durationSeconds: 365 * 86400, displayName: "AWS 1-year Compute Savings Plan, no upfront", source, asOf: "2026-11-01" });
    // Fargate, dedicated tenancy and the Local Zone's usage are not catalog SKUs.
    expect(compute1.leases.map((l) => [l.providerSkuId, l.recurringHourlyRate, l.upfrontCost])).toEqual([
      ["aws:ec2:us-east-1:c5.xlarge:linux", 0.1207, 0],
      ["aws:ec2:us-east-1:m5.large:linux", 0.0682, 0],
      ["aws:ec2:us-east-1:m5.large:windows", 0.1602, 0],
    ]);
    // All upfront: the whole term's rate upfront, 0.0782 × 26,280 = 2,055.096.
    const compute3 = sink.offerByKey("compute_savings_plan||three_year|all_upfront|all");
    expect(compute3.leases.length).toBe(1);
    expect(compute3.leases[0]!.recurringHourlyRate).toBe(0);
    expect(compute3.leases[0]!.upfrontCost).toBe(2055.096);
    // EC2 instance plan for m5, partial upfront: half the rate hourly, half × 26,280 upfront, in
    // exact decimals (0.5499 × 26,280 × 0.5 is 7,225.686000000001 in binary floating point).
    const m5 = sink.offerByKey("ec2_instance_savings_plan||three_year|partial_upfront|us-east-1|m5");
    expect(m5).toMatchObject({ commitmentType: "ec2_instance_savings_plan", planType: "ec2_instance", region: "us-east-1", instanceFamily: "m5", displayName: "AWS 3-year EC2 Instance Savings Plan, partial upfront (m5 us-east-1)" });
    expect(m5.leases.map((l) => [l.providerSkuId, l.recurringHourlyRate, l.upfrontCost])).toEqual([
      ["aws:ec2:us-east-1:m5.large:linux", 0.0207, 543.996],
      ["aws:ec2:us-east-1:m5.large:windows", 0.0667, 1752.876],
      ["aws:ec2:us-east-1:m5.2xlarge:windows", 0.27495, 7225.686],
    ]);
    expect(sink.offerByKey("ec2_instance_savings_plan||one_year|no_upfront|us-east-1|c5").leases).toMatchObject([{ providerSkuId: "aws:ec2:us-east-1:c5.xlarge:linux", recurringHourlyRate: 0.1071, upfrontCost: 0 }]);
    expect(sink.offers.length).toBe(4);

    const db = (await readFeed("aws_sp:AWSDatabaseSavingsPlans:us-east-1")).sink;
    expect(db.offers.length).toBe(1);
    const plan = db.offers[0]!;
    expect(plan).toMatchObject({ offerKey: "database_savings_plan||one_year|no_upfront|all", commitmentType: "database_savings_plan", planType: "database", region: null, isFlexible: true, displayName: "AWS 1-year Database Savings Plan, no upfront", source: `aws_savings_plans:AWSDatabaseSavingsPlans:${INITIAL_VERSION}` });
    // Engines from the RDS operation codes (0002 MySQL, 0014 PostgreSQL); Multi-AZ, Aurora Serverless and ElastiCache rates left out.
    expect(plan.leases.map((l) => [l.providerSkuId, l.recurringHourlyRate, l.upfrontCost])).toEqual([
      ["aws:rds:us-east-1:db.m5.large:mysql", 0.1368, 0],
      ["aws:rds:us-east-1:db.m5.large:postgresql", 0.1424, 0],
    ]);
  });

  test("streaming and the whole-document importers give the same SKUs and offers for every file", async () => {
    const feeds = await listAwsFeeds(ctxOf());
    for (const f of feeds) {
      const online = new MemorySink();
      const r = await f.read(online, null, signal);
      expect(r).not.toBe("unchanged");
      const [kind, code, region] = f.feed.split(":") as [string, string, string];
      const isSavingsPlan = kind === "aws_sp";
      const { path } = isSavingsPlan ? server.savingsPlan(code, region) : server.offer(code, region);
      const text = await (await fetch(server.url + path)).text();
      const doc = JSON.parse(text);
      const batch = isSavingsPlan ? awsSavingsPlansBatch(doc) : awsOfferFileBatch(doc);
      expect(byId(online.skus)).toEqual(byId(batch.skus));
      expect(byKey(online.offers)).toEqual(byKey(batch.offers.filter((o) => !o.isInsured)));
      // The same bytes cut at every 97th byte (chunk boundaries inside keys, numbers, escapes).
      const chunked = new MemorySink();
      const bytes = new TextEncoder().encode(text);
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          for (let i = 0; i < bytes.length; i += 97) c.enqueue(bytes.subarray(i, i + 97));
          c.close();
        },
      });
      if (isSavingsPlan) await streamAwsSavingsPlans(body, chunked, { offerCode: code });
      else await streamAwsOfferFile(body, chunked, { offerCode: code });
      expect(byId(chunked.skus)).toEqual(byId(online.skus));
      expect(byKey(chunked.offers)).toEqual(byKey(online.offers));
    }
  });

  test("an unchanged version is not downloaded; a changed file is read again; ETag 304 is unchanged", async () => {
    const unit = await feed("aws:AmazonElastiCache:eu-central-1");
    const { path } = server.offer("AmazonElastiCache", "eu-central-1");
    const first = await unit.read(new MemorySink(), null, signal);
    if (first === "unchanged") throw new Error("unexpected");
    const hits = server.hits(path);
    expect(await unit.read(new MemorySink(), first, signal)).toBe("unchanged");
    expect(server.hits(path)).toBe(hits);

    // A cursor of another version but the same ETag: asked with If-None-Match, answered 304.
    expect(await unit.read(new MemorySink(), { version: feedVersion("20261001000000"), etag: first.etag }, signal)).toBe("unchanged");
    expect(server.hits(path)).toBe(hits + 1);
    expect(server.requests.at(-1)).toEqual({ path, ifNoneMatch: first.etag, status: 304 });

    // The same file read by another revision of the mapping (or before revisions were recorded):
    // read again, unconditionally, for the rows the mapping now gives.
    for (const version of [INITIAL_VERSION, `${INITIAL_VERSION}+m${AWS_MAPPING_REVISION - 1}`]) {
      const sink = new MemorySink();
      const again = await unit.read(sink, { version, etag: first.etag }, signal);
      expect(again).toEqual(first);
      expect(server.requests.at(-1)).toEqual({ path, ifNoneMatch: null, status: 200 });
      expect(sink.skus.map((x) => x.providerSkuId).sort()).toEqual(["aws:elasticache:eu-central-1:cache.m5.large:redis", "aws:elasticache:eu-central-1:cache.m5.large:valkey", "aws:elasticache:eu-central-1:cache.t3.micro:redis"]);
    }
  });

  test("a new published version: new prices and effective dates, a withdrawn SKU is no longer listed", async () => {
    const before = await readFeed("aws:AmazonEC2:us-east-1");
    const next = "20261201000000";
    server.publishOffer("AmazonEC2", "us-east-1", next, (doc) => {
      const m5 = awsSkuOf(doc, (a) => a.instanceType === "m5.large" && a.operatingSystem === "Linux" && a.tenancy === "Shared" && a.capacitystatus === "Used" && a.preInstalledSw === "NA" && a.licenseModel === "No License required");
      const od: any = Object.values(doc.terms.OnDemand[m5])[0];
      od.effectiveDate = "2026-12-01T00:00:00Z";
      (Object.values(od.priceDimensions)[0] as any).pricePerUnit.USD = "0.0912000000";
      const c5 = awsSkuOf(doc, (a) => a.instanceType === "c5.xlarge");
      for (const t of Object.values<any>(doc.terms.Reserved[c5])) t.effectiveDate = "2026-12-15T00:00:00Z";
      const m4 = awsSkuOf(doc, (a) => a.instanceType === "m4.large");
      delete doc.products[m4];
      delete doc.terms.OnDemand[m4];
      delete doc.terms.Reserved[m4];
    });
    const unit = await feed("aws:AmazonEC2:us-east-1");
    const sink = new MemorySink();
    const result = await unit.read(sink, before.result, signal);
    expect(result).toMatchObject({ version: feedVersion(next), publishedAt: "2026-12-01" });
    expect(server.requests.at(-1)).toMatchObject({ path: `/offers/v1.0/aws/AmazonEC2/${next}/us-east-1/index.json`, status: 200 });
    expect(sink.skuById("aws:ec2:us-east-1:m5.large:linux")).toMatchObject({ tiers: [{ startQuantity: 0, endQuantity: null, unitPrice: 0.0912 }], source: `aws_price_list:AmazonEC2:${next}`, asOf: "2026-12-01" });
    expect(sink.skus.some((s) => s.providerSkuId === "aws:ec2:us-east-1:m4.large:linux")).toBe(false);
    expect(sink.offers.some((o) => o.instanceType === "m4.large")).toBe(false);
    // An offer's as-of is its term's effective date: changed for c5.xlarge, as before for m5.large.
    expect(sink.offerByKey("reserved_instance|standard|one_year|partial_upfront|aws:ec2:us-east-1:c5.xlarge:linux").asOf).toBe("2026-12-15");
    expect(sink.offerByKey("reserved_instance|standard|one_year|no_upfront|aws:ec2:us-east-1:m5.large:linux").asOf).toBe("2026-11-01");
    // And once read, the new version is not downloaded again.
    if (result === "unchanged") throw new Error("unexpected");
    expect(await unit.read(new MemorySink(), result, signal)).toBe("unchanged");
  });

  test("a body cut half-way, an HTTP 500 for one region: RefreshSourceError for that feed only", async () => {
    const cut = server.offer("AmazonRDS", "us-east-1").path;
    server.fail(cut, "cut");
    try {
      const err = await (await feed("aws:AmazonRDS:us-east-1")).read(new MemorySink(), null, signal).catch((e) => e);
      expect(err).toBeInstanceOf(RefreshSourceError);
      expect((err as RefreshSourceError).retryable).toBe(true);
      expect((err as Error).message).toMatch(/broke off|truncated/);
    } finally {
      server.fail(cut, null);
    }

    const failing = server.savingsPlan("AWSComputeSavingsPlan", "us-east-1").path;
    server.fail(failing, 500);
    try {
      const feeds = await listAwsFeeds(ctxOf());
      const err = await feeds.find((f) => f.feed === "aws_sp:AWSComputeSavingsPlan:us-east-1")!.read(new MemorySink(), null, signal).catch((e) => e);
      expect(err).toBeInstanceOf(RefreshSourceError);
      expect((err as Error).message).toMatch(/HTTP 500/);
      expect((err as RefreshSourceError).retryable).toBe(true);
      // The other region of the same plan reads as usual.
      const other = new MemorySink();
      await feeds.find((f) => f.feed === "aws_sp:AWSComputeSavingsPlan:sa-east-1")!.read(other, null, signal);
      expect(other.offers.length).toBe(2);
    } finally {
      server.fail(failing, null);
    }

    // A region index that fails (an error status, a body cut short) fails that offer code's
    // feed only: the other codes' feeds are listed and read as usual.
    for (const how of [500, "cut"] as const) {
      server.fail(regionIndexPath("AmazonRedshift"), how);
      server.fail(savingsPlanIndexPath("AWSComputeSavingsPlan"), how);
      try {
        const feeds = await listAwsFeeds(ctxOf());
        const names = feeds.map((f) => f.feed);
        expect(names.filter((n) => n.includes("Redshift") || n.includes("AWSComputeSavingsPlan"))).toEqual(["aws:AmazonRedshift:*", "aws_sp:AWSComputeSavingsPlan:*"]);
        expect(names).toContain("aws:AmazonES:us-east-1");
        expect(names).toContain("aws_sp:AWSDatabaseSavingsPlans:us-east-1");
        for (const name of ["aws:AmazonRedshift:*", "aws_sp:AWSComputeSavingsPlan:*"]) {
          const err = await feeds.find((f) => f.feed === name)!.read(new MemorySink(), null, signal).catch((e) => e);
          expect(err).toBeInstanceOf(RefreshSourceError);
          expect((err as Error).message).toMatch(how === 500 ? /HTTP 500/ : /broke off/);
          expect((err as RefreshSourceError).retryable).toBe(true);
        }
        const es = new MemorySink();
        await feeds.find((f) => f.feed === "aws:AmazonES:us-east-1")!.read(es, null, signal);
        expect(es.skus.length).toBeGreaterThan(0);
      } finally {
        server.fail(regionIndexPath("AmazonRedshift"), null);
        server.fail(savingsPlanIndexPath("AWSComputeSavingsPlan"), null);
      }
    }

    // Without the offer index there is nothing to list: the provider fails, retryably.
    server.fail("/offers/v1.0/aws/index.json", "cut");
    try {
      const err = await listAwsFeeds(ctxOf()).catch((e) => e);
      expect(err).toBeInstanceOf(RefreshSourceError);
      expect((err as RefreshSourceError).retryable).toBe(true);
    } finally {
      server.fail("/offers/v1.0/aws/index.json", null);
    }
  });

  test("products sharing an id: the same winner whatever their order in the file (the lowest AWS SKU code)", async () => {
    const version = server.publishOffer("AmazonRedshift", "us-east-1", "20261203000000", (doc) => {
      const dc2 = awsSkuOf(doc, (a, f) => f === "Compute Instance" && a.instanceType === "dc2.large");
      // The same node under a lower SKU code, listed after it, at another price.
      const twin = "0000000000000000";
      doc.products[twin] = { ...structuredClone(doc.products[dc2]), sku: twin };
      const od: any = structuredClone(Object.values(doc.terms.OnDemand[dc2])[0]);
      od.sku = twin;
      od.priceDimensions = Object.fromEntries(Object.values<any>(od.priceDimensions).map((d) => [d.rateCode.replace(dc2, twin), { ...d, rateCode: d.rateCode.replace(dc2, twin), pricePerUnit: { USD: "0.2600000000" } }]));
      doc.terms.OnDemand[twin] = { [`${twin}.${od.offerTermCode}`]: od };
    });
    const { sink, result } = await readFeed("aws:AmazonRedshift:us-east-1");
    expect(result.version).toBe(feedVersion(version));
    expect(sink.skus.filter((s) => s.providerSkuId === "aws:redshift:us-east-1:dc2.large").map((s) => s.tiers[0]!.unitPrice)).toEqual([0.26]);
    // The twin has no reservations: the node's are not carried over to it.
    expect(sink.offers.some((o) => o.offerKey.endsWith("dc2.large"))).toBe(false);
    const doc = JSON.parse(await (await fetch(server.url + server.offer("AmazonRedshift", "us-east-1").path)).text());
    expect(byId(awsOfferFileBatch(doc).skus)).toEqual(byId(sink.skus));
    // Reversed order, same winner.
    const reversed = { ...doc, products: Object.fromEntries(Object.entries(doc.products).reverse()) };
    expect(byId(awsOfferFileBatch(reversed).skus)).toEqual(byId(sink.skus));
  });

  test("terms before products, or a body that is not JSON: RefreshSourceError, not a partial read", async () => {
    server.publishOffer("AmazonES", "us-east-1", "20261202000000", (doc) => ({ formatVersion: doc.formatVersion, disclaimer: doc.disclaimer, offerCode: doc.offerCode, version: doc.version, publicationDate: doc.publicationDate, terms: doc.terms, products: doc.products }));
    const err = await (await feed("aws:AmazonES:us-east-1")).read(new MemorySink(), null, signal).catch((e) => e);
    expect(err).toBeInstanceOf(RefreshSourceError);
    expect((err as Error).message).toMatch(/terms before products/);

    server.publishSavingsPlan("AWSDatabaseSavingsPlans", "us-east-1", "20261202000000", (doc) => ({ version: doc.version, publicationDate: doc.publicationDate, regionCode: doc.regionCode, terms: doc.terms, products: doc.products }));
    const spErr = await (await feed("aws_sp:AWSDatabaseSavingsPlans:us-east-1")).read(new MemorySink(), null, signal).catch((e) => e);
    expect(spErr).toBeInstanceOf(RefreshSourceError);
    expect((spErr as Error).message).toMatch(/terms before products/);

    const garbage = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('{ "offerCode" : "AmazonEC2", "products" : { "X" : { "sku" : "X", ] } }'));
        c.close();
      },
    });
    const parseErr = await streamAwsOfferFile(garbage, new MemorySink()).catch((e) => e);
    expect(parseErr).toBeInstanceOf(RefreshSourceError);
    expect((parseErr as RefreshSourceError).retryable).toBe(false);
    expect((parseErr as Error).message).toBe("AWS offer file is not valid JSON (in the bytes from 0)");

    // What the parser quotes of the file (here a value out of place) stays out of the error.
    const leak = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('{ "offerCode" : "AmazonEC2", "products" : { "X" : '));
        c.enqueue(new TextEncoder().encode('"SECRET-BYTES" "LEAK-ME" } }'));
        c.close();
      },
    });
    const leakErr = await streamAwsOfferFile(leak, new MemorySink()).catch((e) => e);
    expect(leakErr).toBeInstanceOf(RefreshSourceError);
    expect((leakErr as Error).message).not.toMatch(/LEAK|SECRET/);
    expect((leakErr as Error).message).toBe("AWS offer file is not valid JSON (in the bytes from 50)");
    // A byte the tokenizer cannot read is placed exactly.
    const stray = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('{ "offerCode" : "AmazonEC2", "products" : { "X" : #private# } }'));
        c.close();
      },
    });
    expect(((await streamAwsOfferFile(stray, new MemorySink()).catch((e) => e)) as Error).message).toBe("AWS offer file is not valid JSON (at byte 50)");
  });

  test("offline (--from DIR): the same tree read from files, nothing asked of the network", async () => {
    const dir = await mkdtemp(join(tmpdir(), "aws-prices-"));
    try {
      await server.writeTo(dir);
      const count = server.requests.length;
      // The base URL points nowhere: an offline refresh must not use it.
      const offline = ctxOf({ awsRegions: ["eu-central-1", "us-east-1"] }, dir, "http://127.0.0.1:9");
      const feeds = await listAwsFeeds(offline);
      expect(feeds.map((f) => f.feed)).toContain("aws:AmazonRDS:eu-central-1");
      expect(feeds.map((f) => f.feed)).toContain("aws_sp:AWSDatabaseSavingsPlans:us-east-1");
      const sink = new MemorySink();
      const unit = feeds.find((f) => f.feed === "aws:AmazonRDS:eu-central-1")!;
      const result = await unit.read(sink, null, signal);
      expect(result).toMatchObject({ version: feedVersion(INITIAL_VERSION), publishedAt: "2026-11-01" });
      if (result === "unchanged") throw new Error("unexpected");
      expect(await unit.read(new MemorySink(), result, signal)).toBe("unchanged");
      expect(server.requests.length).toBe(count);
      const online = await readFeed("aws:AmazonRDS:eu-central-1");
      expect(byId(sink.skus)).toEqual(byId(online.sink.skus));
      expect(byKey(sink.offers)).toEqual(byKey(online.sink.offers));

      // A file whose URL names no version: the feed has none, and only the ETag says unchanged.
      const aws = join(dir, "aws");
      const latest = "/offers/v1.0/aws/AmazonRedshift/latest/us-east-1/index.json";
      await mkdir(join(aws, "offers/v1.0/aws/AmazonRedshift/latest/us-east-1"), { recursive: true });
      await copyFile(join(aws, server.offer("AmazonRedshift", "us-east-1").path), join(aws, latest));
      const redshiftIndex = join(aws, regionIndexPath("AmazonRedshift"));
      const idx = JSON.parse(await readFile(redshiftIndex, "utf8"));
      idx.regions["us-east-1"].currentVersionUrl = latest;
      await writeFile(redshiftIndex, JSON.stringify(idx));
      expect(awsVersionOf(latest)).toBeNull();
      const unversioned = (await listAwsFeeds(offline)).find((f) => f.feed === "aws:AmazonRedshift:us-east-1")!;
      const read = await unversioned.read(new MemorySink(), null, signal);
      if (read === "unchanged") throw new Error("unexpected");
      expect(read.version).toBeNull();
      expect(read.etag).toBeString();
      expect(await unversioned.read(new MemorySink(), read, signal)).toBe("unchanged");
      expect(await unversioned.read(new MemorySink(), { version: null, etag: '"other"' }, signal)).not.toBe("unchanged");

      // A Savings Plans index the offer index names but that is missing: a failed feed, not a skipped one.
      await rm(join(aws, savingsPlanIndexPath("AWSDatabaseSavingsPlans")));
      const missing = (await listAwsFeeds(offline)).filter((f) => f.feed.startsWith("aws_sp:AWSDatabaseSavingsPlans:"));
      expect(missing.map((f) => f.feed)).toEqual(["aws_sp:AWSDatabaseSavingsPlans:*"]);
      const err = await missing[0]!.read(new MemorySink(), null, signal).catch((e) => e);
      expect(err).toBeInstanceOf(RefreshSourceError);
      expect((err as Error).message).toMatch(/ENOENT/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

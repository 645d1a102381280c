/**
 * The Azure Retail Prices and Cloud Billing Catalog readers of `catalog refresh`, through loopback
 * servers speaking the real APIs (paging by NextPageLink / nextPageToken, filters, API key) into
 * an in-memory sink: what each feed emits, with hand-checked prices and the snapshot's own figures,
 * incremental versions, failures, and offline directories. No database: applying a feed is the
 * orchestrator's part (it spools what a reader emits and discards it when the read fails).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "csv-parse/sync";
import { listAzureFeeds } from "../../lib/catalog/refresh/azure.ts";
import { gcpMachineSpecs, listGcpFeeds, type GcpCatalogSku } from "../../lib/catalog/refresh/gcp.ts";
import { RefreshSourceError, type CatalogSink, type FeedReadResult, type FeedUnit, type PriceSources, type RefreshScope } from "../../lib/catalog/refresh/types.ts";
import type { OfferInput, SkuInput } from "../../lib/catalog/model.ts";
import { CATALOG_SKUS_CSV, PRICES_CSV } from "../../lib/catalog/snapshot.gen.ts";
import { AZURE_EXTENSIONS, AZURE_PRICE_HISTORY, azureSnapshotItems, startAzurePricesServer, type AzurePricesServer } from "../helpers/azurePricesServer.ts";
import { GCP_EXTENSIONS, GCP_SERVICES, WINDOWS_LICENCE_PER_VCPU, startGcpCatalogServer, type GcpCatalogServer } from "../helpers/gcpCatalogServer.ts";

type Row = Record<string, string>;
const snapshotSkus: Row[] = parse(CATALOG_SKUS_CSV, { columns: true, skip_empty_lines: true });
const snapshotPrices: Row[] = parse(PRICES_CSV, { columns: true, skip_empty_lines: true });
const snapshotPrice = (id: string, model: string, term = "") => {
  const rows = snapshotPrices.filter((r) => r.provider_sku_id === id && r.pricing_model === model && r.term_years === term);
  return rows.length ? Number(rows.sort((a, b) => b.as_of!.localeCompare(a.as_of!))[0]!.effective_hourly_usd) : undefined;
};

/** An in-memory sink that also checks the contract: every SKU before the first offer. */
function memorySink() {
  const skus: SkuInput[] = [];
  const offers: OfferInput[] = [];
  let skuAfterOffer = false;
  const sink: CatalogSink & { skus: SkuInput[]; offers: OfferInput[]; ordered: () => boolean } = {
    skus,
    offers,
    ordered: () => !skuAfterOffer,
    sku(s) {
      if (offers.length) skuAfterOffer = true;
      skus.push(s);
    },
    offer(o) {
      offers.push(o);
    },
  };
  return sink;
}

async function readFeed(unit: FeedUnit, previous: FeedReadResult | null = null) {
  const sink = memorySink();
  const result = await unit.read(sink, previous, new AbortController().signal);
  return { sink, result };
}

const sku = (sink: { skus: SkuInput[] }, id: string) => sink.skus.find((s) => s.providerSkuId === id);
const offer = (sink: { offers: OfferInput[] }, key: string) => sink.offers.find((o) => o.offerKey === key);
/** The lease of `id` in the offer of `key` (a per-SKU offer's only lease when `id` is left out). */
const lease = (sink: { offers: OfferInput[] }, key: string, id?: string) => offer(sink, key)?.leases.find((l) => l.providerSkuId === (id ?? key.split("|").at(-1)));

/** Provenance on every price: source and a YYYY-MM-DD as_of on SKUs and leases; provider offers only. */
function expectProvenance(sink: ReturnType<typeof memorySink>, source: string) {
  expect(sink.ordered()).toBe(true);
  for (const s of sink.skus) expect([s.source, s.asOf]).toEqual([source, expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/)]);
  for (const o of sink.offers) {
    expect(o.isInsured ?? false).toBe(false);
    expect(o.contractTerm).not.toContain("gris");
    expect([o.source, o.asOf]).toEqual([source, expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/)]);
    for (const l of o.leases) expect([l.source, l.asOf]).toEqual([source, expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/)]);
  }
}

const noSources: PriceSources = { awsBaseUrl: "http://127.0.0.1:9", azureBaseUrl: "http://127.0.0.1:9", gcpBaseUrl: "http://127.0.0.1:9", gcpApiKey: null, offlineDir: null };
const baseScope: RefreshScope = {
  awsRegions: [],
  awsServices: [],
  awsSavingsPlans: [],
  azureRegions: ["eastus", "westus2"],
  azureServices: ["Virtual Machines"],
  gcpRegions: ["us-central1", "us-east1"],
  gcpServices: ["Compute Engine"],
};
const ctx = (sources: Partial<PriceSources>, scope: Partial<RefreshScope> = {}) => ({ sources: { ...noSources, ...sources }, scope: { ...baseScope, ...scope }, signal: new AbortController().signal });

async function sourceError(p: Promise<unknown>): Promise<RefreshSourceError> {
  const e = await p.then(
    () => null,
    (x) => x,
  );
  expect(e).toBeInstanceOf(RefreshSourceError);
  return e as RefreshSourceError;
}

describe("Azure Retail Prices reader", () => {
  let az: AzurePricesServer;
  let dir: string;
  beforeAll(async () => {
    az = await startAzurePricesServer({ pageSize: 7 });
    dir = await mkdtemp(join(tmpdir(), "azure-prices-"));
  });
  afterAll(async () => {
    await az.close();
    await rm(dir, { recursive: true, force: true });
  });
  const D2S = "azure:vm:eastus:standard_d2s_v5";

  test("pages are followed to the end with the service and region filter; one feed per service and region", async () => {
    const units = await listAzureFeeds(ctx({ azureBaseUrl: az.url }));
    expect(units.map((u) => [u.provider, u.feed])).toEqual([["azure", "azure:virtual_machines:eastus"], ["azure", "azure:virtual_machines:westus2"]]);
    for (const [unit, region] of [[units[0]!, "eastus"], [units[1]!, "westus2"]] as const) {
      az.requests = [];
      const { sink, result } = await readFeed(unit);
      const matching = az.items.filter((i) => i.serviceName === "Virtual Machines" && i.armRegionName === region).length;
      expect(az.requests.length).toBe(Math.ceil(matching / 7));
      for (const [n, r] of az.requests.entries()) {
        expect(r.path).toBe("/api/retail/prices");
        expect(r.query).toEqual({
          "api-version": "2023-01-01-preview",
          currencyCode: "'USD'",
          $filter: `serviceName eq 'Virtual Machines' and armRegionName eq '${region}'`,
          ...(n ? { $skip: String(n * 7) } : {}),
        });
      }
      expect(result).toEqual({ version: expect.stringMatching(/^[0-9a-f]{64}$/), etag: null, publishedAt: null });
      // Exactly the snapshot's SKUs of the region, under the snapshot's ids: a refresh reprices them in place.
      const expected = snapshotSkus.filter((s) => s.provider_sku_id!.startsWith(`azure:vm:${region}:`)).map((s) => s.provider_sku_id).sort();
      expect(sink.skus.map((s) => s.providerSkuId).sort()).toEqual(expected);
      expectProvenance(sink, "azure_retail_prices");
    }
  });

  test("hand-checked D2s v5 (eastus): 3-year reservation all upfront, Windows licence pay-as-you-go, savings plan rates; skipped items", async () => {
    const [unit] = await listAzureFeeds(ctx({ azureBaseUrl: az.url }, { azureRegions: ["eastus"] }));
    const { sink } = await readFeed(unit!);
    // Pay as you go: the primary meter only (not Spot, Low Priority, Dev/Test or the 0.5 duplicate).
    expect(sku(sink, `${D2S}:linux`)).toMatchObject({ displayName: "AZURE Standard_D2s_v5 Linux eastus", usageType: "D2s v5", operatingSystem: "Linux", asOf: "2024-04-17", tiers: [{ startQuantity: 0, endQuantity: null, unitPrice: 0.096 }] });
    expect(sku(sink, `${D2S}:windows`)).toMatchObject({ usageType: "D2s v5 Windows", operatingSystem: "Windows", tiers: [{ startQuantity: 0, endQuantity: null, unitPrice: 0.188 }] });
    expect(sink.skus.some((s) => /spot|low priority/i.test(s.usageType ?? "") || s.providerService !== "Virtual Machines")).toBe(false);

    // 3-year reservation of 975 for the term: all upfront 975 once; no upfront 975 / 26,280 h.
    const r3 = AZURE_EXTENSIONS.d2sV5ThreeYearReservation;
    expect(lease(sink, `reservation||three_year|all_upfront|${D2S}:linux`)).toMatchObject({ upfrontCost: 975, recurringHourlyRate: 0 });
    expect(lease(sink, `reservation||three_year|no_upfront|${D2S}:linux`)!.recurringHourlyRate).toBeCloseTo(r3 / 26_280, 15);
    // Windows: the reservation covers the compute; the licence (0.188 − 0.096 = 0.092 per hour) stays pay as you go.
    expect(lease(sink, `reservation||three_year|all_upfront|${D2S}:windows`)).toMatchObject({ upfrontCost: 975, recurringHourlyRate: 0.092 });
    expect(lease(sink, `reservation||three_year|no_upfront|${D2S}:windows`)!.recurringHourlyRate).toBeCloseTo(r3 / 26_280 + 0.092, 15);
    expect(offer(sink, `reservation||three_year|all_upfront|${D2S}:windows`)).toMatchObject({ commitmentType: "reservation", contractTerm: "three_year", durationSeconds: 3 * 365 * 86_400, region: "eastus", instanceType: "Standard_D2s_v5", productDescription: "Windows", isFlexible: false, lockInDays: 1095 });
    // 1-year: 495.816 (0.0566 × 8,760) for the term; the Windows effective rate is the snapshot's (0.0566 + 0.092).
    expect(lease(sink, `reservation||one_year|all_upfront|${D2S}:linux`)).toMatchObject({ upfrontCost: 495.816, recurringHourlyRate: 0 });
    expect(lease(sink, `reservation||one_year|no_upfront|${D2S}:windows`)).toMatchObject({ upfrontCost: 0, recurringHourlyRate: 0.1486 });

    // Savings plan for compute: one offer per term and payment, scope "all", a lease per SKU.
    expect(lease(sink, "savings_plan||one_year|no_upfront|all", `${D2S}:linux`)).toMatchObject({ recurringHourlyRate: 0.0658, upfrontCost: 0 });
    expect(lease(sink, "savings_plan||one_year|all_upfront|all", `${D2S}:linux`)).toMatchObject({ recurringHourlyRate: 0, upfrontCost: 576.408 });
    expect(lease(sink, "savings_plan||three_year|no_upfront|all", `${D2S}:windows`)).toMatchObject({ recurringHourlyRate: AZURE_EXTENSIONS.d2sV5WindowsThreeYearSavingsPlan });
    expect(lease(sink, "savings_plan||three_year|all_upfront|all", `${D2S}:linux`)).toMatchObject({ upfrontCost: 953.964 });
    expect(offer(sink, "savings_plan||one_year|no_upfront|all")).toMatchObject({ commitmentType: "savings_plan", planType: "compute", region: null, isFlexible: true });

    // Every eastus SKU of the snapshot: the same effective savings plan and reservation rates, except
    // the Windows reservations of the Fsv2 sizes, where the snapshot's source adds 0.046 per vCPU as
    // the licence while Azure's Fsv2 Windows pay-as-you-go premium (what the reader adds) is lower.
    const differing: string[] = [];
    for (const s of sink.skus) {
      const sp = lease(sink, "savings_plan||one_year|no_upfront|all", s.providerSkuId)!.recurringHourlyRate;
      expect(sp).toBeCloseTo(snapshotPrice(s.providerSkuId, "savings_plan", "1")!, 12);
      const reserved = lease(sink, `reservation||one_year|no_upfront|${s.providerSkuId}`)!.recurringHourlyRate;
      if (Math.abs(reserved - snapshotPrice(s.providerSkuId, "reservation", "1")!) > 1e-12) differing.push(s.providerSkuId);
    }
    expect(sink.skus.length).toBe(50);
    expect(differing).toEqual(["azure:vm:eastus:standard_f2s_v2:windows", "azure:vm:eastus:standard_f4s_v2:windows", "azure:vm:eastus:standard_f8s_v2:windows"]);
    const f2s = "azure:vm:eastus:standard_f2s_v2";
    const f2sLicence = sku(sink, `${f2s}:windows`)!.tiers[0]!.unitPrice - sku(sink, `${f2s}:linux`)!.tiers[0]!.unitPrice;
    expect(f2sLicence).toBeCloseTo(0.0784, 12);
    expect(lease(sink, `reservation||one_year|no_upfront|${f2s}:windows`)!.recurringHourlyRate).toBeCloseTo(snapshotPrice(`${f2s}:linux`, "reservation", "1")! + f2sLicence, 12);
  });

  test("unchanged content is 'unchanged' and emits nothing; a changed price or date makes a new version; a withdrawn item is gone", async () => {
    const [unit] = await listAzureFeeds(ctx({ azureBaseUrl: az.url }, { azureRegions: ["eastus"] }));
    const first = await readFeed(unit!);
    const v1 = first.result as FeedReadResult;
    const again = await readFeed(unit!, v1);
    expect(again.result).toBe("unchanged");
    expect([again.sink.skus.length, again.sink.offers.length]).toEqual([0, 0]);

    const linux = (i: { armSkuName?: string; type?: string; meterName?: string; productName?: string; isPrimaryMeterRegion?: boolean }) =>
      i.armSkuName === "Standard_D4s_v5" && i.type === "Consumption" && i.meterName === "D4s v5" && !/Windows/.test(i.productName!) && i.isPrimaryMeterRegion !== false;
    try {
      expect(az.setPrice((i) => i.armRegionName === "eastus" && linux(i), 0.201, "2026-10-01T00:00:00Z")).toBe(1);
      const changed = await readFeed(unit!, v1);
      const v2 = changed.result as FeedReadResult;
      expect(v2.version).not.toBe(v1.version);
      expect(sku(changed.sink, "azure:vm:eastus:standard_d4s_v5:linux")).toMatchObject({ asOf: "2026-10-01", tiers: [{ startQuantity: 0, endQuantity: null, unitPrice: 0.201 }] });
      // The Windows reservation lease follows the new Linux price: licence = Windows − Linux.
      const winPayg = sku(changed.sink, "azure:vm:eastus:standard_d4s_v5:windows")!.tiers[0]!.unitPrice;
      expect(lease(changed.sink, "reservation||one_year|all_upfront|azure:vm:eastus:standard_d4s_v5:windows")!.recurringHourlyRate).toBeCloseTo(winPayg - 0.201, 12);
      // A date alone is content too (Azure's effectiveStartDate is when the price starts).
      az.setPrice((i) => i.armRegionName === "eastus" && linux(i), 0.201, "2026-10-02T00:00:00Z");
      expect(((await readFeed(unit!, v2)).result as FeedReadResult).version).not.toBe(v2.version);

      const b2s = az.itemsOf("eastus", "Standard_B2s").length; // pay as you go (Linux, Windows), Spot, reservation
      expect(az.withdraw((i) => i.armRegionName === "eastus" && i.armSkuName === "Standard_B2s")).toBe(b2s);
      const after = await readFeed(unit!, v2);
      expect(sku(after.sink, "azure:vm:eastus:standard_b2s:linux")).toBeUndefined();
      expect(lease(after.sink, "savings_plan||one_year|no_upfront|all", "azure:vm:eastus:standard_b2s:windows")).toBeUndefined();
      expect(after.sink.skus.length).toBe(first.sink.skus.length - 2);
    } finally {
      az.items = azureSnapshotItems();
    }
    expect(await readFeed(unit!, v1).then((r) => r.result)).toBe("unchanged");
  });

  test("the version does not depend on the order the API lists the items in", async () => {
    const [unit] = await listAzureFeeds(ctx({ azureBaseUrl: az.url }, { azureRegions: ["eastus"] }));
    const first = await readFeed(unit!);
    const v1 = first.result as FeedReadResult;
    // The superseded E2s v5 price ties with the current one on meter, type, term, tier and SKU id.
    const e2s = az.itemsOf("eastus", "Standard_E2s_v5").filter((i) => i.type === "Consumption" && i.meterName === "E2s v5" && !/Windows/.test(i.productName!));
    expect(e2s.map((i) => i.unitPrice).sort()).toEqual([AZURE_PRICE_HISTORY.superseded.unitPrice, AZURE_PRICE_HISTORY.current, AZURE_PRICE_HISTORY.announced.unitPrice].sort());
    try {
      let seed = 7;
      const random = () => (seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647;
      for (const order of [[...az.items].reverse(), [...az.items].map((i) => [random(), i] as const).sort(([a], [b]) => a - b).map(([, i]) => i)]) {
        az.items = order;
        const again = await readFeed(unit!, v1);
        expect(again.result).toBe("unchanged");
        const forced = await readFeed(unit!);
        expect((forced.result as FeedReadResult).version).toBe(v1.version);
        expect(forced.sink.skus).toEqual(first.sink.skus);
        expect(forced.sink.offers).toEqual(first.sink.offers);
      }
    } finally {
      az.items = azureSnapshotItems();
    }
  });

  test("a price announced for a later date is not in effect: left out of the rows and the version until it starts", async () => {
    const [unit] = await listAzureFeeds(ctx({ azureBaseUrl: az.url }, { azureRegions: ["eastus"] }));
    const E2S = "azure:vm:eastus:standard_e2s_v5:linux";
    const first = await readFeed(unit!);
    const v1 = first.result as FeedReadResult;
    // The current price: not the superseded one, not the announced one.
    expect(sku(first.sink, E2S)).toMatchObject({ asOf: "2024-04-17", tiers: [{ startQuantity: 0, endQuantity: null, unitPrice: AZURE_PRICE_HISTORY.current }] });
    const announced = (i: { armSkuName?: string; effectiveStartDate?: string }) => i.armSkuName === AZURE_PRICE_HISTORY.armSkuName && i.effectiveStartDate === AZURE_PRICE_HISTORY.announced.effectiveStartDate;
    try {
      // A revised announcement changes nothing in effect today.
      expect(az.setPrice(announced, 0.133)).toBe(1);
      expect((await readFeed(unit!, v1)).result).toBe("unchanged");
      // Once its date has come, it is the price.
      const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
      expect(az.setPrice(announced, 0.133, `${yesterday}T00:00:00Z`)).toBe(1);
      const started = await readFeed(unit!, v1);
      expect((started.result as FeedReadResult).version).not.toBe(v1.version);
      expect(sku(started.sink, E2S)).toMatchObject({ asOf: yesterday, tiers: [{ startQuantity: 0, endQuantity: null, unitPrice: 0.133 }] });
    } finally {
      az.items = azureSnapshotItems();
    }
  });

  test("a NextPageLink without api-version or currencyCode gets the first request's back (savings plans on every page)", async () => {
    const [unit] = await listAzureFeeds(ctx({ azureBaseUrl: az.url }, { azureRegions: ["eastus"] }));
    const reference = await readFeed(unit!);
    try {
      az.nextLinkDrops = ["api-version", "currencyCode"];
      az.requests = [];
      const { sink, result } = await readFeed(unit!);
      expect(az.requests.length).toBeGreaterThan(3);
      for (const r of az.requests) expect([r.query["api-version"], r.query.currencyCode]).toEqual(["2023-01-01-preview", "'USD'"]);
      expect(result).toEqual(reference.result);
      // Every SKU keeps its savings plan lease (the server lists `savingsPlan` only with that API version).
      const covered = new Set(offer(sink, "savings_plan||one_year|no_upfront|all")!.leases.map((l) => l.providerSkuId));
      expect(sink.skus.every((s) => covered.has(s.providerSkuId))).toBe(true);
      expect(sink.offers).toEqual(reference.sink.offers);
    } finally {
      az.nextLinkDrops = [];
    }
  });

  test("a failure on page 2 fails the feed (RefreshSourceError); nothing was emitted, and the orchestrator discards the spool anyway", async () => {
    const [unit] = await listAzureFeeds(ctx({ azureBaseUrl: az.url }, { azureRegions: ["eastus"] }));
    try {
      for (const fault of [{ page: 2, status: 500 }, { page: 2, destroy: true as const }, { page: 3, status: 429 }]) {
        az.fault = fault;
        az.requests = [];
        const sink = memorySink();
        const e = await sourceError(unit!.read(sink, null, new AbortController().signal));
        expect(e.retryable).toBe(true);
        expect(e.message).toContain("/api/retail/prices");
        expect(az.requests.length).toBe(fault.page);
        // The version is computed over every page before anything is emitted: a failed read emits nothing.
        expect([sink.skus.length, sink.offers.length]).toEqual([0, 0]);
      }
      az.fault = { page: 2, status: 400 };
      expect((await sourceError(readFeed(unit!))).retryable).toBe(false);
    } finally {
      az.fault = null;
    }
  });

  test("NextPageLink: another host is refused, the API's own host is followed on the configured base, a loop is stopped", async () => {
    const foreign = await startAzurePricesServer();
    const [unit] = await listAzureFeeds(ctx({ azureBaseUrl: az.url }, { azureRegions: ["westus2"] }));
    try {
      az.nextLinkOrigin = foreign.url.replace("127.0.0.1", "localhost");
      const e = await sourceError(readFeed(unit!));
      expect(e.message).toContain("another host");
      expect(foreign.requests.length).toBe(0);

      az.nextLinkOrigin = "https://prices.azure.com:443";
      az.requests = [];
      const { sink } = await readFeed(unit!);
      expect(sink.skus.length).toBe(23);
      expect(az.requests.length).toBeGreaterThan(1);

      az.nextLinkOrigin = null;
      az.loop = true;
      expect((await sourceError(readFeed(unit!))).message).toContain("repeats");
    } finally {
      az.nextLinkOrigin = null;
      az.loop = false;
      await foreign.close();
    }
  });

  test("regions 'all': one feed per service, read without a region filter", async () => {
    const units = await listAzureFeeds(ctx({ azureBaseUrl: az.url }, { azureRegions: "all" }));
    expect(units.map((u) => u.feed)).toEqual(["azure:virtual_machines:all"]);
    az.requests = [];
    const { sink } = await readFeed(units[0]!);
    expect(az.requests[0]!.query.$filter).toBe("serviceName eq 'Virtual Machines'");
    expect(new Set(sink.skus.map((s) => s.regionCode))).toEqual(new Set(["brazilsouth", "eastus", "westus2"]));
    expect(sink.skus.length).toBe(50 + 23 + 1);
  });

  test("offline: the same pages from a directory give the same rows and the same version, without the network", async () => {
    const files = await az.writeOffline(dir, 9);
    expect(files).toBe(Math.ceil(az.items.length / 9));
    az.requests = [];
    const offline = await listAzureFeeds(ctx({ offlineDir: dir, azureBaseUrl: az.url }));
    const read = await Promise.all(offline.map((unit) => readFeed(unit)));
    expect(az.requests).toEqual([]);
    const online = await listAzureFeeds(ctx({ azureBaseUrl: az.url }));
    expect(offline.map((u) => u.feed)).toEqual(online.map((u) => u.feed));
    for (const [k, unit] of offline.entries()) {
      const a = read[k]!;
      const b = await readFeed(online[k]!);
      expect(a.result).toEqual(b.result);
      expect(a.sink.skus).toEqual(b.sink.skus);
      expect(a.sink.offers).toEqual(b.sink.offers);
      expect((await readFeed(unit, a.result as FeedReadResult)).result).toBe("unchanged");
    }
    // Offline with regions "all": grouped per service, every region of the pages.
    const all = await listAzureFeeds(ctx({ offlineDir: dir }, { azureRegions: "all", azureServices: ["Virtual Machines", "Storage"] }));
    expect(all.map((u) => u.feed)).toEqual(["azure:storage:all", "azure:virtual_machines:all"]);
    expect((await readFeed(all[1]!)).sink.skus.length).toBe(74);

    // A feed reads its pages when it is read, not when listed: a page rewritten in between is what it reads.
    const [eastus] = await listAzureFeeds(ctx({ offlineDir: dir }, { azureRegions: ["eastus"] }));
    const folder = join(dir, "azure");
    for (const name of await readdir(folder)) {
      const text = await readFile(join(folder, name), "utf8");
      const page = JSON.parse(text);
      const d2s = page.Items.find((i: any) => i.armRegionName === "eastus" && i.armSkuName === "Standard_D2s_v5" && i.type === "Consumption" && i.meterName === "D2s v5" && !/Windows/.test(i.productName) && i.isPrimaryMeterRegion);
      if (!d2s) continue;
      d2s.unitPrice = d2s.retailPrice = 0.0977;
      await writeFile(join(folder, name), JSON.stringify(page));
    }
    expect(sku((await readFeed(eastus!)).sink, `${D2S}:linux`)!.tiers[0]!.unitPrice).toBe(0.0977);
  });
});


describe("Cloud Billing Catalog reader", () => {
  let g: GcpCatalogServer;
  let dir: string;
  beforeAll(async () => {
    g = await startGcpCatalogServer();
    dir = await mkdtemp(join(tmpdir(), "gcp-catalog-"));
  });
  afterAll(async () => {
    await g.close();
    await rm(dir, { recursive: true, force: true });
  });
  const COMPUTE = "6F81-5844-456A";
  const STORAGE = "95FF-2EF5-5EA1";
  const N2 = "gcp:gce:us-central1:n2-standard-4";
  const online = (scope: Partial<RefreshScope> = {}) => listGcpFeeds(ctx({ gcpBaseUrl: g.url, gcpApiKey: g.apiKey }, scope));
  const feedOf = (units: FeedUnit[], region: string, service = COMPUTE) => units.find((u) => u.feed === `gcp:${service}:${region}`)!;
  const skuPages = (service = COMPUTE) => Math.ceil(g.skus.get(service)!.length / 25);
  const skuRequests = () => g.requests.filter((r) => r.path.endsWith("/skus")).length;

  /** Reads the feeds and puts together what they emit: SKUs, and offers by key (a spend-based CUD gathers every region's leases). */
  async function readMerged(units: FeedUnit[]) {
    const merged = { skus: [] as SkuInput[], offers: [] as OfferInput[] };
    for (const unit of units) {
      const { sink } = await readFeed(unit);
      expectProvenance(sink, "gcp_cloud_billing_catalog");
      merged.skus.push(...sink.skus);
      for (const o of sink.offers) {
        const same = merged.offers.find((x) => x.offerKey === o.offerKey);
        if (same) same.leases.push(...o.leases);
        else merged.offers.push(structuredClone(o));
      }
    }
    return merged;
  }

  test("services and SKU pages are followed to the end with the key; one feed per service and region, the service's pages read once for all of them", async () => {
    g.requests = [];
    const units = await online({ gcpServices: ["Compute Engine", "Cloud Storage"] });
    expect(units.map((u) => [u.provider, u.feed])).toEqual(
      [COMPUTE, STORAGE].flatMap((service) => ["global", "us-central1", "us-east1"].map((region) => ["gcp", `gcp:${service}:${region}`])),
    );
    // 4 services, 2 per page; no SKU page is read while listing a list of regions.
    expect(g.requests.map((r) => [r.path, r.query.key, r.query.pageSize, r.query.pageToken ?? ""])).toEqual([
      ["/v1/services", g.apiKey, "5000", ""],
      ["/v1/services", g.apiKey, "5000", expect.any(String)],
    ]);
    g.requests = [];
    const read: Awaited<ReturnType<typeof readFeed>>[] = [];
    for (const unit of units.slice(0, 3)) read.push(await readFeed(unit));
    // The three Compute Engine feeds share one read of its pages.
    expect(g.requests.length).toBe(skuPages());
    const tokens = new Set<string>();
    for (const [n, r] of g.requests.entries()) {
      expect(r.path).toBe(`/v1/services/${COMPUTE}/skus`);
      expect([r.query.key, r.query.currencyCode, r.query.pageSize]).toEqual([g.apiKey, "USD", "5000"]);
      if (n) tokens.add(r.query.pageToken!);
      else expect(r.query.pageToken).toBeUndefined();
    }
    expect(tokens.size).toBe(g.requests.length - 1);
    for (const [k, region] of ["global", "us-central1", "us-east1"].entries()) {
      const { sink, result } = read[k]!;
      expect(result).toEqual({ version: expect.stringMatching(/^[0-9a-f]{64}$/), etag: null, publishedAt: "2026-07-30" });
      expectProvenance(sink, "gcp_cloud_billing_catalog");
      // Only the feed's own region; no Spot SKU.
      expect(new Set(sink.skus.map((s) => s.regionCode))).toEqual(new Set([region]));
      expect(sink.skus.some((s) => /Preemptible/.test(s.displayName))).toBe(false);
    }
    expect(read[0]!.sink.skus.map((s) => s.displayName)).toContain("GCP Licensing Fee for Windows Server 2022 Datacenter Edition (CPU cost) (global)");
    expect(read[0]!.sink.offers).toEqual([]);
    expect(new Set(read.map((r) => (r.result as FeedReadResult).version)).size).toBe(3);
    // A feed read again reads the pages again: the next refresh sees the prices of then.
    g.requests = [];
    await readFeed(units[1]!);
    expect(g.requests.length).toBe(skuPages());
  });

  test("machine types: n2-standard-4 = 4 × core + 16 × RAM, its CUDs and Windows; every machine type as the snapshot prices it", async () => {
    const sink = await readMerged(await online());
    // The N2 SKUs of the Americas: 0.031611 per vCPU hour, 0.004237 per GiB hour; CUD 0.019915 / 0.002669 (1 year).
    const rate = (d: string) => Number(g.sku(d).pricingInfo![0]!.pricingExpression!.tieredRates![0]!.unitPrice!.nanos) / 1e9;
    expect([rate("N2 Instance Core running in Americas"), rate("N2 Instance Ram running in Americas")]).toEqual([0.031611, 0.004237]);
    expect([rate("Commitment v1: N2 Cpu in Americas for 1 Year"), rate("Commitment v1: N2 Ram in Americas for 1 Year")]).toEqual([0.019915, 0.002669]);
    expect(sku(sink, `${N2}:linux`)).toMatchObject({
      displayName: "GCP n2-standard-4 Linux us-central1",
      instanceType: "n2-standard-4",
      service: "compute",
      providerService: "Compute Engine",
      regionCode: "us-central1",
      operatingSystem: "Linux",
      usageType: "n2-standard-4 (vCPU+RAM SKUs)",
      usageUnit: "Hrs",
      asOf: "2026-07-30",
      tiers: [{ startQuantity: 0, endQuantity: null, unitPrice: 0.194236 }], // 4 × 0.031611 + 16 × 0.004237
    });
    expect(lease(sink, `resource_cud||one_year|no_upfront|${N2}:linux`, `${N2}:linux`)).toMatchObject({ recurringHourlyRate: 0.122364, upfrontCost: 0 }); // 4 × 0.019915 + 16 × 0.002669
    expect(lease(sink, `resource_cud||three_year|no_upfront|${N2}:linux`, `${N2}:linux`)).toMatchObject({ recurringHourlyRate: 0.087412 });
    expect(offer(sink, `resource_cud||one_year|no_upfront|${N2}:linux`)).toMatchObject({ commitmentType: "resource_cud", contractTerm: "one_year", paymentOption: "no_upfront", region: "us-central1", instanceType: "n2-standard-4", instanceFamily: "n2", isFlexible: false, lockInDays: 365 });
    // Windows: + 4 × 0.046 licence, which no commitment discounts.
    expect(sku(sink, `${N2}:windows`)!.tiers).toEqual([{ startQuantity: 0, endQuantity: null, unitPrice: 0.378236 }]);
    expect(lease(sink, `resource_cud||one_year|no_upfront|${N2}:windows`, `${N2}:windows`)!.recurringHourlyRate).toBe(0.306364);
    // e2-medium is shared-core: billed as 1 vCPU + 4 GB of E2; its Windows price stays the snapshot's.
    const e2 = { core: rate("E2 Instance Core running in Americas"), ram: rate("E2 Instance Ram running in Americas") };
    expect(sku(sink, "gcp:gce:us-central1:e2-medium:linux")!.tiers[0]!.unitPrice).toBeCloseTo(e2.core + 4 * e2.ram, 12);
    expect(sku(sink, "gcp:gce:us-central1:e2-medium:windows")).toBeUndefined();

    // Every snapshot machine type of the two regions: same id, and the snapshot's on-demand and CUD prices.
    const machines = snapshotSkus.filter((s) => /^gcp:gce:(us-central1|us-east1):/.test(s.provider_sku_id!) && s.provider_sku_id !== "gcp:gce:us-central1:e2-medium:windows" && s.provider_sku_id !== "gcp:gce:us-east1:e2-medium:windows");
    expect(sink.skus.filter((s) => s.providerSkuId.startsWith("gcp:gce:")).map((s) => s.providerSkuId).sort()).toEqual(machines.map((s) => s.provider_sku_id).sort());
    for (const m of machines) {
      const id = m.provider_sku_id!;
      expect(sku(sink, id)).toMatchObject({ displayName: m.display_name, usageType: m.usage_type, operatingSystem: m.operating_system });
      expect(sku(sink, id)!.tiers[0]!.unitPrice).toBeCloseTo(snapshotPrice(id, "on_demand")!, 5);
      for (const [years, term] of [["1", "one_year"], ["3", "three_year"]]) {
        const want = snapshotPrice(id, "committed_use_discount", years);
        if (want !== undefined) expect(lease(sink, `resource_cud||${term}|no_upfront|${id}`, id)!.recurringHourlyRate).toBeCloseTo(want, 5);
      }
    }
    // As `catalog import` does: a resource CUD on each vCPU/RAM SKU of its family and region.
    const core = sink.skus.find((s) => s.displayName === "GCP N2 Instance Core running in Americas (us-east1)")!;
    expect(lease(sink, `resource_cud||three_year|no_upfront|${core.providerSkuId}`, core.providerSkuId)!.recurringHourlyRate).toBe(rate("Commitment v1: N2 Cpu in Americas for 3 Years"));
  });

  test("spend-based CUDs: one flexible offer per term, each region's feed adding the leases of the machine types and vCPU/RAM SKUs it prices", async () => {
    const units = await online();
    const sink = await readMerged(units);
    const one = offer(sink, "spend_cud||one_year|no_upfront|all")!;
    expect(one).toMatchObject({ commitmentType: "spend_cud", contractTerm: "one_year", paymentOption: "no_upfront", planType: "compute", region: null, isFlexible: true, lockInDays: 365 });
    // 0.0072 per $0.01/hour of committed spend: 72 % of on demand.
    expect(GCP_EXTENSIONS.spendCud1YearPrice).toBe(0.0072);
    expect(lease(sink, "spend_cud||one_year|no_upfront|all", `${N2}:linux`)!.recurringHourlyRate).toBe(0.13984992); // 0.194236 × 0.72
    expect(lease(sink, "spend_cud||one_year|no_upfront|all", `${N2}:windows`)!.recurringHourlyRate).toBe(0.32384992); // + 0.184 licence
    expect(lease(sink, "spend_cud||three_year|no_upfront|all", `${N2}:linux`)!.recurringHourlyRate).toBe(0.10488744); // × 0.54
    const core = sink.skus.find((s) => s.displayName === "GCP N2 Instance Core running in Americas (us-central1)")!;
    expect(lease(sink, "spend_cud||one_year|no_upfront|all", core.providerSkuId)!.recurringHourlyRate).toBe(0.02275992); // 0.031611 × 0.72
    // Custom, licence and storage SKUs are not machine vCPU/RAM: not discounted.
    const covered = new Set(one.leases.map((l) => l.providerSkuId));
    expect(covered.size).toBe(one.leases.length);
    expect(sink.skus.filter((s) => /Custom|Licensing/.test(s.displayName)).some((s) => covered.has(s.providerSkuId))).toBe(false);
    const discounted = sink.skus.filter((s) => s.providerSkuId.startsWith("gcp:gce:") || (/ (Core|Ram) running in /.test(s.displayName) && !/Custom/.test(s.displayName)));
    expect([...covered].sort()).toEqual(discounted.map((s) => s.providerSkuId).sort());
    // Each region's feed leases only its own SKUs.
    const east = await readFeed(feedOf(units, "us-east1"));
    expect(offer(east.sink, "spend_cud||one_year|no_upfront|all")!.leases.every((l) => l.providerSkuId.includes(":us-east1"))).toBe(true);
    expect(WINDOWS_LICENCE_PER_VCPU * 4).toBeCloseTo(0.184, 12);
  });

  test("unchanged content is 'unchanged' (a new effective time alone too); a changed price makes a new version of its regions only; a withdrawn SKU is gone", async () => {
    const units = await online();
    const unit = feedOf(units, "us-central1");
    const first = await readFeed(unit);
    const v1 = first.result as FeedReadResult;
    const global = (await readFeed(feedOf(units, "global"))).result as FeedReadResult;
    const again = await readFeed(unit, v1);
    expect(again.result).toBe("unchanged");
    expect([again.sink.skus.length, again.sink.offers.length]).toEqual([0, 0]);
    const saved = structuredClone(g.skus);
    try {
      // Without a time range the API stamps current pricing with a recent effectiveTime: not a change.
      g.setEffectiveTime("2026-08-02T03:00:00.000000Z");
      expect((await readFeed(unit, v1)).result).toBe("unchanged");
      // Other regions' changes (Sao Paulo) do not make a new version either.
      g.setPrice((s) => s.skuId === "TEST-N2-CORE", 0.06);
      expect((await readFeed(unit, v1)).result).toBe("unchanged");

      expect(g.setPrice((s) => s.description === "N2 Instance Core running in Americas", 0.0333, "2026-09-01T00:00:00Z")).toBe(1);
      const changed = await readFeed(unit, v1);
      const v2 = changed.result as FeedReadResult;
      expect(v2.version).not.toBe(v1.version);
      expect(sku(changed.sink, `${N2}:linux`)).toMatchObject({ asOf: "2026-09-01", tiers: [{ startQuantity: 0, endQuantity: null, unitPrice: 0.200992 }] }); // 4 × 0.0333 + 16 × 0.004237
      expect((await readFeed(feedOf(units, "global"), global)).result).toBe("unchanged");

      expect(g.withdraw((s) => s.description === "Commitment v1: N2 Ram in Americas for 3 Years")).toBe(1);
      const after = await readFeed(unit, v2);
      expect((after.result as FeedReadResult).version).not.toBe(v2.version);
      expect(offer(after.sink, `resource_cud||three_year|no_upfront|${N2}:linux`)).toBeUndefined();
      expect(offer(after.sink, `resource_cud||one_year|no_upfront|${N2}:linux`)).toBeDefined();
    } finally {
      g.skus = saved;
    }
    expect((await readFeed(unit, v1)).result).toBe("unchanged");
  });

  test("narrowing the regions leaves the others' feeds as they were; regions 'all' is one feed per region the SKUs list, read while listing", async () => {
    const wide = await online({ gcpRegions: ["us-central1", "us-east1"] });
    const cursors = new Map<string, FeedReadResult>();
    for (const unit of wide) cursors.set(unit.feed, (await readFeed(unit)).result as FeedReadResult);
    const narrow = await online({ gcpRegions: ["us-central1"] });
    expect(narrow.map((u) => u.feed)).toEqual([`gcp:${COMPUTE}:global`, `gcp:${COMPUTE}:us-central1`]);
    // The feeds still in scope are the same feeds with the same content: nothing of us-east1 is re-applied or withdrawn.
    for (const unit of narrow) expect((await readFeed(unit, cursors.get(unit.feed)!)).result).toBe("unchanged");
    const east = await readFeed(feedOf(wide, "us-east1"));
    expect(east.sink.skus.length).toBeGreaterThan(50);
    expect(east.sink.skus.every((s) => s.regionCode === "us-east1")).toBe(true);

    g.requests = [];
    const all = await online({ gcpRegions: "all" });
    expect(all.map((u) => u.feed)).toEqual(["europe-west1", "europe-west4", "global", "southamerica-east1", "us-central1", "us-east1"].map((r) => `gcp:${COMPUTE}:${r}`));
    expect(skuRequests()).toBe(skuPages());
    for (const unit of all) {
      const { sink, result } = await readFeed(unit, cursors.get(unit.feed) ?? null);
      if (cursors.has(unit.feed)) expect(result).toBe("unchanged");
      else expect(new Set(sink.skus.map((s) => s.regionCode))).toEqual(new Set([unit.feed.split(":").at(-1)]));
    }
    // The feeds took what the listing read.
    expect(skuRequests()).toBe(skuPages());
    const saoPaulo = await readFeed(feedOf(all, "southamerica-east1"));
    expect(sku(saoPaulo.sink, "gcp:sku:TEST-N2-CORE:southamerica-east1")).toMatchObject({ tiers: [{ startQuantity: 0, endQuantity: null, unitPrice: 0.05 }] });
  });

  test("the version covers the machine specs the mapping prices machine types with", async () => {
    const unit = feedOf(await online(), "us-central1");
    const v1 = (await readFeed(unit)).result as FeedReadResult;
    const specs = gcpMachineSpecs();
    const saved = specs["n2-standard-4"]!;
    try {
      specs["n2-standard-4"] = [4, 32];
      const changed = await readFeed(unit, v1);
      expect((changed.result as FeedReadResult).version).not.toBe(v1.version);
      expect(sku(changed.sink, `${N2}:linux`)!.tiers[0]!.unitPrice).toBe(0.262028); // 4 × 0.031611 + 32 × 0.004237
    } finally {
      specs["n2-standard-4"] = saved;
    }
    expect((await readFeed(unit, v1)).result).toBe("unchanged");
  });

  test("a price in units and nanos is its exact decimal", async () => {
    const unit = feedOf(await online(), "us-central1");
    const saved = structuredClone(g.skus);
    try {
      const core = g.sku("N2 Instance Core running in Americas");
      // units + nanos / 1e9 in binary floating point: 1.1400000000000001, 1.1500029999999999.
      for (const [units, nanos, want, machine] of [["1", 140_000_000, 1.14, 4.627792], ["1", 100_000_000, 1.1, 4.467792], ["1", 150_003_000, 1.150003, 4.667804]] as const) {
        core.pricingInfo![0]!.pricingExpression!.tieredRates![0]!.unitPrice = { currencyCode: "USD", units, nanos };
        const { sink } = await readFeed(unit);
        expect(sink.skus.find((s) => s.displayName === "GCP N2 Instance Core running in Americas (us-central1)")!.tiers).toEqual([{ startQuantity: 0, endQuantity: null, unitPrice: want }]);
        expect(sku(sink, `${N2}:linux`)!.tiers[0]!.unitPrice).toBe(machine); // 4 × want + 16 × 0.004237
      }
    } finally {
      g.skus = saved;
    }
  });

  test("no key: no GCP feeds; a wrong key and failing pages fail with RefreshSourceError, the key never in the message", async () => {
    g.requests = [];
    expect(await listGcpFeeds(ctx({ gcpBaseUrl: g.url, gcpApiKey: null }))).toEqual([]);
    expect(g.requests).toEqual([]);

    const wrong = "AIzaSyWRONG-secret-key-must-not-leak";
    const e = await sourceError(listGcpFeeds(ctx({ gcpBaseUrl: g.url, gcpApiKey: wrong })));
    expect(e.message).toContain("HTTP 400");
    expect(e.message).not.toContain(wrong);
    expect(g.requests.at(-1)!.query.key).toBe(wrong);

    const units = await online();
    const unit = units[0]!;
    try {
      for (const fault of [{ list: "skus" as const, page: 2, status: 500 }, { list: "skus" as const, page: 2, destroy: true as const }]) {
        g.fault = fault;
        const sink = memorySink();
        const err = await sourceError(unit.read(sink, null, new AbortController().signal));
        expect(err.retryable).toBe(true);
        expect(err.message).toContain(`/v1/services/${COMPUTE}/skus`);
        expect(err.message).not.toContain(g.apiKey);
        expect(err.message).not.toContain("key=");
        expect([sink.skus.length, sink.offers.length]).toEqual([0, 0]);
      }
      // The other feeds of the listing share the failed read: the same failure, no more requests.
      g.requests = [];
      for (const other of units.slice(1)) {
        const err = await sourceError(other.read(memorySink(), null, new AbortController().signal));
        expect([err.retryable, err.message.includes(g.apiKey)]).toEqual([true, false]);
      }
      expect(g.requests).toEqual([]);
      g.fault = { list: "services", page: 2, status: 503 };
      const listing = await sourceError(online());
      expect([listing.retryable, listing.message.includes(g.apiKey)]).toEqual([true, false]);
    } finally {
      g.fault = null;
    }
  });

  test("offline: SKU pages from a directory, the same feeds and rows as online, without a key or the network; pages read when a feed is read", async () => {
    await g.writeOffline(dir, 40);
    const services = { gcpServices: ["Compute Engine", "Cloud Storage", "BigQuery"] };
    const reference = await online(services);
    const expected = new Map(await Promise.all(reference.map(async (unit) => [unit.feed, await readFeed(unit)] as const)));
    g.requests = [];
    const units = await listGcpFeeds(ctx({ offlineDir: dir, gcpApiKey: null }, services));
    expect(units.map((u) => u.feed)).toEqual(reference.map((u) => u.feed).filter((f) => !f.startsWith("gcp:24E6-581D-38E5:"))); // BigQuery: listed, but no SKU pages
    expect(units.map((u) => u.feed)).toContain(`gcp:${STORAGE}:us-east1`);
    for (const unit of units) {
      const { sink, result } = await readFeed(unit);
      const want = expected.get(unit.feed)!;
      expect(result).toEqual(want.result);
      expect(sink.skus).toEqual(want.sink.skus);
      expect(sink.offers).toEqual(want.sink.offers);
    }
    const all = await listGcpFeeds(ctx({ offlineDir: dir, gcpApiKey: null }, { ...services, gcpRegions: "all" }));
    expect(g.requests).toEqual([]);
    expect(all.map((u) => u.feed)).toEqual((await online({ ...services, gcpRegions: "all" })).map((u) => u.feed));
    expect(all.map((u) => u.feed)).toContain(`gcp:${STORAGE}:southamerica-east1`);
    expect(GCP_SERVICES.map((s) => s.displayName)).toContain("BigQuery");

    // A page rewritten after the listing is what the feed reads.
    const listed = await listGcpFeeds(ctx({ offlineDir: dir, gcpApiKey: null }));
    const folder = join(dir, "gcp");
    for (const name of (await readdir(folder)).filter((n) => n.startsWith(COMPUTE))) {
      const page = JSON.parse(await readFile(join(folder, name), "utf8"));
      const core = page.skus.find((s: GcpCatalogSku) => s.description === "N2 Instance Core running in Americas");
      if (!core) continue;
      core.pricingInfo[0].pricingExpression.tieredRates[0].unitPrice = { currencyCode: "USD", units: "0", nanos: 33_300_000 };
      await writeFile(join(folder, name), JSON.stringify(page));
    }
    expect(sku((await readFeed(feedOf(listed, "us-central1"))).sink, `${N2}:linux`)!.tiers[0]!.unitPrice).toBe(0.200992);
  });
});

/**
 * Azure Retail Prices API reader (https://prices.azure.com/api/retail/prices): one feed per
 * (service, region) of the refresh scope, read page by page through `NextPageLink`, mapped to the
 * catalog's Azure SKUs (pay-as-you-go tiers) and provider offers (reservations per VM SKU, the
 * savings plan for compute shared by all of them). Each item is cut down to what the mapping
 * reads as its page arrives (AzurePriceRow); items the catalog does not price are dropped there.
 *
 * The API has no version or ETag: a feed's version is a digest of its rows, computed once every
 * page is read, so an unchanged feed is reported "unchanged" before anything is emitted.
 */
import { publishedDate, publishedPrice } from "../model.ts";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { CATALOG_CURRENCY, instanceFamilyOf, termName, termSeconds, type LeaseInput, type OfferInput, type SkuInput } from "../model.ts";
import { fetchPriceDocument, offlinePageFiles, safeUrl } from "./fetch.ts";
import { exactSum } from "../../pricing/decimal.ts";
import { RefreshSourceError, type CatalogSink, type FeedCursor, type FeedReadResult, type FeedUnit, type ListFeeds } from "./types.ts";

/** The `source` of every price read from the Retail Prices API (as `catalog import --format azure-retail`). */
export const AZURE_RETAIL_SOURCE = "azure_retail_prices";

const API_PATH = "/api/retail/prices";
/** The version that lists savings plan prices (`savingsPlan`); older ones leave them out. */
const API_VERSION = "2023-01-01-preview";
const CURRENCY_PARAM = `'${CATALOG_CURRENCY}'`;
/** The host the API writes into every NextPageLink, whichever way it was reached (e.g. through a proxy). */
const API_HOST = "prices.azure.com";
/** A looping or runaway API stops here: a region of Virtual Machines is a few dozen pages, a whole service a few thousand. */
const MAX_PAGES_PER_REGION = 2_000;
const MAX_PAGES_PER_SERVICE = 20_000;
/** Bumped when the mapping changes, so every feed is re-emitted once with the new mapping. */
const MAPPING_REVISION = "azure-retail-2";

const PAYMENT_LABEL: Record<string, string> = { no_upfront: "no upfront", all_upfront: "all upfront" };

/** One Retail Prices item, as the API publishes it (only the fields the catalog reads). */
export interface AzureRetailItem {
  currencyCode?: string;
  tierMinimumUnits?: number;
  retailPrice?: number;
  unitPrice?: number;
  armRegionName?: string;
  location?: string;
  effectiveStartDate?: string;
  meterId?: string;
  meterName?: string;
  productId?: string;
  skuId?: string;
  productName?: string;
  skuName?: string;
  serviceName?: string;
  serviceId?: string;
  serviceFamily?: string;
  unitOfMeasure?: string;
  type?: string;
  isPrimaryMeterRegion?: boolean;
  armSkuName?: string;
  reservationTerm?: string;
  savingsPlan?: { unitPrice?: number; retailPrice?: number; term?: string }[];
}

/** What the mapping and the feed version read of an item the catalog prices (in a fixed shape: the digest must not move with key order or unused fields). */
export interface AzurePriceRow {
  meterId: string;
  type: "Consumption" | "Reservation";
  reservationTerm: string;
  tierMinimumUnits: number;
  skuId: string;
  unitPrice: number;
  armRegionName: string;
  effectiveStartDate: string;
  meterName: string;
  productName: string;
  serviceName: string;
  serviceFamily: string;
  unitOfMeasure: string;
  armSkuName: string;
  savingsPlan: { term: string; unitPrice: number | null }[];
}

/** "1 Year" / "3 Years" → 1 / 3; anything else (5-year terms, unknown wording) → null. */
function termYears(v: unknown): 1 | 3 | null {
  const m = /^(\d+)\s*(?:yr|years?)\b/i.exec(String(v ?? "").trim());
  const y = m ? Number(m[1]) : NaN;
  return y === 1 || y === 3 ? y : null;
}

function offerKey(commitmentType: string, term: string, payment: string, scope: string): string {
  return [commitmentType, "", term, payment, scope].join("|");
}

const later = (a: string, b: string) => (b > a ? b : a);

/**
 * The row of an item the catalog prices, null for the others. Priced: USD, consumption or
 * reservation (not Dev/Test), not Spot or Low Priority, each meter once (a meter listed again
 * outside its primary region is a duplicate), and in effect at `now`: the API also lists prices
 * announced for a later date, which are left until they take effect.
 */
export function azurePriceRowOf(i: AzureRetailItem, now: number): AzurePriceRow | null {
  if (i.currencyCode && i.currencyCode !== CATALOG_CURRENCY) return null;
  if (i.type !== "Consumption" && i.type !== "Reservation") return null;
  if (/Spot|Low Priority/i.test(`${i.skuName ?? ""} ${i.meterName ?? ""}`)) return null;
  if (i.isPrimaryMeterRegion === false) return null;
  const unitPrice = publishedPrice(i.unitPrice ?? i.retailPrice);
  if (unitPrice === null) return null;
  if (Date.parse(i.effectiveStartDate ?? "") > now) return null;
  return {
    meterId: String(i.meterId ?? ""),
    type: i.type,
    reservationTerm: String(i.reservationTerm ?? ""),
    tierMinimumUnits: publishedPrice(i.tierMinimumUnits) ?? 0,
    skuId: String(i.skuId ?? ""),
    unitPrice,
    armRegionName: String(i.armRegionName ?? ""),
    effectiveStartDate: String(i.effectiveStartDate ?? ""),
    meterName: String(i.meterName ?? ""),
    productName: String(i.productName ?? ""),
    serviceName: String(i.serviceName ?? ""),
    serviceFamily: String(i.serviceFamily ?? ""),
    unitOfMeasure: String(i.unitOfMeasure ?? ""),
    armSkuName: String(i.armSkuName ?? ""),
    savingsPlan: (i.savingsPlan ?? [])
      .map((s) => ({ term: String(s.term ?? ""), unitPrice: publishedPrice(s.unitPrice ?? s.retailPrice) }))
      .sort((a, b) => a.term.localeCompare(b.term) || (a.unitPrice ?? -1) - (b.unitPrice ?? -1)),
  };
}

/** Whether `a` supersedes `b` (the later start; equal starts resolve on the content, whatever order the API listed them in). */
function supersedes(a: AzurePriceRow, b: AzurePriceRow): boolean {
  const ta = Date.parse(a.effectiveStartDate);
  const tb = Date.parse(b.effectiveStartDate);
  const x = Number.isNaN(ta) ? -Infinity : ta;
  const y = Number.isNaN(tb) ? -Infinity : tb;
  return x !== y ? x > y : JSON.stringify(a) > JSON.stringify(b);
}

const isVm = (i: AzurePriceRow) => i.serviceName === "Virtual Machines" && !!i.armSkuName;
const osOf = (i: AzurePriceRow): "linux" | "windows" => (/Windows/i.test(i.productName) ? "windows" : "linux");
const vmSkuId = (region: string, armSkuName: string, os: string) => `azure:vm:${region}:${armSkuName.toLowerCase()}:${os}`;
const serviceSlug = (serviceName: string) => serviceName.toLowerCase().replace(/\W+/g, "_");

function skuIdOf(i: AzurePriceRow): string {
  return isVm(i) ? vmSkuId(i.armRegionName, i.armSkuName, osOf(i)) : `azure:${serviceSlug(i.serviceName)}:${i.armRegionName}:${i.meterId}`;
}

/**
 * Catalog SKUs and provider offers (no insured ones) of Retail Prices items in effect at `now`
 * (see azurePriceRows).
 */
export function azureRetailRows(items: readonly AzureRetailItem[], now = Date.now()): { skus: SkuInput[]; offers: OfferInput[] } {
  return azurePriceRows(items.map((i) => azurePriceRowOf(i, now)).filter((r): r is AzurePriceRow => r !== null));
}

/**
 * Catalog SKUs and provider offers (no insured ones) of priced rows:
 * - a SKU per VM size and OS (`azure:vm:<region>:<arm sku>:<linux|windows>`) or per meter of
 *   other services, its tiers from `tierMinimumUnits` (the latest price of each tier);
 * - a savings plan for compute per term, scope "all" (one offer, a lease per SKU at the item's
 *   savings plan rate), no upfront or all upfront: Azure bills the same total either way;
 * - a reservation per VM SKU and term, no upfront (the term's price in monthly instalments) or
 *   all upfront. The reservation item prices the compute meter (the Linux price); it also covers
 *   the compute part of the Windows VM of the same size, whose Windows licence stays pay as you
 *   go: its lease adds Windows PAYG − Linux PAYG per hour (as the snapshot's Windows rows do).
 */
export function azurePriceRows(priced: readonly AzurePriceRow[]): { skus: SkuInput[]; offers: OfferInput[] } {
  const source = AZURE_RETAIL_SOURCE;
  // Consumption: per SKU, the latest item of each tier.
  const tiersBySku = new Map<string, Map<number, AzurePriceRow>>();
  for (const i of priced) {
    if (i.type !== "Consumption") continue;
    const id = skuIdOf(i);
    const tiers = tiersBySku.get(id) ?? tiersBySku.set(id, new Map()).get(id)!;
    const prev = tiers.get(i.tierMinimumUnits);
    if (!prev || supersedes(i, prev)) tiers.set(i.tierMinimumUnits, i);
  }
  const skus: SkuInput[] = [];
  const hourly = new Map<string, number>();
  const offers = new Map<string, OfferInput>();
  const offerFor = (key: string, make: () => OfferInput) => offers.get(key) ?? offers.set(key, make()).get(key)!;
  const addLease = (o: OfferInput, l: LeaseInput) => {
    if (!o.leases.some((x) => x.providerSkuId === l.providerSkuId)) o.leases.push(l);
    o.asOf = later(o.asOf, l.asOf);
  };

  for (const [id, byStart] of [...tiersBySku].sort(([a], [b]) => a.localeCompare(b))) {
    const tierItems = [...byStart].sort(([a], [b]) => a - b).map(([, i]) => i);
    const first = tierItems[0]!;
    const vm = isVm(first);
    const os = osOf(first);
    const asOf = tierItems.map((i) => publishedDate(i.effectiveStartDate)).reduce(later);
    const tiers = tierItems.map((i, k) => ({
      startQuantity: i.tierMinimumUnits,
      endQuantity: k + 1 < tierItems.length ? tierItems[k + 1]!.tierMinimumUnits : null,
      unitPrice: i.unitPrice,
    }));
    skus.push({
      providerSkuId: id,
      displayName: vm ? `AZURE ${first.armSkuName} ${os === "windows" ? "Windows" : "Linux"} ${first.armRegionName}` : `Azure ${first.productName} ${first.meterName} ${first.armRegionName}`,
      instanceType: vm ? first.armSkuName : "",
      service: vm ? "compute" : first.serviceFamily,
      providerService: first.serviceName,
      regionCode: first.armRegionName,
      operatingSystem: vm ? (os === "windows" ? "Windows" : "Linux") : "",
      usageType: vm && os === "windows" ? `${first.meterName} Windows` : first.meterName,
      usageUnit: first.unitOfMeasure === "1 Hour" ? "Hrs" : first.unitOfMeasure,
      tiers,
      source,
      asOf,
    });
    if (vm) hourly.set(id, tiers[0]!.unitPrice);
    for (const sp of first.savingsPlan) {
      const y = termYears(sp.term);
      const rate = sp.unitPrice;
      if (y === null || rate === null) continue;
      for (const payment of ["no_upfront", "all_upfront"]) {
        const key = offerKey("savings_plan", termName(y), payment, "all");
        const o = offerFor(key, () => ({
          offerKey: key,
          commitmentType: "savings_plan",
          contractTerm: termName(y),
          paymentOption: payment,
          offeringClass: null,
          planType: "compute",
          durationSeconds: termSeconds(y),
          region: null,
          instanceFamily: null,
          displayName: `AZURE ${y}-year Savings Plan for Compute, ${PAYMENT_LABEL[payment]}`,
          isFlexible: true,
          lockInDays: y * 365,
          source,
          asOf,
          leases: [],
        }));
        addLease(o, { providerSkuId: id, recurringHourlyRate: payment === "no_upfront" ? rate : 0, upfrontCost: payment === "all_upfront" ? exactSum([[rate, 8760 * y]]) : 0, source, asOf });
      }
    }
  }

  // Reservations: the latest price per VM size and term.
  const reservations = new Map<string, AzurePriceRow>();
  for (const i of priced) {
    if (i.type !== "Reservation" || !isVm(i) || termYears(i.reservationTerm) === null) continue;
    const key = `${vmSkuId(i.armRegionName, i.armSkuName, "linux")}|${termYears(i.reservationTerm)}`;
    const prev = reservations.get(key);
    if (!prev || supersedes(i, prev)) reservations.set(key, i);
  }
  for (const [, i] of [...reservations].sort(([a], [b]) => a.localeCompare(b))) {
    const y = termYears(i.reservationTerm)!;
    const termPrice = i.unitPrice;
    const region = i.armRegionName;
    const asOf = publishedDate(i.effectiveStartDate);
    const linux = vmSkuId(region, i.armSkuName, "linux");
    const windows = vmSkuId(region, i.armSkuName, "windows");
    const licence = hourly.has(linux) && hourly.has(windows) ? exactSum([[hourly.get(windows)!, 1], [hourly.get(linux)!, -1]]) : null;
    const covered: [string, "Linux" | "Windows", number][] = [[linux, "Linux", 0]];
    if (licence !== null && licence >= 0) covered.push([windows, "Windows", licence]);
    for (const [providerSkuId, os, licenceHourly] of covered) {
      for (const payment of ["no_upfront", "all_upfront"]) {
        const key = offerKey("reservation", termName(y), payment, providerSkuId);
        offers.set(key, {
          offerKey: key,
          commitmentType: "reservation",
          contractTerm: termName(y),
          paymentOption: payment,
          offeringClass: null,
          planType: null,
          durationSeconds: termSeconds(y),
          region,
          instanceType: i.armSkuName,
          instanceFamily: instanceFamilyOf(i.armSkuName),
          productDescription: os,
          displayName: `AZURE ${y}-year Reserved VM Instance, ${PAYMENT_LABEL[payment]} (${i.armSkuName} ${region})`,
          isFlexible: false,
          lockInDays: y * 365,
          source,
          asOf,
          leases: [
            {
              providerSkuId,
              recurringHourlyRate: exactSum([[payment === "no_upfront" ? termPrice / (8760 * y) : 0, 1], [licenceHourly, 1]]),
              upfrontCost: payment === "all_upfront" ? termPrice : 0,
              source,
              asOf,
            },
          ],
        });
      }
    }
  }
  return { skus, offers: [...offers.values()] };
}

/** The feed version: sha256 of the mapping revision and the rows, each as JSON, sorted (the API's order is not content). */
export function azureFeedVersion(rows: readonly AzurePriceRow[]): string {
  const lines = rows.map((r) => JSON.stringify(r)).sort();
  const h = createHash("sha256").update(MAPPING_REVISION);
  for (const l of lines) h.update("\n").update(l);
  return h.digest("hex");
}

function filterUrl(base: string, serviceName: string, region: string | null): string {
  const q = (v: string) => `'${v.replace(/'/g, "''")}'`;
  const filter = `serviceName eq ${q(serviceName)}${region ? ` and armRegionName eq ${q(region)}` : ""}`;
  return `${base}${API_PATH}?api-version=${API_VERSION}&currencyCode=${encodeURIComponent(CURRENCY_PARAM)}&$filter=${encodeURIComponent(filter)}`;
}

/**
 * Where to fetch the page a NextPageLink names: always on the configured base (a loopback server
 * or a proxy answers there). The link may name the configured host or the API's own host (which
 * the API writes even when reached through a proxy); any other host is refused. A link without
 * the `api-version` or `currencyCode` of the first request gets them back: without the version
 * the API leaves the savings plan prices out of the later pages.
 */
export function azureNextPageUrl(link: string, base: string): string {
  let u: URL;
  let b: URL;
  try {
    u = new URL(link);
    b = new URL(base);
  } catch {
    throw new RefreshSourceError("Azure Retail Prices: NextPageLink is not a URL", false);
  }
  if (u.host !== b.host && u.hostname !== API_HOST) throw new RefreshSourceError(`Azure Retail Prices: NextPageLink points at another host (${u.host})`, false);
  const at = u.pathname.indexOf(API_PATH);
  if (at < 0) throw new RefreshSourceError(`Azure Retail Prices: NextPageLink is not a Retail Prices URL`, false);
  let search = u.search;
  for (const [name, value] of [["api-version", API_VERSION], ["currencyCode", CURRENCY_PARAM]] as const) {
    if (!u.searchParams.has(name)) search += `${search ? "&" : "?"}${name}=${encodeURIComponent(value)}`;
  }
  return `${base.replace(/\/+$/, "")}${u.pathname.slice(at)}${search}`;
}

async function readPage(url: string, signal: AbortSignal): Promise<{ Items: AzureRetailItem[]; NextPageLink?: string | null }> {
  let page: any;
  try {
    page = await (await fetchPriceDocument(url, { signal })).json();
  } catch (e) {
    if (e instanceof RefreshSourceError) throw e;
    // A connection lost while the body streams: the cause's text may quote the URL, so it is not kept.
    throw new RefreshSourceError(`${safeUrl(url)}: connection lost while reading`, true);
  }
  if (!page || !Array.isArray(page.Items)) throw new RefreshSourceError(`${safeUrl(url)}: not a Retail Prices page (Items missing)`, false);
  return page;
}

/** The priced rows of one filtered query in effect at `now`, following NextPageLink to its end. */
async function readAzurePages(base: string, serviceName: string, region: string | null, now: number, signal: AbortSignal): Promise<AzurePriceRow[]> {
  const maxPages = region ? MAX_PAGES_PER_REGION : MAX_PAGES_PER_SERVICE;
  const rows: AzurePriceRow[] = [];
  const seen = new Set<string>();
  let url: string | null = filterUrl(base, serviceName, region);
  for (let n = 0; url; n++) {
    if (n >= maxPages) throw new RefreshSourceError(`Azure Retail Prices: more than ${maxPages} pages for ${serviceName}${region ? ` in ${region}` : ""}`, false);
    if (seen.has(url)) throw new RefreshSourceError(`Azure Retail Prices: NextPageLink repeats a page already read (${serviceName}${region ? ` in ${region}` : ""})`, false);
    seen.add(url);
    const page = await readPage(url, signal);
    for (const i of page.Items) {
      const r = azurePriceRowOf(i, now);
      if (r) rows.push(r);
    }
    url = page.NextPageLink ? azureNextPageUrl(page.NextPageLink, base) : null;
  }
  return rows;
}

/** Streams the rows of a feed into the sink (SKUs first), unless its version is the one read last time. */
async function emit(rows: AzurePriceRow[], sink: CatalogSink, previous: FeedCursor | null): Promise<FeedReadResult | "unchanged"> {
  const version = azureFeedVersion(rows);
  if (previous?.version === version) return "unchanged";
  const out = azurePriceRows(rows);
  for (const s of out.skus) await sink.sku(s);
  for (const o of out.offers) await sink.offer(o);
  return { version, etag: null, publishedAt: null };
}

function feedName(serviceName: string, region: string | null): string {
  return `azure:${serviceSlug(serviceName)}:${region ?? "all"}`;
}

/**
 * Offline: the pages under `<dir>/azure/`, their items grouped per (service, region) of the scope.
 * The listing reads each page once to learn the feeds and which pages hold their items; a feed
 * reads its pages again when it is read (no feed keeps another's items in memory).
 */
async function offlineFeeds(dir: string, services: string[], regions: string[] | "all", signal: AbortSignal): Promise<FeedUnit[]> {
  const folder = join(dir, "azure");
  const files = await offlinePageFiles(folder);
  const unitOf = (i: AzureRetailItem): { service: string; region: string | null } | null => {
    const service = String(i.serviceName ?? "");
    const region = String(i.armRegionName ?? "");
    if (!services.includes(service) || (regions !== "all" && !regions.includes(region))) return null;
    return { service, region: regions === "all" ? null : region };
  };
  const pagesOf = new Map<string, string[]>();
  for (const file of files) {
    const url = pathToFileURL(file).href;
    for (const i of (await readPage(url, signal)).Items) {
      const unit = unitOf(i);
      if (!unit) continue;
      const feed = feedName(unit.service, unit.region);
      const pages = pagesOf.get(feed) ?? pagesOf.set(feed, []).get(feed)!;
      if (pages.at(-1) !== url) pages.push(url);
    }
  }
  return [...pagesOf].sort(([a], [b]) => a.localeCompare(b)).map(([feed, pages]) => ({
    provider: "azure" as const,
    feed,
    read: async (sink, previous, readSignal) => {
      const now = Date.now();
      const rows: AzurePriceRow[] = [];
      for (const url of pages) {
        for (const i of (await readPage(url, readSignal)).Items) {
          const unit = unitOf(i);
          const r = unit && feedName(unit.service, unit.region) === feed ? azurePriceRowOf(i, now) : null;
          if (r) rows.push(r);
        }
      }
      return emit(rows, sink, previous);
    },
  }));
}

/**
 * The Azure feeds of the scope: one per (service, region), or with regions "all" one per service
 * read without a region filter (feed `azure:<service>:all`, its SKUs still carry their regions).
 */
export const listAzureFeeds: ListFeeds = async ({ sources, scope, signal }) => {
  if (sources.offlineDir) return offlineFeeds(sources.offlineDir, scope.azureServices, scope.azureRegions, signal);
  const base = sources.azureBaseUrl.replace(/\/+$/, "");
  const units: FeedUnit[] = [];
  for (const service of scope.azureServices) {
    for (const region of scope.azureRegions === "all" ? [null] : scope.azureRegions) {
      units.push({
        provider: "azure",
        feed: feedName(service, region),
        read: async (sink, previous, readSignal) => emit(await readAzurePages(base, service, region, Date.now(), readSignal), sink, previous),
      });
    }
  }
  return units;
};

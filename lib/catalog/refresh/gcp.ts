/**
 * Cloud Billing Catalog API reader (https://cloudbilling.googleapis.com/v1/services/…/skus, API
 * key): one feed per (service, region) of the refresh scope, `gcp:<service id>:<region>`, plus
 * `gcp:<service id>:global` for the SKUs sold nowhere in particular (licences), so narrowing the
 * regions leaves the other regions' prices alone. A listing reads a service's SKUs once, page by
 * page through `nextPageToken`, each SKU cut down to what the mapping reads as its page arrives
 * (GcpSkuRow), and its region feeds share them; each maps only its region's rows:
 * - a catalog SKU per on-demand SKU and region (`gcp:sku:<sku id>:<region>`), as `catalog import`;
 * - the machine types the snapshot prices (`gcp:gce:<region>:<machine type>:<linux|windows>`),
 *   priced from their family's vCPU and memory SKUs (Google bills a VM as those two);
 * - resource-based CUDs ("Commitment v1: N2 Cpu in Americas for 1 Year") on both, and
 *   spend-based (flexible) CUDs on the SKUs they discount (one offer keyed "all" that every
 *   region's feed adds its leases to).
 *
 * The API has no version: a feed's version is a digest of what its rows are made of (the SKUs of
 * its region, the licence and spend-based CUD SKUs every region uses, the machine specs and the
 * mapping revision), computed once every page is read, so an unchanged feed is reported
 * "unchanged" before anything is emitted.
 */
import { publishedDate, publishedPrice } from "../model.ts";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { CATALOG_CURRENCY, termName, termSeconds, type LeaseInput, type OfferInput, type SkuInput } from "../model.ts";
import { SOURCES_JSON } from "../snapshot.gen.ts";
import { exactSum } from "../../pricing/decimal.ts";
import { fetchPriceDocument, offlinePageFiles, safeUrl } from "./fetch.ts";
import { RefreshSourceError, type CatalogSink, type FeedCursor, type FeedReadResult, type FeedUnit, type ListFeeds } from "./types.ts";

/** The `source` of every price read from the Cloud Billing Catalog (as `catalog import --format gcp-catalog`). */
export const GCP_CATALOG_SOURCE = "gcp_cloud_billing_catalog";
/** Bumped when the mapping changes, so every feed is re-emitted once with the new mapping. */
export const GCP_MAPPING_REVISION = "gcp-catalog-2";

const PAGE_SIZE = 5000;
/** A looping or runaway API stops here (Compute Engine lists a few tens of thousands of SKUs: a handful of pages). */
const MAX_PAGES = 1_000;
const COMPUTE_ENGINE = "Compute Engine";
/** The region of SKUs that list none: their feed, and what licence and spend-based CUD SKUs cover. */
const GLOBAL = "global";

/** One SKU of services.skus.list, as the API publishes it (only the fields the catalog reads). */
export interface GcpCatalogSku {
  name?: string;
  skuId?: string;
  description?: string;
  category?: { serviceDisplayName?: string; resourceFamily?: string; resourceGroup?: string; usageType?: string };
  serviceRegions?: string[];
  pricingInfo?: {
    summary?: string;
    pricingExpression?: {
      usageUnit?: string;
      displayQuantity?: number;
      tieredRates?: { startUsageAmount?: number; unitPrice?: { currencyCode?: string; units?: string | number; nanos?: number } }[];
      usageUnitDescription?: string;
      baseUnit?: string;
      baseUnitConversionFactor?: number;
    };
    currencyConversionRate?: number;
    effectiveTime?: string;
  }[];
  serviceProviderName?: string;
  geoTaxonomy?: { type?: string; regions?: string[] };
}

type Tier = SkuInput["tiers"][number];

/** What the mapping and the feed version read of a SKU (in a fixed shape: the digest must not move with key order or unused fields). */
export interface GcpSkuRow {
  skuId: string;
  /** From its resource name (`services/<id>/skus/…`); null when it has none. */
  serviceId: string | null;
  description: string;
  serviceName: string;
  resourceFamily: string;
  resourceGroup: string;
  usageType: string;
  /** Where it is sold: `global` when it lists no region. */
  regions: string[];
  usageUnit: string;
  /** Its USD tiers, each ending where the next begins; null when it has no USD price. */
  tiers: Tier[] | null;
  /** The day its pricing took effect. Not content: the API stamps current pricing with a recent time. */
  asOf: string;
}

const later = (a: string, b: string) => (b > a ? b : a);

/** A Money in USD: units + nanos / 10⁹ as the decimal it is ("1" and 140000000 nanos is 1.14, not 1.1400000000000001). */
function money(p: { currencyCode?: string; units?: string | number; nanos?: number } | undefined): number | null {
  if (!p || (p.currencyCode && p.currencyCode !== CATALOG_CURRENCY)) return null;
  const units = Number(p.units ?? 0);
  const nanos = Number(p.nanos ?? 0);
  if (!Number.isFinite(units) || !Number.isFinite(nanos)) return null;
  return publishedPrice(exactSum([[units, 1], [nanos, 1e-9]]));
}

function tiersOf(s: GcpCatalogSku): Tier[] | null {
  const rates = s.pricingInfo?.[0]?.pricingExpression?.tieredRates ?? [];
  const tiers = rates
    .map((r) => ({ startQuantity: publishedPrice(r.startUsageAmount) ?? 0, endQuantity: null as number | null, unitPrice: money(r.unitPrice) }))
    .filter((t): t is Tier => t.unitPrice !== null)
    .sort((a, b) => a.startQuantity - b.startQuantity || a.unitPrice - b.unitPrice);
  if (!tiers.length) return null;
  tiers.forEach((t, k) => (t.endQuantity = tiers[k + 1]?.startQuantity ?? null));
  return tiers;
}

/** The row of a SKU as the API lists it. */
export function gcpSkuRowOf(s: GcpCatalogSku): GcpSkuRow {
  return {
    skuId: String(s.skuId ?? ""),
    serviceId: /^services\/([^/]+)\//.exec(s.name ?? "")?.[1] ?? null,
    description: String(s.description ?? ""),
    serviceName: String(s.category?.serviceDisplayName ?? ""),
    resourceFamily: String(s.category?.resourceFamily ?? ""),
    resourceGroup: String(s.category?.resourceGroup ?? ""),
    usageType: String(s.category?.usageType ?? ""),
    regions: s.serviceRegions?.length ? s.serviceRegions.map(String) : [GLOBAL],
    usageUnit: String(s.pricingInfo?.[0]?.pricingExpression?.usageUnit ?? ""),
    tiers: tiersOf(s),
    asOf: publishedDate(s.pricingInfo?.[0]?.effectiveTime),
  };
}

const inScope = (region: string, regions: string[] | "all") => regions === "all" || regions.includes(region);

/** Machine family labels of the SKU descriptions that are not "<family>[ Predefined| AMD| Arm]". */
const FAMILY_LABELS: Record<string, string> = { "": "n1", "compute optimized": "c2", "memory-optimized": "m1" };
const FAMILY_QUALIFIERS = new Set(["predefined", "amd", "arm", "intel"]);

/**
 * The predefined machine resource a vCPU or memory SKU prices, from its description:
 * "N2 Instance Core running in Americas", "N1 Predefined Instance Ram running in Americas",
 * "N2D AMD Instance Core …", "Compute optimized Core …" (C2), and their commitments
 * "Commitment v1: N2 Cpu in Americas for 1 Year", "Commitment v1: Cpu in Americas for 3 Years"
 * (N1's carry no family). Custom, sole-tenant, premium and other variants are not predefined
 * machine resources: null.
 */
export function gcpMachineResource(description: string): { family: string; resource: "cpu" | "ram" } | null {
  const d = description.trim().replace(/^Commitment v1:\s*/i, "");
  const m = /^(.*?)\s*(?:Instance\s+)?(Core|Cpu|Ram)\s+(?:running\s+)?in\s+\S.*$/i.exec(d);
  if (!m) return null;
  const label = m[1]!.trim().toLowerCase();
  let family = FAMILY_LABELS[label];
  if (!family) {
    const [head, ...rest] = label.split(/\s+/);
    if (!head || !/^[a-z]\d+[a-z]?$/.test(head) || !rest.every((w) => FAMILY_QUALIFIERS.has(w))) return null;
    family = head;
  }
  return { family, resource: /ram/i.test(m[2]!) ? "ram" : "cpu" };
}

function commitYears(s: GcpSkuRow): 1 | 3 | null {
  if (s.usageType === "Commit1Yr") return 1;
  if (s.usageType === "Commit3Yr") return 3;
  const m = /\bfor\s+(\d+)\s+years?$/i.exec(s.description);
  return m && (m[1] === "1" || m[1] === "3") ? (Number(m[1]) as 1 | 3) : null;
}

let machineSpecs: Record<string, [number, number]> | null = null;

/** Machine type → [billed vCPUs, memory GB], from the snapshot's sources (`gcp_machine_specs`). */
export function gcpMachineSpecs(): Record<string, [number, number]> {
  machineSpecs ??= (JSON.parse(SOURCES_JSON) as { gcp_machine_specs: Record<string, [number, number]> }).gcp_machine_specs;
  return machineSpecs;
}

/**
 * Shared-core machine types run on a fraction of a core: their spec's vCPU count is the share
 * Google bills (e2-medium: 1 of its 2 burstable vCPUs), but how the Windows licence meters them is
 * not published as a per-vCPU rate in the catalog, so their Windows price is left to the snapshot.
 */
const SHARED_CORE = /^(e2-(micro|small|medium)|f1-micro|g1-small)$/;

const WINDOWS_LICENCE = /^Licensing Fee for Windows Server (\d{4}) Datacenter Edition \((CPU|RAM) cost\)$/i;

/** The Windows Server licence an on-demand SKU prices (per vCPU or per GB), if it is one. */
function windowsLicence(s: GcpSkuRow): { year: number; kind: "CPU" | "RAM" } | null {
  const m = s.usageType === "OnDemand" ? WINDOWS_LICENCE.exec(s.description) : null;
  return m ? { year: Number(m[1]), kind: m[2]!.toUpperCase() as "CPU" | "RAM" } : null;
}

interface Rate {
  rate: number;
  asOf: string;
  skuId: string;
}

/** Keeps, per key, the rate of the latest-effective SKU (then the lowest SKU id): conflicting SKUs resolve the same way every time. */
function keep(map: Map<string, Rate>, key: string, r: Rate) {
  const prev = map.get(key);
  if (!prev || r.asOf > prev.asOf || (r.asOf === prev.asOf && r.skuId < prev.skuId)) map.set(key, r);
}

/**
 * Spend-based (flexible) CUD of Compute Engine, e.g. "Commitment - dollar based v1: GCE for 1
 * year" (Commit1Yr/Commit3Yr, or the term in the description). Assumed shape, as Google
 * publishes its dollar-based commitment SKUs (e.g. Cloud SQL's): the unit price is what one
 * $0.01 per hour of committed on-demand spend costs per hour, so price × 100 is the share of the
 * on-demand price paid under the commitment (0.0072 → 72 %). It discounts the vCPU and memory of
 * every predefined machine family in the regions it lists (all, when global). A price whose share
 * is not strictly between 0 and 1 does not fit that shape and is ignored.
 */
function spendCud(s: GcpSkuRow): { years: 1 | 3; share: number } | null {
  if (s.serviceName !== COMPUTE_ENGINE || !/^Commitment\s*-\s*dollar[\s-]based\b/i.test(s.description)) return null;
  const years = commitYears(s);
  const rate = s.tiers?.[0]?.unitPrice ?? null;
  if (!years || rate === null) return null;
  const share = exactSum([[rate, 100]]);
  return share > 0 && share < 1 ? { years, share } : null;
}

/**
 * The SKUs a region's rows are made of: those sold in the region, and the Windows licence and
 * spend-based CUD SKUs, which price machine types and discounts wherever they apply.
 */
const feedsRegion = (s: GcpSkuRow, region: string) => s.regions.includes(region) || windowsLicence(s) !== null || spendCud(s) !== null;

function cudOffer(o: Omit<OfferInput, "offeringClass" | "planType" | "contractTerm" | "durationSeconds" | "lockInDays" | "paymentOption" | "source"> & { years: number; planType?: string | null }): OfferInput {
  const { years, ...rest } = o;
  return {
    ...rest,
    contractTerm: termName(years),
    paymentOption: "no_upfront",
    offeringClass: null,
    planType: o.planType ?? null,
    durationSeconds: termSeconds(years),
    lockInDays: years * 365,
    source: GCP_CATALOG_SOURCE,
  };
}

/** Catalog SKUs and provider offers (no insured ones) of Cloud Billing Catalog SKUs in `regions` (see gcpRows). */
export function gcpCatalogRows(all: readonly GcpCatalogSku[], regions: string[] | "all" = "all"): { skus: SkuInput[]; offers: OfferInput[] } {
  return gcpRows(all.map(gcpSkuRowOf), regions);
}

/**
 * Catalog SKUs and provider offers (no insured ones) of SKU rows, limited to `regions` ("global"
 * is a region: the SKUs that list none). On-demand SKUs become `gcp:sku:` SKUs; Preemptible/Spot
 * ones are skipped. Machine types: price = vCPUs × the family's core rate + GB × its RAM rate in
 * the region; Windows adds the Windows Server licence per vCPU (and per GB, when priced), which no
 * commitment discounts: it is added to the commitment leases as pay-as-you-go.
 */
export function gcpRows(all: readonly GcpSkuRow[], regions: string[] | "all" = "all"): { skus: SkuInput[]; offers: OfferInput[] } {
  const source = GCP_CATALOG_SOURCE;
  const skus: SkuInput[] = [];
  const offers = new Map<string, OfferInput>();
  const onDemand = new Map<string, Rate>();
  const onDemandSkus = new Map<string, { providerSkuId: string; rate: number; asOf: string }[]>();
  const commits = new Map<string, Rate>();
  const commitSkus: { s: GcpSkuRow; family: string; resource: string; years: number; rate: number }[] = [];
  const licence = new Map<string, { year: number; rate: number; asOf: string; regions: string[] }>();
  const spend: { years: 1 | 3; share: number; asOf: string; regions: string[]; description: string }[] = [];

  const sorted = [...all].sort((a, b) => (a.skuId < b.skuId ? -1 : a.skuId > b.skuId ? 1 : JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
  for (const s of sorted) {
    const tiers = s.tiers;
    if (!tiers) continue;
    const skuRegions = s.regions.filter((r) => inScope(r, regions));
    const sc = spendCud(s);
    if (sc) {
      spend.push({ ...sc, asOf: s.asOf, regions: s.regions, description: s.description });
      continue;
    }
    if (s.usageType === "Commit1Yr" || s.usageType === "Commit3Yr") {
      const r = gcpMachineResource(s.description);
      if (!r) continue;
      const years = s.usageType === "Commit1Yr" ? 1 : 3;
      for (const region of skuRegions) keep(commits, `${r.family}|${r.resource}|${region}|${years}`, { rate: tiers[0]!.unitPrice, asOf: s.asOf, skuId: s.skuId });
      commitSkus.push({ s, family: r.family, resource: r.resource, years, rate: tiers[0]!.unitPrice });
      continue;
    }
    if (s.usageType !== "OnDemand") continue;
    const lic = windowsLicence(s);
    if (lic) {
      const prev = licence.get(lic.kind);
      if (!prev || lic.year > prev.year) licence.set(lic.kind, { year: lic.year, rate: tiers[0]!.unitPrice, asOf: s.asOf, regions: s.regions });
    }
    const r = gcpMachineResource(s.description);
    for (const region of skuRegions) {
      const providerSkuId = `gcp:sku:${s.skuId}:${region}`;
      skus.push({
        providerSkuId,
        displayName: `GCP ${s.description} (${region})`,
        service: s.resourceFamily.toLowerCase(),
        providerService: s.serviceName,
        regionCode: region,
        usageType: s.resourceGroup,
        usageUnit: s.usageUnit === "h" ? "Hrs" : s.usageUnit,
        tiers,
        source,
        asOf: s.asOf,
      });
      if (r) {
        const key = `${r.family}|${r.resource}|${region}`;
        keep(onDemand, key, { rate: tiers[0]!.unitPrice, asOf: s.asOf, skuId: s.skuId });
        (onDemandSkus.get(key) ?? onDemandSkus.set(key, []).get(key)!).push({ providerSkuId, rate: tiers[0]!.unitPrice, asOf: s.asOf });
      }
    }
  }

  // Resource-based CUDs on the per-resource SKUs they discount (as `catalog import`).
  for (const c of commitSkus) {
    for (const region of c.s.regions.filter((r) => inScope(r, regions))) {
      for (const od of onDemandSkus.get(`${c.family}|${c.resource}|${region}`) ?? []) {
        const key = ["resource_cud", "", termName(c.years), "no_upfront", od.providerSkuId].join("|");
        offers.set(key, cudOffer({
          offerKey: key,
          commitmentType: "resource_cud",
          years: c.years,
          region,
          instanceFamily: c.family,
          displayName: `GCP ${c.years}-year resource-based committed use discount (${c.s.description})`,
          isFlexible: false,
          asOf: c.s.asOf,
          leases: [{ providerSkuId: od.providerSkuId, recurringHourlyRate: c.rate, upfrontCost: 0, source, asOf: c.s.asOf }],
        }));
      }
    }
  }

  // Machine types: vCPUs and memory of their family in each region that prices both.
  const licenceIn = (kind: "CPU" | "RAM", region: string) => {
    const l = licence.get(kind);
    return l && (l.regions.includes(GLOBAL) || l.regions.includes(region)) ? l : null;
  };
  const machines: { id: string; type: string; region: string; os: "linux" | "windows"; compute: number; licence: number; asOf: string; vcpu: number; gb: number; family: string }[] = [];
  const regionSet = [...new Set([...onDemand.keys()].map((k) => k.split("|")[2]!))].sort();
  for (const [type, [vcpu, gb]] of Object.entries(gcpMachineSpecs()).sort(([a], [b]) => a.localeCompare(b))) {
    const family = type.split("-")[0]!;
    for (const region of regionSet) {
      const core = onDemand.get(`${family}|cpu|${region}`);
      const ram = onDemand.get(`${family}|ram|${region}`);
      if (!core || !ram) continue;
      const compute = exactSum([[vcpu, core.rate], [gb, ram.rate]]);
      const asOf = later(core.asOf, ram.asOf);
      machines.push({ id: `gcp:gce:${region}:${type}:linux`, type, region, os: "linux", compute, licence: 0, asOf, vcpu, gb, family });
      const licCpu = licenceIn("CPU", region);
      if (licCpu && !SHARED_CORE.test(type)) {
        const licRam = licenceIn("RAM", region);
        const lic = exactSum([[vcpu, licCpu.rate], [gb, licRam?.rate ?? 0]]);
        machines.push({ id: `gcp:gce:${region}:${type}:windows`, type, region, os: "windows", compute, licence: lic, asOf: later(asOf, licCpu.asOf), vcpu, gb, family });
      }
    }
  }
  for (const m of machines) {
    const windows = m.os === "windows";
    skus.push({
      providerSkuId: m.id,
      displayName: `GCP ${m.type} ${windows ? "Windows" : "Linux"} ${m.region}`,
      instanceType: m.type,
      service: "compute",
      providerService: COMPUTE_ENGINE,
      regionCode: m.region,
      operatingSystem: windows ? "Windows" : "Linux",
      usageType: windows ? `${m.type} + Windows Server licence` : `${m.type} (vCPU+RAM SKUs)`,
      usageUnit: "Hrs",
      tiers: [{ startQuantity: 0, endQuantity: null, unitPrice: exactSum([[m.compute, 1], [m.licence, 1]]) }],
      source,
      asOf: m.asOf,
    });
    for (const years of [1, 3]) {
      const core = commits.get(`${m.family}|cpu|${m.region}|${years}`);
      const ram = commits.get(`${m.family}|ram|${m.region}|${years}`);
      if (!core || !ram) continue;
      const asOf = later(later(core.asOf, ram.asOf), m.asOf);
      const key = ["resource_cud", "", termName(years), "no_upfront", m.id].join("|");
      offers.set(key, cudOffer({
        offerKey: key,
        commitmentType: "resource_cud",
        years,
        region: m.region,
        instanceType: m.type,
        instanceFamily: m.family,
        productDescription: windows ? "Windows" : "Linux",
        displayName: `GCP ${years}-year resource-based committed use discount, no upfront (${m.type} ${m.region})`,
        isFlexible: false,
        asOf,
        leases: [{ providerSkuId: m.id, recurringHourlyRate: exactSum([[m.vcpu, core.rate], [m.gb, ram.rate], [m.licence, 1]]), upfrontCost: 0, source, asOf }],
      }));
    }
  }

  // Spend-based CUDs: one flexible offer per term, a lease per SKU it discounts.
  for (const sc of spend.sort((a, b) => a.years - b.years || a.description.localeCompare(b.description) || a.share - b.share)) {
    const key = ["spend_cud", "", termName(sc.years), "no_upfront", "all"].join("|");
    const covers = (region: string) => sc.regions.includes(GLOBAL) || sc.regions.includes(region);
    const leases: LeaseInput[] = [];
    for (const [resourceKey, list] of onDemandSkus) {
      if (!covers(resourceKey.split("|")[2]!)) continue;
      for (const od of list) leases.push({ providerSkuId: od.providerSkuId, recurringHourlyRate: exactSum([[od.rate, sc.share]]), upfrontCost: 0, source, asOf: later(od.asOf, sc.asOf) });
    }
    for (const m of machines) {
      if (covers(m.region)) leases.push({ providerSkuId: m.id, recurringHourlyRate: exactSum([[m.compute, sc.share], [m.licence, 1]]), upfrontCost: 0, source, asOf: later(m.asOf, sc.asOf) });
    }
    // An offer with nothing to discount here (the global feed, a region it does not cover) is left to the feeds that price it.
    if (!leases.length) continue;
    const o =
      offers.get(key) ??
      offers.set(key, cudOffer({
        offerKey: key,
        commitmentType: "spend_cud",
        years: sc.years,
        planType: "compute",
        region: null,
        instanceFamily: null,
        displayName: `GCP ${sc.years}-year spend-based committed use discount (Compute flexible), no upfront`,
        isFlexible: true,
        asOf: sc.asOf,
        leases: [],
      })).get(key)!;
    for (const l of leases) {
      if (o.leases.some((x) => x.providerSkuId === l.providerSkuId)) continue;
      o.leases.push(l);
      o.asOf = later(o.asOf, l.asOf);
    }
  }
  return { skus, offers: [...offers.values()] };
}

/** The machine specs as the version sees them: a change of specs changes the machine types' prices. */
function machineSpecsDigest(): string {
  return JSON.stringify(Object.entries(gcpMachineSpecs()).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** A row's content: all of it but `asOf` (without a time range the API stamps the current pricing with a time of the last 12 hours, which would make every read look new). */
const contentOf = (s: GcpSkuRow) => JSON.stringify([s.skuId, s.description, s.serviceName, s.resourceFamily, s.resourceGroup, s.usageType, [...s.regions].sort(), s.usageUnit, s.tiers]);

/**
 * The version of a region's feed: sha256 of the mapping revision, the machine specs, the region
 * and the content of the SKUs its rows are made of, sorted (the API's order is not content).
 */
export function gcpFeedVersion(all: readonly GcpSkuRow[], region: string): string {
  const lines = all.filter((s) => feedsRegion(s, region)).map(contentOf).sort();
  const h = createHash("sha256").update(GCP_MAPPING_REVISION).update("\n").update(machineSpecsDigest()).update("\n").update(region);
  for (const l of lines) h.update("\n").update(l);
  return h.digest("hex");
}

async function readPage(url: string, signal: AbortSignal): Promise<any> {
  try {
    return await (await fetchPriceDocument(url, { signal })).json();
  } catch (e) {
    if (e instanceof RefreshSourceError) throw e;
    // A connection lost while the body streams: the cause's text may quote the URL (and its key), so it is not kept.
    throw new RefreshSourceError(`${safeUrl(url)}: connection lost while reading`, true);
  }
}

/** A page of a list call: its items (`field`) and its nextPageToken. */
async function readListPage(url: string, field: string, signal: AbortSignal): Promise<{ items: unknown[]; next: string | null }> {
  const page = await readPage(url, signal);
  if (!page || !Array.isArray(page[field] ?? [])) throw new RefreshSourceError(`${safeUrl(url)}: not a Cloud Billing Catalog list (${field} missing)`, false);
  return { items: page[field] ?? [], next: typeof page.nextPageToken === "string" && page.nextPageToken ? page.nextPageToken : null };
}

/** Every item of a list call, each projected as its page arrives, following nextPageToken until it is empty. */
async function readAllPages<T>(url: (pageToken: string | null) => string, field: string, project: (raw: any) => T, signal: AbortSignal): Promise<T[]> {
  const out: T[] = [];
  const tokens = new Set<string>();
  let token: string | null = null;
  for (let n = 0; ; n++) {
    if (n >= MAX_PAGES) throw new RefreshSourceError(`${safeUrl(url(null))}: more than ${MAX_PAGES} pages`, false);
    const u = url(token);
    const page = await readListPage(u, field, signal);
    for (const raw of page.items) out.push(project(raw));
    token = page.next;
    if (!token) return out;
    if (tokens.has(token)) throw new RefreshSourceError(`${safeUrl(u)}: nextPageToken repeats a page already read`, false);
    tokens.add(token);
  }
}

const withToken = (url: string, token: string | null) => (token ? `${url}&pageToken=${encodeURIComponent(token)}` : url);

/**
 * A service's SKU rows, read once for all its region feeds: each feed takes the current read
 * once, and the rows are let go when every feed has taken them. A feed read again (a later
 * refresh through the same listing) starts a new read, which the other feeds then share.
 */
class SharedSkus {
  private current: { rows: Promise<GcpSkuRow[]>; takenBy: Set<string> } | null = null;
  /** How many feeds share the rows. */
  feeds = 0;

  constructor(private readonly load: (signal: AbortSignal) => Promise<GcpSkuRow[]>) {}

  /** Starts a read now (the listing needs its regions); the feeds take it afterwards. */
  prime(signal: AbortSignal): Promise<GcpSkuRow[]> {
    this.current = { rows: this.load(signal), takenBy: new Set() };
    return this.current.rows;
  }

  take(feed: string, signal: AbortSignal): Promise<GcpSkuRow[]> {
    if (!this.current || this.current.takenBy.has(feed)) this.current = { rows: this.load(signal), takenBy: new Set() };
    const c = this.current;
    c.takenBy.add(feed);
    if (c.takenBy.size >= this.feeds) this.current = null;
    return c.rows;
  }
}

/** Streams a region's rows into the sink (SKUs first), unless its version is the one read last time. */
async function emit(all: readonly GcpSkuRow[], region: string, sink: CatalogSink, previous: FeedCursor | null): Promise<FeedReadResult | "unchanged"> {
  const version = gcpFeedVersion(all, region);
  if (previous?.version === version) return "unchanged";
  const mine = all.filter((s) => feedsRegion(s, region));
  const rows = gcpRows(mine, [region]);
  for (const s of rows.skus) await sink.sku(s);
  for (const o of rows.offers) await sink.offer(o);
  const effective = mine.map((s) => s.asOf).filter((d) => /^\d{4}-\d{2}-\d{2}$/.test(d));
  return { version, etag: null, publishedAt: effective.length ? effective.reduce(later) : null };
}

/** The feeds of one service: one per region (`<prefix>:<region>`), all sharing its SKU rows. */
function regionFeeds(prefix: string, regions: string[], shared: SharedSkus): FeedUnit[] {
  shared.feeds = regions.length;
  return regions.map((region) => {
    const feed = `${prefix}:${region}`;
    return { provider: "gcp" as const, feed, read: async (sink, previous, signal) => emit(await shared.take(feed, signal), region, sink, previous) };
  });
}

/** The regions of a scope's list, with "global" (the SKUs that list no region are always in scope). */
const scopeRegions = (regions: string[]) => [...new Set([GLOBAL, ...regions])].sort();
const regionsOfRows = (rows: readonly GcpSkuRow[]) => [...new Set(rows.flatMap((s) => s.regions))].sort();
/** The service a SKU belongs to: its id, or its display name when it has no resource name. */
const serviceKeyOf = (s: GcpSkuRow) => s.serviceId ?? s.serviceName.toLowerCase().replace(/\W+/g, "_");

/**
 * Offline: the SKU pages under `<dir>/gcp/`, grouped by service, one feed per region as online.
 * The listing reads each page once to learn the services (and, with regions "all", their
 * regions) and which pages hold them; a service's pages are read again when its feeds are read.
 */
async function offlineFeeds(dir: string, services: string[], regions: string[] | "all", signal: AbortSignal): Promise<FeedUnit[]> {
  const folder = join(dir, "gcp");
  const files = await offlinePageFiles(folder);
  const skusOf = async (url: string, signal: AbortSignal) => {
    const page = await readPage(url, signal);
    if (!page || !Array.isArray(page.skus)) throw new RefreshSourceError(`${safeUrl(url)}: not a Cloud Billing Catalog SKU list (skus missing)`, false);
    return page.skus as GcpCatalogSku[];
  };
  const found = new Map<string, { pages: string[]; regions: Set<string> }>();
  for (const file of files) {
    const url = pathToFileURL(file).href;
    for (const s of (await skusOf(url, signal)).map(gcpSkuRowOf)) {
      if (!services.includes(s.serviceName)) continue;
      const key = serviceKeyOf(s);
      const f = found.get(key) ?? found.set(key, { pages: [], regions: new Set() }).get(key)!;
      if (f.pages.at(-1) !== url) f.pages.push(url);
      for (const r of s.regions) f.regions.add(r);
    }
  }
  return [...found].sort(([a], [b]) => a.localeCompare(b)).flatMap(([key, f]) => {
    const shared = new SharedSkus(async (readSignal) => {
      const rows: GcpSkuRow[] = [];
      for (const url of f.pages) {
        for (const raw of await skusOf(url, readSignal)) {
          const s = gcpSkuRowOf(raw);
          if (services.includes(s.serviceName) && serviceKeyOf(s) === key) rows.push(s);
        }
      }
      return rows;
    });
    return regionFeeds(`gcp:${key}`, regions === "all" ? [...f.regions].sort() : scopeRegions(regions), shared);
  });
}

/**
 * The GCP feeds of the scope: the services list (paged), then for each service of the scope one
 * feed per region of the scope and "global" (`gcp:<service id>:<region>`); with regions "all",
 * one per region its SKUs list (read while listing). Without an API key there are none (the
 * orchestrator reports GCP skipped), unless offline. The key travels only in the query string:
 * messages name URLs via safeUrl.
 */
export const listGcpFeeds: ListFeeds = async ({ sources, scope, signal }) => {
  if (sources.offlineDir) return offlineFeeds(sources.offlineDir, scope.gcpServices, scope.gcpRegions, signal);
  if (!sources.gcpApiKey) return [];
  const base = sources.gcpBaseUrl.replace(/\/+$/, "");
  const key = encodeURIComponent(sources.gcpApiKey);
  const services = await readAllPages(
    (t) => withToken(`${base}/v1/services?key=${key}&pageSize=${PAGE_SIZE}`, t),
    "services",
    (s: { name?: string; serviceId?: string; displayName?: string }) => ({ id: s.serviceId ?? String(s.name ?? "").replace(/^services\//, ""), displayName: s.displayName ?? "" }),
    signal,
  );
  const units: FeedUnit[] = [];
  for (const svc of services.filter((s) => scope.gcpServices.includes(s.displayName)).sort((a, b) => a.id.localeCompare(b.id))) {
    const shared = new SharedSkus((readSignal) =>
      readAllPages((t) => withToken(`${base}/v1/services/${encodeURIComponent(svc.id)}/skus?key=${key}&currencyCode=${CATALOG_CURRENCY}&pageSize=${PAGE_SIZE}`, t), "skus", gcpSkuRowOf, readSignal),
    );
    const regions = scope.gcpRegions === "all" ? regionsOfRows(await shared.prime(signal)) : scopeRegions(scope.gcpRegions);
    units.push(...regionFeeds(`gcp:${svc.id}`, regions, shared));
  }
  return units;
};

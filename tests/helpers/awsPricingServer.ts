/**
 * A loopback stand-in for the AWS Price List bulk API, serving its whole tree in the real shapes
 * and field names: the offer index (offers/v1.0/aws/index.json), each service's region index
 * (…/<offerCode>/current/region_index.json → regions{code: {regionCode, currentVersionUrl}}),
 * versioned region offer files (…/<offerCode>/<version>/<region>/index.json: products, then
 * terms.OnDemand and terms.Reserved, pretty-printed as AWS prints them), and the Savings Plans
 * region indexes (savingsPlan/v1.0/aws/<code>/current/region_index.json → regions[{regionCode,
 * versionUrl}]) and rate files.
 *
 * The data: the EC2 sa-east-1 file and compute Savings Plans sa-east-1 file are the catalog test
 * fixtures as they are; the other files are built from the bundled price snapshot's rows
 * (lib/catalog/snapshot.gen.ts, from shared/data/pricing) for a few SKUs per service and region
 * (EC2, RDS, ElastiCache), with list prices of OpenSearch and Redshift nodes, and with the
 * variants a real file carries beside them (dedicated tenancy, capacity reservations, SQL
 * Server, Multi-AZ, legacy RI purchase options, storage and data transfer), among them the ones
 * that share an instance's type and engine and come first in the file: ElastiCache Extended
 * Support surcharges, RDS Custom, RDS on Outposts; Dedicated Host reservations; ElastiCache
 * engines as AWS labels them now ("Redis OSS", "Valkey").
 *
 * Tests can publish a new version of a file (the region index then points at it; old versions
 * stay served, as AWS keeps them), get ETag/304 answers, count requests per path, make one path
 * fail (`cut`: half of the body then a destroyed socket; `500`), and write the tree to a
 * directory laid out as the API's paths (offline refresh).
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { parse } from "csv-parse/sync";
import { CATALOG_SKUS_CSV, PRICES_CSV } from "../../lib/catalog/snapshot.gen.ts";

const FIXTURES = new URL("../catalog/fixtures/", import.meta.url).pathname;
const DISCLAIMER = "This pricing list is for informational purposes only. All prices are subject to the additional terms included in the pricing pages on http://aws.amazon.com. All Free Tier prices are also subject to the terms included at https://aws.amazon.com/free/";
export const INITIAL_VERSION = "20261101000000";

const LOCATIONS: Record<string, { name: string; prefix: string }> = {
  "us-east-1": { name: "US East (N. Virginia)", prefix: "" },
  "eu-central-1": { name: "EU (Frankfurt)", prefix: "EUC1-" },
  "sa-east-1": { name: "South America (Sao Paulo)", prefix: "SAE1-" },
};

/** Reserved offer term codes as AWS publishes them (class, years, purchase option). */
const RI_TERM_CODES: Record<string, string> = {
  "standard|1|No Upfront": "4NA7Y494T4",
  "standard|1|Partial Upfront": "HU7G6KETJZ",
  "standard|1|All Upfront": "6QCMYABX3D",
  "standard|3|No Upfront": "BPH4J8HBKS",
  "standard|3|Partial Upfront": "38NPMPTW36",
  "standard|3|All Upfront": "NQ3QZPMQV9",
  "convertible|1|No Upfront": "7NE97W5U4E",
  "convertible|1|Partial Upfront": "CUZHX8X6JH",
  "convertible|1|All Upfront": "VJWZNREJX2",
  "convertible|3|No Upfront": "Z2E3P23VKM",
  "convertible|3|Partial Upfront": "R5XV2EPZQZ",
  "convertible|3|All Upfront": "MZU6U2429S",
  "heavy|1|Heavy Utilization": "KCAKZHGHG2",
};
const ON_DEMAND_TERM = "JRTCKXETXF";
const PAYMENTS: Record<string, string> = { no_upfront: "No Upfront", partial_upfront: "Partial Upfront", all_upfront: "All Upfront" };

// ---- the price documents

/** Jackson-style pretty printing, as the Price List files are printed (`"key" : value`, `[ ]`). */
export function printAwsJson(v: unknown, indent = ""): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  const inner = indent + "  ";
  if (Array.isArray(v)) return v.length ? `[ ${v.map((x) => printAwsJson(x, inner)).join(", ")} ]` : "[ ]";
  const entries = Object.entries(v as Record<string, unknown>);
  if (!entries.length) return "{ }";
  return `{\n${entries.map(([k, x]) => `${inner}${JSON.stringify(k)} : ${printAwsJson(x, inner)}`).join(",\n")}\n${indent}}`;
}

const isoOf = (version: string) => `${version.slice(0, 4)}-${version.slice(4, 6)}-${version.slice(6, 8)}T${version.slice(8, 10)}:${version.slice(10, 12)}:${version.slice(12, 14)}Z`;
const usd = (v: number) => v.toFixed(10);
/** A deterministic 16-character SKU code for a product. */
const skuCode = (key: string) => createHash("sha1").update(key).digest("hex").slice(0, 16).toUpperCase();

interface RiPrice {
  offeringClass: "standard" | "convertible" | "heavy";
  years: 1 | 3;
  purchaseOption: string;
  upfront: number;
  hourly: number;
}

interface ProductSpec {
  productFamily: string;
  attributes: Record<string, string>;
  /** On-demand price dimensions (one flat tier, or several). */
  onDemand: { begin: number; end: number | null; price: number; unit: string }[] | null;
  reserved: RiPrice[];
}

function offerFile(offerCode: string, version: string, products: ProductSpec[]): any {
  const doc: any = { formatVersion: "v1.0", disclaimer: DISCLAIMER, offerCode, version, publicationDate: isoOf(version), products: {}, terms: { OnDemand: {}, Reserved: {} } };
  for (const p of products) {
    const sku = skuCode(`${offerCode}|${JSON.stringify(p.attributes)}`);
    doc.products[sku] = { sku, productFamily: p.productFamily, attributes: p.attributes };
    const effectiveDate = isoOf(version);
    if (p.onDemand) {
      const dims: Record<string, unknown> = {};
      p.onDemand.forEach((d, i) => {
        const rateCode = `${sku}.${ON_DEMAND_TERM}.${i === 0 ? "6YS6EN2CT7" : skuCode(`${sku}|${i}`).slice(0, 10)}`;
        dims[rateCode] = { rateCode, description: `$${d.price} per ${d.unit}`, beginRange: String(d.begin), endRange: d.end === null ? "Inf" : String(d.end), unit: d.unit, pricePerUnit: { USD: usd(d.price) }, appliesTo: [] };
      });
      doc.terms.OnDemand[sku] = { [`${sku}.${ON_DEMAND_TERM}`]: { offerTermCode: ON_DEMAND_TERM, sku, effectiveDate, priceDimensions: dims, termAttributes: {} } };
    }
    if (p.reserved.length) {
      const terms: Record<string, unknown> = {};
      for (const r of p.reserved) {
        const code = RI_TERM_CODES[`${r.offeringClass}|${r.years}|${r.purchaseOption}`]!;
        const dims: Record<string, unknown> = {};
        if (r.purchaseOption !== "No Upfront") dims[`${sku}.${code}.2TG2D8R56U`] = { rateCode: `${sku}.${code}.2TG2D8R56U`, description: "Upfront Fee", unit: "Quantity", pricePerUnit: { USD: String(r.upfront) }, appliesTo: [] };
        dims[`${sku}.${code}.6YS6EN2CT7`] = { rateCode: `${sku}.${code}.6YS6EN2CT7`, description: `${p.attributes.instanceType} reserved instance applied`, beginRange: "0", endRange: "Inf", unit: "Hrs", pricePerUnit: { USD: usd(r.hourly) }, appliesTo: [] };
        const termAttributes: Record<string, string> = { LeaseContractLength: `${r.years}yr`, PurchaseOption: r.purchaseOption };
        if (r.offeringClass !== "heavy") termAttributes.OfferingClass = r.offeringClass;
        terms[`${sku}.${code}`] = { offerTermCode: code, sku, effectiveDate, priceDimensions: dims, termAttributes };
      }
      doc.terms.Reserved[sku] = terms;
    }
  }
  return doc;
}

type Row = Record<string, string>;
let snapshot: { skus: Map<string, Row>; prices: Map<string, Row[]> } | null = null;
function snapshotRows() {
  if (snapshot) return snapshot;
  const skus = new Map<string, Row>((parse(CATALOG_SKUS_CSV, { columns: true, skip_empty_lines: true }) as Row[]).map((r) => [r.provider_sku_id!, r]));
  const prices = new Map<string, Row[]>();
  for (const r of parse(PRICES_CSV, { columns: true, skip_empty_lines: true }) as Row[]) (prices.get(r.provider_sku_id!) ?? prices.set(r.provider_sku_id!, []).get(r.provider_sku_id!)!).push(r);
  snapshot = { skus, prices };
  return snapshot;
}

/**
 * A snapshot SKU's prices as an offer file prints them: the newest on-demand row, and the newest
 * reserved row per (class, term, payment) with its upfront/hourly split, or, where the snapshot
 * gives only the effective rate, the split AWS would print: all upfront = effective × hours
 * (whole dollars), partial upfront = half of that upfront (whole dollars) and the rest hourly
 * (4 decimals).
 */
export function snapshotPrices(providerSkuId: string): { descriptor: Row; onDemand: number; reserved: RiPrice[] } {
  const { skus, prices } = snapshotRows();
  const descriptor = skus.get(providerSkuId);
  const rows = prices.get(providerSkuId) ?? [];
  if (!descriptor || !rows.length) throw new Error(`no snapshot rows for ${providerSkuId}`);
  const newest = (rs: Row[]) => rs.reduce((a, b) => ((b.as_of ?? "") > (a.as_of ?? "") ? b : a));
  const od = rows.filter((r) => r.pricing_model === "on_demand");
  const groups = new Map<string, Row[]>();
  for (const r of rows.filter((r) => r.pricing_model === "reserved_instance")) {
    const k = `${r.offering_class}|${r.term_years}|${r.payment_option}`;
    (groups.get(k) ?? groups.set(k, []).get(k)!).push(r);
  }
  const num = (v: string | undefined) => (v === undefined || v === "" ? null : Number(v));
  const reserved: RiPrice[] = [];
  for (const g of groups.values()) {
    const r = newest(g);
    const years = Number(r.term_years) as 1 | 3;
    const hours = 8760 * years;
    const eff = num(r.effective_hourly_usd)!;
    let upfront = num(r.upfront_usd);
    let hourly = num(r.recurring_hourly_usd);
    if (r.payment_option === "no_upfront") [upfront, hourly] = [0, hourly ?? eff];
    else if (r.payment_option === "all_upfront") [upfront, hourly] = [upfront ?? Math.round(eff * hours), 0];
    else if (upfront === null || hourly === null) {
      upfront = Math.round((eff * hours) / 2);
      hourly = Math.round(((eff * hours - upfront) / hours) * 10_000) / 10_000;
    }
    reserved.push({ offeringClass: r.offering_class as "standard" | "convertible", years, purchaseOption: PAYMENTS[r.payment_option!]!, upfront: upfront!, hourly: hourly! });
  }
  return { descriptor, onDemand: Number(newest(od).on_demand_hourly_usd), reserved };
}

const location = (region: string) => LOCATIONS[region]!;
const EC2_OPERATION: Record<string, string> = { Linux: "RunInstances", Windows: "RunInstances:0002", RHEL: "RunInstances:0010", SUSE: "RunInstances:000g" };

function ec2Instance(region: string, instanceType: string, os: string, o: { tenancy?: string; capacitystatus?: string; preInstalledSw?: string; licenseModel?: string } = {}): Record<string, string> {
  const tenancy = o.tenancy ?? "Shared";
  const usage = o.capacitystatus === "UnusedCapacityReservation" ? "UnusedBox" : tenancy === "Dedicated" ? "DedicatedUsage" : "BoxUsage";
  return {
    servicecode: "AmazonEC2",
    location: location(region).name,
    locationType: "AWS Region",
    instanceType,
    currentGeneration: "Yes",
    instanceFamily: "General purpose",
    tenancy,
    operatingSystem: os,
    licenseModel: o.licenseModel ?? "No License required",
    usagetype: `${location(region).prefix}${usage}:${instanceType}`,
    operation: o.licenseModel === "Bring your own license" ? "RunInstances:0800" : o.preInstalledSw === "SQL Std" ? "RunInstances:0006" : EC2_OPERATION[os]!,
    capacitystatus: o.capacitystatus ?? "Used",
    marketoption: "OnDemand",
    preInstalledSw: o.preInstalledSw ?? "NA",
    regionCode: region,
    servicename: "Amazon Elastic Compute Cloud",
  };
}

/** EC2 instances of the snapshot, with the variants of the first one that the catalog does not price. */
function ec2File(region: string, version: string, ids: string[]): any {
  const products: ProductSpec[] = [];
  ids.forEach((id, i) => {
    const { descriptor: d, onDemand, reserved } = snapshotPrices(id);
    products.push({ productFamily: "Compute Instance", attributes: ec2Instance(region, d.instance_type!, d.operating_system!), onDemand: [{ begin: 0, end: null, price: onDemand, unit: "Hrs" }], reserved });
    if (i === 0) {
      const variant = (o: Parameters<typeof ec2Instance>[3], factor: number, withRi: boolean): ProductSpec => ({
        productFamily: "Compute Instance",
        attributes: ec2Instance(region, d.instance_type!, d.operating_system!, o),
        onDemand: [{ begin: 0, end: null, price: Math.round(onDemand * factor * 1000) / 1000, unit: "Hrs" }],
        reserved: withRi ? reserved.map((r) => ({ ...r, upfront: Math.round(r.upfront * factor), hourly: Math.round(r.hourly * factor * 10_000) / 10_000 })) : [],
      });
      products.push(variant({ tenancy: "Dedicated" }, 1.1, true), variant({ capacitystatus: "UnusedCapacityReservation" }, 1, false), variant({ preInstalledSw: "SQL Std" }, 3.5, false), variant({ licenseModel: "Bring your own license" }, 1, false));
    }
  });
  const prefix = location(region).prefix;
  products.push(
    {
      productFamily: "Data Transfer",
      attributes: { servicecode: "AWSDataTransfer", transferType: "AWS Outbound", fromLocation: location(region).name, toLocation: "External", usagetype: `${prefix}DataTransfer-Out-Bytes`, operation: "", regionCode: region },
      onDemand: [
        { begin: 0, end: 10240, price: 0.09, unit: "GB" },
        { begin: 10240, end: 51200, price: 0.085, unit: "GB" },
        { begin: 51200, end: 153600, price: 0.07, unit: "GB" },
        { begin: 153600, end: null, price: 0.05, unit: "GB" },
      ],
      reserved: [],
    },
    {
      productFamily: "Storage",
      attributes: { servicecode: "AmazonEC2", location: location(region).name, locationType: "AWS Region", storageMedia: "SSD-backed", volumeType: "General Purpose", volumeApiName: "gp3", usagetype: `${prefix}EBS:VolumeUsage.gp3`, operation: "", regionCode: region },
      onDemand: [{ begin: 0, end: null, price: 0.08, unit: "GB-Mo" }],
      reserved: [],
    },
    // A whole m5 host: its reservations are Dedicated Host Reservations, not Reserved Instances.
    {
      productFamily: "Dedicated Host",
      attributes: { servicecode: "AmazonEC2", location: location(region).name, locationType: "AWS Region", instanceType: "m5", instanceFamily: "General purpose", physicalCores: "48", vcpu: "96", memory: "384 GiB", tenancy: "Host", usagetype: `${prefix}HostUsage:m5`, operation: "RunInstances", regionCode: region, servicename: "Amazon Elastic Compute Cloud" },
      onDemand: [{ begin: 0, end: null, price: 5.069, unit: "Hrs" }],
      reserved: [
        { offeringClass: "standard", years: 1, purchaseOption: "No Upfront", upfront: 0, hourly: 3.548 },
        { offeringClass: "standard", years: 3, purchaseOption: "All Upfront", upfront: 58012, hourly: 0 },
      ],
    },
  );
  return offerFile("AmazonEC2", version, products);
}

const RDS_ENGINES: Record<string, { operation: string; engineCode: string }> = {
  MySQL: { operation: "CreateDBInstance:0002", engineCode: "2" },
  PostgreSQL: { operation: "CreateDBInstance:0014", engineCode: "14" },
  "SQL Server": { operation: "CreateDBInstance:0012", engineCode: "12" },
  "PostgreSQL (on-premise for Outposts)": { operation: "CreateDBInstance:0014", engineCode: "14" },
};

function rdsInstance(region: string, instanceType: string, engine: string, deploymentOption = "Single-AZ", extra: Record<string, string> = {}): Record<string, string> {
  return {
    servicecode: "AmazonRDS",
    location: location(region).name,
    locationType: "AWS Region",
    instanceType,
    currentGeneration: "Yes",
    instanceFamily: "General purpose",
    storage: "EBS Only",
    engineCode: RDS_ENGINES[engine]!.engineCode,
    databaseEngine: engine,
    licenseModel: "No license required",
    deploymentOption,
    usagetype: `${location(region).prefix}${deploymentOption === "Single-AZ" ? "InstanceUsage" : "Multi-AZUsage"}:${instanceType}`,
    operation: RDS_ENGINES[engine]!.operation,
    regionCode: region,
    servicename: "Amazon Relational Database Service",
    ...extra,
  };
}

/**
 * SQL Server Standard (license included) on db.m5.large, preceded by what shares its class,
 * engine and edition in a real file: the RDS Custom instance (same usage type, its own price),
 * and RDS on Outposts (the engine "on-premise for Outposts").
 */
function rdsLookalikes(region: string): ProductSpec[] {
  const sqlServer = { databaseEdition: "Standard", licenseModel: "License included" };
  const hourly = (price: number) => [{ begin: 0, end: null, price, unit: "Hrs" }];
  return [
    { productFamily: "Database Instance", attributes: rdsInstance(region, "db.m5.large", "SQL Server", "Single-AZ", { ...sqlServer, deploymentModel: "Custom", operation: "CreateDBInstance:0405" }), onDemand: hourly(1.229), reserved: [] },
    { productFamily: "Database Instance", attributes: rdsInstance(region, "db.m5.large", "PostgreSQL (on-premise for Outposts)"), onDemand: hourly(0.082), reserved: [] },
    { productFamily: "Database Instance", attributes: rdsInstance(region, "db.m5.large", "SQL Server", "Single-AZ", sqlServer), onDemand: hourly(0.977), reserved: [] },
  ];
}

function rdsFile(region: string, version: string, ids: string[]): any {
  const products: ProductSpec[] = region === "us-east-1" ? rdsLookalikes(region) : [];
  ids.forEach((id, i) => {
    const { descriptor: d, onDemand, reserved } = snapshotPrices(id);
    products.push({ productFamily: "Database Instance", attributes: rdsInstance(region, d.instance_type!, d.database_engine!), onDemand: [{ begin: 0, end: null, price: onDemand, unit: "Hrs" }], reserved });
    if (i === 0) products.push({ productFamily: "Database Instance", attributes: rdsInstance(region, d.instance_type!, d.database_engine!, "Multi-AZ"), onDemand: [{ begin: 0, end: null, price: onDemand * 2, unit: "Hrs" }], reserved: reserved.map((r) => ({ ...r, upfront: r.upfront * 2, hourly: r.hourly * 2 })) });
  });
  products.push({
    productFamily: "Database Storage",
    attributes: { servicecode: "AmazonRDS", location: location(region).name, locationType: "AWS Region", volumeType: "General Purpose", databaseEngine: "MySQL", deploymentOption: "Single-AZ", usagetype: `${location(region).prefix}RDS:GP2-Storage`, operation: "CreateDBInstance:0002", regionCode: region },
    onDemand: [{ begin: 0, end: null, price: 0.115, unit: "GB-Mo" }],
    reserved: [],
  });
  return offerFile("AmazonRDS", version, products);
}

/** Region codes of the usage types that carry one even in us-east-1 (Extended Support). */
const USAGE_REGION: Record<string, string> = { "us-east-1": "USE1", "eu-central-1": "EUC1", "sa-east-1": "SAE1" };
const CACHE_OPERATION: Record<string, string> = { Redis: "CreateCacheCluster:0002", "Redis OSS": "CreateCacheCluster:0002", Memcached: "CreateCacheCluster:0001", Valkey: "CreateCacheCluster:Valkey" };

/**
 * ElastiCache nodes of the snapshot. In us-east-1 the first node's engine has reached Extended
 * Support: its two surcharges are listed first, under the node's type and engine. In
 * eu-central-1 the engine is labelled as AWS labels it now, "Redis OSS", and the first node
 * type is offered with Valkey too.
 */
function elastiCacheFile(region: string, version: string, ids: string[]): any {
  const engineLabel = (snapshotEngine: string) => (region === "eu-central-1" && snapshotEngine === "Redis" ? "Redis OSS" : snapshotEngine);
  const node = (instanceType: string, cacheEngine: string, usagetype: string) => ({
    servicecode: "AmazonElastiCache",
    location: location(region).name,
    locationType: "AWS Region",
    instanceType,
    currentGeneration: "Yes",
    instanceFamily: "Standard",
    cacheEngine,
    usagetype,
    operation: CACHE_OPERATION[cacheEngine]!,
    regionCode: region,
    servicename: "Amazon ElastiCache",
  });
  const products: ProductSpec[] = [];
  ids.forEach((id, i) => {
    const { descriptor: d, onDemand, reserved } = snapshotPrices(id);
    const type = d.instance_type!;
    const engine = engineLabel(d.cache_engine!);
    if (i === 0 && region === "us-east-1")
      for (const [years, factor] of [["Yr1_Yr2", 0.8], ["Yr3", 1.6]] as const)
        products.push({ productFamily: "Cache Instance", attributes: node(type, engine, `${USAGE_REGION[region]}-ExtendedSupport${years}-NodeUsage:${type}`), onDemand: [{ begin: 0, end: null, price: Math.round(onDemand * factor * 1000) / 1000, unit: "Hrs" }], reserved: [] });
    // The first node also carries a legacy "Heavy Utilization" reservation, as old types do.
    const legacy: RiPrice[] = i === 0 ? [{ offeringClass: "heavy", years: 1, purchaseOption: "Heavy Utilization", upfront: 500, hourly: 0.05 }] : [];
    products.push({ productFamily: "Cache Instance", attributes: node(type, engine, `${location(region).prefix}NodeUsage:${type}`), onDemand: [{ begin: 0, end: null, price: onDemand, unit: "Hrs" }], reserved: [...reserved, ...legacy] });
    if (i === 0 && region === "eu-central-1")
      products.push({ productFamily: "Cache Instance", attributes: node(type, "Valkey", `${location(region).prefix}NodeUsage:${type}`), onDemand: [{ begin: 0, end: null, price: Math.round(onDemand * 0.8 * 10_000) / 10_000, unit: "Hrs" }], reserved: [] });
  });
  return offerFile("AmazonElastiCache", version, products);
}

/** OpenSearch and Redshift nodes are not in the snapshot: us-east-1 list prices. */
const OPENSEARCH_NODES: { type: string; onDemand: number; reserved: RiPrice[] }[] = [
  {
    type: "m5.large.search",
    onDemand: 0.142,
    reserved: [
      { offeringClass: "standard", years: 1, purchaseOption: "No Upfront", upfront: 0, hourly: 0.098 },
      { offeringClass: "standard", years: 1, purchaseOption: "All Upfront", upfront: 819, hourly: 0 },
      { offeringClass: "standard", years: 3, purchaseOption: "Partial Upfront", upfront: 832, hourly: 0.0316 },
    ],
  },
  { type: "r6g.large.search", onDemand: 0.167, reserved: [{ offeringClass: "standard", years: 3, purchaseOption: "No Upfront", upfront: 0, hourly: 0.0786 }] },
];
const REDSHIFT_NODES: { type: string; onDemand: number; reserved: RiPrice[] }[] = [
  {
    type: "dc2.large",
    onDemand: 0.25,
    reserved: [
      { offeringClass: "standard", years: 1, purchaseOption: "No Upfront", upfront: 0, hourly: 0.1825 },
      { offeringClass: "standard", years: 3, purchaseOption: "All Upfront", upfront: 2740, hourly: 0 },
    ],
  },
  { type: "ra3.xlplus", onDemand: 1.086, reserved: [{ offeringClass: "standard", years: 1, purchaseOption: "Partial Upfront", upfront: 3568, hourly: 0.4073 }] },
];

function openSearchFile(region: string, version: string): any {
  const products: ProductSpec[] = OPENSEARCH_NODES.map((n) => ({
    productFamily: "Amazon OpenSearch Service Instance",
    attributes: { servicecode: "AmazonES", location: location(region).name, locationType: "AWS Region", instanceType: n.type, currentGeneration: "Yes", instanceFamily: "General purpose", storage: "EBS Only", usagetype: `${location(region).prefix}ESInstance:${n.type.replace(/\.search$/, "")}`, operation: "ESDomain", regionCode: region, servicename: "Amazon OpenSearch Service" },
    onDemand: [{ begin: 0, end: null, price: n.onDemand, unit: "Hrs" }],
    reserved: n.reserved,
  }));
  products.push({
    productFamily: "Amazon OpenSearch Service Volume",
    attributes: { servicecode: "AmazonES", location: location(region).name, locationType: "AWS Region", storageMedia: "GP3", usagetype: `${location(region).prefix}ES:GP3-Storage`, operation: "ESDomain", regionCode: region },
    onDemand: [{ begin: 0, end: null, price: 0.122, unit: "GB-Mo" }],
    reserved: [],
  });
  return offerFile("AmazonES", version, products);
}

function redshiftFile(region: string, version: string): any {
  const products: ProductSpec[] = REDSHIFT_NODES.map((n) => ({
    productFamily: "Compute Instance",
    attributes: { servicecode: "AmazonRedshift", location: location(region).name, locationType: "AWS Region", instanceType: n.type, usagetype: `${location(region).prefix}Node:${n.type}`, operation: "RunComputeNode:0001", regionCode: region, servicename: "Amazon Redshift" },
    onDemand: [{ begin: 0, end: null, price: n.onDemand, unit: "Hrs" }],
    reserved: n.reserved,
  }));
  products.push({
    productFamily: "Redshift Managed Storage",
    attributes: { servicecode: "AmazonRedshift", location: location(region).name, locationType: "AWS Region", usagetype: `${location(region).prefix}RMS:RedshiftManagedStorage`, operation: "", regionCode: region },
    onDemand: [{ begin: 0, end: null, price: 0.024, unit: "GB-Mo" }],
    reserved: [],
  });
  return offerFile("AmazonRedshift", version, products);
}

interface SpRate {
  usageType: string;
  operation: string;
  serviceCode: string;
  rate: number;
}
interface SpPlanSpec {
  productFamily: "ComputeSavingsPlans" | "EC2InstanceSavingsPlans" | "DatabaseSavingsPlans";
  purchaseOption: string;
  years: 1 | 3;
  instanceFamily?: string;
  rates: SpRate[];
}

function savingsPlanFile(region: string, version: string, plans: SpPlanSpec[]): any {
  const products: unknown[] = [];
  const terms: unknown[] = [];
  for (const p of plans) {
    const short = p.productFamily === "ComputeSavingsPlans" ? "ComputeSP" : p.productFamily === "EC2InstanceSavingsPlans" ? `EC2SP:${p.instanceFamily}` : "DatabaseSP";
    const usageType = `${short}:${p.years}yr${p.purchaseOption.replace(/ /g, "")}`;
    const sku = skuCode(`${region}|${usageType}`);
    const attributes: Record<string, string> = { purchaseOption: p.purchaseOption, granularity: "hourly", ...(p.instanceFamily ? { instanceType: p.instanceFamily } : {}), purchaseTerm: `${p.years}yr`, locationType: "AWS Region", location: p.productFamily === "EC2InstanceSavingsPlans" ? location(region).name : "Any" };
    products.push({ sku, productFamily: p.productFamily, serviceCode: p.productFamily === "DatabaseSavingsPlans" ? "DatabaseSavingsPlans" : "ComputeSavingsPlans", usageType, operation: "", attributes });
    terms.push({
      sku,
      description: `${p.years} year ${p.purchaseOption} ${p.productFamily}`,
      effectiveDate: isoOf(version),
      leaseContractLength: { duration: p.years, unit: "year" },
      rates: p.rates.map((r) => {
        const discountedSku = skuCode(`${r.serviceCode}|${r.usageType}|${r.operation}`);
        return { discountedSku, discountedUsageType: r.usageType, discountedOperation: r.operation, discountedServiceCode: r.serviceCode, rateCode: `${sku}.${discountedSku}`, unit: "Hrs", discountedRate: { price: r.rate.toFixed(4), currency: "USD" } };
      }),
    });
  }
  return { version, publicationDate: isoOf(version), regionCode: region, products, terms: { savingsPlan: terms } };
}

/** The Savings Plans rate files of us-east-1 (hand-set rates against the snapshot's on-demand prices). */
function usEast1ComputeSavingsPlans(version: string): any {
  const fargate: SpRate = { usageType: "Fargate-vCPU-Hours:perCPU", operation: "FargateTask", serviceCode: "AmazonECS", rate: 0.0284 };
  const dedicated: SpRate = { usageType: "DedicatedUsage:m5.large", operation: "RunInstances", serviceCode: "AmazonEC2", rate: 0.0729 };
  const localZone: SpRate = { usageType: "USE1-MIA1-BoxUsage:c5.xlarge", operation: "RunInstances", serviceCode: "AmazonEC2", rate: 0.1502 };
  return savingsPlanFile("us-east-1", version, [
    {
      productFamily: "ComputeSavingsPlans",
      purchaseOption: "No Upfront",
      years: 1,
      rates: [
        { usageType: "BoxUsage:c5.xlarge", operation: "RunInstances", serviceCode: "AmazonEC2", rate: 0.1207 },
        { usageType: "BoxUsage:m5.large", operation: "RunInstances", serviceCode: "AmazonEC2", rate: 0.0682 },
        { usageType: "BoxUsage:m5.large", operation: "RunInstances:0002", serviceCode: "AmazonEC2", rate: 0.1602 },
        localZone,
        fargate,
        dedicated,
      ],
    },
    { productFamily: "ComputeSavingsPlans", purchaseOption: "All Upfront", years: 3, rates: [{ usageType: "BoxUsage:c5.xlarge", operation: "RunInstances", serviceCode: "AmazonEC2", rate: 0.0782 }, fargate] },
    { productFamily: "EC2InstanceSavingsPlans", purchaseOption: "No Upfront", years: 1, instanceFamily: "c5", rates: [{ usageType: "BoxUsage:c5.xlarge", operation: "RunInstances", serviceCode: "AmazonEC2", rate: 0.1071 }] },
    {
      productFamily: "EC2InstanceSavingsPlans",
      purchaseOption: "Partial Upfront",
      years: 3,
      instanceFamily: "m5",
      rates: [
        { usageType: "BoxUsage:m5.large", operation: "RunInstances", serviceCode: "AmazonEC2", rate: 0.0414 },
        { usageType: "BoxUsage:m5.large", operation: "RunInstances:0002", serviceCode: "AmazonEC2", rate: 0.1334 },
        { usageType: "BoxUsage:m5.2xlarge", operation: "RunInstances:0002", serviceCode: "AmazonEC2", rate: 0.5499 },
      ],
    },
  ]);
}

function usEast1DatabaseSavingsPlans(version: string): any {
  return savingsPlanFile("us-east-1", version, [
    {
      productFamily: "DatabaseSavingsPlans",
      purchaseOption: "No Upfront",
      years: 1,
      rates: [
        { usageType: "InstanceUsage:db.m5.large", operation: "CreateDBInstance:0002", serviceCode: "AmazonRDS", rate: 0.1368 },
        { usageType: "InstanceUsage:db.m5.large", operation: "CreateDBInstance:0014", serviceCode: "AmazonRDS", rate: 0.1424 },
        { usageType: "Multi-AZUsage:db.m5.large", operation: "CreateDBInstance:0002", serviceCode: "AmazonRDS", rate: 0.2736 },
        { usageType: "Aurora:ServerlessV2Usage", operation: "CreateDBInstance:0021", serviceCode: "AmazonRDS", rate: 0.096 },
        { usageType: "NodeUsage:cache.m5.large", operation: "CreateCacheCluster:0002", serviceCode: "AmazonElastiCache", rate: 0.1248 },
      ],
    },
  ]);
}

// ---- the tree and the server

/** One published file: its versions (all still served) and the current one. */
interface Published {
  current: string;
  versions: Map<string, any>;
}

export interface AwsPriceTree {
  publicationDate: string;
  /** offerCode → region → file. */
  offers: Map<string, Map<string, Published>>;
  /** Savings Plans offer code → region → file. */
  savingsPlans: Map<string, Map<string, Published>>;
}

const published = (doc: any, version = INITIAL_VERSION): Published => ({ current: version, versions: new Map([[version, doc]]) });

/** The tree the server starts with. */
export function defaultAwsPriceTree(): AwsPriceTree {
  const v = INITIAL_VERSION;
  const fixture = (name: string) => JSON.parse(readFileSync(join(FIXTURES, name), "utf8"));
  const ec2Sa = fixture("aws-ec2-offer.json");
  const spSa = fixture("aws-compute-savings-plan.json");
  return {
    publicationDate: isoOf(v),
    offers: new Map([
      [
        "AmazonEC2",
        new Map([
          ["us-east-1", published(ec2File("us-east-1", v, ["aws:ec2:us-east-1:m5.large:linux", "aws:ec2:us-east-1:m5.large:windows", "aws:ec2:us-east-1:c5.xlarge:linux", "aws:ec2:us-east-1:m4.large:linux"]))],
          ["sa-east-1", published(ec2Sa, ec2Sa.version)],
        ]),
      ],
      [
        "AmazonRDS",
        new Map([
          ["us-east-1", published(rdsFile("us-east-1", v, ["aws:rds:us-east-1:db.m5.large:mysql", "aws:rds:us-east-1:db.m5.large:postgresql", "aws:rds:us-east-1:db.m6g.12xlarge:mysql"]))],
          ["eu-central-1", published(rdsFile("eu-central-1", v, ["aws:rds:eu-central-1:db.m6g.xlarge:postgresql", "aws:rds:eu-central-1:db.m5.large:mysql"]))],
        ]),
      ],
      [
        "AmazonElastiCache",
        new Map([
          ["us-east-1", published(elastiCacheFile("us-east-1", v, ["aws:elasticache:us-east-1:cache.m5.large:redis"]))],
          ["eu-central-1", published(elastiCacheFile("eu-central-1", v, ["aws:elasticache:eu-central-1:cache.m5.large:redis", "aws:elasticache:eu-central-1:cache.t3.micro:redis"]))],
        ]),
      ],
      ["AmazonES", new Map([["us-east-1", published(openSearchFile("us-east-1", v))]])],
      ["AmazonRedshift", new Map([["us-east-1", published(redshiftFile("us-east-1", v))]])],
      // Listed by the index but outside any refresh scope: its files must never be read.
      ["AmazonS3", new Map([["us-east-1", published(offerFile("AmazonS3", v, [{ productFamily: "Storage", attributes: { servicecode: "AmazonS3", usagetype: "TimedStorage-ByteHrs", regionCode: "us-east-1" }, onDemand: [{ begin: 0, end: null, price: 0.023, unit: "GB-Mo" }], reserved: [] }]))]])],
    ]),
    savingsPlans: new Map([
      [
        "AWSComputeSavingsPlan",
        new Map([
          ["us-east-1", published(usEast1ComputeSavingsPlans(v))],
          ["sa-east-1", published(spSa, spSa.version)],
        ]),
      ],
      ["AWSDatabaseSavingsPlans", new Map([["us-east-1", published(usEast1DatabaseSavingsPlans(v))]])],
    ]),
  };
}

const SP_OF_SERVICE: Record<string, string> = { AmazonEC2: "AWSComputeSavingsPlan", AmazonRDS: "AWSDatabaseSavingsPlans" };
export const offerFilePath = (code: string, version: string, region: string) => `/offers/v1.0/aws/${code}/${version}/${region}/index.json`;
export const savingsPlanFilePath = (code: string, version: string, region: string) => `/savingsPlan/v1.0/aws/${code}/${version}/${region}/index.json`;
export const regionIndexPath = (code: string) => `/offers/v1.0/aws/${code}/current/region_index.json`;
export const savingsPlanIndexPath = (code: string) => `/savingsPlan/v1.0/aws/${code}/current/region_index.json`;

/** Every document of the tree by path, as the API serves them (current indexes; every version of every file). */
function documents(tree: AwsPriceTree): Map<string, unknown> {
  const out = new Map<string, unknown>();
  const offers: Record<string, unknown> = {};
  for (const [code, regions] of tree.offers) {
    const sp = SP_OF_SERVICE[code];
    offers[code] = {
      offerCode: code,
      versionIndexUrl: `/offers/v1.0/aws/${code}/index.json`,
      currentVersionUrl: `/offers/v1.0/aws/${code}/current/index.json`,
      currentRegionIndexUrl: regionIndexPath(code),
      ...(sp ? { savingsPlanVersionIndexUrl: `/savingsPlan/v1.0/aws/${sp}/current/index.json`, currentSavingsPlanIndexUrl: savingsPlanIndexPath(sp) } : {}),
    };
    const regionEntries: Record<string, unknown> = {};
    for (const [region, p] of regions) {
      regionEntries[region] = { regionCode: region, currentVersionUrl: offerFilePath(code, p.current, region) };
      for (const [version, doc] of p.versions) out.set(offerFilePath(code, version, region), doc);
    }
    out.set(regionIndexPath(code), { formatVersion: "v1.0", disclaimer: DISCLAIMER, publicationDate: tree.publicationDate, regions: regionEntries });
  }
  out.set("/offers/v1.0/aws/index.json", { formatVersion: "v1.0", disclaimer: DISCLAIMER, publicationDate: tree.publicationDate, offers });
  for (const [code, regions] of tree.savingsPlans) {
    const list: unknown[] = [];
    for (const [region, p] of regions) {
      list.push({ regionCode: region, versionUrl: savingsPlanFilePath(code, p.current, region) });
      for (const [version, doc] of p.versions) out.set(savingsPlanFilePath(code, version, region), doc);
    }
    out.set(savingsPlanIndexPath(code), { disclaimer: DISCLAIMER, publicationDate: tree.publicationDate, regions: list });
  }
  return out;
}

/** Writes the tree's current documents under `dir/aws/`, laid out as the API's paths (offline refresh). */
export async function writeAwsPriceTree(tree: AwsPriceTree, dir: string): Promise<void> {
  for (const [path, doc] of documents(tree)) {
    const file = join(dir, "aws", path);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, printAwsJson(doc) + "\n");
  }
}

export type AwsPricingFailure = "cut" | 500;

export interface AwsPricingServer {
  url: string;
  tree: AwsPriceTree;
  /** GET requests received for a path (query excluded). */
  hits(path: string): number;
  /** Every request: path, its If-None-Match, the status answered. */
  requests: { path: string; ifNoneMatch: string | null; status: number }[];
  /** The current version of a service's region file, and its document. */
  offer(code: string, region: string): { version: string; path: string; doc: any };
  savingsPlan(code: string, region: string): { version: string; path: string; doc: any };
  /**
   * Publishes a new version of a file: a copy of the current document with the new version and
   * publication date, changed by `change`. The region index then names it; the old version is
   * still served.
   */
  publishOffer(code: string, region: string, version: string, change: (doc: any) => any): string;
  publishSavingsPlan(code: string, region: string, version: string, change: (doc: any) => any): string;
  /** Makes every request for `path` fail (null: heal). */
  fail(path: string, how: AwsPricingFailure | null): void;
  writeTo(dir: string): Promise<void>;
  close(): Promise<void>;
}

function publish(p: Published | undefined, version: string, change: (doc: any) => any, versionField: boolean): string {
  if (!p) throw new Error("no such file");
  const doc = structuredClone(p.versions.get(p.current));
  if (versionField) doc.version = version;
  doc.publicationDate = isoOf(version);
  p.versions.set(version, change(doc) ?? doc);
  p.current = version;
  return version;
}

export async function startAwsPricingServer(tree: AwsPriceTree = defaultAwsPriceTree()): Promise<AwsPricingServer> {
  const counts = new Map<string, number>();
  const failures = new Map<string, AwsPricingFailure>();
  const requests: AwsPricingServer["requests"] = [];
  const bodies = new Map<string, { text: string; etag: string }>();
  const bodyOf = (path: string, doc: unknown) => {
    const cached = bodies.get(path);
    if (cached) return cached;
    const text = printAwsJson(doc) + "\n";
    const entry = { text, etag: `"${createHash("md5").update(text).digest("hex")}"` };
    // Version files never change once published; indexes do.
    if (/\/\d{14}\//.test(path)) bodies.set(path, entry);
    return entry;
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    counts.set(path, (counts.get(path) ?? 0) + 1);
    const ifNoneMatch = (req.headers["if-none-match"] as string | undefined) ?? null;
    const answer = (status: number) => requests.push({ path, ifNoneMatch, status });
    const doc = req.method === "GET" ? documents(tree).get(path) : undefined;
    if (doc === undefined) {
      answer(404);
      res.writeHead(404, { "content-type": "application/xml" }).end("<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>");
      return;
    }
    const failure = failures.get(path);
    if (failure === 500) {
      answer(500);
      res.writeHead(500, { "content-type": "application/xml" }).end("<Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message></Error>");
      return;
    }
    const { text, etag } = bodyOf(path, doc);
    if (ifNoneMatch === etag && !failure) {
      answer(304);
      res.writeHead(304, { etag }).end();
      return;
    }
    answer(200);
    const bytes = Buffer.from(text);
    res.writeHead(200, { "content-type": "application/json", "content-length": String(bytes.length), etag, "last-modified": new Date(isoOf(INITIAL_VERSION)).toUTCString() });
    if (failure === "cut") {
      res.write(bytes.subarray(0, Math.floor(bytes.length / 2)), () => setTimeout(() => res.socket?.destroy(), 20));
      return;
    }
    res.end(bytes);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  const current = (p: Published | undefined, what: string) => {
    if (!p) throw new Error(`no ${what}`);
    return { version: p.current, doc: p.versions.get(p.current) };
  };
  return {
    url: `http://127.0.0.1:${port}`,
    tree,
    hits: (path) => counts.get(path) ?? 0,
    requests,
    offer(code, region) {
      const c = current(tree.offers.get(code)?.get(region), `${code} ${region}`);
      return { ...c, path: offerFilePath(code, c.version, region) };
    },
    savingsPlan(code, region) {
      const c = current(tree.savingsPlans.get(code)?.get(region), `${code} ${region}`);
      return { ...c, path: savingsPlanFilePath(code, c.version, region) };
    },
    publishOffer: (code, region, version, change) => publish(tree.offers.get(code)?.get(region), version, change, true),
    publishSavingsPlan: (code, region, version, change) => publish(tree.savingsPlans.get(code)?.get(region), version, change, true),
    fail(path, how) {
      if (how === null) failures.delete(path);
      else failures.set(path, how);
    },
    writeTo: (dir) => writeAwsPriceTree(tree, dir),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The AWS SKU code of the product whose attributes satisfy `match` (tests change or remove it). */
export function awsSkuOf(doc: any, match: (a: Record<string, string>, productFamily: string) => boolean): string {
  const hit = Object.values<any>(doc.products).find((p) => match(p.attributes, p.productFamily));
  if (!hit) throw new Error("no such product");
  return hit.sku;
}

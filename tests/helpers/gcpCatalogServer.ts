/**
 * A loopback Cloud Billing Catalog API (v1) speaking its real wire format: GET /v1/services and
 * GET /v1/services/{id}/skus, both paged with `pageSize` / `pageToken` → `nextPageToken` (empty on
 * the last page), an API key required in the `key` query parameter (Google's error JSON otherwise:
 * 403 PERMISSION_DENIED when missing, 400 API_KEY_INVALID when wrong), `currencyCode` honoured.
 *
 * Its SKUs are generated from the bundled price snapshot: for each machine family of the snapshot's
 * GCP machine types (us-central1, us-east1, europe-west1, europe-west4), the vCPU and RAM on-demand
 * SKUs and the 1- and 3-year resource commitment SKUs ("Commitment v1: N2 Cpu in Americas for 1
 * Year") whose rates reproduce the snapshot's machine prices (see familyRates), the Windows Server
 * licence SKUs (0.046 per vCPU, the snapshot's licence), Spot and Custom SKUs the reader must not
 * use for machine types, spend-based CUD SKUs (not in the snapshot: see GCP_EXTENSIONS), plus the
 * tests/catalog/fixtures/gcp-compute-skus.json SKUs. Tests change prices, withdraw SKUs, make a page
 * fail, count requests and write the same content to a directory for offline refreshes.
 */
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { createHash } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parse } from "csv-parse/sync";
import { PRICES_CSV } from "../../lib/catalog/snapshot.gen.ts";
import { gcpMachineSpecs, type GcpCatalogSku } from "../../lib/catalog/refresh/gcp.ts";
import { sendJson } from "./httpJson.ts";
import fixture from "../catalog/fixtures/gcp-compute-skus.json";

export const GCP_SERVICES = [
  { name: "services/6F81-5844-456A", serviceId: "6F81-5844-456A", displayName: "Compute Engine", businessEntityName: "businessEntities/GCP" },
  { name: "services/95FF-2EF5-5EA1", serviceId: "95FF-2EF5-5EA1", displayName: "Cloud Storage", businessEntityName: "businessEntities/GCP" },
  { name: "services/9662-B51E-5089", serviceId: "9662-B51E-5089", displayName: "Cloud SQL", businessEntityName: "businessEntities/GCP" },
  { name: "services/24E6-581D-38E5", serviceId: "24E6-581D-38E5", displayName: "BigQuery", businessEntityName: "businessEntities/GCP" },
];
const COMPUTE = GCP_SERVICES[0]!;

/**
 * Not in the snapshot (it has no spend-based CUD rates): Compute flexible CUD fee SKUs at Google's
 * published flexible CUD discounts (28 % for 1 year, 46 % for 3 years), in the shape the reader
 * assumes (price of $0.01/hour of committed on-demand spend).
 */
export const GCP_EXTENSIONS = { spendCud1YearPrice: 0.0072, spendCud3YearPrice: 0.0054 };
/** The snapshot's Windows Server licence: 0.184 per hour on 4 vCPUs. */
export const WINDOWS_LICENCE_PER_VCPU = 0.046;

export interface GcpCatalogRequest {
  path: string;
  query: Record<string, string>;
}

/** A page fault: the n-th page (1-based) of the services list or of any SKU list answers `status`, or its connection is destroyed mid-answer. */
export type GcpPageFault = { list: "services" | "skus"; page: number; status: number } | { list: "services" | "skus"; page: number; destroy: true };

export interface GcpCatalogServer {
  url: string;
  apiKey: string;
  /** SKUs by service id (mutable). */
  skus: Map<string, GcpCatalogSku[]>;
  requests: GcpCatalogRequest[];
  servicesPageSize: number;
  skusPageSize: number;
  fault: GcpPageFault | null;
  /** The Compute Engine SKU of this description (first match). */
  sku(description: string): GcpCatalogSku;
  /** Sets the first tier's price (and effective time) of the SKUs matching `match`; returns how many. */
  setPrice(match: (s: GcpCatalogSku) => boolean, unitPrice: number, effectiveTime?: string): number;
  /** Sets the effective time of every SKU (the API stamps current pricing with a recent time). */
  setEffectiveTime(effectiveTime: string): void;
  withdraw(match: (s: GcpCatalogSku) => boolean): number;
  /** Writes every SKU as SKU list pages to `<dir>/gcp/<service>-NNNN.json`; returns the file count. */
  writeOffline(dir: string, pageSize?: number): Promise<number>;
  close(): Promise<void>;
}

type Row = Record<string, string>;

const LOCATION: Record<string, string> = { "us-central1": "Iowa", "us-east1": "South Carolina", "europe-west1": "Belgium", "europe-west4": "Netherlands" };
/** How the SKU descriptions name a family's vCPU/RAM: on demand and in commitments. */
const ON_DEMAND_LABEL: Record<string, string> = { n1: "N1 Predefined Instance", n2d: "N2D AMD Instance", t2d: "T2D AMD Instance", c2: "Compute optimized" };
const COMMIT_LABEL: Record<string, string> = { n1: "", n2d: "N2D AMD ", t2d: "T2D AMD ", c2: "Compute optimized " };
const onDemandLabel = (f: string) => ON_DEMAND_LABEL[f] ?? `${f.toUpperCase()} Instance`;
const commitLabel = (f: string) => COMMIT_LABEL[f] ?? `${f.toUpperCase()} `;

function skuIdOf(text: string): string {
  const h = createHash("sha1").update(text).digest("hex").toUpperCase();
  return `${h.slice(0, 4)}-${h.slice(4, 8)}-${h.slice(8, 12)}`;
}

function nanosOf(price: number): { currencyCode: string; units: string; nanos: number } {
  const total = Math.round(price * 1e9);
  return { currencyCode: "USD", units: String(Math.floor(total / 1e9)), nanos: total % 1e9 };
}

function makeSku(opts: { description: string; usageType: string; resourceGroup: string; regions: string[]; usageUnit: string; unitDescription: string; price: number; effectiveTime: string; resourceFamily?: string; service?: typeof COMPUTE }): GcpCatalogSku {
  const service = opts.service ?? COMPUTE;
  const skuId = skuIdOf(`${opts.description}|${opts.regions.join(",")}|${opts.usageType}`);
  const global = opts.regions.includes("global");
  return {
    name: `${service.name}/skus/${skuId}`,
    skuId,
    description: opts.description,
    category: { serviceDisplayName: service.displayName, resourceFamily: opts.resourceFamily ?? "Compute", resourceGroup: opts.resourceGroup, usageType: opts.usageType },
    serviceRegions: opts.regions,
    pricingInfo: [
      {
        summary: "",
        pricingExpression: {
          usageUnit: opts.usageUnit,
          displayQuantity: 1,
          tieredRates: [{ startUsageAmount: 0, unitPrice: nanosOf(opts.price) }],
          usageUnitDescription: opts.unitDescription,
          baseUnit: opts.usageUnit === "GiBy.h" ? "By.s" : "s",
          baseUnitConversionFactor: opts.usageUnit === "GiBy.h" ? 3865470566400 : 3600,
        },
        currencyConversionRate: 1,
        effectiveTime: opts.effectiveTime,
      },
    ],
    serviceProviderName: "Google",
    geoTaxonomy: global ? { type: "GLOBAL" } : { type: opts.regions.length > 1 ? "MULTI_REGIONAL" : "REGIONAL", regions: opts.regions },
  } as GcpCatalogSku;
}

/**
 * A family's (core, RAM) hourly rates in a region from the snapshot's machine prices: solved from two
 * machine types of different memory per vCPU when the family has them (E2, N2), else split in N2's
 * core:RAM proportion (an assumption: the snapshot prices those families only as whole machines).
 * Rounded to nanos, the API's precision.
 */
function familyRates(prices: Map<string, number>, family: string, n2: { core: number; ram: number } | null): { core: number; ram: number } | null {
  const specs = gcpMachineSpecs();
  const shapes = [...prices].filter(([t]) => t.split("-")[0] === family).sort(([a], [b]) => a.localeCompare(b));
  if (!shapes.length) return null;
  const [t1, p1] = shapes[0]!;
  const [v1, g1] = specs[t1]!;
  // The best-conditioned pair: the machine type whose memory per vCPU differs most from the first's.
  const det = (t: string) => Math.abs(v1 * specs[t]![1] - specs[t]![0] * g1);
  const other = shapes.filter(([t]) => det(t) > 0).sort(([a], [b]) => det(b) - det(a))[0];
  let core: number;
  let ram: number;
  if (other) {
    const [v2, g2] = specs[other[0]]!;
    const p2 = other[1];
    const d = v1 * g2 - v2 * g1;
    core = (p1 * g2 - p2 * g1) / d;
    ram = (v1 * p2 - v2 * p1) / d;
  } else {
    if (!n2) return null;
    const k = n2.ram / n2.core;
    core = p1 / (v1 + g1 * k);
    ram = core * k;
  }
  const nano = (x: number) => Math.round(x * 1e9) / 1e9;
  return { core: nano(core), ram: nano(ram) };
}

/** The snapshot's GCP machine prices as Cloud Billing Catalog SKUs (see the file comment). */
export function gcpSnapshotSkus(): Map<string, GcpCatalogSku[]> {
  const rows: Row[] = parse(PRICES_CSV, { columns: true, skip_empty_lines: true });
  const gce = rows.filter((r) => r.provider === "gcp" && r.operating_system === "Linux");
  const specs = gcpMachineSpecs();
  /** price by kind ("od", "1", "3") → region → machine type. */
  const prices = new Map<string, Map<string, Map<string, number>>>();
  let asOf = "";
  for (const r of gce) {
    const kind = r.pricing_model === "on_demand" ? "od" : r.pricing_model === "committed_use_discount" ? r.term_years! : null;
    if (!kind || !specs[r.instance_type!]) continue;
    const byRegion = prices.get(kind) ?? prices.set(kind, new Map()).get(kind)!;
    (byRegion.get(r.region_code!) ?? byRegion.set(r.region_code!, new Map()).get(r.region_code!)!).set(r.instance_type!, Number(r.effective_hourly_usd));
    if (r.as_of! > asOf) asOf = r.as_of!;
  }
  const effectiveTime = `${asOf}T07:12:41.518523Z`;
  const families = [...new Set(Object.keys(specs).map((t) => t.split("-")[0]!))].sort();
  const skus: GcpCatalogSku[] = [];
  for (const kind of ["od", "1", "3"]) {
    // Regions with the same rates share one SKU ("… running in Americas"), as Google publishes them.
    const groups = new Map<string, { family: string; rates: { core: number; ram: number }; regions: string[] }>();
    for (const [region, byType] of [...prices.get(kind)!].sort(([a], [b]) => a.localeCompare(b))) {
      const n2 = familyRates(byType, "n2", null);
      for (const family of families) {
        const rates = familyRates(byType, family, n2);
        if (!rates) continue;
        const key = `${family}|${rates.core}|${rates.ram}`;
        (groups.get(key) ?? groups.set(key, { family, rates, regions: [] }).get(key)!).regions.push(region);
      }
    }
    for (const { family, rates, regions } of groups.values()) {
      const where = regions.length === 1 ? LOCATION[regions[0]!]! : regions[0]!.startsWith("us-") ? "Americas" : "EMEA";
      for (const [resource, rate] of [["Core", rates.core], ["Ram", rates.ram]] as const) {
        const unit = resource === "Ram" ? { usageUnit: "GiBy.h", unitDescription: "gibibyte hour" } : { usageUnit: "h", unitDescription: "hour" };
        const resourceGroup = resource === "Ram" ? "RAM" : "CPU";
        if (kind === "od") {
          skus.push(makeSku({ description: `${onDemandLabel(family)} ${resource} running in ${where}`, usageType: "OnDemand", resourceGroup: family === "n1" ? "N1Standard" : resourceGroup, regions, price: rate, effectiveTime, ...unit }));
          // Spot: half price, never a machine type's on-demand rate.
          skus.push(makeSku({ description: `Spot Preemptible ${onDemandLabel(family)} ${resource} running in ${where}`, usageType: "Preemptible", resourceGroup, regions, price: Math.round(rate * 0.5e9) / 1e9, effectiveTime, ...unit }));
        } else {
          const cudResource = resource === "Core" ? "Cpu" : "Ram";
          skus.push(makeSku({ description: `Commitment v1: ${commitLabel(family)}${cudResource} in ${where} for ${kind} ${kind === "1" ? "Year" : "Years"}`, usageType: kind === "1" ? "Commit1Yr" : "Commit3Yr", resourceGroup, regions, price: rate, effectiveTime, ...unit }));
        }
      }
      if (kind === "od" && family === "n2") {
        // Custom machine types cost more: never a predefined machine type's rate.
        skus.push(makeSku({ description: `N2 Custom Instance Core running in ${where}`, usageType: "OnDemand", resourceGroup: "CPU", regions, price: Math.round(rates.core * 1.05e9) / 1e9, effectiveTime, usageUnit: "h", unitDescription: "hour" }));
      }
    }
  }
  const licence = (description: string, price: number) =>
    makeSku({ description, usageType: "OnDemand", resourceGroup: "Google", resourceFamily: "License", regions: ["global"], price, effectiveTime, usageUnit: "h", unitDescription: "hour" });
  skus.push(
    licence("Licensing Fee for Windows Server 2022 Datacenter Edition (CPU cost)", WINDOWS_LICENCE_PER_VCPU),
    licence("Licensing Fee for Windows Server 2022 Datacenter Edition (RAM cost)", 0),
    licence("Licensing Fee for Windows Server 2019 Datacenter Edition (CPU cost)", WINDOWS_LICENCE_PER_VCPU),
    licence("Licensing Fee for Windows Server 2022 BYOL (CPU cost)", 0),
  );
  for (const [years, price] of [[1, GCP_EXTENSIONS.spendCud1YearPrice], [3, GCP_EXTENSIONS.spendCud3YearPrice]] as const) {
    skus.push(makeSku({ description: `Commitment - dollar based v1: GCE for ${years} ${years === 1 ? "year" : "years"}`, usageType: years === 1 ? "Commit1Yr" : "Commit3Yr", resourceGroup: "Commitment", resourceFamily: "Compute", regions: ["global"], price, effectiveTime, usageUnit: "h", unitDescription: "hour" }));
  }
  const byService = new Map<string, GcpCatalogSku[]>(GCP_SERVICES.map((s) => [s.serviceId, []]));
  byService.get(COMPUTE.serviceId)!.push(...skus);
  for (const s of (fixture as { skus: GcpCatalogSku[] }).skus) byService.get(/^services\/([^/]+)\//.exec(s.name!)![1]!)!.push(s);
  for (const list of byService.values()) list.sort((a, b) => String(a.skuId).localeCompare(String(b.skuId)));
  return byService;
}

const token = (offset: number) => Buffer.from(`offset:${offset}`).toString("base64url");
const offsetOf = (t: string) => {
  const m = /^offset:(\d+)$/.exec(Buffer.from(t, "base64url").toString("utf8"));
  return m ? Number(m[1]) : null;
};

function googleError(res: ServerResponse, code: number, status: string, message: string, reason?: string) {
  sendJson(res, code, {
    error: {
      code,
      message,
      status,
      ...(reason ? { details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason, domain: "googleapis.com", metadata: { service: "cloudbilling.googleapis.com" } }] } : {}),
    },
  });
}

export async function startGcpCatalogServer(options: { apiKey?: string; servicesPageSize?: number; skusPageSize?: number } = {}): Promise<GcpCatalogServer> {
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    const u = new URL(req.url ?? "/", "http://localhost");
    const query = Object.fromEntries(u.searchParams);
    state.requests.push({ path: u.pathname, query });
    if (!query.key) return googleError(res, 403, "PERMISSION_DENIED", "The request is missing a valid API key.");
    if (query.key !== state.apiKey) return googleError(res, 400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", "API_KEY_INVALID");
    const skusPath = /^\/v1\/services\/([^/]+)\/skus$/.exec(u.pathname);
    let list: { items: unknown[]; field: "services" | "skus"; pageSize: number };
    if (req.method === "GET" && u.pathname === "/v1/services") list = { items: GCP_SERVICES, field: "services", pageSize: state.servicesPageSize };
    else if (req.method === "GET" && skusPath) {
      const all = state.skus.get(decodeURIComponent(skusPath[1]!));
      if (!all) return googleError(res, 404, "NOT_FOUND", "Service not found.");
      if (query.currencyCode && query.currencyCode !== "USD") return googleError(res, 400, "INVALID_ARGUMENT", "Currency code is not supported.");
      list = { items: all, field: "skus", pageSize: state.skusPageSize };
    } else return googleError(res, 404, "NOT_FOUND", "Method not found.");
    const requested = Number(query.pageSize ?? 5000);
    const size = Math.min(list.pageSize, Number.isInteger(requested) && requested > 0 ? requested : 5000);
    const offset = query.pageToken ? offsetOf(query.pageToken) : 0;
    if (offset === null) return googleError(res, 400, "INVALID_ARGUMENT", "Invalid page token.");
    const n = Math.floor(offset / size) + 1;
    const fault = state.fault;
    if (fault && fault.list === list.field && fault.page === n) {
      if ("destroy" in fault) {
        res.writeHead(200, { "content-type": "application/json; charset=UTF-8", "content-length": "100000" });
        res.write(`{"${list.field}":[{"name":`);
        setTimeout(() => res.socket?.destroy(), 20);
        return;
      }
      return googleError(res, fault.status, "INTERNAL", "Internal error encountered.");
    }
    const end = offset + size;
    sendJson(res, 200, { [list.field]: list.items.slice(offset, end), nextPageToken: end < list.items.length ? token(end) : "" });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const each = (f: (s: GcpCatalogSku) => void) => {
    for (const list of state.skus.values()) list.forEach(f);
  };
  const state: GcpCatalogServer = {
    url: `http://127.0.0.1:${port}`,
    apiKey: options.apiKey ?? "AIzaSyLoopback-test-key-0123456789abcdef",
    skus: gcpSnapshotSkus(),
    requests: [],
    servicesPageSize: options.servicesPageSize ?? 2,
    skusPageSize: options.skusPageSize ?? 25,
    fault: null,
    sku: (description) => {
      const s = state.skus.get(COMPUTE.serviceId)!.find((x) => x.description === description);
      if (!s) throw new Error(`no SKU "${description}"`);
      return s;
    },
    setPrice(match, unitPrice, effectiveTime) {
      let n = 0;
      each((s) => {
        if (!match(s)) return;
        const info = s.pricingInfo![0]!;
        info.pricingExpression!.tieredRates![0]!.unitPrice = nanosOf(unitPrice);
        if (effectiveTime) info.effectiveTime = effectiveTime;
        n++;
      });
      return n;
    },
    setEffectiveTime(effectiveTime) {
      each((s) => (s.pricingInfo![0]!.effectiveTime = effectiveTime));
    },
    withdraw(match) {
      let n = 0;
      for (const [id, list] of state.skus) {
        const kept = list.filter((s) => !match(s));
        n += list.length - kept.length;
        state.skus.set(id, kept);
      }
      return n;
    },
    async writeOffline(dir, pageSize = state.skusPageSize) {
      await mkdir(join(dir, "gcp"), { recursive: true });
      let files = 0;
      for (const [id, list] of state.skus) {
        for (let offset = 0, n = 1; offset < list.length; offset += pageSize, n++) {
          const end = offset + pageSize;
          await writeFile(join(dir, "gcp", `${id}-${String(n).padStart(4, "0")}.json`), JSON.stringify({ skus: list.slice(offset, end), nextPageToken: end < list.length ? token(end) : "" }, null, 1));
          files++;
        }
      }
      return files;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  return state;
}

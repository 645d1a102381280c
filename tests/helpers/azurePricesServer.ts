/**
 * A loopback Azure Retail Prices API (GET /api/retail/prices) speaking its real wire format:
 * pages `{ BillingCurrency, CustomerEntityId, CustomerEntityType, Items, NextPageLink, Count }`,
 * the OData `$filter` honoured for `field eq 'value'` clauses joined by `and`, small pages so paging
 * is exercised, NextPageLink an absolute URL repeating the query with `$skip` (tests can make it drop
 * parameters, as the real API does with `api-version`), and `savingsPlan` listed only when asked
 * with `api-version=2023-01-01-preview`, as the real API does.
 *
 * Its items are generated from the bundled price snapshot (the Azure VM rows of eastus and westus2:
 * Linux and Windows pay-as-you-go, 1-year reservations and savings plan rates) plus the
 * tests/catalog/fixtures/azure-retail-page-*.json items, extended where the snapshot has no data
 * (see AZURE_EXTENSIONS) and with the items the reader must skip (Spot, Low Priority,
 * DevTestConsumption, a non-primary meter duplicate, a superseded and an announced price: see
 * AZURE_PRICE_HISTORY). Tests change prices, withdraw items, make a page fail, count requests and
 * write the same content to a directory for offline refreshes.
 */
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { createHash } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parse } from "csv-parse/sync";
import { PRICES_CSV } from "../../lib/catalog/snapshot.gen.ts";
import type { AzureRetailItem } from "../../lib/catalog/refresh/azure.ts";
import { sendJson } from "./httpJson.ts";
import page1 from "../catalog/fixtures/azure-retail-page-1.json";
import page2 from "../catalog/fixtures/azure-retail-page-2.json";

export interface AzurePricesRequest {
  path: string;
  /** Decoded query parameters (`$filter`, `$skip`, `api-version`, `currencyCode`). */
  query: Record<string, string>;
}

/** A page fault: the n-th page (1-based) of any query answers `status`, or its connection is destroyed mid-answer. */
export type AzurePageFault = { page: number; status: number } | { page: number; destroy: true };

export interface AzurePricesServer {
  url: string;
  /** The items served (mutable: tests change, add and remove). */
  items: AzureRetailItem[];
  requests: AzurePricesRequest[];
  pageSize: number;
  fault: AzurePageFault | null;
  /** Origin written into NextPageLink instead of the server's own (a foreign host). */
  nextLinkOrigin: string | null;
  /** NextPageLink always names the first page again (a looping API). */
  loop: boolean;
  /** Query parameters NextPageLink leaves out (the real API's links have been seen without `api-version`). */
  nextLinkDrops: string[];
  /** Items of the snapshot's VM of `armSkuName` in `region` (both OSs, all types). */
  itemsOf(region: string, armSkuName: string): AzureRetailItem[];
  /** Sets the price (and effective date) of the items matching `match`; returns how many. */
  setPrice(match: (i: AzureRetailItem) => boolean, unitPrice: number, effectiveStartDate?: string): number;
  /** Removes the items matching `match`; returns how many. */
  withdraw(match: (i: AzureRetailItem) => boolean): number;
  /** Writes every item as the unfiltered API pages them to `<dir>/azure/page-NNNN.json`; returns the file count. */
  writeOffline(dir: string, pageSize?: number): Promise<number>;
  close(): Promise<void>;
}

/**
 * Data the snapshot does not have (no 3-year Azure reservation or savings plan rows): illustrative
 * figures for Standard_D2s_v5 in eastus, clearly not from a price list.
 */
export const AZURE_EXTENSIONS = {
  d2sV5ThreeYearReservation: 975,
  d2sV5LinuxThreeYearSavingsPlan: 0.0363,
  d2sV5WindowsThreeYearSavingsPlan: 0.1283,
};

/**
 * The price history of Standard_E2s_v5 Linux in eastus, beside its current price (the snapshot's,
 * 0.126): the price it superseded, and a price announced for 45 days from now (the API lists
 * both kinds; only the current one is in effect).
 */
export const AZURE_PRICE_HISTORY = {
  region: "eastus",
  armSkuName: "Standard_E2s_v5",
  current: 0.126,
  superseded: { unitPrice: 0.121, effectiveStartDate: "2023-10-01T00:00:00Z" },
  announced: { unitPrice: 0.131, effectiveStartDate: `${new Date(Date.now() + 45 * 86_400_000).toISOString().slice(0, 10)}T00:00:00Z` },
};

/** The savings plan prices need this API version (older ones leave `savingsPlan` out). */
const SAVINGS_PLAN_API_VERSION = "2023-01-01-preview";

const SNAPSHOT_REGIONS = ["eastus", "westus2"];

type Row = Record<string, string>;

function uuidOf(text: string): string {
  const h = createHash("sha1").update(text).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

function productIdOf(text: string): string {
  return createHash("sha1").update(text).digest("hex").slice(0, 12).toUpperCase();
}

/** "Standard_D2s_v5" → "Dsv5" (the series in product names: "Virtual Machines Dsv5 Series"). */
function seriesOf(armSkuName: string): string {
  const m = /^Standard_([A-Z]+)\d+([a-z]*)(?:_v(\d+))?$/.exec(armSkuName);
  return m ? `${m[1]}${m[2]}${m[3] ? `v${m[3]}` : ""}` : armSkuName.replace(/^Standard_/, "");
}

const LOCATIONS: Record<string, string> = { eastus: "US East", westus2: "US West 2" };

function baseItem(region: string, armSkuName: string, meterName: string, os: "linux" | "windows", effective: string): AzureRetailItem {
  const series = seriesOf(armSkuName);
  const productName = `Virtual Machines ${series} Series${os === "windows" ? " Windows" : ""}`;
  const productId = productIdOf(productName);
  return {
    currencyCode: "USD",
    tierMinimumUnits: 0,
    retailPrice: 0,
    unitPrice: 0,
    armRegionName: region,
    location: LOCATIONS[region] ?? region,
    effectiveStartDate: `${effective}T00:00:00Z`,
    meterId: uuidOf(`${region}|${armSkuName}|${os}`),
    meterName,
    productId,
    skuId: `${productId}/${productIdOf(`${region}|${meterName}`).slice(0, 4)}`,
    productName,
    skuName: meterName,
    serviceName: "Virtual Machines",
    serviceId: "DZH313Z7MMC8",
    serviceFamily: "Compute",
    unitOfMeasure: "1 Hour",
    type: "Consumption",
    isPrimaryMeterRegion: true,
    armSkuName,
  };
}

const round = (x: number, digits = 6) => Math.round(x * 10 ** digits) / 10 ** digits;

/** The snapshot's eastus/westus2 VMs as Retail Prices items, plus the fixture pages and the items to skip. */
export function azureSnapshotItems(): AzureRetailItem[] {
  const rows: Row[] = parse(PRICES_CSV, { columns: true, skip_empty_lines: true });
  const vm = rows.filter((r) => r.provider === "azure" && SNAPSHOT_REGIONS.includes(r.region_code!));
  const bySku = new Map<string, Row[]>();
  for (const r of vm) (bySku.get(r.provider_sku_id!) ?? bySku.set(r.provider_sku_id!, []).get(r.provider_sku_id!)!).push(r);
  const items: AzureRetailItem[] = [];
  for (const [id, list] of [...bySku].sort(([a], [b]) => a.localeCompare(b))) {
    const os = id.endsWith(":windows") ? "windows" : "linux";
    const ods = list.filter((r) => r.pricing_model === "on_demand");
    // One coherent vintage per SKU: the one its commitment rows come from when it has any, else the newest.
    const commitmentSource = list.find((r) => r.pricing_model !== "on_demand")?.source_id;
    const od = ods.find((r) => r.source_id === commitmentSource) ?? ods.sort((a, b) => b.as_of!.localeCompare(a.as_of!))[0];
    if (!od) continue;
    const region = od.region_code!;
    const arm = od.instance_type!;
    const linuxMeter = od.usage_type!.replace(/ Windows$/, "");
    const item = baseItem(region, arm, linuxMeter, os, od.as_of!);
    item.unitPrice = item.retailPrice = Number(od.on_demand_hourly_usd);
    const sp = list.find((r) => r.pricing_model === "savings_plan" && r.term_years === "1");
    if (sp) item.savingsPlan = [{ unitPrice: Number(sp.effective_hourly_usd), retailPrice: Number(sp.effective_hourly_usd), term: "1 Year" }];
    items.push(item);
    if (os === "linux") {
      const spot = baseItem(region, arm, `${linuxMeter} Spot`, os, od.as_of!);
      spot.meterId = uuidOf(`${region}|${arm}|spot`);
      spot.unitPrice = spot.retailPrice = round(item.unitPrice * 0.2);
      items.push(spot);
      for (const r of list.filter((x) => x.pricing_model === "reservation")) {
        const term = r.term_years === "1" ? "1 Year" : "3 Years";
        const total = round(Number(r.effective_hourly_usd) * 8760 * Number(r.term_years), 4);
        items.push({ ...baseItem(region, arm, linuxMeter, "linux", r.as_of!), type: "Reservation", reservationTerm: term, unitPrice: total, retailPrice: total });
      }
    }
  }
  // The extensions and the items the reader must skip, on Standard_D2s_v5 eastus.
  const d2s = (os: "linux" | "windows") => items.find((i) => i.armRegionName === "eastus" && i.armSkuName === "Standard_D2s_v5" && i.type === "Consumption" && !/Spot/.test(i.meterName!) && /Windows/.test(i.productName!) === (os === "windows"))!;
  const linux = d2s("linux");
  const windows = d2s("windows");
  const sp3 = (v: number) => ({ unitPrice: v, retailPrice: v, term: "3 Years" });
  linux.savingsPlan = [...(linux.savingsPlan ?? []), sp3(AZURE_EXTENSIONS.d2sV5LinuxThreeYearSavingsPlan)];
  windows.savingsPlan = [...(windows.savingsPlan ?? []), sp3(AZURE_EXTENSIONS.d2sV5WindowsThreeYearSavingsPlan)];
  const r3 = AZURE_EXTENSIONS.d2sV5ThreeYearReservation;
  items.push({ ...baseItem("eastus", "Standard_D2s_v5", "D2s v5", "linux", linux.effectiveStartDate!.slice(0, 10)), type: "Reservation", reservationTerm: "3 Years", unitPrice: r3, retailPrice: r3 });
  items.push({ ...windows, savingsPlan: undefined, type: "DevTestConsumption", unitPrice: linux.unitPrice, retailPrice: linux.unitPrice });
  items.push({ ...linux, savingsPlan: undefined, meterName: "D2s v5 Low Priority", skuName: "D2s v5 Low Priority", meterId: uuidOf("eastus|d2s|lowpri"), unitPrice: 0.0192, retailPrice: 0.0192 });
  const e2s = items.find((i) => i.armRegionName === AZURE_PRICE_HISTORY.region && i.armSkuName === AZURE_PRICE_HISTORY.armSkuName && i.type === "Consumption" && !/Spot|Windows/.test(`${i.meterName} ${i.productName}`))!;
  for (const { unitPrice, effectiveStartDate } of [AZURE_PRICE_HISTORY.superseded, AZURE_PRICE_HISTORY.announced]) items.push({ ...e2s, savingsPlan: undefined, unitPrice, retailPrice: unitPrice, effectiveStartDate });
  // The same meter listed again outside its primary region: a duplicate with another price.
  items.push({ ...linux, savingsPlan: undefined, isPrimaryMeterRegion: false, unitPrice: 0.5, retailPrice: 0.5 });
  // Another service in the same region (the serviceName filter keeps it out of the VM feed).
  for (const i of (page2 as { Items: AzureRetailItem[] }).Items.filter((x) => x.serviceName === "Storage")) items.push({ ...i, armRegionName: "eastus", location: "US East", meterId: uuidOf(`eastus|${i.meterId}`) });
  items.push(...(page1 as { Items: AzureRetailItem[] }).Items, ...(page2 as { Items: AzureRetailItem[] }).Items);
  return items;
}

/** Parses an OData `$filter` of `field eq 'value'` clauses joined by `and`; null when it is anything else. */
function parseFilter(filter: string): [string, string][] | null {
  const clauses: [string, string][] = [];
  for (const part of filter.split(/\s+and\s+/i)) {
    const m = /^\s*(\w+)\s+eq\s+'((?:[^']|'')*)'\s*$/i.exec(part);
    if (!m) return null;
    clauses.push([m[1]!, m[2]!.replace(/''/g, "'")]);
  }
  return clauses;
}

/** The query string again without `$skip` and the `dropped` parameters (kept as sent: the real NextPageLink repeats the query). */
function queryWithoutSkip(search: string, dropped: string[]): string {
  return search
    .replace(/^\?/, "")
    .split("&")
    .filter((p) => p && !/^(\$|%24)skip=/i.test(p) && !dropped.includes(decodeURIComponent(p.split("=")[0]!)))
    .join("&");
}

function page(items: AzureRetailItem[], next: string | null) {
  return { BillingCurrency: "USD", CustomerEntityId: "Default", CustomerEntityType: "Retail", Items: items, NextPageLink: next, Count: items.length };
}

export async function startAzurePricesServer(options: { pageSize?: number; items?: AzureRetailItem[] } = {}): Promise<AzurePricesServer> {
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    const u = new URL(req.url ?? "/", "http://localhost");
    const query = Object.fromEntries(u.searchParams);
    state.requests.push({ path: u.pathname, query });
    if (req.method !== "GET" || u.pathname !== "/api/retail/prices") return sendJson(res, 404, { Error: { Code: "NotFound", Message: "Resource not found" } });
    const clauses = parseFilter(query.$filter ?? "");
    if (query.$filter !== undefined && !clauses) return sendJson(res, 400, { Error: { Code: "BadRequest", Message: "Invalid OData parameters supplied" } });
    const skip = Number(query.$skip ?? 0);
    if (!Number.isInteger(skip) || skip < 0) return sendJson(res, 400, { Error: { Code: "BadRequest", Message: "Invalid OData parameters supplied" } });
    const n = Math.floor(skip / state.pageSize) + 1;
    const fault = state.fault;
    if (fault && fault.page === n) {
      if ("destroy" in fault) return destroyMidway(res);
      return sendJson(res, fault.status, { Error: { Code: "InternalServerError", Message: "An error occurred while processing the request" } });
    }
    const matching = state.items.filter((i) => (clauses ?? []).every(([k, v]) => String((i as Record<string, unknown>)[k] ?? "") === v));
    const withSavingsPlans = query["api-version"] === SAVINGS_PLAN_API_VERSION;
    const items = matching.slice(skip, skip + state.pageSize).map((i) => (withSavingsPlans ? i : { ...i, savingsPlan: undefined }));
    const rest = queryWithoutSkip(u.search, state.nextLinkDrops);
    const origin = state.nextLinkOrigin ?? state.url;
    const next = state.loop ? `${origin}/api/retail/prices?${rest}` : skip + state.pageSize < matching.length ? `${origin}/api/retail/prices?${rest}${rest ? "&" : ""}$skip=${skip + state.pageSize}` : null;
    sendJson(res, 200, page(items, next));
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });

  /** Answers 200 with a body cut short: the connection is destroyed after the first bytes. */
  function destroyMidway(res: ServerResponse) {
    res.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": "100000" });
    res.write('{"BillingCurrency":"USD","Items":[{"currencyCode":"USD",');
    setTimeout(() => res.socket?.destroy(), 20);
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const state: AzurePricesServer = {
    url: `http://127.0.0.1:${port}`,
    items: options.items ?? azureSnapshotItems(),
    requests: [],
    pageSize: options.pageSize ?? 10,
    fault: null,
    nextLinkOrigin: null,
    loop: false,
    nextLinkDrops: [],
    itemsOf: (region, arm) => state.items.filter((i) => i.armRegionName === region && i.armSkuName === arm),
    setPrice(match, unitPrice, effectiveStartDate) {
      let n = 0;
      for (const i of state.items) {
        if (!match(i)) continue;
        i.unitPrice = i.retailPrice = unitPrice;
        if (effectiveStartDate) i.effectiveStartDate = effectiveStartDate;
        n++;
      }
      return n;
    },
    withdraw(match) {
      const before = state.items.length;
      state.items = state.items.filter((i) => !match(i));
      return before - state.items.length;
    },
    async writeOffline(dir, pageSize = state.pageSize) {
      await mkdir(join(dir, "azure"), { recursive: true });
      let files = 0;
      for (let skip = 0; skip < state.items.length; skip += pageSize) {
        const next = skip + pageSize < state.items.length ? `https://prices.azure.com:443/api/retail/prices?api-version=2023-01-01-preview&$skip=${skip + pageSize}` : null;
        files++;
        await writeFile(join(dir, "azure", `page-${String(files).padStart(4, "0")}.json`), JSON.stringify(page(state.items.slice(skip, skip + pageSize), next), null, 1));
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

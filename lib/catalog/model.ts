import type { Provider } from "../pricing/index.ts";

/**
 * The one currency of the catalog (the importers skip prices in any other): estimates, plans and
 * the orders bought from them are priced in it.
 */
export const CATALOG_CURRENCY = "USD";

/** The bundled snapshot's feed: it yields to every other feed (lib/catalog/store.ts). */
export const SNAPSHOT_FEED = "public_snapshot";

/** The public catalog's owner id (`catalog_sku_org_id` / `offer_org_id`). */
export const PUBLIC_CATALOG = "public";

export const CONTRACT_TERMS = ["one_year", "three_year", "thirty_day_gris", "one_year_gris"] as const;
export const PAYMENT_OPTIONS = ["no_upfront", "partial_upfront", "all_upfront"] as const;

export const YEAR_SECONDS = 365 * 86_400;

/** A SKU descriptor as an importer produces it. */
export interface SkuInput {
  providerSkuId: string;
  displayName: string;
  instanceType?: string;
  instanceFamily?: string;
  service?: string;
  providerService?: string;
  regionCode?: string;
  operatingSystem?: string;
  databaseEngine?: string;
  cacheEngine?: string;
  usageType?: string;
  usageUnit?: string;
  /** On-demand tiers; empty when the source has no on-demand price. */
  tiers: { startQuantity: number; endQuantity: number | null; unitPrice: number }[];
  /** Provenance of the price (defaults to the batch's source). */
  source?: string;
  asOf: string;
}

export interface LeaseInput {
  providerSkuId: string;
  recurringHourlyRate: number;
  upfrontCost: number;
  source?: string;
  asOf: string;
}

export interface OfferInput {
  offerKey: string;
  commitmentType: string;
  contractTerm: string;
  paymentOption: string;
  offeringClass?: string | null;
  planType?: string | null;
  durationSeconds: number;
  region?: string | null;
  instanceType?: string | null;
  instanceFamily?: string | null;
  productDescription?: string | null;
  displayName: string;
  guaranteedDisplayName?: string | null;
  isFlexible: boolean;
  feeRate?: number;
  lockInDays: number;
  isInsured?: boolean;
  source?: string;
  asOf: string;
  leases: LeaseInput[];
}

/**
 * One import: everything a source publishes for a provider. Applying it upserts the rows and
 * marks unavailable what the same source (`source`) published before but no longer does.
 */
export interface CatalogBatch {
  provider: Provider;
  /** PUBLIC_CATALOG or an org id (custom-priced SKUs). */
  orgId: string;
  /** The feed: a re-import of the same feed withdraws what it no longer lists. */
  source: string;
  skus: SkuInput[];
  offers: OfferInput[];
}

export function termSeconds(years: number): number {
  return years * YEAR_SECONDS;
}

export function termName(years: number): "one_year" | "three_year" {
  if (years === 1) return "one_year";
  if (years === 3) return "three_year";
  throw new Error(`unsupported term of ${years} years`);
}

/** Instance family: the part before the size (`m5.xlarge` → `m5`, `Standard_D2s_v5` → `Dsv5` is left as is). */
export function instanceFamilyOf(instanceType: string): string {
  if (!instanceType) return "";
  const dot = instanceType.replace(/^(db|cache)\./, "").split(".");
  if (dot.length > 1) return dot[0]!;
  const dash = instanceType.split("-");
  if (dash.length > 1) return dash.slice(0, -1).join("-");
  return instanceType;
}

/** A published price as a number: a finite, non-negative value, else null (absent, "", garbage). */
export function publishedPrice(v: unknown): number | null {
  const n = typeof v === "number" ? v : typeof v === "string" && v.trim() !== "" ? Number(v) : NaN;
  return Number.isFinite(n) && n >= 0 ? n : null;
}

/** A provider's date or timestamp as YYYY-MM-DD (what it says otherwise, "unknown" when absent). */
export function publishedDate(v: unknown): string {
  const s = typeof v === "string" ? v : "";
  return /^\d{4}-\d{2}-\d{2}/.test(s) ? s.slice(0, 10) : s || "unknown";
}

/**
 * One FOCUS row: validated against the spec and encoded as a COPY text line of
 * billing_line_items, with what the import tracks about it (periods, accounts, commitments).
 * This is the row-by-row path (records from Parquet or a query, files PostgreSQL cannot read as
 * they are, and the embedded database; focusStaged.ts takes the rest), so the per-row path allocates little: positions are resolved once per file (Layout),
 * the COPY line is one native join, and cells are escaped only where the reader saw a character
 * COPY treats specially.
 */
import type { Provider } from "./sql.ts";
import { detach } from "./csvReader.ts";

export type Kind = "text" | "num" | "ts" | "json";

/** FOCUS column → billing_line_items column. Everything else goes to `extra`. */
const COLUMNS: Record<string, { col: string; kind: Kind }> = {
  BillingAccountId: { col: "billing_account_id", kind: "text" },
  BillingAccountName: { col: "billing_account_name", kind: "text" },
  SubAccountId: { col: "sub_account_id", kind: "text" },
  SubAccountName: { col: "sub_account_name", kind: "text" },
  BillingCurrency: { col: "billing_currency", kind: "text" },
  ChargePeriodStart: { col: "charge_period_start", kind: "ts" },
  ChargePeriodEnd: { col: "charge_period_end", kind: "ts" },
  ChargeCategory: { col: "charge_category", kind: "text" },
  ChargeClass: { col: "charge_class", kind: "text" },
  ChargeFrequency: { col: "charge_frequency", kind: "text" },
  ChargeDescription: { col: "charge_description", kind: "text" },
  BilledCost: { col: "billed_cost", kind: "num" },
  EffectiveCost: { col: "effective_cost", kind: "num" },
  ListCost: { col: "list_cost", kind: "num" },
  ContractedCost: { col: "contracted_cost", kind: "num" },
  PricingCategory: { col: "pricing_category", kind: "text" },
  PricingQuantity: { col: "pricing_quantity", kind: "num" },
  PricingUnit: { col: "pricing_unit", kind: "text" },
  ConsumedQuantity: { col: "consumed_quantity", kind: "num" },
  ConsumedUnit: { col: "consumed_unit", kind: "text" },
  CommitmentDiscountId: { col: "commitment_discount_id", kind: "text" },
  CommitmentDiscountCategory: { col: "commitment_discount_category", kind: "text" },
  CommitmentDiscountType: { col: "commitment_discount_type", kind: "text" },
  CommitmentDiscountStatus: { col: "commitment_discount_status", kind: "text" },
  CommitmentDiscountName: { col: "commitment_discount_name", kind: "text" },
  CommitmentDiscountQuantity: { col: "commitment_discount_quantity", kind: "num" },
  CommitmentDiscountUnit: { col: "commitment_discount_unit", kind: "text" },
  RegionId: { col: "region_id", kind: "text" },
  RegionName: { col: "region_name", kind: "text" },
  ServiceCategory: { col: "service_category", kind: "text" },
  ServiceName: { col: "service_name", kind: "text" },
  ResourceId: { col: "resource_id", kind: "text" },
  ResourceType: { col: "resource_type", kind: "text" },
  SkuId: { col: "sku_id", kind: "text" },
  SkuPriceId: { col: "sku_price_id", kind: "text" },
  Tags: { col: "tags", kind: "json" },
};
/** Read but not stored as their own column. */
const SPECIAL = ["ProviderName", "BillingPeriodStart", "BillingPeriodEnd", "BillingPeriodStatus", "SkuPriceDetails"];
export const CANONICAL = new Map([...Object.keys(COLUMNS), ...SPECIAL].map((c) => [c.toLowerCase(), c]));

/** Mandatory, non-nullable in FOCUS 1.0–1.2: a NULL here (when the column is in the file) is a violation. */
export const NOT_NULL = ["BillingAccountId", "BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd", "ChargeCategory", "BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "ProviderName"];
/** Without these (and no default) a file cannot be imported at all. */
export const REQUIRED_HEADERS = ["ProviderName", "BillingAccountId", "BillingPeriodStart", "ChargePeriodStart", "ChargePeriodEnd", "ChargeCategory", "BilledCost", "EffectiveCost"];

export const CHARGE_CATEGORIES = ["Usage", "Purchase", "Tax", "Credit", "Adjustment"];
export const FREQUENCIES = ["One-Time", "Recurring", "Usage-Based"];
export const PRICING = ["Standard", "Dynamic", "Committed", "Other"];
/** The canonical spelling of an enumerated value, matched case-insensitively (exact spellings first: the common case). */
function canonical(values: string[]): (v: string) => string | undefined {
  const exact = new Map(values.map((x) => [x, x]));
  const lower = new Map(values.map((x) => [x.toLowerCase(), x]));
  return (v) => exact.get(v) ?? lower.get(v.toLowerCase());
}
const chargeCategoryOf = canonical(CHARGE_CATEGORIES);
const frequencyOf = canonical(FREQUENCIES);
const pricingCategoryOf = canonical(PRICING);
const commitmentCategoryOf = canonical(["Spend", "Usage"]);
const commitmentStatusOf = canonical(["Used", "Unused"]);

export const PROVIDER_NAMES = new Map<string, Provider>(Object.entries({
  aws: "aws",
  amazon: "aws",
  "amazon web services": "aws",
  "amazon web services, inc.": "aws",
  azure: "azure",
  microsoft: "azure",
  "microsoft azure": "azure",
  gcp: "gcp",
  google: "gcp",
  "google cloud": "gcp",
  "google cloud platform": "gcp",
} as Record<string, Provider>));

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i;

/** FOCUS timestamps; tolerates a space instead of `T` and a missing zone (then UTC). */
export function parseFocusTimestamp(v: string): Date | null {
  const m = TIMESTAMP.exec(v.trim());
  if (!m) return null;
  const [, y, mo, d, h = "00", mi = "00", s = "00", frac = "", zone] = m;
  if (+mo! < 1 || +mo! > 12 || +d! < 1 || +d! > 31 || +h > 23 || +mi > 59 || +s > 59) return null;
  const z = !zone || zone.toUpperCase() === "Z" ? "Z" : zone.length === 5 ? `${zone.slice(0, 3)}:${zone.slice(3)}` : zone;
  const date = new Date(`${y}-${mo}-${d}T${h}:${mi}:${s}${frac}${z}`);
  if (Number.isNaN(date.getTime()) || (z === "Z" && date.getUTCDate() !== +d!)) return null;
  return date;
}

/** parseFocusTimestamp as ISO 8601 UTC, memoized: billing exports repeat the same few thousand timestamps. */
const tsCache = new Map<string, string | null>();
export function isoTimestamp(v: string): string | null {
  let r = tsCache.get(v);
  if (r !== undefined) return r;
  r = parseFocusTimestamp(v)?.toISOString() ?? null;
  if (tsCache.size >= 50_000) tsCache.clear();
  tsCache.set(detach(v), r);
  return r;
}

export const isNull = (v: string | undefined) => v === undefined || v === "" || (v.length === 4 && v.toLowerCase() === "null");
/** [FOCUS column, its billing_line_items column and kind], in INSERT_COLUMNS order after the lead. */
export const COLUMN_LIST = Object.entries(COLUMNS);
/** Null per FOCUS exports: empty, the literal NULL (any case) or only blanks. */
export function nullable(v: string | undefined): string | null {
  if (v === undefined || v === "") return null;
  if (v.length !== 4 && v.charCodeAt(0) > 32 && v.charCodeAt(v.length - 1) > 32) return v;
  if (isNull(v)) return null;
  const c0 = v!.charCodeAt(0);
  const cn = v!.charCodeAt(v!.length - 1);
  if ((c0 <= 32 || cn <= 32) && v!.trim() === "") return null;
  return v!;
}

/** Position of each billing_line_items column in COLUMN_LIST. */
const C = Object.fromEntries(COLUMN_LIST.map(([, { col }], i) => [col, i])) as Record<string, number>;
const KIND: Kind[] = COLUMN_LIST.map(([, { kind }]) => kind);
const NAME: string[] = COLUMN_LIST.map(([c]) => c);

/** billing_line_items columns of a COPY line, after org_id and import_id. */
export const INSERT_COLUMNS = ["provider", "billing_period", "instance_type", "extra", ...COLUMN_LIST.map(([, { col }]) => col)];
/** Cells before the FOCUS columns: org_id, import_id, provider, billing_period, instance_type, extra. */
const LEAD = 6;

/** One valid record, encoded as a COPY text line, with what the import tracks about it. */
export interface EncodedRow {
  /** COPY text line of org_id, import_id and INSERT_COLUMNS, without its line end. */
  line: string;
  provider: Provider;
  month: string;
  billingAccountId: string;
  billingAccountName: string | null;
  /** The linked account (else the billing account) and its name. */
  accountId: string;
  accountName: string | null;
  commitmentId: string | null;
  billingPeriodClosed: boolean;
  /** The row carries an InvoiceId (the charge is invoiced); null when the file has no InvoiceId column. */
  invoiced: boolean | null;
}

export interface RowErrors {
  errors: string[];
}

/** Where each column is in this file's header (computed once per file). */
export interface Layout {
  /** Field position of each COLUMN_LIST entry (-1: absent, then its default). */
  pos: Int32Array;
  dflt: (string | undefined)[];
  /** Per COLUMN_LIST entry: must not be null (NOT_NULL and in the file or defaulted). */
  notNull: boolean[];
  /** NOT_NULL columns that are in the file (or defaulted): [name, position or -1, default], in NOT_NULL order. */
  required: [string, number, string | undefined][];
  /** Position (or -1) and default of the columns read but not stored as their own column. */
  special: Record<(typeof SPECIAL)[number] | "x_InstanceType", [number, string | undefined]>;
  /** Columns kept in `extra` (x_ and other non-report columns): JSON-encoded key + ":", position. */
  extraCols: [string, number][];
  /** Position of InvoiceId (-1: absent). It is stored in `extra`; read here because it closes periods. */
  invoiceAt: number;
  /** ProviderName, BillingPeriodStart, BillingPeriodEnd must not be null (in the file or defaulted). */
  specialNotNull: [boolean, boolean, boolean];
  /** No default holds a character COPY escapes. */
  defaultsPlain: boolean;
  /** Leading COPY cells of every row: org_id, import_id. */
  orgId: string;
  importId: string;
}

export function layoutOf(header: string[], defaults: Record<string, string>, ids: { orgId: string; importId: string }): Layout {
  const index = new Map<string, number>();
  header.forEach((h, i) => index.has(h) || index.set(h, i));
  const at = (c: string) => index.get(c) ?? -1;
  const required = NOT_NULL.filter((c) => index.has(c) || defaults[c] !== undefined);
  const specialOf = (c: string): [number, string | undefined] => [at(c), defaults[c]];
  return {
    pos: Int32Array.from(COLUMN_LIST.map(([c]) => at(c))),
    dflt: COLUMN_LIST.map(([c]) => defaults[c]),
    notNull: COLUMN_LIST.map(([c]) => required.includes(c)),
    required: required.map((c) => [c, at(c), defaults[c]]),
    special: {
      ProviderName: specialOf("ProviderName"),
      BillingPeriodStart: specialOf("BillingPeriodStart"),
      BillingPeriodEnd: specialOf("BillingPeriodEnd"),
      BillingPeriodStatus: specialOf("BillingPeriodStatus"),
      SkuPriceDetails: specialOf("SkuPriceDetails"),
      x_InstanceType: specialOf("x_InstanceType"),
    },
    extraCols: header.map((h, i) => [`${JSON.stringify(h)}:`, i] as [string, number]).filter(([h]) => !CANONICAL.has(JSON.parse(h.slice(0, -1)).toLowerCase())),
    invoiceAt: at("InvoiceId"),
    specialNotNull: [required.includes("ProviderName"), required.includes("BillingPeriodStart"), required.includes("BillingPeriodEnd")],
    defaultsPlain: Object.values(defaults).every((v) => !COPY_SPECIAL.test(v)),
    orgId: ids.orgId,
    importId: ids.importId,
  };
}

/** Bounded memo of per-value work: billing exports repeat the same tags and price details on many rows. */
function memo<T>(limit: number, compute: (v: string) => T): (v: string) => T {
  const cache = new Map<string, T>();
  return (v) => {
    let r = cache.get(v);
    if (r === undefined && !cache.has(v)) {
      r = compute(v);
      if (cache.size >= limit) cache.clear();
      cache.set(detach(v), r);
    }
    return r as T;
  };
}
const isJsonObjectText = memo(10_000, (v) => {
  try {
    const parsed = JSON.parse(v);
    return parsed !== null && typeof parsed === "object" && !Array.isArray(parsed);
  } catch {
    return false;
  }
});
/** SkuPriceDetails: its instance type, and how it is kept in `extra` (the JSON itself, else the text as a JSON string). */
const priceDetails = memo(10_000, (v): { instanceType: string | null; json: string } => {
  try {
    const d = JSON.parse(v);
    const it = d?.InstanceType ?? d?.x_InstanceType ?? null;
    return { instanceType: typeof it === "string" ? it : it === null ? null : String(it), json: JSON.stringify(d) };
  } catch {
    return { instanceType: null, json: JSON.stringify(v) };
  }
});

const COPY_SPECIAL = /[\\\t\n\r]/;
/** COPY text-format cell: \N for null, backslash escapes for the separators. */
function copyCell(v: string | null): string {
  if (v === null) return "\\N";
  return COPY_SPECIAL.test(v) ? v.replace(/\\/g, "\\\\").replace(/\t/g, "\\t").replace(/\n/g, "\\n").replace(/\r/g, "\\r") : v;
}

/** ProviderName as written (a file spells it one or two ways) → provider. */
export const providerOf = memo(1000, (v): Provider | undefined => PROVIDER_NAMES.get(v.trim().toLowerCase()));

const special = (fields: string[], [i, d]: [number, string | undefined]) => nullable(i >= 0 ? fields[i] : d);

/** A decimal as stored (trimmed), or undefined when it is not one. */
function decimalOf(v: string): string | undefined {
  const t = v.charCodeAt(0) > 32 && v.charCodeAt(v.length - 1) > 32 ? v : v.trim();
  return NUMBER.test(t) ? t : undefined;
}

/**
 * Validates one record (fields in header order) and encodes it as a COPY line; returns the
 * violations instead when it breaks the spec. `plain`: the reader saw no backslash, tab or
 * line break inside any field of this record's batch, so its fields need no COPY escaping.
 */
export function encodeFocusRow(fields: string[], layout: Layout, plain: boolean): EncodedRow | RowErrors {
  let errors: string[] | null = null;
  let nullRequired = false;
  const n = NAME.length;
  const values: (string | null)[] = new Array(n);
  const pos = layout.pos;
  for (let k = 0; k < n; k++) {
    const p = pos[k]!;
    const raw = p >= 0 ? fields[p] : layout.dflt[k];
    // nullable()'s common cases inline: this loop runs for every cell of the file.
    const v = raw === undefined || raw === "" ? null : raw.length !== 4 && raw.charCodeAt(0) > 32 && raw.charCodeAt(raw.length - 1) > 32 ? raw : nullable(raw);
    if (v === null) {
      values[k] = null;
      if (layout.notNull[k]) nullRequired = true;
      continue;
    }
    const kind = KIND[k];
    if (kind === "text") values[k] = v;
    else if (kind === "num") {
      const t = decimalOf(v);
      if (t === undefined) (errors ??= []).push(`${NAME[k]} is not a decimal number: ${JSON.stringify(v.slice(0, 40))}`);
      values[k] = t ?? v;
    } else if (kind === "ts") {
      const d = isoTimestamp(v);
      if (!d) (errors ??= []).push(`${NAME[k]} is not a date-time: ${JSON.stringify(v.slice(0, 40))}`);
      values[k] = d;
    } else {
      if (!isJsonObjectText(v)) (errors ??= []).push(`${NAME[k]} is not a JSON object`);
      values[k] = v; // valid JSON object text: stored as is
    }
  }
  const sp = layout.special;
  const providerRaw = special(fields, sp.ProviderName);
  const bps = special(fields, sp.BillingPeriodStart);
  const bpe = special(fields, sp.BillingPeriodEnd);
  // Null mandatory columns are reported first, in NOT_NULL order.
  const snn = layout.specialNotNull;
  if (nullRequired || (snn[0] && providerRaw === null) || (snn[1] && bps === null) || (snn[2] && bpe === null)) {
    const missing: string[] = [];
    for (const [c, i, d] of layout.required) if (nullable(i >= 0 ? fields[i] : d) === null) missing.push(`${c} must not be null`);
    if (missing.length) errors = errors ? [...missing, ...errors] : missing;
  }
  const fail = (m: string) => void (errors ??= []).push(m);

  const provider = providerRaw ? providerOf(providerRaw) : undefined;
  if (providerRaw && !provider) fail(`ProviderName ${JSON.stringify(providerRaw)} is not a supported provider (aws, azure, gcp)`);
  const bpStart = bps ? isoTimestamp(bps) : null;
  if (bps && !bpStart) fail(`BillingPeriodStart is not a date-time: ${JSON.stringify(bps.slice(0, 40))}`);
  if (bpe && !isoTimestamp(bpe)) fail(`BillingPeriodEnd is not a date-time: ${JSON.stringify(bpe.slice(0, 40))}`);

  const cat = values[C.charge_category!];
  if (cat) {
    const c = chargeCategoryOf(cat);
    if (!c) fail(`ChargeCategory ${JSON.stringify(cat)} is not one of ${CHARGE_CATEGORIES.join(", ")}`);
    else values[C.charge_category!] = c;
  }
  const freq = values[C.charge_frequency!];
  if (freq) {
    const f = frequencyOf(freq);
    if (!f) fail(`ChargeFrequency ${JSON.stringify(freq)} is not one of ${FREQUENCIES.join(", ")}`);
    else values[C.charge_frequency!] = f;
  }
  const pricing = values[C.pricing_category!];
  if (pricing) values[C.pricing_category!] = pricingCategoryOf(pricing) ?? pricing;
  const cls = values[C.charge_class!];
  if (cls && cls.toLowerCase() === "correction") values[C.charge_class!] = "Correction";
  const cdc = values[C.commitment_discount_category!];
  if (cdc) {
    const c = commitmentCategoryOf(cdc);
    if (!c) fail(`CommitmentDiscountCategory ${JSON.stringify(cdc)} is not Spend or Usage`);
    else values[C.commitment_discount_category!] = c;
  }
  const status = values[C.commitment_discount_status!];
  const category = values[C.charge_category!];
  if (status) {
    const st = commitmentStatusOf(status);
    if (!st) fail(`CommitmentDiscountStatus ${JSON.stringify(status)} is not Used or Unused`);
    else values[C.commitment_discount_status!] = st;
    if (!values[C.commitment_discount_id!]) fail("CommitmentDiscountStatus is set but CommitmentDiscountId is null");
    if (category && category !== "Usage") fail("CommitmentDiscountStatus must be null unless ChargeCategory is Usage");
  } else if (values[C.commitment_discount_id!] && category === "Usage") {
    fail("CommitmentDiscountStatus must not be null on a Usage row with a CommitmentDiscountId");
  }
  const s = values[C.charge_period_start!];
  const e = values[C.charge_period_end!];
  if (s && e && e < s) fail("ChargePeriodEnd is before ChargePeriodStart");

  if (errors) return { errors };

  // Instance type for plan-generation groups: SkuPriceDetails (FOCUS 1.1+) or an x_ column.
  let instanceType: string | null = special(fields, sp.x_InstanceType);
  const details = special(fields, sp.SkuPriceDetails);
  let extra = "";
  if (details) {
    const d = priceDetails(details);
    instanceType ??= d.instanceType;
    extra = `"SkuPriceDetails":${d.json}`;
  }
  const extraCols = layout.extraCols;
  for (let x = 0; x < extraCols.length; x++) {
    const [key, i] = extraCols[x]!;
    const v = fields[i];
    if (!isNull(v)) extra += `${extra ? "," : ""}${key}${JSON.stringify(v)}`;
  }
  const month = `${bpStart!.slice(0, 7)}-01`;
  values[C.billing_currency!] ??= "USD";

  const cells: string[] = new Array(LEAD + n);
  const escape = !plain || !layout.defaultsPlain;
  cells[0] = layout.orgId;
  cells[1] = layout.importId;
  cells[2] = provider!;
  cells[3] = month;
  // Built from JSON text, which may hold backslashes: always escaped.
  cells[4] = copyCell(instanceType);
  cells[5] = extra ? copyCell(`{${extra}}`) : "\\N";
  for (let k = 0; k < n; k++) {
    const v = values[k]!;
    cells[LEAD + k] = v === null ? "\\N" : escape ? copyCell(v) : v;
  }
  const sub = values[C.sub_account_id!];
  const billingAccountId = values[C.billing_account_id!]!;
  const accountId = sub ?? billingAccountId;
  const accountName = sub ? values[C.sub_account_name!]! : values[C.billing_account_name!]!;
  const commitmentId = values[C.commitment_discount_id!]!;
  const periodStatus = special(fields, sp.BillingPeriodStatus);
  return {
    line: cells.join("\t"),
    provider: provider!,
    month,
    billingAccountId,
    billingAccountName: values[C.billing_account_name!]!,
    accountId,
    accountName,
    commitmentId,
    billingPeriodClosed: periodStatus !== null && periodStatus.toLowerCase() === "closed",
    invoiced: layout.invoiceAt < 0 ? null : !isNull(fields[layout.invoiceAt]),
  };
}

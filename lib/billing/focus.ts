/**
 * FOCUS 1.0–1.2 cost-and-usage ingestion: a streamed CSV (optionally gzip) → billing_line_items,
 * validated and encoded row by row in JS while PostgreSQL runs one COPY of the same stream
 * (the two overlap on separate cores), inside one transaction per file that also replaces the
 * earlier rows of its periods and rebuilds their report summaries. Rows violating the spec are
 * reported with their line numbers; by default one bad row rejects the whole file, with
 * `skipInvalid` the valid rows are kept. Re-importing a (provider, billing account, billing
 * period) replaces the rows imported before for it, so nothing is counted twice.
 */
import { createReadStream } from "node:fs";
import { createGunzip } from "node:zlib";
import type { Readable } from "node:stream";
import type { Db } from "../db/index.ts";
import { queryRows, type Provider } from "./sql.ts";
import { deriveCommitments } from "./inventory.ts";
import { SummaryAccumulator, type SummaryInput } from "./summaryAccumulator.ts";
import { rebuildBillingSummaries } from "./summaries.ts";
import { collectGarbageHint } from "../adapters/gc.ts";
import { openCopyIn } from "../db/copyIn.ts";
import { CsvSyntaxError, detach, readCsv } from "./csvReader.ts";

type Kind = "text" | "num" | "ts" | "json";

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
const CANONICAL = new Map([...Object.keys(COLUMNS), ...SPECIAL].map((c) => [c.toLowerCase(), c]));

/** Mandatory, non-nullable in FOCUS 1.0–1.2: a NULL here (when the column is in the file) is a violation. */
const NOT_NULL = ["BillingAccountId", "BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd", "ChargeCategory", "BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "ProviderName"];
/** Without these (and no default) a file cannot be imported at all. */
const REQUIRED_HEADERS = ["ProviderName", "BillingAccountId", "BillingPeriodStart", "ChargePeriodStart", "ChargePeriodEnd", "ChargeCategory", "BilledCost", "EffectiveCost"];

const CHARGE_CATEGORIES = ["Usage", "Purchase", "Tax", "Credit", "Adjustment"];
const FREQUENCIES = ["One-Time", "Recurring", "Usage-Based"];
const PRICING = ["Standard", "Dynamic", "Committed", "Other"];
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

const PROVIDER_NAMES: Record<string, Provider> = {
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
};

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
function isoTimestamp(v: string): string | null {
  let r = tsCache.get(v);
  if (r !== undefined) return r;
  r = parseFocusTimestamp(v)?.toISOString() ?? null;
  if (tsCache.size >= 50_000) tsCache.clear();
  tsCache.set(detach(v), r);
  return r;
}

const isNull = (v: string | undefined) => v === undefined || v === "" || (v.length === 4 && v.toLowerCase() === "null");
const COLUMN_LIST = Object.entries(COLUMNS);
/** Null per FOCUS exports: empty, the literal NULL (any case) or only blanks. */
function nullable(v: string | undefined): string | null {
  if (v === undefined || v === "") return null;
  if (v.length !== 4 && v.charCodeAt(0) > 32 && v.charCodeAt(v.length - 1) > 32) return v;
  if (isNull(v)) return null;
  const c0 = v!.charCodeAt(0);
  const cn = v!.charCodeAt(v!.length - 1);
  if ((c0 <= 32 || cn <= 32) && v!.trim() === "") return null;
  return v!;
}

export interface ImportOptions {
  /** Keep valid rows and report the invalid ones instead of rejecting the whole file. */
  skipInvalid?: boolean;
  /** Values for columns absent from the file (e.g. ProviderName for a provider's own export). */
  defaults?: Record<string, string>;
  fileName?: string;
  /** Called for each rejected row (e.g. to write a rejects file). */
  onReject?: (reject: RejectedRow) => void | Promise<void>;
  /** Called every `progressEvery` rows with the rows read so far. */
  onProgress?: (rowsRead: number) => void;
  progressEvery?: number;
  now?: Date;
}

export interface RejectedRow {
  /** 1-based line of the CSV file (the header is line 1). */
  line: number;
  errors: string[];
  record: Record<string, string>;
}

export interface ImportResult {
  import_id: string | null;
  file_name: string;
  rows_read: number;
  rows_imported: number;
  rows_rejected: number;
  /** The first 1000 rejects, with line numbers. */
  rejects: { line: number; errors: string[] }[];
  /** (provider, billing account, month) replaced by this import. */
  periods: { provider: Provider; billing_account_id: string; month: string }[];
  /** Rows of earlier imports replaced (deleted) for those periods. */
  rows_replaced: number;
  accounts_discovered: number;
  commitments_upserted: number;
}

/** Thrown when a file has invalid rows and skipInvalid is off: nothing was written. */
export class FocusImportRejected extends Error {
  constructor(readonly rowsRejected: number, readonly rejects: { line: number; errors: string[] }[]) {
    const first = rejects.slice(0, 5).map((r) => `line ${r.line}: ${r.errors.join("; ")}`).join(" | ");
    super(`${rowsRejected} row(s) violate the FOCUS specification; nothing was imported (use skip-invalid to keep the valid rows). ${first}`);
  }
}

export class FocusFileError extends Error {}

/** One valid record, encoded as a COPY text line, with what the import tracks about it. */
interface Encoded {
  /** COPY text cells of INSERT_COLUMNS, tab-separated, no line end. */
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
  /** What the report summaries add up. */
  summary: SummaryInput;
}

/** Where each column is in this file's header (computed once per file). */
interface Layout {
  /** Field position of each COLUMN_LIST entry (-1: absent, then its default). */
  pos: number[];
  dflt: (string | undefined)[];
  /** NOT_NULL columns that are in the file (or defaulted): [name, position or -1, default]. */
  required: [string, number, string | undefined][];
  index: Map<string, number>;
  defaults: Record<string, string>;
  /** Columns kept in `extra` (x_ and other non-report columns), with their JSON-encoded key. */
  extraCols: [string, number][];
}

export function layoutOf(header: string[], defaults: Record<string, string> = {}): Layout {
  const index = new Map<string, number>();
  header.forEach((h, i) => index.has(h) || index.set(h, i));
  const at = (c: string) => index.get(c) ?? -1;
  return {
    pos: COLUMN_LIST.map(([c]) => at(c)),
    dflt: COLUMN_LIST.map(([c]) => defaults[c]),
    required: NOT_NULL.filter((c) => index.has(c) || defaults[c] !== undefined).map((c) => [c, at(c), defaults[c]]),
    index,
    defaults,
    extraCols: header.map((h, i) => [JSON.stringify(h), i] as [string, number]).filter(([h]) => !CANONICAL.has(JSON.parse(h).toLowerCase())),
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

/**
 * Validates one record (fields in header order) and encodes it as a COPY line of INSERT_COLUMNS;
 * returns the violations instead when it breaks the spec.
 */
function encodeRecord(fields: string[], layout: Layout): Encoded | { errors: string[] } {
  let errors: string[] | null = null;
  const fail = (m: string) => void (errors ??= []).push(m);
  const get = (c: string): string | null => {
    const i = layout.index.get(c);
    return nullable(i !== undefined ? fields[i] : layout.defaults[c]);
  };
  for (const [c, i, d] of layout.required) {
    if (nullable(i >= 0 ? fields[i] : d) === null) fail(`${c} must not be null`);
  }
  const values: (string | null)[] = new Array(COLUMN_LIST.length);
  for (let k = 0; k < COLUMN_LIST.length; k++) {
    const p = layout.pos[k]!;
    const raw = p >= 0 ? fields[p] : layout.dflt[k];
    // nullable()'s common cases inline: this loop runs for every cell of the file.
    const v = raw === undefined || raw === "" ? null : raw.length !== 4 && raw.charCodeAt(0) > 32 && raw.charCodeAt(raw.length - 1) > 32 ? raw : nullable(raw);
    if (v === null) {
      values[k] = null;
      continue;
    }
    const kind = COLUMN_LIST[k]![1].kind;
    if (kind === "text") values[k] = v;
    else if (kind === "num") {
      const t = v.trim();
      if (!NUMBER.test(t)) fail(`${COLUMN_LIST[k]![0]} is not a decimal number: ${JSON.stringify(v.slice(0, 40))}`);
      values[k] = t;
    } else if (kind === "ts") {
      const d = isoTimestamp(v);
      if (!d) fail(`${COLUMN_LIST[k]![0]} is not a date-time: ${JSON.stringify(v.slice(0, 40))}`);
      values[k] = d;
    } else {
      if (!isJsonObjectText(v)) fail(`${COLUMN_LIST[k]![0]} is not a JSON object`);
      values[k] = v; // valid JSON object text: stored as is
    }
  }

  const providerRaw = get("ProviderName");
  const provider = providerRaw ? PROVIDER_NAMES[providerRaw.trim().toLowerCase()] : undefined;
  if (providerRaw && !provider) fail(`ProviderName ${JSON.stringify(providerRaw)} is not a supported provider (aws, azure, gcp)`);

  const bps = get("BillingPeriodStart");
  const bpStart = bps ? isoTimestamp(bps) : null;
  if (bps && !bpStart) fail(`BillingPeriodStart is not a date-time: ${JSON.stringify(bps.slice(0, 40))}`);
  const bpe = get("BillingPeriodEnd");
  if (bpe && !isoTimestamp(bpe)) fail(`BillingPeriodEnd is not a date-time: ${JSON.stringify(bpe.slice(0, 40))}`);

  const cat = values[C.charge_category];
  if (cat) {
    const c = chargeCategoryOf(cat);
    if (!c) fail(`ChargeCategory ${JSON.stringify(cat)} is not one of ${CHARGE_CATEGORIES.join(", ")}`);
    else values[C.charge_category] = c;
  }
  const freq = values[C.charge_frequency];
  if (freq) {
    const f = frequencyOf(freq);
    if (!f) fail(`ChargeFrequency ${JSON.stringify(freq)} is not one of ${FREQUENCIES.join(", ")}`);
    else values[C.charge_frequency] = f;
  }
  const pricing = values[C.pricing_category];
  if (pricing) values[C.pricing_category] = pricingCategoryOf(pricing) ?? pricing;
  const cls = values[C.charge_class];
  if (cls && cls.toLowerCase() === "correction") values[C.charge_class] = "Correction";
  const cdc = values[C.commitment_discount_category];
  if (cdc) {
    const c = commitmentCategoryOf(cdc);
    if (!c) fail(`CommitmentDiscountCategory ${JSON.stringify(cdc)} is not Spend or Usage`);
    else values[C.commitment_discount_category] = c;
  }
  const status = values[C.commitment_discount_status];
  const category = values[C.charge_category];
  if (status) {
    const st = commitmentStatusOf(status);
    if (!st) fail(`CommitmentDiscountStatus ${JSON.stringify(status)} is not Used or Unused`);
    else values[C.commitment_discount_status] = st;
    if (!values[C.commitment_discount_id]) fail("CommitmentDiscountStatus is set but CommitmentDiscountId is null");
    if (category && category !== "Usage") fail("CommitmentDiscountStatus must be null unless ChargeCategory is Usage");
  } else if (values[C.commitment_discount_id] && category === "Usage") {
    fail("CommitmentDiscountStatus must not be null on a Usage row with a CommitmentDiscountId");
  }
  const s = values[C.charge_period_start];
  const e = values[C.charge_period_end];
  if (s && e && e < s) fail("ChargePeriodEnd is before ChargePeriodStart");

  if (errors) return { errors };

  // Instance type for plan-generation groups: SkuPriceDetails (FOCUS 1.1+) or an x_ column.
  let instanceType: string | null = get("x_InstanceType") ?? null;
  const details = get("SkuPriceDetails");
  let extra = "";
  if (details) {
    const d = priceDetails(details);
    instanceType ??= d.instanceType;
    extra = `"SkuPriceDetails":${d.json}`;
  }
  for (const [k, i] of layout.extraCols) {
    const v = fields[i];
    if (!isNull(v)) extra += `${extra ? "," : ""}${k}:${JSON.stringify(v)}`;
  }
  const month = `${bpStart!.slice(0, 7)}-01`;
  values[C.billing_currency] ??= "USD";
  let line = `${provider}\t${month}\t${copyCell(instanceType)}\t${extra ? copyCell(`{${extra}}`) : "\\N"}`;
  for (let k = 0; k < values.length; k++) line += "\t" + copyCell(values[k]!);
  const sub = values[C.sub_account_id];
  const billingAccountId = values[C.billing_account_id]!;
  const accountId = sub ?? billingAccountId;
  const accountName = sub ? values[C.sub_account_name] : values[C.billing_account_name];
  const commitmentId = values[C.commitment_discount_id];
  return {
    line,
    provider: provider!,
    month,
    billingAccountId,
    billingAccountName: values[C.billing_account_name],
    accountId,
    accountName,
    commitmentId,
    billingPeriodClosed: (get("BillingPeriodStatus") ?? "").toLowerCase() === "closed",
    summary: {
      provider: provider!,
      billingAccountId,
      month,
      currency: values[C.billing_currency]!,
      accountId,
      accountName,
      serviceCategory: values[C.service_category],
      serviceName: values[C.service_name],
      chargeStart: values[C.charge_period_start]!,
      chargeCategory: values[C.charge_category]!,
      commitmentId,
      commitmentStatus: values[C.commitment_discount_status],
      effectiveCost: values[C.effective_cost]!,
      billedCost: values[C.billed_cost]!,
      listCost: values[C.list_cost],
      contractedCost: values[C.contracted_cost],
    },
  };
}

/** Position of each billing_line_items column in COLUMN_LIST. */
const C = Object.fromEntries(COLUMN_LIST.map(([, { col }], i) => [col, i])) as Record<string, number>;

const INSERT_COLUMNS = ["provider", "billing_period", "instance_type", "extra", ...COLUMN_LIST.map(([, { col }]) => col)];

/**
 * The columns queries filter, join and group billing rows by: ANALYZE samples only these (the
 * wide text and JSON columns would make it cost as much as a third of the import).
 */
const ANALYZED_COLUMNS = ["org_id", "billing_period", "provider", "billing_account_id", "sub_account_id", "charge_category", "charge_period_start", "commitment_discount_id", "commitment_discount_status", "service_name", "region_id", "resource_id", "instance_type"];

/** Bytes of COPY text handed to the driver at once. */
const COPY_CHUNK_BYTES = 1 << 18;
const GC_EVERY_BYTES = 32 << 20;

async function* csvRecords(input: AsyncIterable<string | Uint8Array>) {
  try {
    yield* readCsv(input);
  } catch (e) {
    if (e instanceof CsvSyntaxError) throw new FocusFileError(`The file is not valid CSV: ${e.message}.`);
    throw e;
  }
}

/** The decoded text stream of a file path (gzip by extension or magic bytes). */
export function openFocusFile(path: string): Readable {
  const raw = createReadStream(path, { highWaterMark: 1 << 20 });
  return path.endsWith(".gz") ? raw.pipe(createGunzip()) : raw;
}

/**
 * Imports one FOCUS CSV into the org. Memory stays flat whatever the size: rows are parsed,
 * validated and inserted batch by batch inside one transaction.
 */
export async function importFocus(db: Db, orgId: string, input: Readable | AsyncIterable<string | Buffer>, opts: ImportOptions = {}): Promise<ImportResult> {
  const defaults = opts.defaults ?? {};
  const fileName = opts.fileName ?? "upload.csv";
  const progressEvery = opts.progressEvery ?? 50_000;

  return db.transaction(async (tx) => {
    // The file's one COPY lasts as long as the file (minutes at 10 M rows), and an import may wait
    // for another of the same org: the sessions' statement timeout does not apply to imports.
    await queryRows(tx, `SET LOCAL statement_timeout = 0`);
    // One import per org at a time: the replace-by-period step must see earlier imports committed.
    await queryRows(tx, `SELECT pg_advisory_xact_lock(hashtext('commitops:focus-import:' || $1::text))`, [orgId]);
    const [imp] = await queryRows<{ id: string }>(tx, `INSERT INTO billing_imports (org_id, file_name) VALUES ($1::uuid, $2) RETURNING id`, [orgId, fileName]);
    const importId = imp!.id;

    let header: string[] | null = null;
    let present = new Set<string>();
    let layout: Layout | null = null;
    let rowsRead = 0;
    let imported = 0;
    let rejected = 0;
    const rejects: { line: number; errors: string[] }[] = [];
    const periods = new Map<string, { provider: Provider; billing_account_id: string; month: string }>();
    const closedPeriods = new Set<string>();
    const accounts = new Map<string, { provider: Provider; account_id: string; name: string | null; billing_account_id: string | null; billing_account_name: string | null }>();
    const commitmentIds = new Set<string>();
    const sink = openCopyIn(tx, `COPY billing_line_items (org_id, import_id, ${INSERT_COLUMNS.join(", ")}) FROM STDIN`);
    let chunk = "";
    let bytesSinceCollect = 0;
    const summaries = new SummaryAccumulator();
    const prefix = `${orgId}\t${importId}\t`;
    try {
      const records = csvRecords(input as AsyncIterable<string | Uint8Array>);
      for await (const { fields, line } of records) {
        if (!header) {
          header = fields.map((h) => {
            const name = h.trim();
            return CANONICAL.get(name.toLowerCase()) ?? name;
          });
          present = new Set(header);
          layout = layoutOf(header, defaults);
          const missing = REQUIRED_HEADERS.filter((c) => !present.has(c) && defaults[c] === undefined);
          if (missing.length) throw new FocusFileError(`The file is missing required FOCUS column(s): ${missing.join(", ")}.`);
          continue;
        }
        rowsRead++;
        if (opts.onProgress && rowsRead % progressEvery === 0) opts.onProgress(rowsRead);
        const m = fields.length !== header.length ? { errors: [`has ${fields.length} fields, the header has ${header.length}`] } : encodeRecord(fields, layout!);
        if ("errors" in m) {
          const rec: Record<string, string> = {};
          for (let i = 0; i < header.length; i++) rec[header[i]!] = fields[i] ?? "";
          rejected++;
          if (rejects.length < 1000) rejects.push({ line, errors: m.errors });
          await opts.onReject?.({ line, errors: m.errors, record: rec });
          continue;
        }
        const pkey = `${m.provider}\u0000${m.billingAccountId}\u0000${m.month}`;
        if (!periods.has(pkey)) periods.set(pkey, { provider: m.provider, billing_account_id: detach(m.billingAccountId), month: m.month });
        if (m.billingPeriodClosed) closedPeriods.add(`${m.provider}\u0000${m.month}`);
        const akey = `${m.provider}\u0000${m.accountId}`;
        if (!accounts.has(akey))
          accounts.set(akey, {
            provider: m.provider,
            account_id: detach(m.accountId),
            name: detach(m.accountName),
            billing_account_id: detach(m.billingAccountId),
            billing_account_name: detach(m.billingAccountName),
          });
        if (m.commitmentId && commitmentIds.size < 100_000) commitmentIds.add(`${m.provider}\u0000${m.commitmentId}`);
        imported++;
        // Once a row is rejected without skipInvalid nothing will be kept: stop writing, keep validating.
        if (rejected === 0 || opts.skipInvalid) {
          summaries.add(m.summary);
          chunk += prefix + m.line + "\n";
          if (chunk.length >= COPY_CHUNK_BYTES) {
            const out = chunk;
            chunk = "";
            await sink.write(out);
            // The heap holds little (one chunk, caches, summary groups) but the garbage of 100k
            // rows accumulates between the collector's own runs: collect every 32 MB of COPY text.
            if ((bytesSinceCollect += out.length) >= GC_EVERY_BYTES) {
              bytesSinceCollect = 0;
              collectGarbageHint();
            }
          }
        }
      }
      if (!header) throw new FocusFileError("The file is empty (no header row).");
      if (rejected > 0 && !opts.skipInvalid) throw new FocusImportRejected(rejected, rejects);
      if (chunk) await sink.write(chunk);
      chunk = "";
      await sink.end();
    } catch (e) {
      await sink.abort(e);
      throw e;
    }
    opts.onProgress?.(rowsRead);

    // Replace what earlier imports loaded for the same (provider, billing account, month).
    const periodList = [...periods.values()];
    let replaced = 0;
    if (periodList.length) {
      const del = await queryRows<{ n: string }>(
        tx,
        `WITH d AS (
           DELETE FROM billing_line_items li USING json_to_recordset($2::json) AS p(provider text, billing_account_id text, month date)
           WHERE li.org_id = $1::uuid AND li.provider = p.provider AND li.billing_account_id = p.billing_account_id
             AND li.billing_period = p.month AND li.import_id IS DISTINCT FROM $3::uuid
           RETURNING 1)
         SELECT count(*) AS n FROM d`,
        [orgId, JSON.stringify(periodList), importId],
      );
      replaced = Number(del[0]?.n ?? 0);      await queryRows(
        tx,
        `INSERT INTO billing_periods (org_id, provider, month, status)
         SELECT DISTINCT $1::uuid, p.provider, p.month, 'open' FROM json_to_recordset($2::json) AS p(provider text, month date)
         ON CONFLICT (org_id, provider, month) DO NOTHING`,
        [orgId, JSON.stringify(periodList)],
      );
    }
    if (closedPeriods.size) {
      const list = [...closedPeriods].map((k) => {
        const [provider, month] = k.split("\u0000");
        return { provider, month };
      });
      await queryRows(
        tx,
        `UPDATE billing_periods bp SET status = 'closed', closed_at = COALESCE(bp.closed_at, $3::timestamptz)
         FROM json_to_recordset($2::json) AS p(provider text, month date)
         WHERE bp.org_id = $1::uuid AND bp.provider = p.provider AND bp.month = p.month AND bp.status = 'open'`,
        [orgId, JSON.stringify(list), (opts.now ?? new Date()).toISOString()],
      );
    }
    const accountList = [...accounts.values()];
    if (accountList.length) {
      await queryRows(
        tx,
        `INSERT INTO cloud_accounts (org_id, provider, account_id, name, billing_account_id, billing_account_name)
         SELECT $1::uuid, a.provider, a.account_id, a.name, a.billing_account_id, a.billing_account_name
         FROM json_to_recordset($2::json) AS a(provider text, account_id text, name text, billing_account_id text, billing_account_name text)
         ON CONFLICT (org_id, provider, account_id) DO UPDATE SET
           name = COALESCE(EXCLUDED.name, cloud_accounts.name),
           billing_account_id = COALESCE(EXCLUDED.billing_account_id, cloud_accounts.billing_account_id),
           billing_account_name = COALESCE(EXCLUDED.billing_account_name, cloud_accounts.billing_account_name)`,
        [orgId, JSON.stringify(accountList)],
      );
    }
    const commitmentsUpserted = commitmentIds.size
      ? await deriveCommitments(tx, orgId, [...commitmentIds].map((k) => {
          const [provider, id] = k.split("\u0000");
          return { provider: provider as Provider, id: id! };
        }))
      : 0;
    // Amounts past 15 integer digits cannot be added exactly in JS: PostgreSQL sums those periods.
    if (summaries.exact) await summaries.write(tx, orgId, periodList);
    else await rebuildBillingSummaries(tx, orgId, periodList);
    await queryRows(tx, `UPDATE billing_imports SET rows_imported = $2, rows_rejected = $3 WHERE id = $1::uuid`, [importId, imported, rejected]);
    // Statistics of what was written, committed with it: a planner that believes the month is
    // empty picks nested loops that re-read it per account (minutes instead of seconds).
    if (imported || replaced) {
      for (const target of [`billing_line_items (${ANALYZED_COLUMNS.join(", ")})`, "billing_cost_summaries", "commitment_usage_summaries"]) await queryRows(tx, `ANALYZE ${target}`);
    }
    return {
      import_id: importId,
      file_name: fileName,
      rows_read: rowsRead,
      rows_imported: imported,
      rows_rejected: rejected,
      rejects,
      periods: periodList,
      rows_replaced: replaced,
      accounts_discovered: accountList.length,
      commitments_upserted: commitmentsUpserted,
    };
  });
}

/** importFocus on a file path (`.csv` or `.csv.gz`). */
export function importFocusFile(db: Db, orgId: string, path: string, opts: ImportOptions = {}): Promise<ImportResult> {
  return importFocus(db, orgId, openFocusFile(path), { fileName: path.split(/[\\/]/).pop(), ...opts });
}

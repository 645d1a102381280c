/**
 * FOCUS 1.0–1.2 cost-and-usage ingestion: a streamed CSV (optionally gzip) → billing_line_items,
 * bulk-inserted in batches inside one transaction per file. Rows violating the spec are
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
import { CsvSyntaxError, readCsv } from "./csvReader.ts";

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
const canon = (v: string, values: string[]) => values.find((x) => x.toLowerCase() === v.toLowerCase());

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
  tsCache.set(v, r);
  return r;
}

const isNull = (v: string | undefined) => v === undefined || v === "" || (v.length === 4 && v.toLowerCase() === "null");
const COLUMN_LIST = Object.entries(COLUMNS);
/** Null per FOCUS exports: empty, the literal NULL (any case) or only blanks. */
function nullable(v: string | undefined): string | null {
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
  /** Rows per INSERT. */
  batchSize?: number;
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

interface Mapped {
  row: Record<string, unknown>;
  provider: Provider;
  month: string;
  billingPeriodClosed: boolean;
}

/** Maps and validates one record (header → value); returns errors when it violates the spec. */
/** Where each column is in this file's header (computed once per file). */
interface Layout {
  /** Field position of each COLUMN_LIST entry (-1: absent, then its default). */
  pos: number[];
  dflt: (string | undefined)[];
  /** NOT_NULL columns that are in the file (or defaulted): [name, position or -1, default]. */
  required: [string, number, string | undefined][];
  index: Map<string, number>;
  defaults: Record<string, string>;
  /** Columns kept in `extra` (x_ and other non-report columns). */
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
    extraCols: header.map((h, i) => [h, i] as [string, number]).filter(([h]) => !CANONICAL.has(h.toLowerCase())),
  };
}

export function mapRecord(fields: string[], layout: Layout): Mapped | { errors: string[] } {
  const errors: string[] = [];
  const get = (c: string): string | null => {
    const i = layout.index.get(c);
    return nullable(i !== undefined ? fields[i] : layout.defaults[c]);
  };
  for (const [c, i, d] of layout.required) {
    if (nullable(i >= 0 ? fields[i] : d) === null) errors.push(`${c} must not be null`);
  }
  const row: Record<string, unknown> = {};
  for (let k = 0; k < COLUMN_LIST.length; k++) {
    const [focus, { col, kind }] = COLUMN_LIST[k]!;
    const p = layout.pos[k]!;
    const v = nullable(p >= 0 ? fields[p] : layout.dflt[k]);
    if (v === null) {
      row[col] = null;
      continue;
    }
    if (kind === "num") {
      if (!NUMBER.test(v.trim())) errors.push(`${focus} is not a decimal number: ${JSON.stringify(v.slice(0, 40))}`);
      row[col] = v.trim();
    } else if (kind === "ts") {
      const d = isoTimestamp(v);
      if (!d) errors.push(`${focus} is not a date-time: ${JSON.stringify(v.slice(0, 40))}`);
      row[col] = d;
    } else if (kind === "json") {
      try {
        const parsed = JSON.parse(v);
        if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error();
        row[col] = v; // valid JSON object text: stored as is
      } catch {
        errors.push(`${focus} is not a JSON object`);
      }
    } else row[col] = v;
  }

  const providerRaw = get("ProviderName");
  const provider = providerRaw ? PROVIDER_NAMES[providerRaw.trim().toLowerCase()] : undefined;
  if (providerRaw && !provider) errors.push(`ProviderName ${JSON.stringify(providerRaw)} is not a supported provider (aws, azure, gcp)`);

  const bps = get("BillingPeriodStart");
  const bpStart = bps ? isoTimestamp(bps) : null;
  if (bps && !bpStart) errors.push(`BillingPeriodStart is not a date-time: ${JSON.stringify(bps.slice(0, 40))}`);
  const bpe = get("BillingPeriodEnd");
  if (bpe && !isoTimestamp(bpe)) errors.push(`BillingPeriodEnd is not a date-time: ${JSON.stringify(bpe.slice(0, 40))}`);

  const cat = row.charge_category as string | null;
  if (cat) {
    const c = canon(cat, CHARGE_CATEGORIES);
    if (!c) errors.push(`ChargeCategory ${JSON.stringify(cat)} is not one of ${CHARGE_CATEGORIES.join(", ")}`);
    else row.charge_category = c;
  }
  if (row.charge_frequency) {
    const f = canon(String(row.charge_frequency), FREQUENCIES);
    if (!f) errors.push(`ChargeFrequency ${JSON.stringify(row.charge_frequency)} is not one of ${FREQUENCIES.join(", ")}`);
    else row.charge_frequency = f;
  }
  if (row.pricing_category) row.pricing_category = canon(String(row.pricing_category), PRICING) ?? row.pricing_category;
  if (row.charge_class && String(row.charge_class).toLowerCase() === "correction") row.charge_class = "Correction";
  if (row.commitment_discount_category) {
    const c = canon(String(row.commitment_discount_category), ["Spend", "Usage"]);
    if (!c) errors.push(`CommitmentDiscountCategory ${JSON.stringify(row.commitment_discount_category)} is not Spend or Usage`);
    else row.commitment_discount_category = c;
  }
  const status = row.commitment_discount_status as string | null;
  if (status) {
    const s = canon(status, ["Used", "Unused"]);
    if (!s) errors.push(`CommitmentDiscountStatus ${JSON.stringify(status)} is not Used or Unused`);
    else row.commitment_discount_status = s;
    if (!row.commitment_discount_id) errors.push("CommitmentDiscountStatus is set but CommitmentDiscountId is null");
    if (row.charge_category && row.charge_category !== "Usage") errors.push("CommitmentDiscountStatus must be null unless ChargeCategory is Usage");
  } else if (row.commitment_discount_id && row.charge_category === "Usage") {
    errors.push("CommitmentDiscountStatus must not be null on a Usage row with a CommitmentDiscountId");
  }
  const s = row.charge_period_start as string | null;
  const e = row.charge_period_end as string | null;
  if (s && e && e < s) errors.push("ChargePeriodEnd is before ChargePeriodStart");

  if (errors.length) return { errors };

  // Instance type for plan-generation groups: SkuPriceDetails (FOCUS 1.1+) or an x_ column.
  let instanceType: string | null = get("x_InstanceType") ?? null;
  const details = get("SkuPriceDetails");
  let extra: Record<string, unknown> | null = null;
  if (details) {
    try {
      const d = JSON.parse(details);
      instanceType ??= d?.InstanceType ?? d?.x_InstanceType ?? null;
      (extra ??= {}).SkuPriceDetails = d;
    } catch {
      (extra ??= {}).SkuPriceDetails = details;
    }
  }
  for (const [k, i] of layout.extraCols) {
    const v = fields[i];
    if (!isNull(v)) (extra ??= {})[k] = v;
  }
  row.instance_type = instanceType;
  row.extra = extra;
  row.provider = provider;
  const month = `${bpStart!.slice(0, 7)}-01`;
  row.billing_period = month;
  row.billing_currency ??= "USD";
  return { row, provider: provider!, month, billingPeriodClosed: (get("BillingPeriodStatus") ?? "").toLowerCase() === "closed" };
}

const INSERT_COLUMNS: [string, string][] = [
  ["provider", "text"],
  ["billing_period", "date"],
  ["instance_type", "text"],
  ["extra", "jsonb"],
  ...Object.values(COLUMNS).map(({ col, kind }) => [col, kind === "num" ? "numeric" : kind === "ts" ? "timestamptz" : kind === "json" ? "jsonb" : "text"] as [string, string]),
];

/** COPY text-format cell: \N for null, backslash escapes for the separators. */
function copyCell(v: unknown): string {
  if (v === null || v === undefined) return "\\N";
  const s = typeof v === "string" ? v : JSON.stringify(v);
  return /[\\\t\n\r]/.test(s) ? s.replace(/\\/g, "\\\\").replace(/\t/g, "\\t").replace(/\n/g, "\\n").replace(/\r/g, "\\r") : s;
}

/**
 * Bulk-inserts a batch inside the caller's transaction with COPY FROM STDIN (postgres.js) or
 * COPY FROM '/dev/blob' (PGlite), reaching the driver client under drizzle's transaction;
 * falls back to one multi-row INSERT … SELECT FROM json_to_recordset.
 */
async function insertBatch(tx: any, orgId: string, importId: string, batch: Record<string, unknown>[]) {
  const cols = INSERT_COLUMNS.map(([c]) => c);
  const client = tx?.session?.client;
  const copySql = `COPY billing_line_items (org_id, import_id, ${cols.join(", ")}) FROM STDIN`;
  if (client && (typeof client.unsafe === "function" || typeof client.query === "function")) {
    let text = "";
    const prefix = `${orgId}\t${importId}\t`;
    for (const r of batch) text += prefix + cols.map((c) => copyCell(r[c])).join("\t") + "\n";
    if (typeof client.unsafe === "function") {
      const w = await client.unsafe(copySql).writable();
      await new Promise<void>((resolve, reject) => {
        w.once("error", reject);
        w.once("finish", resolve);
        w.end(text);
      });
    } else {
      await client.query(copySql.replace("FROM STDIN", "FROM '/dev/blob'"), [], { blob: new Blob([text]) });
    }
    return;
  }
  await queryRows(
    tx,
    `INSERT INTO billing_line_items (org_id, import_id, ${cols.join(", ")})
     SELECT $1::uuid, $2::uuid, ${cols.map((c) => `r.${c}`).join(", ")}
     FROM json_to_recordset($3::json) AS r(${INSERT_COLUMNS.map(([c, t]) => `${c} ${t}`).join(", ")})`,
    [orgId, importId, JSON.stringify(batch.map((r) => (typeof r.tags === "string" ? { ...r, tags: JSON.parse(r.tags) } : r)))],
  );
}

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
  const batchSize = opts.batchSize ?? 2000;
  const defaults = opts.defaults ?? {};
  const fileName = opts.fileName ?? "upload.csv";
  const progressEvery = opts.progressEvery ?? 50_000;

  return db.transaction(async (tx) => {
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
    let batch: Record<string, unknown>[] = [];

    // One batch is written while the next is parsed (the server works while JS parses);
    // a failed write surfaces at the next flush or at the end, and rolls everything back.
    let writing: Promise<void> = Promise.resolve();
    let writeError: unknown = null;
    const flush = async () => {
      await writing;
      if (writeError) throw writeError;
      if (!batch.length) return;
      if (rejected === 0 || opts.skipInvalid) {
        writing = insertBatch(tx, orgId, importId, batch).catch((e) => {
          writeError = e;
        });
      }
      batch = [];
    };

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
      const m = fields.length !== header.length ? { errors: [`has ${fields.length} fields, the header has ${header.length}`] } : mapRecord(fields, layout!);
      if ("errors" in m) {
        const rec: Record<string, string> = {};
        for (let i = 0; i < header.length; i++) rec[header[i]!] = fields[i] ?? "";
        rejected++;
        if (rejects.length < 1000) rejects.push({ line, errors: m.errors });
        await opts.onReject?.({ line, errors: m.errors, record: rec });
        continue;
      }
      const r = m.row;
      const pkey = `${m.provider}\u0000${r.billing_account_id}\u0000${m.month}`;
      if (!periods.has(pkey)) periods.set(pkey, { provider: m.provider, billing_account_id: String(r.billing_account_id), month: m.month });
      if (m.billingPeriodClosed) closedPeriods.add(`${m.provider}\u0000${m.month}`);
      const acct = (r.sub_account_id ?? r.billing_account_id) as string;
      const akey = `${m.provider}\u0000${acct}`;
      if (!accounts.has(akey))
        accounts.set(akey, {
          provider: m.provider,
          account_id: acct,
          name: (r.sub_account_id ? r.sub_account_name : r.billing_account_name) as string | null,
          billing_account_id: r.billing_account_id as string,
          billing_account_name: r.billing_account_name as string | null,
        });
      if (r.commitment_discount_id && commitmentIds.size < 100_000) commitmentIds.add(`${m.provider}\u0000${r.commitment_discount_id}`);
      imported++;
      batch.push(r);
      if (batch.length >= batchSize) await flush();
    }
    if (!header) throw new FocusFileError("The file is empty (no header row).");
    if (rejected > 0 && !opts.skipInvalid) throw new FocusImportRejected(rejected, rejects);
    await flush();
    await writing;
    if (writeError) throw writeError;
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
      replaced = Number(del[0]?.n ?? 0);
      await queryRows(
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
    await queryRows(tx, `UPDATE billing_imports SET rows_imported = $2, rows_rejected = $3 WHERE id = $1::uuid`, [importId, imported, rejected]);
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

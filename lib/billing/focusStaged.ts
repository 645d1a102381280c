/**
 * The FOCUS import with PostgreSQL doing the parsing: the file's bytes go unchanged into one
 * `COPY … FROM STDIN (FORMAT csv)` of a temporary table of text columns, then one set-based
 * `INSERT … SELECT` validates, normalizes and casts every row into billing_line_items, and one
 * aggregate pass finds the periods, accounts and commitments the file holds. The process only
 * moves bytes: this path costs about what PostgreSQL's own typed COPY of the rows costs
 * (docs/features/reports.md, "Import").
 *
 * It is an accelerator of the row-by-row path (focusRow.ts), not a second definition of FOCUS:
 * every SQL rule below is the JS rule or stricter. A file it cannot take whole — a row the JS
 * path would reject or normalize differently, a CSV dialect PostgreSQL reads otherwise (blank
 * lines, a ragged row, bad UTF-8) — makes a statement fail; the caller rolls back to its
 * savepoint and imports the file row by row, which reports each reject with its line.
 */
import type { Db, Tx } from "../db/index.ts";
import { randomBytes } from "node:crypto";
import { openCopyIn } from "../db/copyIn.ts";
import { queryRows, type Provider } from "./sql.ts";
import { MONEY } from "../db/schema/billing.ts";
import { CANONICAL, CHARGE_CATEGORIES, COLUMN_LIST, FREQUENCIES, INSERT_COLUMNS, isoTimestamp, NOT_NULL, nullable, PRICING, PROVIDER_NAMES, providerOf, type Kind } from "./focusRow.ts";
import type { DiscoveredAccount, ImportPeriod } from "./importState.ts";

/** What the staged path learned of the file (the same as FocusImportState's lists). */
export interface StagedImport {
  rowsRead: number;
  periods: ImportPeriod[];
  closedPeriods: { provider: string; month: string }[];
  accounts: DiscoveredAccount[];
  commitments: { provider: Provider; id: string }[];
}

/** What FieldScreen checks in a column's values (by the column's position in the header). */
export const ScreenKind = { None: 0, Number: 1, Timestamp: 2, Extra: 3 } as const;
export type ScreenKind = (typeof ScreenKind)[keyof typeof ScreenKind];
// The same as plain constants for the byte loop.
const NUMBER = 1;
const TIMESTAMP_COL = 2;
const EXTRA = 3;
/** "null" lower-cased, four bytes packed. */
const NULL_WORD = 0x6e756c6c;

/** The usual timestamp shape, byte by byte (0 stands for a digit). */
const TS_SHAPE = Buffer.from("0000-00-00T00:00:00Z").map((b) => (b === 48 ? 0 : b));

/**
 * Reads the file's bytes as they go to the server and tells which of the SQL's rules the file
 * needs, so the INSERT evaluates only those (each rule costs about a second per million rows).
 * Quotes are followed, so a comma inside a quoted value is not a delimiter; the first record
 * (the header) is not screened.
 * - `blankEdges`: some field value starts or ends with a byte up to a space (or holds another
 *   control character), so a value may be blank-only (focusRow's `nullable`). It errs on the
 *   careful side (a `""` after a blank counts as a closing quote).
 * - `nullWords`: some field is the word NULL in any case.
 * - `plainNumbers`: every value of a Number column holds only `0-9 . e E + -`: PostgreSQL's
 *   numeric reads all such text the row path reads, and fails on the rest (NaN, Infinity, hex,
 *   underscores and blanks, which it would take, hold other characters).
 * - `plainTimestamps`: every value of a Timestamp column has the usual shape with an hour up to
 *   23 and minutes and seconds up to 59 (PostgreSQL takes 24:00:00 and second 60; the row path does not).
 * - `escaped`: the Extra columns with a value holding a quote, a backslash or a control character.
 */
export class FieldScreen {
  blankEdges = false;
  nullWords = false;
  plainNumbers = true;
  plainTimestamps = true;
  readonly escaped = new Set<number>();
  private prev = 10;
  private inQuote = false;
  private opened = false;
  /** Content bytes of the current field, and the first four of them, lower-cased, packed. */
  private len = 0;
  private word = 0;
  /** Quote bytes of the current field (more than two: it holds an escaped quote). */
  private quotes = 0;
  private col = 0;
  private body = false;
  private kind = 0;
  /** In the bytes of the last push: the offset just past its last line end outside quotes (-1: none), where the file may be cut into chunks. */
  lastRecordEnd = -1;

  constructor(private readonly kinds: ArrayLike<ScreenKind> = []) {}

  /** What was found since the last take (or the start), and a fresh start for the findings. */
  takeFlags(): Screened {
    const found: Screened = { blankEdges: this.blankEdges, nullWords: this.nullWords, plainNumbers: this.plainNumbers, plainTimestamps: this.plainTimestamps, escaped: new Set(this.escaped) };
    this.blankEdges = false;
    this.nullWords = false;
    this.plainNumbers = true;
    this.plainTimestamps = true;
    this.escaped.clear();
    return found;
  }

  push(bytes: Uint8Array): void {
    let { prev, inQuote, opened, len, word, blankEdges, nullWords, quotes, col, body, kind, plainNumbers, plainTimestamps } = this;
    const kinds = this.kinds;
    let lastRecordEnd = -1;
    for (let i = 0; i < bytes.length; i++) {
      const c = bytes[i]!;
      // Most bytes: neither a blank, a quote nor a delimiter.
      if (c > 34 && c !== 44) {
        if (prev === 13) blankEdges = true;
        opened = false;
        if (kind !== 0) {
          if (kind === NUMBER) {
            if (!((c >= 48 && c <= 57) || c === 46 || c === 101 || c === 69 || c === 43 || c === 45)) plainNumbers = false;
          } else if (kind === TIMESTAMP_COL) {
            const shape = TS_SHAPE[len];
            if (shape === undefined || (shape === 0 ? c < 48 || c > 57 : c !== shape)) plainTimestamps = false;
            // Hour tens up to 2 (and 20–23), minute and second tens up to 5.
            else if ((len === 11 && c > 50) || (len === 12 && prev === 50 && c > 51) || ((len === 14 || len === 17) && c > 53)) plainTimestamps = false;
          } else if (c === 92) this.escaped.add(col);
        }
        if (len < 4) word = (word << 8) | c | 0x20;
        len++;
        prev = c;
        continue;
      }
      if (opened && c <= 32) blankEdges = true;
      opened = false;
      if (prev === 13 && c !== 10) blankEdges = true;
      if (c === 34) {
        inQuote = !inQuote;
        if (inQuote) opened = true;
        else if (prev <= 32) blankEdges = true;
        quotes++;
      } else if (!inQuote && (c === 44 || c === 10 || c === 13)) {
        if (prev === 32) blankEdges = true;
        if (len === 4 && word === NULL_WORD) nullWords = true;
        if (kind === TIMESTAMP_COL && len !== 0 && len !== 20) plainTimestamps = false;
        else if (kind === EXTRA && quotes > 2) this.escaped.add(col);
        len = 0;
        word = 0;
        quotes = 0;
        if (c === 44) col++;
        else {
          col = 0;
          body = true;
          if (c === 10) lastRecordEnd = i + 1;
        }
        kind = body ? kinds[col] ?? 0 : 0;
      } else {
        // A blank, a control character, or a comma or line end inside quotes.
        if (c !== 10 && c !== 13 && c !== 32 && c !== 44) blankEdges = true;
        else if (c === 32 && !inQuote && (prev === 44 || prev === 10 || prev === 13)) blankEdges = true;
        if (kind === NUMBER) plainNumbers = false;
        else if (kind === TIMESTAMP_COL) plainTimestamps = false;
        else if (kind === EXTRA && c < 32) this.escaped.add(col);
        if (len < 4) word = (word << 8) | c | 0x20;
        len++;
      }
      prev = c;
    }
    Object.assign(this, { prev, inQuote, opened, len, word, blankEdges, nullWords, quotes, col, body, kind, plainNumbers, plainTimestamps, lastRecordEnd });
  }

  /** The file ended (its last field may have no line end). */
  end(): void {
    if (this.len === 4 && this.word === NULL_WORD) this.nullWords = true;
    if (this.prev === 32) this.blankEdges = true;
    if (this.kind === TIMESTAMP_COL && this.len !== 0 && this.len !== 20) this.plainTimestamps = false;
    if (this.kind === EXTRA && this.quotes > 2) this.escaped.add(this.col);
  }
}

/** What the screen found, as stagedRowsSql takes it (absent: every rule applies). */
export interface Screened {
  blankEdges: boolean;
  nullWords: boolean;
  plainNumbers?: boolean;
  plainTimestamps?: boolean;
  /** Extra columns (by header position) whose values need JSON escapes; absent: all of them. */
  escaped?: ReadonlySet<number>;
}

/** A file the staged path leaves to the row-by-row import (decided from its header). */
export function stagedImportApplies(header: string[]): boolean {
  const extra = header.filter((h) => !CANONICAL.has(h.toLowerCase()));
  // Duplicate names: the row path keeps the last non-null value of a key. concat_ws takes at most 99 pairs.
  return new Set(header).size === header.length && extra.length <= 90;
}

const lit = (v: string | undefined) => (v === undefined ? "NULL::text" : `'${v.replace(/'/g, "''")}'::text`);
const ident = (i: number) => `c${i}`;

/** JS `String.prototype.trim`'s whitespace, as a regex bracket (FOCUS nulls may be only blanks). */
const JS_SPACE = "[\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]";
/**
 * focusRow's `nullable`: empty, the literal NULL (any case) or only blanks — the last only when
 * the first or last character is at most a space. A value made of blanks starts with a byte
 * below '!' or above '~' (JS's other blanks are not ASCII): two byte comparisons keep the
 * common value off the regex.
 */
const nz = (x: string) =>
  `CASE WHEN ${x} = '' OR (octet_length(${x}) = 4 AND lower(${x}) = 'null') THEN NULL WHEN (${x} COLLATE "C" < '!' OR ${x} COLLATE "C" > '~') AND (ascii(${x}) <= 32 OR ascii(right(${x}, 1)) <= 32) AND ${x} ~ '^${JS_SPACE}*$' THEN NULL ELSE ${x} END`;
/** focusRow's `isNull` (blanks are a value there). */
const isNullRaw = (x: string) => `(${x} IS NULL OR ${x} = '' OR (octet_length(${x}) = 4 AND lower(${x}) = 'null'))`;

/**
 * Text that fails to cast whenever `x` is not null: the statement stops with a data exception
 * (22P02), the caller's signal to go row by row. (A suffix is not enough: the timestamp parser
 * skips a trailing '?'.)
 */
const fail = (x: string) => `((('rejected ' || (${x}))::int)::text)`;
/**
 * Decimals: PostgreSQL's numeric reads every decimal the row path takes, and of what it reads
 * besides, only what holds no other character than these (NaN, Infinity, 1_000, 0x1F hold others).
 * Blanks around the number are left to the row path.
 */
const num = (x: string, plain: boolean) =>
  plain ? `${x}::${DECIMAL}` : `CASE WHEN translate(${x}, '0123456789.eE+-', '') = '' THEN ${x}::${DECIMAL} ELSE ${fail(x)}::${DECIMAL} END`;
/** billing_line_items' type of amounts: cast to it at once, not to numeric and then again on insert. */
const DECIMAL = `numeric(${MONEY.precision},${MONEY.scale})`;
/** Millisecond precision at most: the row path keeps a JS Date's. Hours 0–23, seconds 0–59 as it does. */
const TIMESTAMP = "^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\\.[0-9]{1,3})?)?)?(Z|[+-][0-9]{2}:?[0-9]{2})?$";
/** The usual shape (2026-10-01T00:00:00Z) by LIKE, which costs a fraction of the regex; PostgreSQL rejects other characters in it itself. */
const ts = (x: string, plain: boolean) =>
  plain ? `${x}::timestamptz` : `CASE WHEN ${x} LIKE '____-__-__T__:__:__Z' AND ${x} NOT LIKE '%T24:%' AND ${x} NOT LIKE '%:60Z' THEN ${x}::timestamptz WHEN ${x} ~ '${TIMESTAMP}' THEN ${x}::timestamptz ELSE ${fail(x)}::timestamptz END`;
/** The canonical spelling of an enumerated value (exact first, then case-insensitive), else NULL. */
const canonical = (x: string, values: string[]) =>
  `CASE ${x} ${values.map((v) => `WHEN '${v}' THEN '${v}'`).join(" ")} ELSE CASE lower(${x}) ${values.map((v) => `WHEN '${v.toLowerCase()}' THEN '${v}'`).join(" ")} END END`;

/** A FOCUS column's staging column by name (its first one), and its raw value in SQL: the staged cell, or the default's literal. */
function stagedColumns(header: string[], defaults: Record<string, string>) {
  const index = new Map<string, number>();
  header.forEach((h, i) => index.has(h) || index.set(h, i));
  const raw = (c: string) => (index.has(c) ? `s.${ident(index.get(c)!)}` : lit(defaults[c]));
  return { index, raw };
}

const PROVIDERS = [...PROVIDER_NAMES];
/** billing_line_items column → its FOCUS column and kind. */
const FOCUS_OF: Record<string, string> = Object.fromEntries(COLUMN_LIST.map(([focus, { col }]) => [col, focus]));
const KINDS: Record<string, Kind> = Object.fromEntries(COLUMN_LIST.map(([, { col, kind }]) => [col, kind]));
/** FOCUS column → its kind, the billing period's bounds included. */
const FOCUS_KIND: Record<string, Kind> = { ...Object.fromEntries(COLUMN_LIST.map(([focus, { kind }]) => [focus, kind])), BillingPeriodStart: "ts", BillingPeriodEnd: "ts" };

/** What the screen checks in each column of the file. */
function screenKinds(header: string[]): ScreenKind[] {
  return header.map((h) => {
    if (!CANONICAL.has(h.toLowerCase())) return ScreenKind.Extra;
    const kind = FOCUS_KIND[h];
    return kind === "num" ? ScreenKind.Number : kind === "ts" ? ScreenKind.Timestamp : ScreenKind.None;
  });
}

/**
 * The SELECT turning a staging row into the COPY columns of billing_line_items (org_id,
 * import_id, INSERT_COLUMNS) plus what the import tracks, with every rule of encodeFocusRow as
 * a guard whose failure is a data exception.
 */
export function stagedRowsSql(header: string[], defaults: Record<string, string>, screen: Screened = { blankEdges: true, nullWords: true }, table = "focus_staging"): string {
  const plainNumbers = !!screen.plainNumbers;
  const plainTimestamps = !!screen.plainTimestamps;
  const { index, raw } = stagedColumns(header, defaults);
  const present = (c: string) => index.has(c) || defaults[c] !== undefined;
  // Only the rules the file's bytes may need (FieldScreen): '' always, NULL spelled out, blank-only values.
  const cellNull = (x: string) =>
    screen.blankEdges ? nz(x) : screen.nullWords ? `CASE WHEN octet_length(${x}) = 4 AND lower(${x}) = 'null' THEN NULL ELSE NULLIF(${x}, '') END` : `NULLIF(${x}, '')`;
  const norm = (c: string) => (index.has(c) || defaults[c] !== undefined ? cellNull(raw(c)) : "NULL::text");

  // Stage 1: every cell normalized once (an OFFSET 0 subquery is evaluated once per row, not per reference).
  const focusCols = INSERT_COLUMNS.slice(4);
  const n: string[] = [];
  for (const col of focusCols) {
    const focus = FOCUS_OF[col]!;
    n.push(`${norm(focus)} AS ${col}`);
  }
  n.push(`${norm("ProviderName")} AS provider_raw`, `${norm("BillingPeriodStart")} AS bps_raw`, `${norm("BillingPeriodEnd")} AS bpe_raw`);
  n.push(`${norm("BillingPeriodStatus")} AS period_status`, `${norm("SkuPriceDetails")} AS details_raw`, `${norm("x_InstanceType")} AS x_instance_type`);
  n.push(index.has("InvoiceId") ? `NOT ${isNullRaw(raw("InvoiceId"))} AS invoiced` : `NULL::boolean AS invoiced`);
  const extraCols = header.map((h, i) => [h, i] as const).filter(([h]) => !CANONICAL.has(h.toLowerCase()));
  // `extra` is built as JSON text and parsed once, as the row path's COPY has it parsed (one jsonb_build_object per cell cost 4× that).
  // A value with nothing to escape is its own JSON string between quotes (to_json costs 0.1 s per column and million rows).
  const jsonString = (k: number) => (screen.escaped && !screen.escaped.has(k) ? `'"' || s.${ident(k)} || '"'` : `to_json(s.${ident(k)})::text`);
  const pairs = extraCols.map(([h, k]) => `CASE WHEN ${isNullRaw(`s.${ident(k)}`)} THEN NULL ELSE ${lit(JSON.stringify(h) + ":")} || ${jsonString(k)} END`);
  n.push(`${pairs.length ? `NULLIF(concat_ws(',', ${pairs.join(", ")}), '')` : "NULL::text"} AS extra_cols`);

  // Stage 2: typed, canonical values.
  const t: string[] = [];
  for (const col of focusCols) {
    const kind = KINDS[col] ?? "text";
    const x = `v.${col}`;
    if (kind === "num") t.push(`${num(x, plainNumbers)} AS ${col}`);
    else if (kind === "ts") t.push(`${ts(x, plainTimestamps)} AS ${col}`);
    else if (kind === "json") t.push(`${x}::jsonb AS ${col}`);
    else if (col === "charge_category") t.push(`${canonical(x, CHARGE_CATEGORIES)} AS ${col}`);
    else if (col === "charge_frequency") t.push(`${canonical(x, FREQUENCIES)} AS ${col}`);
    else if (col === "pricing_category") t.push(`COALESCE(${canonical(x, PRICING)}, ${x}) AS ${col}`);
    else if (col === "charge_class") t.push(`CASE WHEN lower(${x}) = 'correction' THEN 'Correction' ELSE ${x} END AS ${col}`);
    else if (col === "commitment_discount_category") t.push(`${canonical(x, ["Spend", "Usage"])} AS ${col}`);
    else if (col === "commitment_discount_status") t.push(`${canonical(x, ["Used", "Unused"])} AS ${col}`);
    else if (col === "billing_currency") t.push(`COALESCE(${x}, 'USD') AS ${col}`);
    else t.push(`${x} AS ${col}`);
  }
  t.push(`CASE lower(btrim(v.provider_raw)) ${PROVIDERS.map(([k, p]) => `WHEN '${k.replace(/'/g, "''")}' THEN '${p}'`).join(" ")} END AS provider`);
  t.push(`${ts("v.bps_raw", plainTimestamps)} AS bps`, `${ts("v.bpe_raw", plainTimestamps)} AS bpe`);
  // SkuPriceDetails: JSON kept as JSON; text that cannot start a JSON value kept as a JSON string; anything else is left to the row path.
  t.push(
    `('{' || NULLIF(concat_ws(',', CASE WHEN v.details_raw IS NULL THEN NULL WHEN left(v.details_raw, 1) = '{' THEN '"SkuPriceDetails":' || v.details_raw
       WHEN left(v.details_raw, 1) !~ '[][{"0-9tfn\\s-]' THEN '"SkuPriceDetails":' || to_json(v.details_raw)::text ELSE ${fail("v.details_raw")} END, v.extra_cols), '') || '}')::jsonb AS extra`,
  );
  t.push("v.x_instance_type", "v.period_status", "v.invoiced", "v.provider_raw", "v.bpe_raw", "v.tags AS tags_raw");
  t.push(...["charge_category", "charge_frequency", "commitment_discount_category", "commitment_discount_status"].map((c) => `v.${c} AS ${c}_raw`));

  // Stage 3: the row rules (a failed guard is a failing cast), and the derived columns.
  const guards: string[] = [];
  for (const c of NOT_NULL) {
    if (!present(c)) continue;
    const col = c === "ProviderName" ? "provider_raw" : c === "BillingPeriodStart" ? "bps" : c === "BillingPeriodEnd" ? "bpe" : COLUMN_LIST.find(([f]) => f === c)![1].col;
    guards.push(`t.${col} IS NOT NULL`);
  }
  guards.push("(t.provider_raw IS NULL OR t.provider IS NOT NULL)");
  guards.push("(t.tags IS NULL OR jsonb_typeof(t.tags) = 'object')");
  for (const c of ["charge_category", "charge_frequency", "commitment_discount_category", "commitment_discount_status"]) guards.push(`(t.${c}_raw IS NULL OR t.${c} IS NOT NULL)`);
  guards.push("(t.commitment_discount_status IS NULL OR (t.commitment_discount_id IS NOT NULL AND (t.charge_category IS NULL OR t.charge_category = 'Usage')))");
  guards.push("(t.commitment_discount_status IS NOT NULL OR t.commitment_discount_id IS NULL OR t.charge_category IS DISTINCT FROM 'Usage')");
  guards.push("(t.charge_period_end IS NULL OR t.charge_period_start IS NULL OR t.charge_period_end >= t.charge_period_start)");
  // The instance type of SkuPriceDetails: only a string (or absent / JSON null) is taken here.
  const details = "(t.extra -> 'SkuPriceDetails')";
  const member = (k: string) => `CASE jsonb_typeof(${details} -> '${k}') WHEN 'string' THEN ${details} ->> '${k}' WHEN 'null' THEN NULL WHEN NULL THEN NULL ELSE ${fail(`${details} ->> '${k}'`)}::int::text END`;
  const instanceType = `COALESCE(t.x_instance_type, ${member("InstanceType")}, ${member("x_InstanceType")})`;
  // The failing cast must name a column: a constant one is folded (and fails) when the statement is planned.
  const guarded = `CASE WHEN ${guards.join(" AND ")} THEN t.provider ELSE ${fail("COALESCE(t.provider_raw, 'row')")}::int::text END`;
  return `SELECT ${guarded} AS provider,
      (date_trunc('month', t.bps AT TIME ZONE 'UTC'))::date AS billing_period,
      ${instanceType} AS instance_type, t.extra,
      ${focusCols.map((c) => `t.${c}`).join(", ")},
      t.period_status, t.invoiced
    FROM (SELECT ${t.join(",\n      ")} FROM (SELECT ${n.join(",\n        ")} FROM ${table} s OFFSET 0) v OFFSET 0) t`;
}

/** Where and how the file is staged (absent: in one temporary table of the import's own session). */
export interface StagingOptions {
  /**
   * The pool: the file is cut into chunks at line ends, each staged into a table of its own by
   * another session and committed, while the import's transaction inserts the chunk before: two
   * server processes at work instead of one (PostgreSQL's COPY parse overlaps the INSERT's casts).
   */
  pool?: Db;
  /** Bytes per chunk (STAGING_CHUNK_BYTES). */
  chunkBytes?: number;
  /** The staging tables created: the caller drops them once the import's transaction is over (it holds their locks until then). */
  created?: string[];
}

/** 64 MB: about 100,000 FOCUS rows, a second of COPY; a chunk's INSERT starts once it is staged. */
const STAGING_CHUNK_BYTES = 64 << 20;
/** Chunks staged ahead of the INSERTs at most (the disk they hold is bounded so). */
const STAGED_AHEAD = 4;
/** Names of the pipelined staging tables: the prefix, the Unix time of their import, a random tag, the chunk. */
export const STAGING_TABLE_PREFIX = "focus_stage_";

/**
 * Imports the file's bytes through staging tables, inside the caller's transaction (which holds a
 * savepoint to return to when this throws a data exception). `bytes` is the file from its first
 * byte (header included).
 */
export async function importStaged(
  tx: Tx,
  orgId: string,
  importId: string,
  header: string[],
  defaults: Record<string, string>,
  bytes: AsyncIterable<Uint8Array>,
  opts: StagingOptions = {},
): Promise<StagedImport> {
  await queryRows(tx, `SET LOCAL TimeZone = 'UTC'`);
  const columns = header.map((_, i) => `${ident(i)} text`).join(", ");
  const chunker = new Chunker(bytes, new FieldScreen(screenKinds(header)), opts.pool ? opts.chunkBytes ?? STAGING_CHUNK_BYTES : Infinity);
  const insert = (table: string, flags: Screened) =>
    queryRows(
      tx,
      `INSERT INTO billing_line_items (org_id, import_id, ${INSERT_COLUMNS.join(", ")})
       SELECT $1::uuid, $2::uuid, ${INSERT_COLUMNS.map((c) => `r.${c}`).join(", ")} FROM (${stagedRowsSql(header, defaults, withDefaults(flags, defaults), table)}) r`,
      [orgId, importId],
    );
  const pool = opts.pool;
  if (!pool) {
    await queryRows(tx, `CREATE TEMP TABLE focus_staging (${columns}) ON COMMIT DROP`);
    await copyPieces(tx, "focus_staging", true, chunker.pieces());
    await insert("focus_staging", chunker.flags);
    // What the import tracks: the distinct raw values of a few columns (one pass), read by the row path's own rules.
    return trackedLists(await queryRows<TrackedGroup>(tx, trackingSql(header, defaults, "focus_staging")));
  }

  const stamp = `${Math.floor(Date.now() / 1000)}_${randomBytes(4).toString("hex")}`;
  const ready = new Handoff<{ table: string; flags: Screened; groups: TrackedGroup[] }>();
  let stop = false;
  const staging = (async () => {
    for (let k = 0; !stop && (k === 0 || (await chunker.more())); k++) {
      await ready.room(STAGED_AHEAD);
      const table = `${STAGING_TABLE_PREFIX}${stamp}_${k}`;
      opts.created?.push(table);
      const groups = await pool.transaction(async (st) => {
        await queryRows(st, `SET LOCAL statement_timeout = 0`);
        await queryRows(st, `SET LOCAL work_mem = '64MB'`);
        await queryRows(st, `CREATE UNLOGGED TABLE ${table} (${columns})`);
        await copyPieces(st, table, k === 0, chunker.pieces());
        // The chunk's tracked values, read here: off the INSERTs' session.
        return queryRows<TrackedGroup>(st, trackingSql(header, defaults, table));
      });
      ready.push({ table, flags: chunker.flags, groups: groups.map((g) => ({ ...g, chunk: k })) });
    }
  })().then(
    () => ready.close(),
    (e) => ready.fail(e),
  );
  const groups: TrackedGroup[] = [];
  try {
    for (let c = await ready.next(); c; c = await ready.next()) {
      await insert(c.table, c.flags);
      groups.push(...c.groups);
    }
  } finally {
    stop = true;
    ready.close();
    await staging;
  }
  return trackedLists(groups);
}

/** The screen's findings with the defaults' values (cells of every row too) taken in. */
function withDefaults(flags: Screened, defaults: Record<string, string>): Screened {
  const values = Object.values(defaults);
  const kinds = Object.entries(defaults).map(([c, v]) => [FOCUS_KIND[c], v] as const);
  return {
    blankEdges: flags.blankEdges || values.some((v) => /^[\x00-\x20]|[\x00-\x20]$/.test(v)),
    nullWords: flags.nullWords || values.some((v) => v.toLowerCase() === "null"),
    plainNumbers: !!flags.plainNumbers && kinds.every(([k, v]) => k !== "num" || /^[0-9.eE+-]*$/.test(v)),
    plainTimestamps: !!flags.plainTimestamps && kinds.every(([k, v]) => k !== "ts" || v === "" || /^\d{4}-\d\d-\d\dT([01]\d|2[0-3]):[0-5]\d:[0-5]\dZ$/.test(v)),
    escaped: flags.escaped,
  };
}

/** `COPY … FROM STDIN (FORMAT csv)` of the pieces into `table`, in the session's transaction. */
async function copyPieces(session: Tx, table: string, header: boolean, pieces: AsyncIterable<Uint8Array>): Promise<void> {
  const sink = openCopyIn(session, `COPY ${table} FROM STDIN WITH (FORMAT csv, HEADER ${header})`);
  try {
    for await (const piece of pieces) await sink.writeBytes!(piece);
    await sink.end();
  } catch (e) {
    await sink.abort(e);
    throw e;
  }
}

const CLEAN: Screened = { blankEdges: false, nullWords: false, plainNumbers: true, plainTimestamps: true, escaped: new Set() };

/** Both findings at once: any careful rule either needs. */
function eitherScreened(a: Screened, b: Screened): Screened {
  return {
    blankEdges: a.blankEdges || b.blankEdges,
    nullWords: a.nullWords || b.nullWords,
    plainNumbers: !!a.plainNumbers && !!b.plainNumbers,
    plainTimestamps: !!a.plainTimestamps && !!b.plainTimestamps,
    escaped: new Set([...(a.escaped ?? []), ...(b.escaped ?? [])]),
  };
}

/**
 * The file's bytes as chunks of whole records: `pieces()` gives the next chunk's bytes (ending at
 * a line end outside quotes once `limit` bytes are reached), screened on the way; `flags` is then
 * what the screen found in it. The screen's findings are taken at each cut, so a chunk's are those
 * of the buffers it spans (the buffer cut in two counts for both chunks: careful, never wrong).
 */
class Chunker {
  private readonly it: AsyncIterator<Uint8Array>;
  /** Bytes read but not yet given: a cut buffer's tail (screened with the buffer), buffers read ahead or larger than a chunk. */
  private readonly pending: { bytes: Uint8Array; screened: boolean }[] = [];
  private ended = false;
  private lastTake: Screened = CLEAN;
  /** What the screen found in the chunk whose pieces were read last. */
  flags: Screened = CLEAN;

  constructor(source: AsyncIterable<Uint8Array>, private readonly screen: FieldScreen, private readonly limit: number) {
    this.it = source[Symbol.asyncIterator]();
  }

  /** Whether bytes are left for another chunk (reads ahead one buffer to know). */
  async more(): Promise<boolean> {
    if (this.pending.length) return true;
    const next = await this.read();
    // read() queued the rest of a buffer larger than a chunk: its first part goes before them.
    if (next) this.pending.unshift({ bytes: next, screened: false });
    return next !== null;
  }

  async *pieces(): AsyncGenerator<Uint8Array> {
    let size = 0;
    for (;;) {
      const queued = this.pending.shift();
      const buf = queued?.bytes ?? (await this.read());
      if (!buf) break;
      if (!queued?.screened) this.screen.push(buf);
      const cut = queued?.screened ? -1 : this.screen.lastRecordEnd;
      if (size + buf.length >= this.limit && cut > 0) {
        this.takeFlags();
        if (cut < buf.length) this.pending.unshift({ bytes: buf.subarray(cut), screened: true });
        yield buf.subarray(0, cut);
        return;
      }
      size += buf.length;
      yield buf;
    }
    this.takeFlags();
  }

  /** The next buffer of the file, in parts of at most one chunk; null at its end (then the screen is told). */
  private async read(): Promise<Uint8Array | null> {
    if (this.ended) return null;
    const r = await this.it.next();
    if (r.done) {
      this.ended = true;
      this.screen.end();
      return null;
    }
    const buf = r.value;
    if (buf.length <= this.limit) return buf;
    for (let at = this.limit; at < buf.length; at += this.limit) this.pending.push({ bytes: buf.subarray(at, Math.min(at + this.limit, buf.length)), screened: false });
    return buf.subarray(0, this.limit);
  }

  private takeFlags(): void {
    const take = this.screen.takeFlags();
    this.flags = eitherScreened(this.lastTake, take);
    this.lastTake = take;
  }
}

/** Staged chunks handed from the staging session to the INSERTs, in order. */
class Handoff<T> {
  private readonly items: T[] = [];
  private closed = false;
  private failure: { error: unknown } | null = null;
  /** The consumer waiting for an item, the producer waiting for room. */
  private itemWaiter: (() => void) | null = null;
  private roomWaiter: (() => void) | null = null;

  push(item: T): void {
    this.items.push(item);
    this.wakeConsumer();
  }
  close(): void {
    this.closed = true;
    this.wakeConsumer();
    this.wakeProducer();
  }
  fail(error: unknown): void {
    this.failure = { error };
    this.wakeConsumer();
  }
  /** The next item; null once closed; throws the producer's failure. */
  async next(): Promise<T | null> {
    for (;;) {
      if (this.failure) throw this.failure.error;
      if (this.items.length) {
        const item = this.items.shift()!;
        this.wakeProducer();
        return item;
      }
      if (this.closed) return null;
      await new Promise<void>((r) => (this.itemWaiter = r));
    }
  }
  /** Waits until fewer than `ahead` items wait (or the consumer is gone). */
  async room(ahead: number): Promise<void> {
    while (this.items.length >= ahead && !this.closed) await new Promise<void>((r) => (this.roomWaiter = r));
  }
  private wakeConsumer(): void {
    const w = this.itemWaiter;
    this.itemWaiter = null;
    w?.();
  }
  private wakeProducer(): void {
    const w = this.roomWaiter;
    this.roomWaiter = null;
    w?.();
  }
}

/**
 * Drops the pipelined staging tables of imports that ended without doing it themselves (a
 * process killed mid-import): those whose name is older than `maxAgeSeconds`.
 */
export async function dropStaleStagingTables(db: Db, now: Date, maxAgeSeconds = 6 * 3600): Promise<number> {
  const rows = await queryRows<{ name: string }>(
    db,
    `SELECT c.relname AS name FROM pg_class c WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace AND c.relname LIKE $1`,
    [`${STAGING_TABLE_PREFIX.replace(/_/g, "\\_")}%`],
  );
  const stale = rows.map((r) => r.name).filter((n) => {
    const t = Number(n.slice(STAGING_TABLE_PREFIX.length).split("_")[0]);
    return Number.isFinite(t) && t < now.getTime() / 1000 - maxAgeSeconds;
  });
  if (stale.length) await queryRows(db, `DROP TABLE IF EXISTS ${stale.map((n) => `"${n}"`).join(", ")}`);
  return stale.length;
}

/** Drops the staging tables an import created (after its transaction). */
export async function dropStagingTables(db: Db, tables: string[]): Promise<void> {
  if (tables.length) await queryRows(db, `DROP TABLE IF EXISTS ${tables.map((n) => `"${n}"`).join(", ")}`);
}

/** Commitment ids the inventory step takes from one file (FocusImportState's bound). */
const MAX_COMMITMENT_IDS = 100_000;

/** One group of raw values: which set it belongs to, the values (null when not in the set), its first row and row count. */
interface TrackedGroup {
  g: "period" | "account" | "commitment" | "month";
  provider: string | null;
  billing_account_id: string | null;
  billing_account_name: string | null;
  sub_account_id: string | null;
  sub_account_name: string | null;
  billing_period_start: string | null;
  commitment_id: string | null;
  period_status: string | null;
  invoiced: boolean | null;
  n: string;
  /** Position of the group's first row in its chunk (block × 2^16 + offset of its first tuple). */
  first: number;
  /** The chunk it was found in (0 when the file was staged whole). */
  chunk?: number;
}

/** The periods, accounts, commitments and closed months of the file, as the row path finds them (first seen first). */
function trackedLists(groups: TrackedGroup[]): StagedImport {
  const by = (g: TrackedGroup["g"]) => groups.filter((r) => r.g === g).sort((a, b) => (a.chunk ?? 0) - (b.chunk ?? 0) || a.first - b.first);
  const providerOfRaw = (v: string | null) => {
    const p = nullable(v ?? undefined);
    return p ? providerOf(p) ?? null : null;
  };
  const monthOf = (v: string | null) => `${isoTimestamp(nullable(v ?? undefined)!)!.slice(0, 7)}-01`;
  const periods = new Map<string, ImportPeriod>();
  let rowsRead = 0;
  for (const r of by("period")) {
    rowsRead += Number(r.n);
    const provider = providerOfRaw(r.provider)!;
    const p = { provider, billing_account_id: nullable(r.billing_account_id ?? undefined)!, month: monthOf(r.billing_period_start) };
    const key = `${p.provider}\u0000${p.billing_account_id}\u0000${p.month}`;
    if (!periods.has(key)) periods.set(key, p);
  }
  const accounts = new Map<string, DiscoveredAccount>();
  for (const r of by("account")) {
    const provider = providerOfRaw(r.provider)!;
    const sub = nullable(r.sub_account_id ?? undefined);
    const billingAccountId = nullable(r.billing_account_id ?? undefined)!;
    const billingAccountName = nullable(r.billing_account_name ?? undefined);
    const account = { provider, account_id: sub ?? billingAccountId, name: sub ? nullable(r.sub_account_name ?? undefined) : billingAccountName, billing_account_id: billingAccountId, billing_account_name: billingAccountName };
    const key = `${provider}\u0000${account.account_id}`;
    if (!accounts.has(key)) accounts.set(key, account);
  }
  const commitments = new Map<string, { provider: Provider; id: string }>();
  for (const r of by("commitment")) {
    const id = nullable(r.commitment_id ?? undefined);
    const provider = providerOfRaw(r.provider)!;
    if (id && commitments.size < MAX_COMMITMENT_IDS && !commitments.has(`${provider}\u0000${id}`)) commitments.set(`${provider}\u0000${id}`, { provider, id });
  }
  // A (provider, month) closes on a "closed" status, or when every row of it carries an InvoiceId.
  const closed = new Set<string>();
  const invoiced = new Map<string, boolean>();
  for (const r of by("month")) {
    const key = `${providerOfRaw(r.provider)}\u0000${monthOf(r.billing_period_start)}`;
    if (nullable(r.period_status ?? undefined)?.toLowerCase() === "closed") closed.add(key);
    if (r.invoiced !== null) invoiced.set(key, (invoiced.get(key) ?? true) && r.invoiced);
  }
  for (const [k, all] of invoiced) if (all) closed.add(k);
  return {
    rowsRead,
    periods: [...periods.values()],
    closedPeriods: [...closed].map((k) => {
      const [provider, month] = k.split("\u0000");
      return { provider: provider!, month: month! };
    }),
    accounts: [...accounts.values()],
    commitments: [...commitments.values()],
  };
}

/** The distinct raw values the tracking needs, as grouping sets of one scan of the staged rows. */
function trackingSql(header: string[], defaults: Record<string, string>, table: string): string {
  const { index, raw } = stagedColumns(header, defaults);
  const invoiced = index.has("InvoiceId") ? `NOT ${isNullRaw(raw("InvoiceId"))}` : "NULL::boolean";
  const cols = {
    provider: raw("ProviderName"),
    billing_account_id: raw("BillingAccountId"),
    billing_account_name: raw("BillingAccountName"),
    sub_account_id: raw("SubAccountId"),
    sub_account_name: raw("SubAccountName"),
    billing_period_start: raw("BillingPeriodStart"),
    commitment_id: raw("CommitmentDiscountId"),
    period_status: raw("BillingPeriodStatus"),
    invoiced,
  };
  return `SELECT CASE WHEN GROUPING(x.sub_account_id) = 0 THEN 'account' WHEN GROUPING(x.commitment_id) = 0 THEN 'commitment'
         WHEN GROUPING(x.billing_account_id) = 0 THEN 'period' ELSE 'month' END AS g,
       ${Object.keys(cols).map((c) => `x.${c}`).join(", ")}, count(*) AS n,
       ((min(x.ctid)::text::point)[0] * 65536 + (min(x.ctid)::text::point)[1])::float8 AS first
     FROM (SELECT s.ctid, ${Object.entries(cols).map(([c, e]) => `${e} AS ${c}`).join(", ")} FROM ${table} s) x
     GROUP BY x.provider, GROUPING SETS (
       (x.billing_account_id, x.billing_period_start),
       (x.billing_account_id, x.billing_account_name, x.sub_account_id, x.sub_account_name),
       (x.commitment_id),
       (x.billing_period_start, x.period_status, x.invoiced))`;
}

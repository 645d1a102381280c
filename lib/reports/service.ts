/**
 * Allocation reports for the HTTP API, the CLI and the MCP tools: the org's catalog (minus
 * hidden reports), query-parameter validation, available periods, and the rows of one month
 * streamed batch by batch from a database cursor (live billing data for open periods, the
 * frozen snapshot for closed ones) into JSON or CSV.
 */
import { collectGarbageHint } from "../adapters/gc.ts";
import type { DatabaseHandle, DbOrTx } from "../db/index.ts";
import { BadRequestError, NotFoundError } from "../errors.ts";
import { PROVIDERS, monthStart, queryRows, type Provider } from "../billing/sql.ts";
import { REPORTS, descriptorOf, findReport, reportSqlOf, type ReportDefinition } from "./catalog.ts";
import { rowSetState, storeRowSet, storedRowsSql, summaryDetailOf } from "./rowCache.ts";
import { listBillingPeriods } from "./periods.ts";
import { ClientGoneError, DownloadIdleError, DownloadsBusyError, ReportTimeoutError, downloadLimits, downloadSlots } from "./downloads.ts";
import { QueryAbortedError, QueryTimeoutError, readConsistent } from "../db/index.ts";
import { isUuid } from "../ids.ts";
import type { Services } from "../services.ts";
import { textProblem } from "../http/text.ts";
import { fromCents, toCents } from "../pricing/display.ts";

export type ReportRow = Record<string, string | number | boolean | null>;

export async function hiddenReports(db: DbOrTx, orgId: string): Promise<Set<string>> {
  const rows = await queryRows<{ report_type: string }>(db, `SELECT report_type FROM org_report_settings WHERE org_id = $1::uuid AND hidden`, [orgId]);
  return new Set(rows.map((r) => r.report_type));
}

/** Hides (or shows again) a report for one organization. */
export async function setReportHidden(db: DbOrTx, orgId: string, reportType: string, hidden: boolean): Promise<void> {
  if (!findReport(reportType)) throw new NotFoundError(`There is no report \`${reportType}\`.`);
  await queryRows(
    db,
    `INSERT INTO org_report_settings (org_id, report_type, hidden, updated_at) VALUES ($1::uuid, $2, $3::boolean, now())
     ON CONFLICT (org_id, report_type) DO UPDATE SET hidden = EXCLUDED.hidden, updated_at = now()`,
    [orgId, reportType, hidden],
  );
}

export async function listReportDescriptors(db: DbOrTx, orgId: string) {
  const hidden = await hiddenReports(db, orgId);
  return REPORTS.filter((r) => !hidden.has(r.report_type)).map(descriptorOf);
}

/** The report, or 404 when unknown or hidden for this org. */
export async function resolveReport(db: DbOrTx, orgId: string, type: string): Promise<ReportDefinition> {
  const def = findReport(type);
  if (!def || (await hiddenReports(db, orgId)).has(type)) throw new NotFoundError(`There is no report \`${type}\` for this organization.`);
  return def;
}

export interface ReportQuery {
  year?: number;
  month?: number;
  format: "json" | "csv";
  provider?: Provider;
  /** Output column → value, for the report's string filters other than provider. */
  filters: Record<string, string>;
}


function bad(param: string, message: string): never {
  throw new BadRequestError(`Invalid query parameter \`${param}\`: ${message}.`, { [param]: [message] });
}

/**
 * Validates the query string against the report's params; `withPeriod` requires year and
 * month (the fetch) or forbids them (the periods list). Unknown params are refused.
 */
export function parseReportQuery(def: ReportDefinition, query: Record<string, unknown>, withPeriod: boolean): ReportQuery {
  const out: ReportQuery = { format: "json", filters: {} };
  const allowed = new Set([...(withPeriod ? ["year", "month", "format"] : []), ...def.params.map((p) => p.name)]);
  for (const [k, raw] of Object.entries(query)) {
    if (!allowed.has(k)) bad(k, withPeriod || !["year", "month", "format"].includes(k) ? "is not a parameter of this report" : "is not accepted when listing periods");
    if (Array.isArray(raw)) bad(k, "must be given once");
    const v = String(raw ?? "");
    if (k === "year") {
      if (!/^\d{4}$/.test(v) || +v < 1970 || +v > 9999) bad(k, "must be a four-digit year");
      out.year = +v;
    } else if (k === "month") {
      if (!/^\d{1,2}$/.test(v) || +v < 1 || +v > 12) bad(k, "must be an integer from 1 to 12");
      out.month = +v;
    } else if (k === "format") {
      if (v !== "json" && v !== "csv") bad(k, "must be json or csv");
      out.format = v;
    } else {
      const p = def.params.find((x) => x.name === k)!;
      const problem = textProblem(v, { minLength: 1, maxLength: 512 });
      if (problem) bad(k, problem);
      if (p.enum && !p.enum.includes(v)) bad(k, `must be one of ${p.enum.join(", ")}`);
      if (p.format === "uuid" && !isUuid(v)) bad(k, "must be a UUID");
      if (k === "provider") out.provider = v as Provider;
      else out.filters[p.column] = p.format === "uuid" ? v.toLowerCase() : v;
    }
  }
  if (withPeriod) {
    if (out.year === undefined) bad("year", "is required");
    if (out.month === undefined) bad("month", "is required");
  }
  for (const p of def.params) if (p.required && !(p.name in query)) bad(p.name, "is required");
  return out;
}

export interface PeriodEntry {
  year: number;
  month: number;
  status: "finalized" | "in_progress";
}

interface MonthState {
  month: string;
  providers: { provider: Provider; closed: boolean; frozen: boolean; frozenReports: string[] | null }[];
}

async function monthStates(db: DbOrTx, orgId: string, provider?: Provider): Promise<Map<string, MonthState>> {
  const map = new Map<string, MonthState>();
  for (const p of await listBillingPeriods(db, orgId, provider)) {
    const m = map.get(p.month) ?? { month: p.month, providers: [] };
    m.providers.push({ provider: p.provider, closed: p.status === "closed", frozen: p.frozen_at !== null, frozenReports: p.frozen_reports });
    map.set(p.month, m);
  }
  for (const m of map.values()) m.providers.sort((a, b) => a.provider.localeCompare(b.provider));
  return map;
}

const entryOf = (month: string, status: PeriodEntry["status"]): PeriodEntry => ({ year: +month.slice(0, 4), month: +month.slice(5, 7), status });

/**
 * What a month is for a report (the one rule behind both `/periods` and the fetch's
 * `period_status`): `finalized` once every provider's billing period of the month is frozen
 * (closing alone is not enough: the freeze is what makes the rows final), else `in_progress`
 * for `daily` and `static` reports. An `on_period_close` report has only finalized months; an
 * open month of it (the current one, or an earlier one not frozen yet) is `awaiting_close`:
 * served empty and unlabelled, never listed. Null: not a month of the report (future, or no data
 * and not the current month).
 */
type MonthAnswer = { status: PeriodEntry["status"] } | "awaiting_close" | null;

function monthAnswer(def: ReportDefinition, state: MonthState | undefined, month: string, now: Date): MonthAnswer {
  const current = monthStart(now);
  if (month > current || (!state && month < current)) return null;
  const finalized = state !== undefined && state.providers.length > 0 && state.providers.every((p) => p.frozen);
  if (finalized) return { status: "finalized" };
  return def.update_cadence === "on_period_close" ? "awaiting_close" : { status: "in_progress" };
}

/** Where the rows of a report month come from: per provider, its frozen snapshot or live data (null: every provider, live). */
interface RowSource {
  provider: Provider | null;
  frozen: boolean;
  /** A snapshot of a freeze from before rows were stored as shown (its totals are re-derived when read). */
  legacy?: boolean;
  /** Live: the report's rows stored ahead (lib/reports/rowCache.ts), current, are read instead of computed. */
  stored?: boolean;
  /** Live: the SQL for this month (from the raw rows when a billing period lacks detail summaries). */
  sql?: { exactSql: string; sql: string };
}

/** The SQL of a live (provider, month): the detail summaries' unless a billing period lacks them. */
async function liveSqlOf(db: DbOrTx, orgId: string, def: ReportDefinition, month: string, provider: Provider | null): Promise<{ exactSql: string; sql: string }> {
  if (!def.fallback) return def;
  if (provider === null) return def.fallback;
  return reportSqlOf(def, (await summaryDetailOf(db, orgId, month, provider)).complete);
}

/**
 * Whether the freeze of this provider's period snapshotted `def`: the freeze records the reports
 * it wrote; a period frozen before that was recorded snapshotted every report but the static ones.
 */
const snapshotted = (def: ReportDefinition, p: MonthState["providers"][number]) =>
  p.frozen && (p.frozenReports ? p.frozenReports.includes(def.report_type) : def.update_cadence !== "static");

function sourcesOf(def: ReportDefinition, state: MonthState | undefined, provider: Provider | undefined): RowSource[] {
  if (def.update_cadence !== "static") return (state?.providers ?? []).map((p) => ({ provider: p.provider, frozen: snapshotted(def, p), legacy: p.frozenReports === null }));
  // The commitment inventory is not made of billing rows: every provider has one, frozen with its billing period.
  const frozen = new Set((state?.providers ?? []).filter((p) => snapshotted(def, p)).map((p) => p.provider));
  if (!frozen.size) return [{ provider: provider ?? null, frozen: false }];
  return (provider ? [provider] : PROVIDERS).map((p) => ({ provider: p, frozen: frozen.has(p) }));
}

/**
 * With row filters (account_id, service_name, …) a month is a period of the report only when
 * the report, as served, has a row under them — except the current month of a `daily` or
 * `static` report, always listed as the preview that fills up during the month.
 */
const needsRowCheck = (def: ReportDefinition, month: string, now: Date, filters: Record<string, string>) =>
  Object.keys(filters).length > 0 && !(month === monthStart(now) && def.update_cadence !== "on_period_close");

function snapshotWhere(filters: Record<string, string>, params: unknown[]): string {
  return Object.entries(filters)
    .map(([col, v]) => ` AND row->>'${col.replace(/[^a-z_]/g, "")}' = $${params.push(v)}`)
    .join("");
}

/** Whether the live rows of (month, provider) have one under the filters. */
async function hasLiveRows(db: DbOrTx, orgId: string, def: ReportDefinition, month: string, provider: Provider | null, filters: Record<string, string>): Promise<boolean> {
  // The exact rows: which rows exist does not depend on rounding, and the filters reach the grouping.
  const params: unknown[] = [orgId, month, provider];
  const where = Object.entries(filters).map(([col, v]) => `r.${col} = $${params.push(v)}`);
  const { exactSql } = await liveSqlOf(db, orgId, def, month, provider);
  return (await queryRows(db, `SELECT 1 FROM (${exactSql}) r WHERE ${where.join(" AND ")} LIMIT 1`, params)).length > 0;
}

/** Of the frozen (month, provider) pairs, those whose snapshot has a row under the filters: one statement for all of them. */
async function snapshotsWithRows(db: DbOrTx, orgId: string, def: ReportDefinition, pairs: { month: string; provider: Provider }[], filters: Record<string, string>): Promise<Set<string>> {
  if (!pairs.length) return new Set();
  // Lists as comma-joined text: queryRows expands a JS array into a row, not an SQL array.
  const params: unknown[] = [orgId, def.report_type, pairs.map((x) => x.month).join(","), pairs.map((x) => x.provider).join(",")];
  const rows = await queryRows<{ month: string; provider: string }>(
    db,
    `SELECT to_char(m.month, 'YYYY-MM-DD') AS month, m.provider FROM unnest(string_to_array($3, ',')::date[], string_to_array($4, ',')) AS m(month, provider)
     WHERE EXISTS (SELECT 1 FROM report_snapshots WHERE org_id = $1::uuid AND report_type = $2 AND provider = m.provider AND month = m.month${snapshotWhere(filters, params)})`,
    params,
  );
  return new Set(rows.map((r) => `${r.month}|${r.provider}`));
}

/** The months (of `candidates`, with their row sources) that have a row under the filters. */
async function monthsWithRows(db: DbOrTx, orgId: string, def: ReportDefinition, candidates: { month: string; sources: RowSource[] }[], filters: Record<string, string>): Promise<Set<string>> {
  const frozen = candidates.flatMap((c) => c.sources.filter((src) => src.frozen).map((src) => ({ month: c.month, provider: src.provider! })));
  const inSnapshots = await snapshotsWithRows(db, orgId, def, frozen, filters);
  const out = new Set<string>();
  for (const c of candidates) {
    if (c.sources.some((src) => src.frozen && inSnapshots.has(`${c.month}|${src.provider}`))) out.add(c.month);
    // Live sources are the months not frozen yet: the current and perhaps the previous one.
    else for (const src of c.sources) if (!src.frozen && (await hasLiveRows(db, orgId, def, c.month, src.provider, filters))) {
      out.add(c.month);
      break;
    }
  }
  return out;
}

/** The report's available periods under the query's filters, most recent first. */
export async function reportPeriods(db: DbOrTx, orgId: string, def: ReportDefinition, q: Pick<ReportQuery, "provider" | "filters">, now: Date): Promise<PeriodEntry[]> {
  const states = await monthStates(db, orgId, q.provider);
  const months = [...new Set([monthStart(now), ...states.keys()])].sort().reverse();
  const listed: { month: string; status: PeriodEntry["status"] }[] = [];
  for (const month of months) {
    const answer = monthAnswer(def, states.get(month), month, now);
    if (answer !== null && answer !== "awaiting_close") listed.push({ month, status: answer.status });
  }
  const checked = listed.filter((m) => needsRowCheck(def, m.month, now, q.filters));
  const withRows = await monthsWithRows(db, orgId, def, checked.map((m) => ({ month: m.month, sources: sourcesOf(def, states.get(m.month), q.provider) })), q.filters);
  return listed.filter((m) => !needsRowCheck(def, m.month, now, q.filters) || withRows.has(m.month)).map((m) => entryOf(m.month, m.status));
}

/**
 * A row of a legacy snapshot as shown: totals from its rounded parts. Freezes from before the
 * freeze recorded its reports (`frozen_reports` null) stored totals rounded on their own, a cent
 * off the sum of their parts; newer snapshots hold the rows as shown and are served untouched.
 */
function shownSnapshotRow(def: ReportDefinition, row: Record<string, unknown>): Record<string, unknown> {
  for (const d of def.rounding?.legacyDerived ?? def.rounding?.derived ?? []) {
    let cents = 0;
    for (const t of d.terms) {
      const v = row[t.column];
      if (v === null || v === undefined) return row;
      cents += t.sign * toCents(Number(v));
    }
    row[d.column] = fromCents(cents);
  }
  return row;
}

export interface OpenedReport {
  def: ReportDefinition;
  year: number;
  month: number;
  /** The month's status as `/periods` lists it; null (and no rows) for an on_period_close report's month not closed yet. */
  periodStatus: PeriodEntry["status"] | null;
  format: "json" | "csv";
  /** Streams the rows in batches (already typed per output_fields). */
  forEachBatch(onBatch: (rows: ReportRow[]) => Promise<void> | void): Promise<void>;
  /** Same rows as driver values (numeric as strings or numbers), for the CSV writer. */
  forEachRawBatch(onBatch: (rows: Record<string, unknown>[]) => Promise<void> | void): Promise<void>;
  /**
   * The CSV download's bytes straight from PostgreSQL's COPY (header included), when the month
   * is read live from PostgreSQL and every field prints alike: a cursor cannot use parallel
   * workers, COPY can (the resource-grain export ran 2× COPY's time through the cursor).
   */
  forEachCsvBytes?(onChunk: (bytes: Uint8Array) => Promise<void> | void): Promise<void>;
}

/** Composes the live SQL of a report with the filters; returns text + params. */
export function liveReportSql(
  def: ReportDefinition,
  orgId: string,
  month: string,
  provider: Provider | null,
  filters: Record<string, string>,
  columns = def.output_fields.map((f) => `r.${f.name}`),
  sql = def.sql,
) {
  const params: unknown[] = [orgId, month, provider];
  const where = Object.entries(filters).map(([col, v]) => `r.${col} = $${params.push(v)}`);
  const text = `SELECT ${columns.join(", ")} FROM (${sql}) r${where.length ? ` WHERE ${where.join(" AND ")}` : ""}
    ORDER BY ${def.orderBy.map((c) => `r.${c} NULLS FIRST`).join(", ")}`;
  return { text, params };
}

/** The stored rows of a report month (rowCache.ts) in order, as SQL over `r` (their output columns as text, and `row`). */
function storedReportSql(def: ReportDefinition, orgId: string, month: string, provider: Provider, filters: Record<string, string>, columns: string[]) {
  const params: unknown[] = [orgId, def.report_type, provider, month];
  const text = `SELECT ${columns.join(", ")} FROM ${storedRowsSql(def, filters, params)} ORDER BY r.seq`;
  return { text, params };
}

/** A validated value as an SQL literal (COPY takes no parameters; standard_conforming_strings is on). */
function sqlLiteral(v: unknown): string {
  if (v === null || v === undefined) return "NULL";
  const s = String(v);
  if (s.includes("\0")) throw new BadRequestError("A report parameter contains a NUL character.");
  return `'${s.replace(/'/g, "''")}'`;
}

/**
 * The live report as `COPY … TO STDOUT` CSV whose bytes equal csvChunk's once passed through
 * crlfOutsideQuotes: money with two decimals, text neutralised for spreadsheets, the same order.
 * Null for reports with fields COPY would print differently (other numbers, booleans).
 */
export function liveReportCsvCopy(
  def: ReportDefinition,
  orgId: string,
  month: string,
  provider: Provider | null,
  filters: Record<string, string>,
  header: boolean,
  from: { stored: boolean; sql?: string } = { stored: false },
): string | null {
  const columns: string[] = [];
  for (const f of def.output_fields) {
    const v = `(r.${f.name})::text`;
    if (f.type === "string") columns.push(`CASE WHEN ${v} ~ '^[=+@\\t\\r-]' THEN '''' || ${v} ELSE ${v} END AS ${f.name}`);
    else if (f.type === "number" && def.money.includes(f.name)) columns.push(`ROUND((r.${f.name})::numeric, 2) AS ${f.name}`);
    else return null;
  }
  const { text, params } = from.stored && provider ? storedReportSql(def, orgId, month, provider, filters, columns) : liveReportSql(def, orgId, month, provider, filters, columns, from.sql);
  const inlined = text.replace(/\$(\d+)/g, (_, i) => sqlLiteral(params[Number(i) - 1]));
  return `COPY (${inlined}) TO STDOUT WITH (FORMAT csv${header ? ", HEADER true" : ""})`;
}

/**
 * COPY's CSV ends records with LF, the API's (RFC 4180) with CRLF: rewrites the line feeds
 * outside quoted fields, across chunk boundaries; line breaks inside a field stay as they are.
 */
export function crlfOutsideQuotes(): (chunk: Uint8Array) => Uint8Array {
  let quoted = false;
  return (chunk) => {
    const atStart = quoted;
    let ends = 0;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i]!;
      if (c === 34) quoted = !quoted;
      else if (c === 10 && !quoted) ends++;
    }
    if (!ends) return chunk;
    const out = new Uint8Array(chunk.length + ends);
    let q = atStart;
    let j = 0;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i]!;
      if (c === 34) q = !q;
      else if (c === 10 && !q) out[j++] = 13;
      out[j++] = c;
    }
    return out;
  };
}

/** A raw row of a report's SQL as the API types it (numbers, booleans, strings, null). */
export function typed(def: ReportDefinition, raw: Record<string, unknown>): ReportRow {
  const row: ReportRow = {};
  for (const f of def.output_fields) {
    const v = raw[f.name];
    row[f.name] = v === null || v === undefined ? null : f.type === "number" ? Number(v) : f.type === "boolean" ? v === true || v === "t" || v === "true" : String(v);
  }
  return row;
}

/**
 * What a report month depends on besides its rows: the state of its billing periods (closing and
 * freezing change it). A read replica answers a report only while its token equals the
 * primary's (lib/db/replica.ts; docs/OPERATIONS.md, "Read replicas").
 */
const PERIOD_TOKEN_SQL = `SELECT provider, status, closed_at, frozen_at FROM billing_periods
  WHERE org_id = $1::uuid AND month = $2::date AND ($3::text IS NULL OR provider = $3::text) ORDER BY provider`;

export interface OpenReportOptions {
  /** Where report reads may go (a read replica); the primary `handle` when absent or behind. */
  reader?: DatabaseHandle;
  /** Cancel a report query that has produced no rows after this many ms (ReportTimeoutError). */
  queryTimeoutMs?: number;
  /** The request's: its queries are cancelled when the client goes away (ClientGoneError). */
  signal?: AbortSignal;
}

/**
 * Resolves the month and the row sources of a fetch (throws 400/404 before anything is
 * streamed): per provider, the frozen snapshot once its period is frozen, else live data.
 */
export async function openReport(handle: DatabaseHandle, orgId: string, type: string, query: Record<string, unknown>, now: Date, opts: OpenReportOptions = {}): Promise<OpenedReport> {
  const def = await resolveReport(handle.db, orgId, type);
  const q = parseReportQuery(def, query, true);
  const month = `${q.year}-${String(q.month).padStart(2, "0")}-01`;
  // The month's period state and its rows come from one server: the read replica when it has the
  // primary's period state of this month (a frozen month is never read stale), else the primary.
  const readFrom = opts.reader && opts.reader !== handle ? await readConsistent(handle, opts.reader, PERIOD_TOKEN_SQL, [orgId, month, q.provider ?? null]) : handle;
  const states = await monthStates(readFrom.db, orgId, q.provider);
  const state = states.get(month);
  const answer = monthAnswer(def, state, month, now);
  const notAvailable = () => new NotFoundError(`Period ${q.year}-${String(q.month).padStart(2, "0")} is not available for report \`${type}\`.`, "period_not_available");
  if (answer === null) throw notAvailable();
  let status: PeriodEntry["status"] | null;
  let sources: RowSource[];
  if (answer === "awaiting_close") {
    // SPEC: returns empty for the current period until close; not a period yet, so no status.
    status = null;
    sources = [];
  } else {
    status = answer.status;
    sources = sourcesOf(def, state, q.provider);
    if (needsRowCheck(def, month, now, q.filters) && !(await monthsWithRows(readFrom.db, orgId, def, [{ month, sources }], q.filters)).has(month)) throw notAvailable();
    for (const src of sources) if (!src.frozen) await resolveLive(handle, readFrom, orgId, def, month, src);
  }
  const batchSize = 2000;
  const streamOpts = { firstBatchTimeoutMs: opts.queryTimeoutMs ?? 0, signal: opts.signal };
  const timedOut = (e: unknown): never => {
    if (e instanceof QueryAbortedError) throw new ClientGoneError();
    throw e instanceof QueryTimeoutError ? new ReportTimeoutError(e.timeoutMs) : e;
  };
  const forEachRawBatch = async (onBatch: (rows: Record<string, unknown>[]) => Promise<void> | void) => {
    for (const src of sources) {
      if (src.frozen) {
        const params: unknown[] = [orgId, def.report_type, src.provider, month];
        await readFrom.stream<{ row: unknown }>(
          `SELECT row FROM report_snapshots WHERE org_id = $1::uuid AND report_type = $2 AND provider = $3 AND month = $4::date${snapshotWhere(q.filters, params)} ORDER BY seq`,
          params,
          (rows) =>
            onBatch(
              rows.map((r) => {
                const row = (typeof r.row === "string" ? JSON.parse(r.row) : r.row) as Record<string, unknown>;
                return src.legacy ? shownSnapshotRow(def, row) : row;
              }),
            ),
          batchSize,
          streamOpts,
        ).catch(timedOut);
      } else if (src.stored) {
        const { text, params } = storedReportSql(def, orgId, month, src.provider!, q.filters, ["r.row"]);
        await readFrom.stream<{ row: unknown }>(text, params, (rows) => onBatch(rows.map((r) => (typeof r.row === "string" ? JSON.parse(r.row) : r.row) as Record<string, unknown>)), batchSize, streamOpts).catch(timedOut);
      } else {
        const { text, params } = liveReportSql(def, orgId, month, src.provider, q.filters, undefined, src.sql?.sql);
        await readFrom.stream<Record<string, unknown>>(text, params, onBatch, batchSize, streamOpts).catch(timedOut);
      }
    }
  };
  const copyOut = readFrom.copyOut?.bind(readFrom);
  const copies = q.format === "csv" && sources.every((src) => !src.frozen) && copyOut ? sources.map((src, i) => liveReportCsvCopy(def, orgId, month, src.provider, q.filters, i === 0, { stored: src.stored === true, sql: src.sql?.sql })) : [];
  const forEachCsvBytes =
    copyOut && copies.length && copies.every((c) => c !== null)
      ? async (onChunk: (bytes: Uint8Array) => Promise<void> | void) => {
          const crlf = crlfOutsideQuotes();
          for (const copy of copies) await copyOut(copy!, (chunk) => onChunk(crlf(chunk)), streamOpts).catch(timedOut);
        }
      : undefined;
  return {
    def,
    year: q.year!,
    month: q.month!,
    periodStatus: status,
    format: q.format,
    forEachCsvBytes,
    forEachRawBatch,
    forEachBatch: (onBatch) => forEachRawBatch((rows) => onBatch(rows.map((r) => typed(def, r)))),
  };
}

/**
 * How a live source is read: its stored rows when current (recomputed first, on the primary,
 * when what it joins changed since), else the report's SQL for the month.
 */
async function resolveLive(handle: DatabaseHandle, readFrom: DatabaseHandle, orgId: string, def: ReportDefinition, month: string, src: RowSource): Promise<void> {
  if (src.provider === null) return;
  const provider = src.provider;
  const state = await rowSetState(readFrom.db, orgId, def, month, provider);
  if (state === "fresh") {
    src.stored = true;
    return;
  }
  src.sql = await liveSqlOf(readFrom.db, orgId, def, month, provider);
  if (state === "stale" && readFrom === handle && src.sql === def) {
    await handle.db.transaction((tx) => storeRowSet(tx, orgId, def, provider, month));
    src.stored = true;
  }
}

/** All rows of a report month in memory (tests, MCP tools; the HTTP API streams). */
export async function reportRows(handle: DatabaseHandle, orgId: string, type: string, query: Record<string, unknown>, now: Date, opts: OpenReportOptions = {}) {
  const r = await openReport(handle, orgId, type, query, now, opts);
  const rows: ReportRow[] = [];
  await r.forEachBatch((b) => void rows.push(...b));
  return { report_type: type, year: r.year, month: r.month, period_status: r.periodStatus, rows };
}

const FORMULA_START = /^[=+\-@\t\r]/;

/** Spreadsheet-safe CSV cell of a text value: a leading formula character gets an apostrophe. */
export function csvSafeText(v: string): string {
  return FORMULA_START.test(v) ? `'${v}` : v;
}

const NEEDS_QUOTES = /[",\r\n]/;
/** RFC 4180 field: quoted (inner quotes doubled) when it holds a quote, comma or line break. */
function csvField(v: string): string {
  return NEEDS_QUOTES.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
}

/**
 * One batch of report rows as RFC 4180 CSV (CRLF), numbers kept numeric, text neutralised.
 * Hand-written rather than csv-stringify: on a 100k-row export csv-stringify took ~70 % of the
 * CPU time and most of the garbage (see docs/features/reports.md); the output is the same.
 */
export function csvChunk(def: ReportDefinition, rows: Record<string, unknown>[], withHeader: boolean): string {
  const fields = def.output_fields.map((f) => ({ name: f.name, type: f.type, money: def.money.includes(f.name) }));
  let out = withHeader ? fields.map((f) => csvField(f.name)).join(",") + "\r\n" : "";
  for (const row of rows) {
    let line = "";
    for (let i = 0; i < fields.length; i++) {
      const f = fields[i]!;
      const v = row[f.name];
      let cell: string;
      if (v === null || v === undefined) cell = "";
      else if (f.type === "number") cell = f.money ? Number(v).toFixed(2) : String(Number(v));
      else if (f.type === "boolean") cell = v === true || v === "t" || v === "true" ? "true" : "false";
      else cell = csvField(csvSafeText(String(v)));
      line += i ? "," + cell : cell;
    }
    out += line + "\r\n";
  }
  return out;
}

/** How a streamed body ended: every byte produced, the client went away, the idle timeout cut it, or the producer failed. */
export type StreamOutcome = "complete" | "cancelled" | "idle" | "failed";

export interface ProducerStreamOptions {
  /**
   * Abort when the client has not pulled for this long while the producer waits for backpressure
   * (0 or absent = wait forever): `push` throws DownloadIdleError (so the producer's cursor and
   * its connection are released) and the body ends with an error (a truncated transfer).
   */
  idleTimeoutMs?: number;
  /** Called once, after the producer has settled (its database work is over). */
  onSettled?: (outcome: StreamOutcome, bytes: number) => void;
}

/** Bytes a report stream queues ahead of its client (beyond what the socket buffers hold). */
const STREAM_QUEUE_BYTES = 1 << 20;

/** Pull-driven byte stream fed by an async producer (backpressure: the producer waits when the queue is full). */
export function producerStream(
  produce: (push: (chunk: string | Uint8Array) => Promise<void>) => Promise<void>,
  onError: (e: unknown) => void,
  opts: ProducerStreamOptions = {},
): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  const idleMs = opts.idleTimeoutMs ?? 0;
  let wake: (() => void) | null = null;
  let cancelled = false;
  let bytes = 0;
  /** Resolves true on the next pull (or cancel), false when the idle timeout passes first. */
  const nextPull = () =>
    new Promise<boolean>((resolve) => {
      const timer = idleMs > 0 ? setTimeout(() => ((wake = null), resolve(false)), idleMs) : undefined;
      wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const push = async (chunk: string | Uint8Array) => {
          if (cancelled) throw new ClientGoneError();
          if (!chunk.length) return;
          const data = typeof chunk === "string" ? enc.encode(chunk) : chunk;
          controller.enqueue(data);
          bytes += data.length;
          while (!cancelled && (controller.desiredSize ?? 1) <= 0) {
            if (!(await nextPull())) throw new DownloadIdleError(idleMs);
          }
          if (cancelled) throw new ClientGoneError();
        };
        const settle = (outcome: StreamOutcome) => opts.onSettled?.(outcome, bytes);
        // Deferred so the Response is returned before the cursor opens.
        queueMicrotask(() => {
          produce(push).then(
            () => {
              if (!cancelled) controller.close();
              settle(cancelled ? "cancelled" : "complete");
            },
            (e) => {
              if (cancelled) return settle("cancelled");
              // Erroring the stream makes the server end the response without its terminating
              // chunk: the client sees a failed transfer, never a complete-looking body.
              if (!(e instanceof DownloadIdleError)) onError(e);
              controller.error(e);
              settle(e instanceof DownloadIdleError ? "idle" : "failed");
            },
          );
        });
      },
      pull() {
        const w = wake;
        wake = null;
        w?.();
      },
      cancel() {
        cancelled = true;
        const w = wake;
        wake = null;
        w?.();
      },
    },
    // Counted in bytes, not chunks: a batch of wide rows is most of a megabyte, so eight queued
    // batches would hold several MB per download whose client is slow.
    { highWaterMark: STREAM_QUEUE_BYTES, size: (chunk) => chunk?.byteLength ?? 0 },
  );
}

/**
 * producerStream, resolved once the producer has pushed its first bytes (or finished): the
 * status is decided only then, so a query that fails or times out is an error response, never
 * a `200` whose body cannot complete. Later failures still cut the stream (a failed transfer).
 */
export function producerStreamWhenStarted(
  produce: (push: (chunk: string | Uint8Array) => Promise<void>) => Promise<void>,
  onError: (e: unknown) => void,
  opts: ProducerStreamOptions = {},
): Promise<ReadableStream<Uint8Array>> {
  return new Promise((resolve, reject) => {
    let started = false;
    const start = () => {
      if (started) return;
      started = true;
      resolve(body);
    };
    const body = producerStream(
      async (push) => {
        await produce(async (chunk) => {
          if (chunk.length) start();
          await push(chunk);
        });
        start();
      },
      (e) => {
        if (started) return onError(e);
        started = true;
        reject(e);
      },
      opts,
    );
  });
}

const periodStatusHeader = (r: OpenedReport): Record<string, string> => (r.periodStatus ? { "x-period-status": r.periodStatus } : {});

/** The HTTP answer of a report fetch: JSON `{report_type, year, month, period_status, rows}` or a CSV download, both streamed. */
export async function reportResponse(r: OpenedReport, headers: Record<string, string>, onError: (e: unknown) => void, opts: ProducerStreamOptions = {}): Promise<Response> {
  const def = r.def;
  if (r.format === "csv") {
    let first = true;
    let rowsSinceHint = 0;
    const body = await producerStreamWhenStarted(
      async (push) => {
        if (r.forEachCsvBytes) return r.forEachCsvBytes(push);
        await r.forEachRawBatch(async (rows) => {
          await push(csvChunk(def, rows, first));
          first = false;
          // Keeps peak memory flat on million-row exports: collect every ~100k rows rather than
          // letting the heap grow with the garbage of every batch.
          if ((rowsSinceHint += rows.length) >= 100_000) {
            rowsSinceHint = 0;
            collectGarbageHint();
          }
        });
        if (first) await push(csvChunk(def, [], true));
      },
      onError,
      opts,
    );
    const name = `${def.report_type}-${r.year}-${String(r.month).padStart(2, "0")}.csv`;
    return new Response(body, {
      status: 200,
      headers: { ...headers, "content-type": "text/csv; charset=utf-8", "content-disposition": `attachment; filename="${name}"`, ...periodStatusHeader(r) },
    });
  }
  const body = await producerStreamWhenStarted(
    async (push) => {
      // The envelope goes out with the first rows, so nothing is sent before the query has answered.
      const head = `{"report_type":${JSON.stringify(def.report_type)},"year":${r.year},"month":${r.month},"period_status":${JSON.stringify(r.periodStatus)},"rows":[`;
      let first = true;
      await r.forEachBatch(async (rows) => {
        if (!rows.length) return;
        await push((first ? head : ",") + rows.map((x) => JSON.stringify(x)).join(","));
        first = false;
      });
      await push(first ? `${head}]}` : "]}");
    },
    onError,
    opts,
  );
  return new Response(body, { status: 200, headers: { ...headers, "content-type": "application/json; charset=utf-8", ...periodStatusHeader(r) } });
}

/**
 * A report fetch as served by the API: takes one of the process's download slots (waiting up to
 * the queue timeout, then 503 + Retry-After before any body byte), streams with the idle timeout,
 * and gives the slot back once the producer has settled (complete, failed, cancelled by the
 * client or aborted as idle). Failures are logged once, aborts once as a warning; never the rows.
 */
export async function reportDownload(s: Pick<Services, "handle" | "config" | "log">, orgId: string, r: OpenedReport): Promise<Response> {
  const limits = downloadLimits(s.config, s.handle);
  const fields = { report_type: r.def.report_type, org_id: orgId, format: r.format };
  const release = await downloadSlots(s.handle).acquire(limits.concurrency, limits.queueTimeoutMs);
  // The app's error handler logs the 503 (with the path, which names the org and the report).
  if (!release) throw new DownloadsBusyError(5);
  try {
    return await reportResponse(r, {}, (e) => s.log.error("report stream failed", { ...fields, error: e instanceof Error ? e.message : String(e) }), {
      idleTimeoutMs: limits.idleTimeoutMs,
      onSettled: (outcome, bytes) => {
        release();
        if (outcome === "idle") s.log.warn("report download aborted: the client stopped reading", { ...fields, idle_timeout_seconds: limits.idleTimeoutMs / 1000, bytes_produced: bytes });
        else if (outcome === "cancelled") s.log.info("report download cancelled by the client", { ...fields, bytes_produced: bytes });
      },
    });
  } catch (e) {
    release();
    // The query was cancelled; the app's error handler answers nobody with a 499.
    if (e instanceof ClientGoneError) s.log.info("report download cancelled by the client before its first byte", fields);
    throw e;
  }
}

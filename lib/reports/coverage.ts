/**
 * Coverage and utilization of commitments, read from the allocation reports' own queries (one
 * home for the allocation rule): per month, the commitment side from commitment_cost_by_account
 * / commitment_cost_by_service (Used cost plus the pro-rata share of Unused cost, covered
 * on-demand cost, savings) and the uncovered side from the cloud bill reports' ondemand_cost
 * (every service, also those no commitment touches). The commitment grain, which no report has,
 * reads lib/billing/queries.ts `coverageAndUtilization`.
 *
 * Shared by the assistant's get_coverage_and_utilization and the REST `/commitment-summary`
 * (lib/reports/commitmentSummary.ts): money is summed in integer cents of the rows as the reports
 * show them, and every ratio is derived from those cents.
 */
import { coverageAndUtilization } from "../billing/queries.ts";
import { queryRows, type Provider } from "../billing/sql.ts";
import { NotFoundError, ValidationError, type AppError } from "../errors.ts";
import type { FieldErrors } from "../errors.ts";
import { fromCents, rate6, toCents } from "../pricing/display.ts";
import type { Services } from "../services.ts";
import { findReport } from "./catalog.ts";
import { liveReportSql, reportPeriods, reportRows, typed, type ReportRow } from "./service.ts";

export const COVERAGE_MONEY = ["commitment_used_cost", "commitment_unused_allocated_cost", "commitment_cost", "covered_ondemand_cost", "ondemand_cost", "savings"] as const;
export type CoverageMoney = (typeof COVERAGE_MONEY)[number];
/** The money of a row in integer cents. */
export type CoverageCents = Record<CoverageMoney, number>;

export type CoverageGroupBy = "period" | "account" | "service" | "commitment";
export const MONTH_STATUSES = ["finalized", "in_progress", "not_closed", "no_data"] as const;
export type MonthStatus = (typeof MONTH_STATUSES)[number];

export const MONTH_RE = /^\d{4}-\d{2}$/;
export const MAX_MONTHS = 36;

const monthIndex = (m: string) => Number(m.slice(0, 4)) * 12 + Number(m.slice(5, 7)) - 1;
const monthOf = (i: number) => `${String(Math.floor(i / 12)).padStart(4, "0")}-${String((i % 12) + 1).padStart(2, "0")}`;

export interface MonthWindowOptions {
  /** The names of the two inputs, as the caller's client knows them (errors name them). */
  startField: string;
  endField: string;
  /** Months of the default window, ending with the current month. */
  defaultMonths: number;
  /** The error of a bad window (default ValidationError; a REST query answers 400). */
  error?: (message: string, errors: FieldErrors) => AppError;
}

/** The window's months (YYYY-MM, oldest first): default the `defaultMonths` up to the current one; never a future month; at most 36. */
export function resolveMonths(now: Date, a: { start?: string; end?: string }, o: MonthWindowOptions): string[] {
  const fail = o.error ?? ((message: string, errors: FieldErrors) => new ValidationError(message, errors));
  const check = (name: string, m: string): number => {
    const mm = Number(m.slice(5, 7));
    if (!MONTH_RE.test(m) || mm < 1 || mm > 12) throw fail(`${name} must be a month YYYY-MM.`, { [name]: ["a month YYYY-MM"] });
    return monthIndex(m);
  };
  const current = now.getUTCFullYear() * 12 + now.getUTCMonth();
  const end = a.end ? check(o.endField, a.end) : current;
  const start = a.start ? check(o.startField, a.start) : end - (o.defaultMonths - 1);
  if (end < start) throw fail(`${o.endField} must not be before ${o.startField}.`, { [o.endField]: [`not before ${o.startField}`] });
  if (end > current) throw fail(`${o.endField} is after the current month ${monthOf(current)}: there is no billing data for future months.`, { [o.endField]: ["not after the current month"] });
  if (end - start + 1 > MAX_MONTHS) throw fail(`The window may span at most ${MAX_MONTHS} months.`, { [o.startField]: [`at most ${MAX_MONTHS} months`] });
  const out: string[] = [];
  for (let i = start; i <= end; i++) out.push(monthOf(i));
  return out;
}

/**
 * A report month's rows as the REST API serves them (frozen snapshot once finalized, live rows
 * before). An on_period_close report (cloud_bill_by_account) serves no rows until its month is
 * closed and frozen: then the report's own query, live, stands in (status `not_closed`). A month
 * without billing data has no rows (`no_data`).
 */
async function reportMonth(s: Services, orgId: string, now: Date, type: string, month: string, provider: Provider | undefined): Promise<{ rows: ReportRow[]; status: MonthStatus }> {
  try {
    const r = await reportRows(s.handle, orgId, type, { year: month.slice(0, 4), month: String(Number(month.slice(5, 7))), ...(provider ? { provider } : {}) }, now, {
      reader: s.reportReader,
      queryTimeoutMs: s.config.reportQueryTimeoutSeconds * 1000,
    });
    if (r.period_status !== null) return { rows: r.rows, status: r.period_status };
  } catch (e) {
    if (e instanceof NotFoundError && e.code === "period_not_available") return { rows: [], status: "no_data" };
    throw e;
  }
  const def = findReport(type)!;
  const { text, params } = liveReportSql(def, orgId, `${month}-01`, provider ?? null, {});
  const raw = await queryRows<Record<string, unknown>>(s.db, text, params);
  return { rows: raw.map((r) => typed(def, r)), status: "not_closed" };
}

export const zeroCents = (): CoverageCents => ({ commitment_used_cost: 0, commitment_unused_allocated_cost: 0, commitment_cost: 0, covered_ondemand_cost: 0, ondemand_cost: 0, savings: 0 });
const c = (v: unknown) => toCents(Number(v ?? 0));
const ratio = (v: number): number | null => (Number.isFinite(v) ? rate6(v) : null);

export interface CoverageShown extends Record<CoverageMoney, number> {
  coverage: number | null;
  utilization: number | null;
}

/** Shown money and the ratios derived from it: coverage = covered ÷ (covered + on-demand), utilization = used ÷ (used + unused allocated). */
export function coverageShown(x: CoverageCents, coverageApplies = true): CoverageShown {
  const used = x.commitment_used_cost;
  const unused = x.commitment_unused_allocated_cost;
  const covered = x.covered_ondemand_cost;
  const od = x.ondemand_cost;
  return {
    ...(Object.fromEntries(COVERAGE_MONEY.map((m) => [m, fromCents(x[m])])) as Record<CoverageMoney, number>),
    coverage: coverageApplies && covered + od !== 0 ? ratio(covered / (covered + od)) : null,
    utilization: used + unused !== 0 ? ratio(used / (used + unused)) : null,
  };
}

/** One row of coverage figures, in cents, of one month, provider, currency and key. */
export interface CoverageAcc {
  month: string;
  provider: string;
  currency: string;
  key: string | null;
  account_name: string | null;
  cents: CoverageCents;
}

/** Rows of one month from a commitment report and a bill report, joined on (provider, currency, key). */
function joinMonth(month: string, commitmentRows: ReportRow[], billRows: ReportRow[], keyCol: string): CoverageAcc[] {
  const by = new Map<string, CoverageAcc>();
  const get = (r: ReportRow) => {
    const provider = String(r.provider);
    const currency = String(r.billing_currency ?? "USD");
    const key = r[keyCol] === null || r[keyCol] === undefined ? null : String(r[keyCol]);
    const id = JSON.stringify([provider, currency, key]);
    let acc = by.get(id);
    if (!acc) by.set(id, (acc = { month, provider, currency, key, account_name: null, cents: zeroCents() }));
    if (acc.account_name === null && typeof r.account_name === "string") acc.account_name = r.account_name;
    return acc;
  };
  for (const r of commitmentRows) {
    const acc = get(r);
    acc.cents.commitment_used_cost += c(r.commitment_used_cost);
    acc.cents.commitment_unused_allocated_cost += c(r.commitment_unused_allocated_cost);
    acc.cents.commitment_cost += c(r.commitment_cost);
    acc.cents.covered_ondemand_cost += c(r.covered_ondemand_cost);
    acc.cents.savings += c(r.savings);
  }
  // The bill's rows of one key (a service in several categories) add up; keys without on-demand usage add nothing.
  for (const r of billRows) if (c(r.ondemand_cost) !== 0) get(r).cents.ondemand_cost += c(r.ondemand_cost);
  return [...by.values()];
}

/** Account rows summed per (month, provider, currency). */
function perMonth(rows: CoverageAcc[]): CoverageAcc[] {
  const by = new Map<string, CoverageAcc>();
  for (const r of rows) {
    const id = JSON.stringify([r.provider, r.currency]);
    let acc = by.get(id);
    if (!acc) by.set(id, (acc = { month: r.month, provider: r.provider, currency: r.currency, key: r.month, account_name: null, cents: zeroCents() }));
    for (const m of COVERAGE_MONEY) acc.cents[m] += r.cents[m];
  }
  return [...by.values()];
}

/**
 * Commitment grain (no report has it): Used/Unused/covered per commitment by charge period month
 * (coverageAndUtilization). A commitment's Unused cost is wholly its own (its allocation to
 * users sums back to it); on-demand usage belongs to no commitment, so no coverage per
 * commitment. Each row is in the currency of the commitment's billing rows.
 */
async function commitmentMonth(s: Services, orgId: string, month: string, provider: Provider | undefined): Promise<CoverageAcc[]> {
  const from = new Date(`${month}-01T00:00:00Z`);
  const to = new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + 1, 1));
  const rows = await coverageAndUtilization(s.db, orgId, { provider, from, to, groupBy: "commitment" });
  return rows.map((r) => {
    const used = toCents(r.used_cost);
    const unused = toCents(r.unused_cost);
    const covered = toCents(r.covered_ondemand_cost);
    return {
      month,
      provider: r.provider,
      currency: r.currency,
      key: r.key,
      account_name: null,
      cents: { commitment_used_cost: used, commitment_unused_allocated_cost: unused, commitment_cost: used + unused, covered_ondemand_cost: covered, ondemand_cost: 0, savings: covered - used },
    };
  });
}

export const naturalOrder = (x: CoverageAcc, y: CoverageAcc) => x.month.localeCompare(y.month) || x.provider.localeCompare(y.provider) || x.currency.localeCompare(y.currency) || (x.key ?? "").localeCompare(y.key ?? "");

/**
 * The coverage rows of the months (each month's status beside it), grouped by `groupBy`, in
 * natural order (month, provider, currency, key); rows with nothing to show are left out.
 */
export async function coverageReport(
  s: Services,
  orgId: string,
  now: Date,
  q: { groupBy: CoverageGroupBy; provider?: Provider; months: readonly string[] },
): Promise<{ months: { month: string; status: MonthStatus }[]; rows: CoverageAcc[] }> {
  const found: CoverageAcc[] = [];
  const statuses: { month: string; status: MonthStatus }[] = [];
  // By commitment no report rows are read: the months' status comes from the report's periods.
  const periods =
    q.groupBy === "commitment"
      ? new Map((await reportPeriods(s.db, orgId, findReport("commitment_cost_by_account")!, { provider: q.provider, filters: {} }, now)).map((p) => [`${p.year}-${String(p.month).padStart(2, "0")}`, p.status]))
      : null;
  for (const month of q.months) {
    if (periods) {
      statuses.push({ month, status: periods.get(month) ?? "no_data" });
      found.push(...(await commitmentMonth(s, orgId, month, q.provider)));
      continue;
    }
    const grain = q.groupBy === "service" ? "service" : "account";
    const commitment = await reportMonth(s, orgId, now, `commitment_cost_by_${grain}`, month, q.provider);
    statuses.push({ month, status: commitment.status });
    const bill = await reportMonth(s, orgId, now, `cloud_bill_by_${grain}`, month, q.provider);
    const joined = joinMonth(month, commitment.rows, bill.rows, grain === "service" ? "service_name" : "account_id");
    found.push(...(q.groupBy === "period" ? perMonth(joined) : joined));
  }
  // A key with nothing to show (e.g. a service whose rows are all 0) is left out.
  return { months: statuses, rows: found.filter((r) => COVERAGE_MONEY.some((m) => r.cents[m] !== 0)).sort(naturalOrder) };
}

/** Cents summed per currency (sorted by currency code): amounts in different currencies are never added. */
export function centsByCurrency(rows: readonly CoverageAcc[]): { currency: string; cents: CoverageCents }[] {
  const by = new Map<string, CoverageCents>();
  for (const r of rows) {
    let acc = by.get(r.currency);
    if (!acc) by.set(r.currency, (acc = zeroCents()));
    for (const m of COVERAGE_MONEY) acc[m] += r.cents[m];
  }
  return [...by.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([currency, cents]) => ({ currency, cents }));
}

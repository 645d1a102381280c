/**
 * Coverage and utilization of commitments, read from the allocation reports' own queries (one
 * home for the allocation rule): per month, the commitment side from commitment_cost_by_account
 * / commitment_cost_by_service (Used cost plus the pro-rata share of Unused cost, covered
 * on-demand cost, savings) and the uncovered side from the cloud bill reports' ondemand_cost
 * (every service, also those no commitment touches). The commitment grain, which no report has,
 * reads lib/billing/queries.ts `coverageAndUtilization`.
 */
import * as z from "zod";
import { coverageAndUtilization } from "../../billing/queries.ts";
import { queryRows, type Provider } from "../../billing/sql.ts";
import { NotFoundError, ValidationError } from "../../errors.ts";
import { fromCents, toCents } from "../../pricing/display.ts";
import { findReport } from "../../reports/catalog.ts";
import { liveReportSql, reportPeriods, reportRows, typed, type ReportRow } from "../../reports/service.ts";
import { defineTool, moneyText, providerEnum, ratio, totalsByCurrency, type ToolContext } from "./common.ts";

const MONEY = ["commitment_used_cost", "commitment_unused_allocated_cost", "commitment_cost", "covered_ondemand_cost", "ondemand_cost", "savings"] as const;
type Money = (typeof MONEY)[number];
type Cents = Record<Money, number>;

const figures = {
  commitment_used_cost: z.number(),
  commitment_unused_allocated_cost: z.number(),
  commitment_cost: z.number(),
  covered_ondemand_cost: z.number(),
  ondemand_cost: z.number(),
  savings: z.number(),
  coverage: z.number().nullable(),
  utilization: z.number().nullable(),
};

const coverageRow = z.object({
  month: z.string(),
  provider: z.string(),
  currency: z.string(),
  key: z.string().nullable(),
  account_name: z.string().nullable(),
  ...figures,
});
type CoverageRow = z.infer<typeof coverageRow>;

const MONTH_RE = /^\d{4}-\d{2}$/;
const MAX_MONTHS = 36;

const monthIndex = (m: string) => Number(m.slice(0, 4)) * 12 + Number(m.slice(5, 7)) - 1;
const monthOf = (i: number) => `${String(Math.floor(i / 12)).padStart(4, "0")}-${String((i % 12) + 1).padStart(2, "0")}`;

function checkMonth(name: string, m: string): number {
  const mm = Number(m.slice(5, 7));
  if (!MONTH_RE.test(m) || mm < 1 || mm > 12) throw new ValidationError(`${name} must be a month YYYY-MM.`, { [name]: ["a month YYYY-MM"] });
  return monthIndex(m);
}

/** The window's months: default the current month and the two before it; never a future month. */
export function resolveMonths(now: Date, a: { start_month?: string; end_month?: string }): string[] {
  const current = now.getUTCFullYear() * 12 + now.getUTCMonth();
  const end = a.end_month ? checkMonth("end_month", a.end_month) : current;
  const start = a.start_month ? checkMonth("start_month", a.start_month) : end - 2;
  if (end < start) throw new ValidationError("end_month must not be before start_month.", { end_month: ["not before start_month"] });
  if (end > current) throw new ValidationError(`end_month is after the current month ${monthOf(current)}: there is no billing data for future months.`, { end_month: ["not after the current month"] });
  if (end - start + 1 > MAX_MONTHS) throw new ValidationError(`The window may span at most ${MAX_MONTHS} months.`, { start_month: [`at most ${MAX_MONTHS} months`] });
  const out: string[] = [];
  for (let i = start; i <= end; i++) out.push(monthOf(i));
  return out;
}

type MonthStatus = "finalized" | "in_progress" | "not_closed" | "no_data";

/**
 * A report month's rows as the REST API serves them (frozen snapshot once finalized, live rows
 * before). An on_period_close report (cloud_bill_by_account) serves no rows until its month is
 * closed and frozen: then the report's own query, live, stands in (status `not_closed`). A month
 * without billing data has no rows (`no_data`).
 */
async function reportMonth(ctx: ToolContext, type: string, month: string, provider: Provider | undefined): Promise<{ rows: ReportRow[]; status: MonthStatus }> {
  try {
    const r = await reportRows(ctx.s.handle, ctx.orgId, type, { year: month.slice(0, 4), month: String(Number(month.slice(5, 7))), ...(provider ? { provider } : {}) }, ctx.now, {
      reader: ctx.s.reportReader,
      queryTimeoutMs: ctx.s.config.reportQueryTimeoutSeconds * 1000,
    });
    if (r.period_status !== null) return { rows: r.rows, status: r.period_status };
  } catch (e) {
    if (e instanceof NotFoundError && e.code === "period_not_available") return { rows: [], status: "no_data" };
    throw e;
  }
  const def = findReport(type)!;
  const { text, params } = liveReportSql(def, ctx.orgId, `${month}-01`, provider ?? null, {});
  const raw = await queryRows<Record<string, unknown>>(ctx.s.db, text, params);
  return { rows: raw.map((r) => typed(def, r)), status: "not_closed" };
}

const zero = (): Cents => ({ commitment_used_cost: 0, commitment_unused_allocated_cost: 0, commitment_cost: 0, covered_ondemand_cost: 0, ondemand_cost: 0, savings: 0 });
const c = (v: unknown) => toCents(Number(v ?? 0));

/** Shown money and the ratios derived from it: coverage = covered ÷ (covered + on-demand), utilization = used ÷ (used + unused allocated). */
function shown(x: Cents, coverageApplies = true) {
  const used = x.commitment_used_cost;
  const unused = x.commitment_unused_allocated_cost;
  const covered = x.covered_ondemand_cost;
  const od = x.ondemand_cost;
  return {
    ...(Object.fromEntries(MONEY.map((m) => [m, fromCents(x[m])])) as Record<Money, number>),
    coverage: coverageApplies && covered + od !== 0 ? ratio(covered / (covered + od)) : null,
    utilization: used + unused !== 0 ? ratio(used / (used + unused)) : null,
  };
}

interface Acc {
  month: string;
  provider: string;
  currency: string;
  key: string | null;
  account_name: string | null;
  cents: Cents;
}

/** Rows of one month from a commitment report and a bill report, joined on (provider, currency, key). */
function joinMonth(month: string, commitmentRows: ReportRow[], billRows: ReportRow[], keyCol: string): Acc[] {
  const by = new Map<string, Acc>();
  const get = (r: ReportRow) => {
    const provider = String(r.provider);
    const currency = String(r.billing_currency ?? "USD");
    const key = r[keyCol] === null || r[keyCol] === undefined ? null : String(r[keyCol]);
    const id = JSON.stringify([provider, currency, key]);
    let acc = by.get(id);
    if (!acc) by.set(id, (acc = { month, provider, currency, key, account_name: null, cents: zero() }));
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
function perMonth(rows: Acc[]): Acc[] {
  const by = new Map<string, Acc>();
  for (const r of rows) {
    const id = JSON.stringify([r.provider, r.currency]);
    let acc = by.get(id);
    if (!acc) by.set(id, (acc = { month: r.month, provider: r.provider, currency: r.currency, key: r.month, account_name: null, cents: zero() }));
    for (const m of MONEY) acc.cents[m] += r.cents[m];
  }
  return [...by.values()];
}

/**
 * Commitment grain (no report has it): Used/Unused/covered per commitment by charge period month
 * (coverageAndUtilization). A commitment's Unused cost is wholly its own (its allocation to
 * users sums back to it); on-demand usage belongs to no commitment, so no coverage per
 * commitment. Each row is in the currency of the commitment's billing rows.
 */
async function commitmentMonth(ctx: ToolContext, month: string, provider: Provider | undefined): Promise<Acc[]> {
  const from = new Date(`${month}-01T00:00:00Z`);
  const to = new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + 1, 1));
  const rows = await coverageAndUtilization(ctx.s.db, ctx.orgId, { provider, from, to, groupBy: "commitment" });
  if (!rows.length) return [];
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

const bySize = (r: Acc) => r.cents.commitment_cost + r.cents.ondemand_cost + r.cents.covered_ondemand_cost;
const naturalOrder = (x: Acc, y: Acc) => x.month.localeCompare(y.month) || x.provider.localeCompare(y.provider) || x.currency.localeCompare(y.currency) || (x.key ?? "").localeCompare(y.key ?? "");

export const coverageUtilizationTool = defineTool({
  name: "get_coverage_and_utilization",
  title: "Commitment coverage and utilization",
  description: [
    "Commitment coverage and utilization per month (the months of the window, YYYY-MM; default the current month and the two before it), grouped by linked account, service, month (`period`) or commitment, each row in one billing currency (amounts in different currencies are never added; totals are per currency).",
    "Figures, as the allocation reports show them (money in cents): commitment_used_cost (EffectiveCost of the commitment-covered usage), commitment_unused_allocated_cost (the commitments' Unused cost spread over the accounts/services that used each commitment, pro rata to their used cost, as the reports do; kept on the holding account only when nobody used the commitment), commitment_cost = used + unused allocated, covered_ondemand_cost (on-demand equivalent, list price, of the covered usage), savings = covered_ondemand_cost − commitment_used_cost, and ondemand_cost = the cloud bill reports' ondemand_cost column: EffectiveCost of every Usage charge without a commitment (ChargeCategory Usage, no CommitmentDiscountId), of ALL services and pricing categories, including services no commitment covers (e.g. RDS on demand when only EC2 is reserved) and spot; purchases, tax, credits and support are not in it.",
    "coverage = covered_ondemand_cost ÷ (covered_ondemand_cost + ondemand_cost) and utilization = commitment_used_cost ÷ (commitment_used_cost + commitment_unused_allocated_cost), 0-1 to 6 decimals, from the cents shown (null when the denominator is 0).",
    "Sources (billing periods, i.e. invoice months): group_by=account reads commitment_cost_by_account + cloud_bill_by_account (its commitment columns equal that report per account and month, to the cent); service reads commitment_cost_by_service + cloud_bill_by_service; period sums the account rows per month, provider and currency; commitment has no report (per commitment id, by charge period month, its own Unused cost, no on-demand and no coverage). A month not closed yet reads cloud_bill_by_account's query live (the report itself shows it only once the month is closed).",
    "Totals: per currency, the sums of all shown rows (also those past the limit), ratios derived from the summed cents.",
  ].join(" "),
  scopes: [],
  input: {
    group_by: z.enum(["period", "account", "service", "commitment"]).default("period").describe("period = calendar month (key YYYY-MM); account = linked account (key account_id); service = FOCUS ServiceName; commitment = provider commitment id."),
    provider: providerEnum.optional().describe("Only this cloud provider."),
    start_month: z.string().regex(MONTH_RE, "a month YYYY-MM").optional().describe("First month (YYYY-MM, inclusive). Default: two months before end_month."),
    end_month: z.string().regex(MONTH_RE, "a month YYYY-MM").optional().describe("Last month (YYYY-MM, inclusive; not after the current month). Default: the current month."),
    limit: z.number().int().min(1).max(1000).default(200).describe("Maximum rows returned (1-1000): over it, the rows with the largest commitment + on-demand cost are kept; totals still cover every row."),
  },
  output: {
    window: z.object({ start_month: z.string(), end_month: z.string() }),
    group_by: z.string(),
    months: z.array(z.object({ month: z.string(), status: z.enum(["finalized", "in_progress", "not_closed", "no_data"]) })),
    totals: z.array(z.object({ currency: z.string(), ...figures })),
    total_rows: z.number().int(),
    truncated: z.boolean(),
    rows: z.array(coverageRow),
  },
  async run(ctx, a) {
    const months = resolveMonths(ctx.now, a);
    const found: Acc[] = [];
    const statuses: { month: string; status: MonthStatus }[] = [];
    // By commitment no report rows are read: the months' status comes from the report's periods.
    const periods =
      a.group_by === "commitment"
        ? new Map((await reportPeriods(ctx.s.db, ctx.orgId, findReport("commitment_cost_by_account")!, { provider: a.provider, filters: {} }, ctx.now)).map((p) => [`${p.year}-${String(p.month).padStart(2, "0")}`, p.status]))
        : null;
    for (const month of months) {
      if (periods) {
        statuses.push({ month, status: periods.get(month) ?? "no_data" });
        found.push(...(await commitmentMonth(ctx, month, a.provider)));
        continue;
      }
      const grain = a.group_by === "service" ? "service" : "account";
      const commitment = await reportMonth(ctx, `commitment_cost_by_${grain}`, month, a.provider);
      statuses.push({ month, status: commitment.status });
      const bill = await reportMonth(ctx, `cloud_bill_by_${grain}`, month, a.provider);
      const joined = joinMonth(month, commitment.rows, bill.rows, grain === "service" ? "service_name" : "account_id");
      found.push(...(a.group_by === "period" ? perMonth(joined) : joined));
    }
    // A key with nothing to show (e.g. a service whose rows are all 0) is left out.
    const all = found.filter((r) => MONEY.some((m) => r.cents[m] !== 0)).sort(naturalOrder);
    const coverageApplies = a.group_by !== "commitment";
    const view = (r: Acc): CoverageRow => ({ month: r.month, provider: r.provider, currency: r.currency, key: r.key, account_name: r.account_name, ...shown(r.cents, coverageApplies) });
    const shownRows = all.map(view);
    const totals = totalsByCurrency(shownRows, MONEY).map((t) => {
      const cents = Object.fromEntries(MONEY.map((m) => [m, toCents(t[m])])) as Cents;
      return { currency: t.currency, ...shown(cents, coverageApplies) };
    });
    const kept =
      all.length <= a.limit
        ? all
        : a.group_by === "period"
          ? all.slice(-a.limit)
          : [...all].sort((x, y) => bySize(y) - bySize(x) || naturalOrder(x, y)).slice(0, a.limit).sort(naturalOrder);
    const pct = (v: number | null) => (v === null ? "n/a" : `${(v * 100).toFixed(1)}%`);
    return {
      structured: {
        window: { start_month: months[0]!, end_month: months[months.length - 1]! },
        group_by: a.group_by,
        months: statuses,
        totals,
        total_rows: all.length,
        truncated: kept.length < all.length,
        rows: kept.map(view),
      },
      summary: totals.length
        ? `${months[0]} to ${months[months.length - 1]}: ${totals.map((t) => `${t.currency}: coverage ${pct(t.coverage)}, utilization ${pct(t.utilization)}, commitment cost ${t.commitment_cost}, on-demand ${t.ondemand_cost}`).join("; ")}; savings ${moneyText(totals, "savings")}.`
        : `No commitment or on-demand usage from ${months[0]} to ${months[months.length - 1]}.`,
    };
  },
});

export const coverageTools = [coverageUtilizationTool];

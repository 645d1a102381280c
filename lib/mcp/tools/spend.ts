/** Spend and forecasting over the FOCUS billing data (lib/billing). */
import * as z from "zod";
import { MAX_FILTER_VALUES, MAX_LIMIT, queryCosts, type CostFilters, type CostRow, type CostTotals, type CostWindow } from "../../billing/costQuery.ts";
import { spendBy } from "../../billing/queries.ts";
import type { Provider } from "../../billing/sql.ts";
import { addDaysIso, FORECAST_METHOD, forecastSpend, lastCompleteDay, monthEnd, predict, type DailyPoint } from "../forecast.ts";
import { fromCents, rate6, sumCents, toCents } from "../../pricing/display.ts";
import { cents, defineTool, moneyText, type ToolContext, providerEnum, ratio, resolveWindow, totalsByCurrency, windowInput, windowOutput, ymd } from "./common.ts";

const DAY = 86_400_000;

const MONEY_FIELDS = ["billed_cost", "effective_cost", "ondemand_cost", "commitment_cost", "other_cost"] as const;

/** A currency code (FOCUS BillingCurrency, ISO 4217). */
const currencyInput = z.string().regex(/^[A-Z]{3}$/, "an ISO 4217 currency code in capitals, e.g. USD");

const spendRow = z.object({
  key: z.string().nullable(),
  provider: z.string(),
  currency: z.string(),
  billed_cost: z.number(),
  effective_cost: z.number(),
  ondemand_cost: z.number(),
  commitment_cost: z.number(),
  other_cost: z.number(),
});

const spendTotals = z.object({
  currency: z.string(),
  billed_cost: z.number(),
  effective_cost: z.number(),
  ondemand_cost: z.number(),
  commitment_cost: z.number(),
  other_cost: z.number(),
});

type SpendGroup = "month" | "day" | "account" | "service";

/**
 * A row as shown: the cents of queryCosts (the reports' rounding); its effective cost is the
 * sum of its shown on-demand, commitment and other cost there already.
 */
const shownRow = (group: SpendGroup, r: CostRow) => ({
  key: r.keys[group] ?? null,
  provider: r.keys.provider!,
  currency: r.currency,
  billed_cost: r.billed_cost,
  effective_cost: r.effective_cost,
  ondemand_cost: r.ondemand_cost,
  commitment_cost: r.commitment_cost,
  other_cost: r.other_cost,
});
type ShownSpendRow = ReturnType<typeof shownRow>;

/**
 * Over the limit: the largest accounts/services of each currency (ranked within their currency,
 * amounts of different currencies are not compared), or the most recent months/days. Shown by
 * currency, then provider and key (accounts/services: largest first).
 */
function keep(rows: ShownSpendRow[], groupBy: SpendGroup, limit: number): ShownSpendRow[] {
  if (groupBy === "account" || groupBy === "service") {
    const rank = new Map<ShownSpendRow, number>();
    const byCurrency = new Map<string, ShownSpendRow[]>();
    for (const r of rows) byCurrency.set(r.currency, [...(byCurrency.get(r.currency) ?? []), r]);
    for (const list of byCurrency.values())
      list.sort((x, y) => y.effective_cost - x.effective_cost || (x.key ?? "").localeCompare(y.key ?? "") || x.provider.localeCompare(y.provider)).forEach((r, i) => rank.set(r, i));
    return [...rows]
      .sort((x, y) => rank.get(x)! - rank.get(y)! || x.currency.localeCompare(y.currency))
      .slice(0, limit)
      .sort((x, y) => x.currency.localeCompare(y.currency) || rank.get(x)! - rank.get(y)!);
  }
  return [...rows]
    .sort((x, y) => (y.key ?? "").localeCompare(x.key ?? "") || x.currency.localeCompare(y.currency) || x.provider.localeCompare(y.provider))
    .slice(0, limit)
    .sort((x, y) => x.currency.localeCompare(y.currency) || x.provider.localeCompare(y.provider) || (x.key ?? "").localeCompare(y.key ?? ""));
}

const PROVIDERS = providerEnum.options.length;
const utcMonth = (d: Date, add = 0) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + add, 1));

/** The days [from, to) (UTC, YYYY-MM-DD), the last first. */
function daysDesc(from: Date, to: Date): string[] {
  const out: string[] = [];
  for (let t = to.getTime() - DAY; t >= from.getTime(); t -= DAY) out.push(ymd(new Date(t)));
  return out;
}

/**
 * What one cost query of a day/month grouping reads: whole calendar months (`window`: the
 * rounding of the reports, whose periods are months), and for a month the window covers only
 * in part, the window's days of it (`days`, a filter: it never changes the cents it keeps).
 * `keys` are the group keys it can hold, the last first.
 */
interface Segment {
  window: CostWindow;
  days: string[] | null;
  keys: string[];
}

/** The window cut into its partial first month, its whole months and its partial last month (at most three segments), the last first. */
function segments(from: Date, to: Date, group: "month" | "day"): Segment[] {
  const out: Segment[] = [];
  let whole = null as CostWindow | null;
  for (let m = utcMonth(from); m < to; m = utcMonth(m, 1)) {
    const next = utcMonth(m, 1);
    if (m >= from && next <= to) {
      whole = { from: whole ? whole.from : m, to: next };
      continue;
    }
    if (whole) out.push({ window: whole, days: null, keys: [] });
    whole = null;
    const days = daysDesc(m > from ? m : from, next < to ? next : to);
    out.push({ window: { from: m, to: next }, days, keys: [] });
  }
  if (whole) out.push({ window: whole, days: null, keys: [] });
  for (const seg of out) {
    const days = seg.days ?? daysDesc(seg.window.from, seg.window.to);
    seg.keys = group === "day" ? days : [...new Set(days.map((d) => d.slice(0, 7)))];
  }
  return out.reverse();
}

interface SpendRead {
  rows: CostRow[];
  totals: CostTotals[];
  total_rows: number;
}

/**
 * Spend by month or day: each segment is one cost query (rounded over its whole months, as
 * cloud_bill_daily and the monthly reports), the last first; once `limit` rows are in, older
 * segments give only their totals. A segment of more than MAX_LIMIT rows is read again, on the
 * same window, by its most recent keys (a filter on them: same cents) until `need` rows are in.
 */
async function spendByTime(ctx: ToolContext, w: CostWindow, group: "month" | "day", scope: { provider?: Provider; currency?: string }, limit: number): Promise<SpendRead> {
  const out: SpendRead = { rows: [], totals: [], total_rows: 0 };
  const groupBy = [group, "provider"];
  for (const seg of segments(w.from, w.to, group)) {
    const need = limit - out.rows.length;
    const filters: CostFilters = { ...(scope.provider ? { provider: scope.provider } : {}), ...(seg.days ? { day: seg.days } : {}) };
    const r = await queryCosts(ctx.s.db, ctx.orgId, { window: seg.window, groupBy, filters, currency: scope.currency, limit: need > 0 ? MAX_LIMIT : 1 });
    out.totals.push(...r.totals);
    out.total_rows += r.total_rows;
    if (need <= 0) continue;
    if (!r.truncated) {
      out.rows.push(...r.rows);
      continue;
    }
    // Rows of a key: at most one per provider and currency; chunks of keys that fit a query.
    const size = Math.max(1, Math.min(MAX_FILTER_VALUES, Math.floor(MAX_LIMIT / (PROVIDERS * Math.max(1, r.totals.length)))));
    let got = 0;
    for (let i = 0; i < seg.keys.length && got < need; i += size) {
      const chunk = await queryCosts(ctx.s.db, ctx.orgId, { window: seg.window, groupBy, filters: { ...filters, [group]: seg.keys.slice(i, i + size) }, currency: scope.currency, limit: MAX_LIMIT });
      out.rows.push(...chunk.rows);
      got += chunk.rows.length;
    }
  }
  return out;
}

/**
 * Spend by account or service: one cost query over the window (whole months: the cents of
 * cloud_bill_by_account / cloud_bill_by_service). Over MAX_LIMIT rows, the query keeps the
 * largest across currencies: each currency short of its `limit` largest is read on its own.
 */
async function spendByKey(ctx: ToolContext, w: CostWindow, group: "account" | "service", scope: { provider?: Provider; currency?: string }, limit: number): Promise<SpendRead> {
  const filters: CostFilters = scope.provider ? { provider: scope.provider } : {};
  const q = { window: w, groupBy: [group, "provider"], filters };
  const r = await queryCosts(ctx.s.db, ctx.orgId, { ...q, currency: scope.currency, limit: MAX_LIMIT });
  if (!r.truncated) return r;
  const rows: CostRow[] = [];
  for (const t of r.totals) {
    const mine = r.rows.filter((x) => x.currency === t.currency);
    rows.push(...(mine.length >= Math.min(limit, t.rows) ? mine : (await queryCosts(ctx.s.db, ctx.orgId, { ...q, currency: t.currency, limit })).rows));
  }
  return { rows, totals: r.totals, total_rows: r.total_rows };
}

export const spendTool = defineTool({
  name: "get_spend",
  title: "Cloud spend",
  description:
    "Cloud spend for a window of days grouped by month, day, linked account or service, always per provider and billing currency: billed cost (invoice view, upfront purchases when paid), effective cost (amortized: what the usage really cost), and the split into on-demand, commitment and other (tax, credits, adjustments) effective cost. Every row carries its `currency` (FOCUS BillingCurrency); amounts in different currencies are never added: `totals` has one entry per currency. Money is in cents, rounded as the allocation reports (and query_costs) round it: per invoice (provider, currency, billing account, month) the cents add up to the invoice's exact amount; days and months are rounded over their whole calendar month, so a day shows the cents of the cloud_bill_daily report and a whole month those of the monthly cloud_bill reports; accounts and services are rounded over the window (a whole month: the cents of cloud_bill_by_account / cloud_bill_by_service). A row's effective cost is the sum of its on-demand, commitment and other cost as shown, and the totals are the sums of every row of the window in that currency (all total_rows, also those left out by the limit). Months and days are those of the charge (UTC).",
  scopes: [],
  input: {
    group_by: z.enum(["month", "day", "account", "service"]).default("month").describe("Dimension of the rows (each row is also per provider and currency)."),
    provider: providerEnum.optional().describe("Only this cloud provider."),
    currency: currencyInput.optional().describe("Only spend billed in this currency (ISO 4217, e.g. USD, EUR). Default: every currency, each with its own rows and totals."),
    ...windowInput,
    limit: z.number().int().min(1).max(MAX_LIMIT).default(200).describe("Maximum rows returned: over it, the largest accounts/services of each currency or the most recent months/days are kept."),
  },
  output: {
    window: windowOutput,
    group_by: z.string(),
    totals: z.array(spendTotals).describe("One entry per billing currency (sorted by code): the sums of that currency's rows as shown."),
    total_rows: z.number().int(),
    truncated: z.boolean(),
    rows: z.array(spendRow),
  },
  async run(ctx, a) {
    const w = resolveWindow(ctx.now, a);
    const scope = { provider: a.provider, currency: a.currency };
    const read = a.group_by === "month" || a.group_by === "day" ? await spendByTime(ctx, w, a.group_by, scope, a.limit) : await spendByKey(ctx, w, a.group_by, scope, a.limit);
    // Totals per currency: the sums of every row's cents (all of them, not only those kept under the limit).
    const totals = totalsByCurrency(read.totals, MONEY_FIELDS);
    const out = keep(read.rows.map((r) => shownRow(a.group_by, r)), a.group_by, a.limit);
    return {
      structured: { window: { start_date: w.start_date, end_date: w.end_date }, group_by: a.group_by, totals, total_rows: read.total_rows, truncated: out.length < read.total_rows, rows: out },
      summary: `Effective (amortized) spend ${moneyText(totals, "effective_cost")}, billed ${moneyText(totals, "billed_cost")}, between ${w.start_date} and ${w.end_date} (${read.total_rows} row(s) by ${a.group_by}${totals.length > 1 ? ", per currency: never added together" : ""}).`,
    };
  },
});

const point = z.object({ date: z.string(), value: z.number() });

/** Cents of each (currency, day YYYY-MM-DD). */
type ShownDays = Map<string, Map<string, number>>;

function addDay(out: ShownDays, currency: string, date: string, c: number) {
  let days = out.get(currency);
  if (!days) out.set(currency, (days = new Map()));
  days.set(date, (days.get(date) ?? 0) + c);
}

/**
 * The days of the window as the daily bill report (cloud_bill_daily) shows them: one cost query
 * by day over whole billing months, rounded per invoice as the report is, so each day's cents
 * are that report's (a day billed in two months is the sum of both months' rows). Σ in cents
 * per currency and day.
 */
async function shownDaysOf(ctx: ToolContext, w: CostWindow, provider: Provider | undefined): Promise<ShownDays> {
  const one = await queryCosts(ctx.s.db, ctx.orgId, { window: w, groupBy: ["day"], filters: provider ? { provider } : {}, limit: MAX_LIMIT });
  const rows = one.truncated ? (await spendByTime(ctx, w, "day", { provider }, Number.MAX_SAFE_INTEGER)).rows : one.rows;
  const out: ShownDays = new Map();
  for (const r of rows) addDay(out, r.currency, r.keys.day!, toCents(r.effective_cost));
  return out;
}

export const forecastTool = defineTool({
  name: "forecast_spend",
  title: "Spend forecast",
  description:
    "Forecasts daily amortized cloud spend (effective cost) of ONE billing currency (`currency`, default the organization's largest by spend in the history window; the answer says which, and lists the spend of every currency found) for the next N days after the last complete day, with an 80% interval of the total, the projected month-end total of the current month (actual of the complete days + forecast of the remaining days, today included), the method used and its back-test error on the most recent complete days (WAPE/MAPE, next to a seasonal-naive baseline). Only complete days are history: never today (UTC), nor trailing days the billing data does not reach the end of yet (exports lag); `history.last_complete_date` and `history.excluded_incomplete_days` say which. Method: linear trend + day-of-week profile fitted on the complete days of the last history_days days.",
  scopes: [],
  input: {
    horizon_days: z.number().int().min(1).max(92).default(30).describe("Days to forecast (1-92), from the day after the last complete day."),
    history_days: z.number().int().min(14).max(365).default(90).describe("Days before today (14-365) read as history; the model is fitted on the complete ones."),
    provider: providerEnum.optional().describe("Only this cloud provider."),
    currency: currencyInput.optional().describe("Billing currency to forecast (ISO 4217, e.g. USD, EUR). Default: the currency with the largest effective spend in the history window."),
  },
  output: {
    method: z.string(),
    model: z.enum(["trend_weekday", "trend", "mean"]),
    currency: z.string().nullable().describe("The billing currency of every amount of this answer (null: no billing data)."),
    currencies: z.array(z.object({ currency: z.string(), effective_cost: z.number() })).describe("Effective spend of each currency in the history window read (today included), for context: only `currency` is forecast."),
    history: z.object({
      start_date: z.string(),
      end_date: z.string().nullable().describe("The last complete day fitted (= last_complete_date), null without data."),
      last_data_date: z.string().nullable().describe("The last day with billing rows in this currency (may be incomplete)."),
      data_end: z.string().nullable().describe("How far the billing data reaches (ISO 8601): the ChargePeriodEnd that decided the last complete day."),
      last_complete_date: z.string().nullable(),
      excluded_incomplete_days: z.array(z.string()).describe("Days with billing rows after the last complete day (today, lagging exports): left out of the fit and the actuals, forecast instead."),
      stale_providers: z.array(z.string()).describe("Providers whose data stopped over 7 days before the freshest: not waited for."),
      one_off_days: z.array(z.string()).describe("Complete days left out of the fit as one-off (e.g. a monthly tax or credit): their residual exceeded 5 robust standard deviations."),
      days: z.number().int().describe("Days fitted (from the first day with data to the last complete day; days without rows count as zero)."),
      total: z.number().describe("Σ of the fitted days as shown: each day in the cents of the daily bill report (cloud_bill_daily), summed over the billing months billing it."),
    }),
    forecast: z.object({ start_date: z.string().nullable(), days: z.number().int(), total: z.number(), total_low_80: z.number(), total_high_80: z.number(), trend_per_day: z.number(), daily: z.array(point) }),
    month_end: z
      .object({
        month: z.string(),
        actual_to_date: z.number().describe("Σ of the month's complete days as shown in actual_daily: the cents of the daily bill report (cloud_bill_daily) of each day, as in the history."),
        actual_days: z.number().int(),
        actual_source: z.enum(["cloud_bill_daily"]).describe("Whose cents the days (history and actuals) are: the daily bill report's, computed by its rule (per invoice, whole billing months) from the billing rows."),
        actual_daily: z.array(point),
        forecast_remaining: z.number().describe("Σ of the forecast of the month's remaining days (each rounded to cents), today included."),
        remaining_days: z.number().int(),
        projected_total: z.number(),
      })
      .nullable(),
    backtest: z.object({ holdout_days: z.number().int(), wape: z.number().nullable(), mape: z.number().nullable(), total_error: z.number().nullable(), baseline_wape: z.number().nullable() }).nullable(),
  },
  async run(ctx, a) {
    const today = new Date(Date.UTC(ctx.now.getUTCFullYear(), ctx.now.getUTCMonth(), ctx.now.getUTCDate()));
    const from = new Date(today.getTime() - a.history_days * DAY);
    // Today is read too (to say it was left out and how far the data reaches), never fitted.
    const to = new Date(today.getTime() + DAY);
    const all = await spendBy(ctx.s.db, ctx.orgId, { provider: a.provider, from, to, groupBy: "day" });
    // The days' money as the daily bill report shows it, over every billing month the window's
    // rows can be billed in (from the month before, as spendBy reads).
    const shownDays = await shownDaysOf(ctx, { from: utcMonth(from, -1), to: utcMonth(to, 1) }, a.provider);
    const first = ymd(from);
    const last = ymd(today);
    const inWindow = (d: string) => d >= first && d <= last;
    const byCurrency = [...shownDays]
      .map(([cur, days]) => ({ currency: cur, effective_cost: fromCents([...days].reduce((acc, [d, c]) => acc + (inWindow(d) ? c : 0), 0)) }))
      .filter((x) => all.some((r) => r.currency === x.currency))
      .sort((x, y) => x.currency.localeCompare(y.currency));
    const currency = a.currency ?? [...byCurrency].sort((x, y) => y.effective_cost - x.effective_cost || x.currency.localeCompare(y.currency))[0]?.currency ?? null;
    const rows = all.filter((r) => r.key && r.currency === currency);

    // How far each provider's data reaches: the latest data end of its days.
    const ends = new Map<string, string | null>();
    for (const r of rows) {
      const prev = ends.get(r.provider) ?? null;
      ends.set(r.provider, r.data_end !== null && (prev === null || Date.parse(r.data_end) > Date.parse(prev)) ? r.data_end : prev);
    }
    const c = lastCompleteDay(ctx.now, [...ends].map(([provider, data_end]) => ({ provider, data_end })));
    const points: DailyPoint[] = [...(shownDays.get(currency ?? "") ?? [])].filter(([d]) => inWindow(d)).map(([date, c]) => ({ date, value: fromCents(c) }));
    const dates = [...new Set(rows.map((r) => r.key!))].sort();
    const lastData = dates.length ? dates[dates.length - 1]! : null;
    const excluded = dates.filter((d) => d > c.last_complete_date);
    const f = forecastSpend(points, a.horizon_days, { through: c.last_complete_date });
    const hasHistory = f.series.length > 0;
    const lastComplete = hasHistory ? c.last_complete_date : null;

    let monthEndOut = null;
    if (hasHistory) {
      const month = ymd(ctx.now).slice(0, 7);
      const m = monthEnd(f.series, (start, n) => predict(f.model, start, n), month, c.last_complete_date);
      // Every part is shown in cents and the sums are the sums of the shown days: the actual days
      // as the history has them (the daily bill report's cents), the forecast days rounded each.
      const actualDaily = m.actual.map((p) => ({ date: p.date, value: cents(p.value) }));
      const remainingDaily = m.remaining.map((p) => ({ date: p.date, value: cents(p.value) }));
      const actual = toCents(sumCents(actualDaily.map((p) => p.value)));
      const remaining = toCents(sumCents(remainingDaily.map((p) => p.value)));
      monthEndOut = {
        month,
        actual_to_date: fromCents(actual),
        actual_days: actualDaily.length,
        actual_source: "cloud_bill_daily" as const,
        actual_daily: actualDaily,
        forecast_remaining: fromCents(remaining),
        remaining_days: remainingDaily.length,
        projected_total: fromCents(actual + remaining),
      };
    }
    // Complete days missing before today (a lagging or stopped export).
    const lagDays = Math.round((Date.parse(`${c.today}T00:00:00Z`) - Date.parse(`${c.last_complete_date}T00:00:00Z`)) / DAY) - 1;
    const bt = f.backtest;
    // The forecast total is the sum of the shown daily values; its 80% interval is that total ± the
    // interval's half-width in cents (the low end never below zero).
    const daily = hasHistory ? f.daily.map((p) => ({ date: p.date, value: cents(p.value) })) : [];
    const total = toCents(sumCents(daily.map((p) => p.value)));
    const half = hasHistory ? toCents(f.total_high - f.total) : 0;
    const historyTotal = sumCents(f.series.map((p) => p.value));
    const low = fromCents(Math.max(0, total - half));
    const high = fromCents(total + half);
    return {
      structured: {
        method: FORECAST_METHOD,
        model: f.model.method,
        currency,
        currencies: byCurrency,
        history: {
          start_date: ymd(from),
          end_date: lastComplete,
          last_data_date: lastData,
          data_end: c.data_end,
          last_complete_date: lastComplete,
          excluded_incomplete_days: excluded,
          stale_providers: c.stale_providers,
          one_off_days: f.model.outliers,
          days: f.series.length,
          total: historyTotal,
        },
        forecast: {
          start_date: hasHistory ? addDaysIso(c.last_complete_date, 1) : null,
          days: a.horizon_days,
          total: fromCents(total),
          total_low_80: low,
          total_high_80: high,
          trend_per_day: rate6(f.model.slope),
          daily,
        },
        month_end: monthEndOut,
        backtest: bt ? { holdout_days: bt.holdout_days, wape: ratio(bt.wape), mape: ratio(bt.mape), total_error: ratio(bt.total_error), baseline_wape: ratio(bt.baseline_wape) } : null,
      },
      summary: hasHistory
        ? `${currency} forecast ${fromCents(total)} over the ${a.horizon_days} days from ${addDaysIso(c.last_complete_date, 1)} (80%: ${low}-${high})${monthEndOut ? `; ${monthEndOut.month} projected ${currency} ${monthEndOut.projected_total} (${monthEndOut.actual_days} complete day(s) actual ${monthEndOut.actual_to_date} + ${monthEndOut.remaining_days} day(s) forecast ${monthEndOut.forecast_remaining})` : ""}${bt?.wape != null ? `; back-test error (WAPE) ${(bt.wape * 100).toFixed(1)}% over the last ${bt.holdout_days} complete days (seasonal naive ${bt.baseline_wape != null ? (bt.baseline_wape * 100).toFixed(1) : "–"}%)` : ""}. History complete through ${c.last_complete_date}${excluded.length ? `; left out as incomplete: ${excluded.join(", ")}` : ""}.${lagDays > 0 ? ` Billing data reaches only ${c.data_end}: the ${lagDays} day(s) from ${addDaysIso(c.last_complete_date, 1)} to yesterday are forecast, not actual.` : ""}${byCurrency.length > 1 ? ` Other currencies are not included (${byCurrency.filter((x) => x.currency !== currency).map((x) => x.currency).join(", ")}): forecast them with \`currency\`.` : ""}`
        : currency
          ? `No complete day of ${currency} billing data in the history window (complete through ${c.last_complete_date}): nothing to forecast from.`
          : "No billing data in the history window: nothing to forecast from.",
    };
  },
});

export const spendTools = [spendTool, forecastTool];

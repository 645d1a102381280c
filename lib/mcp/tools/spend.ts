/** Spend and forecasting over the FOCUS billing data (lib/billing). */
import * as z from "zod";
import { spendBy, type SpendRow } from "../../billing/queries.ts";
import { addDaysIso, FORECAST_METHOD, forecastSpend } from "../forecast.ts";
import { fromCents, rate6, sumCents, toCents } from "../../pricing/display.ts";
import { cents, defineTool, providerEnum, ratio, resolveWindow, windowInput, windowOutput, ymd } from "./common.ts";

const DAY = 86_400_000;

const spendRow = z.object({
  key: z.string().nullable(),
  provider: z.string(),
  billed_cost: z.number(),
  effective_cost: z.number(),
  ondemand_cost: z.number(),
  commitment_cost: z.number(),
  other_cost: z.number(),
});

/**
 * A row as shown: each part in cents, and the effective cost derived from the shown parts
 * (on-demand + commitment + other: the three split every effective-cost row), so the row adds up.
 */
const roundRow = (r: SpendRow) => {
  const ondemand = toCents(r.ondemand_cost);
  const commitment = toCents(r.commitment_cost);
  const other = toCents(r.other_cost);
  return {
    key: r.key,
    provider: r.provider,
    billed_cost: cents(r.billed_cost),
    effective_cost: fromCents(ondemand + commitment + other),
    ondemand_cost: fromCents(ondemand),
    commitment_cost: fromCents(commitment),
    other_cost: fromCents(other),
  };
};
type ShownSpendRow = ReturnType<typeof roundRow>;

export const spendTool = defineTool({
  name: "get_spend",
  title: "Cloud spend",
  description:
    "Cloud spend for a window of days grouped by month, day, linked account or service (per provider): billed cost (invoice view, upfront purchases when paid), effective cost (amortized: what the usage really cost), and the split into on-demand, commitment and other (tax, credits, adjustments) effective cost. Money is in the billing currency, rounded to cents; a row's effective cost is the sum of its on-demand, commitment and other cost as shown, and the totals are the sums of every row of the window (all total_rows, also those left out by the limit).",
  scopes: [],
  input: {
    group_by: z.enum(["month", "day", "account", "service"]).default("month").describe("Dimension of the rows."),
    provider: providerEnum.optional().describe("Only this cloud provider."),
    ...windowInput,
    limit: z.number().int().min(1).max(1000).default(200).describe("Maximum rows returned: over it, the largest accounts/services or the most recent months/days are kept."),
  },
  output: {
    window: windowOutput,
    group_by: z.string(),
    totals: spendRow.omit({ key: true, provider: true }),
    total_rows: z.number().int(),
    truncated: z.boolean(),
    rows: z.array(spendRow),
  },
  async run(ctx, a) {
    const w = resolveWindow(ctx.now, a);
    const rows = await spendBy(ctx.s.db, ctx.orgId, { provider: a.provider, from: w.from, to: w.to, groupBy: a.group_by });
    const shown = rows.map(roundRow);
    // Totals: the sums of every row as shown (all of them, not only those kept under the limit).
    const sum = (k: Exclude<keyof ShownSpendRow, "key" | "provider">) => sumCents(shown.map((r) => r[k]));
    const totals = { billed_cost: sum("billed_cost"), effective_cost: sum("effective_cost"), ondemand_cost: sum("ondemand_cost"), commitment_cost: sum("commitment_cost"), other_cost: sum("other_cost") };
    // Over the limit: the largest accounts/services, or the most recent months/days.
    const out =
      a.group_by === "account" || a.group_by === "service"
        ? [...shown].sort((x, y) => y.effective_cost - x.effective_cost).slice(0, a.limit)
        : [...shown]
            .sort((x, y) => (y.key ?? "").localeCompare(x.key ?? "") || x.provider.localeCompare(y.provider))
            .slice(0, a.limit)
            .sort((x, y) => x.provider.localeCompare(y.provider) || (x.key ?? "").localeCompare(y.key ?? ""));
    return {
      structured: { window: { start_date: w.start_date, end_date: w.end_date }, group_by: a.group_by, totals, total_rows: rows.length, truncated: out.length < rows.length, rows: out },
      summary: `Effective (amortized) spend ${totals.effective_cost}, billed ${totals.billed_cost}, between ${w.start_date} and ${w.end_date} (${rows.length} row(s) by ${a.group_by}).`,
    };
  },
});

const point = z.object({ date: z.string(), value: z.number() });

export const forecastTool = defineTool({
  name: "forecast_spend",
  title: "Spend forecast",
  description:
    "Forecasts daily amortized cloud spend (effective cost) for the next N days after the last day with billing data, with an 80% interval of the total, the projected month-end total of the current month, the method used and its back-test error on the most recent days (WAPE/MAPE, next to a seasonal-naive baseline). Method: linear trend + day-of-week profile fitted on the last history_days days.",
  scopes: [],
  input: {
    horizon_days: z.number().int().min(1).max(92).default(30).describe("Days to forecast (1-92)."),
    history_days: z.number().int().min(14).max(365).default(90).describe("Days of history the model is fitted on (14-365)."),
    provider: providerEnum.optional().describe("Only this cloud provider."),
  },
  output: {
    method: z.string(),
    model: z.enum(["trend_weekday", "trend", "mean"]),
    history: z.object({ start_date: z.string(), last_data_date: z.string().nullable(), days: z.number().int(), total: z.number() }),
    forecast: z.object({ start_date: z.string().nullable(), days: z.number().int(), total: z.number(), total_low_80: z.number(), total_high_80: z.number(), trend_per_day: z.number(), daily: z.array(point) }),
    month_end: z.object({ month: z.string(), actual_to_date: z.number(), forecast_remaining: z.number(), projected_total: z.number() }).nullable(),
    backtest: z.object({ holdout_days: z.number().int(), wape: z.number().nullable(), mape: z.number().nullable(), total_error: z.number().nullable(), baseline_wape: z.number().nullable() }).nullable(),
  },
  async run(ctx, a) {
    const to = new Date(Date.UTC(ctx.now.getUTCFullYear(), ctx.now.getUTCMonth(), ctx.now.getUTCDate() + 1));
    const from = new Date(to.getTime() - a.history_days * DAY);
    const rows = await spendBy(ctx.s.db, ctx.orgId, { provider: a.provider, from, to, groupBy: "day" });
    const history = rows.filter((r) => r.key).map((r) => ({ date: r.key!, value: r.effective_cost }));
    const f = forecastSpend(history, a.horizon_days);
    const dates = [...new Set(history.map((p) => p.date))].sort();
    const last = dates.length ? dates[dates.length - 1]! : null;
    const historyTotal = history.reduce((acc, p) => acc + p.value, 0);

    let monthEnd = null;
    if (last) {
      const month = ymd(ctx.now).slice(0, 7);
      const monthEndDay = ymd(new Date(Date.UTC(ctx.now.getUTCFullYear(), ctx.now.getUTCMonth() + 1, 0)));
      const actual = history.filter((p) => p.date.startsWith(month)).reduce((acc, p) => acc + p.value, 0);
      const remainingDays = Math.round((Date.parse(`${monthEndDay}T00:00:00Z`) - Date.parse(`${last}T00:00:00Z`)) / DAY);
      const remainingDaily = remainingDays > 0 ? (remainingDays <= f.daily.length ? f.daily.slice(0, remainingDays) : forecastSpend(history, remainingDays).daily).filter((p) => p.date.startsWith(month)) : [];
      // The remaining forecast sums its days in cents (the shown daily values, within the
      // horizon); the projection is the sum of the two parts as shown.
      const remaining = sumCents(remainingDaily.map((p) => p.value));
      monthEnd = { month, actual_to_date: cents(actual), forecast_remaining: remaining, projected_total: fromCents(toCents(actual) + toCents(remaining)) };
    }
    const bt = f.backtest;
    // The forecast total is the sum of the shown daily values; its 80% interval is that total ± the
    // interval's half-width in cents (the low end never below zero).
    const daily = f.daily.map((p) => ({ date: p.date, value: cents(p.value) }));
    const total = toCents(sumCents(daily.map((p) => p.value)));
    const half = toCents(f.total_high - f.total);
    return {
      structured: {
        method: FORECAST_METHOD,
        model: f.model.method,
        history: { start_date: ymd(from), last_data_date: last, days: a.history_days, total: cents(historyTotal) },
        forecast: {
          start_date: last ? addDaysIso(last, 1) : null,
          days: a.horizon_days,
          total: fromCents(total),
          total_low_80: fromCents(Math.max(0, total - half)),
          total_high_80: fromCents(total + half),
          trend_per_day: rate6(f.model.slope),
          daily,
        },
        month_end: monthEnd,
        backtest: bt ? { holdout_days: bt.holdout_days, wape: ratio(bt.wape), mape: ratio(bt.mape), total_error: ratio(bt.total_error), baseline_wape: ratio(bt.baseline_wape) } : null,
      },
      summary: last
        ? `Forecast ${fromCents(total)} over the next ${a.horizon_days} days (80%: ${fromCents(Math.max(0, total - half))}-${fromCents(total + half)})${bt?.wape != null ? `; back-test error (WAPE) ${(bt.wape * 100).toFixed(1)}% over the last ${bt.holdout_days} days` : ""}.`
        : "No billing data in the history window: nothing to forecast from.",
    };
  },
});

export const spendTools = [spendTool, forecastTool];

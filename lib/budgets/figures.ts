/**
 * A budget's two figures for a month, from the billing data:
 * - actual: the month's effective (amortized) cost in the budget's currency matching its filter,
 *   exactly as GET /costs shows it for that month and those filters (the same query, the same
 *   cents: lib/billing/costQuery.ts `queryCosts`);
 * - forecast: the month-end projection of the assistant's forecast_spend (lib/mcp/forecast.ts,
 *   as lib/mcp/tools/spend.ts uses it): the same history window, the same daily cents (the daily
 *   bill report's, by the cost explorer's day grouping), the same complete days and model, the
 *   same projection (the month's complete days + the forecast of its remaining days) — here for
 *   the cost the filter keeps. For an unfiltered budget it is forecast_spend's
 *   `month_end.projected_total` of that currency, to the cent.
 */
import type { DbOrTx } from "../db/index.ts";
import { MAX_LIMIT, queryCosts, type CostFilters } from "../billing/costQuery.ts";
import { spendBy, type SpendRow } from "../billing/queries.ts";
import { forecastSpend, lastCompleteDay, monthEnd, predict, type Completeness, type DailyPoint } from "../mcp/forecast.ts";
import { fromCents, toCents } from "../pricing/display.ts";
import type { Provider } from "../billing/sql.ts";

const DAY = 86_400_000;
/** forecast_spend's default history window (days before today). */
export const HISTORY_DAYS = 90;

const ymd = (d: Date) => d.toISOString().slice(0, 10);
const utcMonth = (d: Date, add = 0) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + add, 1));
/** `YYYY-MM` → its window [first day, first day of the next month). */
export const monthWindow = (month: string) => {
  const from = new Date(`${month}-01T00:00:00Z`);
  return { from, to: utcMonth(from, 1) };
};

interface HistoryWindow {
  today: Date;
  from: Date;
  /** Exclusive: today is read (to know how far the data reaches), never fitted. */
  to: Date;
}

function historyWindow(now: Date): HistoryWindow {
  const today = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  return { today, from: new Date(today.getTime() - HISTORY_DAYS * DAY), to: new Date(today.getTime() + DAY) };
}

/**
 * How far each provider's data reaches, per currency (forecast_spend's reading: spendBy by day
 * over the history window). Read once per organization and shared by its budgets.
 */
export async function readDataEnds(db: DbOrTx, orgId: string, now: Date): Promise<SpendRow[]> {
  const w = historyWindow(now);
  return spendBy(db, orgId, { from: w.from, to: w.to, groupBy: "day" });
}

/** The complete days for one currency (and provider, when the budget names one), as forecast_spend decides them. */
export function completenessOf(now: Date, dataEnds: SpendRow[], currency: string, provider?: Provider): Completeness {
  const ends = new Map<string, string | null>();
  for (const r of dataEnds) {
    if (!r.key || r.currency !== currency || (provider && r.provider !== provider)) continue;
    const prev = ends.get(r.provider) ?? null;
    ends.set(r.provider, r.data_end !== null && (prev === null || Date.parse(r.data_end) > Date.parse(prev)) ? r.data_end : prev);
  }
  return lastCompleteDay(now, [...ends].map(([p, data_end]) => ({ provider: p, data_end })));
}

/** Month-to-date actual in cents: GET /costs's total of the month for this currency and these filters. */
export async function actualCents(db: DbOrTx, orgId: string, month: string, currency: string, filters: CostFilters): Promise<number> {
  const r = await queryCosts(db, orgId, { window: monthWindow(month), filters, currency, limit: 1 });
  return toCents(r.totals.find((t) => t.currency === currency)?.effective_cost ?? 0);
}

export interface MonthEndForecast {
  /** Projected month-end total in cents (actual of the complete days + forecast of the rest). */
  cents: number;
  last_complete_date: string;
}

/**
 * Month-end forecasts (cents) of `months` for the cost the filters keep in one currency; a month
 * is absent when there is no complete day of history to forecast from.
 */
export async function monthEndForecasts(
  db: DbOrTx,
  orgId: string,
  now: Date,
  q: { currency: string; filters: CostFilters; months: string[]; completeness: Completeness },
): Promise<Map<string, MonthEndForecast>> {
  const w = historyWindow(now);
  // The days as the daily bill report shows them, over every billing month the window's rows can
  // be billed in (from the month before, as spendBy reads); one currency, so at most ~155 rows.
  const days = await queryCosts(db, orgId, { window: { from: utcMonth(w.from, -1), to: utcMonth(w.to, 1) }, groupBy: ["day"], filters: q.filters, currency: q.currency, limit: MAX_LIMIT });
  const first = ymd(w.from);
  const last = ymd(w.today);
  const byDay = new Map<string, number>();
  for (const r of days.rows) {
    const d = r.keys.day;
    if (d && d >= first && d <= last) byDay.set(d, (byDay.get(d) ?? 0) + toCents(r.effective_cost));
  }
  const points: DailyPoint[] = [...byDay].map(([date, c]) => ({ date, value: fromCents(c) }));
  const c = q.completeness;
  const f = forecastSpend(points, 1, { through: c.last_complete_date });
  const out = new Map<string, MonthEndForecast>();
  if (!f.series.length) return out;
  for (const month of q.months) {
    const m = monthEnd(f.series, (start, n) => predict(f.model, start, n), month, c.last_complete_date);
    // As forecast_spend shows it: each complete day in its cents, each forecast day rounded to cents.
    const cents = [...m.actual, ...m.remaining].reduce((a, p) => a + toCents(p.value), 0);
    out.set(month, { cents, last_complete_date: c.last_complete_date });
  }
  return out;
}


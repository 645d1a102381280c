/**
 * Daily spend forecast: a least-squares linear trend plus an additive day-of-week profile,
 * fitted jointly (one regression: a slope and one level per weekday), i.e. "linear trend +
 * seasonal naive by weekday". Cloud spend is dominated by a slowly moving level with
 * weekday/weekend swings, which this captures with few parameters and no tuning; it is
 * back-tested on the series' own tail so the caller always sees how wrong it has recently been.
 *
 * Only complete days are history (`lastCompleteDay`): today is still being billed and exports
 * lag, so a partial day counted as a full one drags the trend and the month-end projection down.
 *
 * Pure: no database, no clock. Dates are UTC `YYYY-MM-DD`.
 */
import { addDaysIso, lastDayReached, median } from "../billing/days.ts";
const DAY = 86_400_000;

export interface DailyPoint {
  date: string;
  value: number;
}

export interface ForecastModel {
  /** value ≈ intercept + slope · t + weekday[dow(t)], t = days since the first history day. */
  intercept: number;
  slope: number;
  weekday: number[];
  /** Standard deviation of the in-sample residuals. */
  residualStd: number;
  historyStart: string;
  points: number;
  method: "trend_weekday" | "trend" | "mean";
  /** Days left out of the fit as one-off (their residual over OUTLIER_SIGMAS robust standard deviations). */
  outliers: string[];
}

export interface BacktestResult {
  holdout_days: number;
  /** Σ|forecast − actual| ÷ Σ actual over the held-out days. */
  wape: number | null;
  /** Mean of |forecast − actual| ÷ actual over held-out days with actual > 0. */
  mape: number | null;
  /** (Σ forecast − Σ actual) ÷ Σ actual: the error of the period total. */
  total_error: number | null;
  /** WAPE of the baseline "repeat the last 7 days" over the same days. */
  baseline_wape: number | null;
}

const dayIndex = (start: string, d: string) => Math.round((Date.parse(`${d}T00:00:00Z`) - Date.parse(`${start}T00:00:00Z`)) / DAY);
export { addDaysIso };
const dow = (d: string) => new Date(`${d}T00:00:00Z`).getUTCDay();

/**
 * Fills missing days between the first point and the last one (or `through`, when later) with 0
 * (no billing rows = no spend). Points after `through` are dropped.
 */
export function densify(points: DailyPoint[], through?: string): DailyPoint[] {
  const kept = through ? points.filter((p) => p.date <= through) : points;
  if (!kept.length) return [];
  const sorted = [...kept].sort((a, b) => a.date.localeCompare(b.date));
  const byDate = new Map<string, number>();
  for (const p of sorted) byDate.set(p.date, (byDate.get(p.date) ?? 0) + p.value);
  const out: DailyPoint[] = [];
  const first = sorted[0]!.date;
  const last = through && through > sorted[sorted.length - 1]!.date ? through : sorted[sorted.length - 1]!.date;
  const n = dayIndex(first, last);
  const ms0 = Date.parse(`${first}T00:00:00Z`);
  for (let i = 0; i <= n; i++) {
    const d = new Date(ms0 + i * DAY).toISOString().slice(0, 10);
    out.push({ date: d, value: byDate.get(d) ?? 0 });
  }
  return out;
}

/** Residuals over this many robust standard deviations mark a one-off day (left out of the fit). */
export const OUTLIER_SIGMAS = 5;
/** At most this share of the days is left out as one-off. */
export const OUTLIER_MAX_SHARE = 0.1;

interface Coefs {
  intercept: number;
  slope: number;
  weekday: number[];
}

/**
 * Least squares of value ≈ slope · t + level[group(t)] over the kept days (groups: the weekday,
 * or one group), reported as intercept (mean level) + the centred weekday profile.
 */
function leastSquares(history: DailyPoint[], wd: number[], keep: boolean[], byWeekday: boolean): Coefs {
  const k = byWeekday ? 7 : 1;
  const cnt = new Array(k).fill(0);
  const tSum = new Array(k).fill(0);
  const ySum = new Array(k).fill(0);
  const g = byWeekday ? wd : wd.map(() => 0);
  history.forEach((p, t) => {
    if (!keep[t]) return;
    cnt[g[t]!]++;
    tSum[g[t]!] += t;
    ySum[g[t]!] += p.value;
  });
  const tMean = tSum.map((v, i) => (cnt[i] ? v / cnt[i] : 0));
  const yMean = ySum.map((v, i) => (cnt[i] ? v / cnt[i] : 0));
  let sxy = 0;
  let sxx = 0;
  history.forEach((p, t) => {
    if (!keep[t]) return;
    sxy += (t - tMean[g[t]!]!) * (p.value - yMean[g[t]!]!);
    sxx += (t - tMean[g[t]!]!) ** 2;
  });
  const slope = sxx > 0 ? sxy / sxx : 0;
  const level = yMean.map((y, i) => y - slope * tMean[i]!);
  const intercept = level.reduce((x, y) => x + y, 0) / k;
  return { intercept, slope, weekday: byWeekday ? level.map((l) => l - intercept) : new Array(7).fill(0) };
}


/**
 * value ≈ intercept + slope · t + weekday[dow(t)], fitted as one least-squares regression of a
 * slope and one level per weekday: the trend is estimated within weekdays, so a weekday pattern
 * never leaks into the slope (on exactly periodic data the slope is 0 and the fit exact).
 * One-off days (a monthly tax or credit, a single spike) would otherwise bend the weekday level
 * of their weekday for every week forecast: the day with the largest residual is left out while
 * it exceeds OUTLIER_SIGMAS robust standard deviations (1.4826 × the median absolute residual),
 * up to OUTLIER_MAX_SHARE of the days, refitting each time. Under 14 days: a trend only (no
 * weekday profile, no one-off days); under 7: the mean.
 */
export function fit(history: DailyPoint[]): ForecastModel {
  const n = history.length;
  if (n === 0) return { intercept: 0, slope: 0, weekday: new Array(7).fill(0), residualStd: 0, historyStart: "1970-01-01", points: 0, method: "mean", outliers: [] };
  const start = history[0]!.date;
  const mean = history.reduce((a, p) => a + p.value, 0) / n;
  const method: ForecastModel["method"] = n >= 14 ? "trend_weekday" : n >= 7 ? "trend" : "mean";
  const keep = new Array(n).fill(true);
  // Consecutive days: the weekday of the first, then one more each day.
  const first = dow(start);
  const wd = history.map((_, t) => (first + t) % 7);
  let c: Coefs = { intercept: mean, slope: 0, weekday: new Array(7).fill(0) };
  const residual = (t: number) => history[t]!.value - (c.intercept + c.slope * t + c.weekday[wd[t]!]!);
  if (method !== "mean") c = leastSquares(history, wd, keep, method === "trend_weekday");
  const outliers: string[] = [];
  if (method === "trend_weekday") {
    // Float noise of an exact fit is not an outlier.
    const floor = 1e-9 * (history.reduce((a, p) => a + Math.abs(p.value), 0) / n + 1);
    while (outliers.length < Math.floor(OUTLIER_MAX_SHARE * n)) {
      const kept = history.map((_, t) => t).filter((t) => keep[t]);
      const abs = kept.map((t) => Math.abs(residual(t)));
      const sigma = 1.4826 * median(abs);
      // Every weekday keeps at least two days, so its level stays estimated.
      const perWeekday = new Array(7).fill(0);
      for (const t of kept) perWeekday[wd[t]!]++;
      let worst = -1;
      for (let i = 0; i < kept.length; i++) if (perWeekday[wd[kept[i]!]!] > 2 && (worst < 0 || abs[i]! > abs[worst]!)) worst = i;
      if (worst < 0 || abs[worst]! <= OUTLIER_SIGMAS * sigma + floor) break;
      keep[kept[worst]!] = false;
      outliers.push(history[kept[worst]!]!.date);
      c = leastSquares(history, wd, keep, true);
    }
  }
  // The interval's spread covers every day, one-off days included (they do recur).
  let sse = 0;
  history.forEach((_, t) => {
    sse += residual(t) ** 2;
  });
  const dof = Math.max(1, n - (method === "trend_weekday" ? 8 : method === "trend" ? 2 : 1));
  return { ...c, residualStd: Math.sqrt(sse / dof), historyStart: start, points: n, method, outliers: outliers.sort() };
}

/** Forecast of each day in [from, from + days); spend never goes below zero. */
export function predict(m: ForecastModel, from: string, days: number): DailyPoint[] {
  const out: DailyPoint[] = [];
  const t0 = dayIndex(m.historyStart, from);
  const w0 = dow(from);
  const ms0 = Date.parse(`${from}T00:00:00Z`);
  for (let i = 0; i < days; i++) {
    const d = new Date(ms0 + i * DAY).toISOString().slice(0, 10);
    out.push({ date: d, value: Math.max(0, m.intercept + m.slope * (t0 + i) + m.weekday[(w0 + i) % 7]!) });
  }
  return out;
}

/**
 * Seasonal naive: each forecast day repeats the same weekday of the history's last week (the
 * baseline every forecast here is scored against).
 */
export function seasonalNaive(history: DailyPoint[], from: string, days: number): DailyPoint[] {
  const week = history.slice(-7);
  if (!week.length) return predict(fit([]), from, days);
  const offset = dayIndex(week[0]!.date, from);
  const ms0 = Date.parse(`${from}T00:00:00Z`);
  return Array.from({ length: days }, (_, i) => {
    const k = ((((offset + i) % week.length) + week.length) % week.length);
    return { date: new Date(ms0 + i * DAY).toISOString().slice(0, 10), value: week[k]!.value };
  });
}

/**
 * Fits on all but the last `holdout` days and scores the forecast of those days, next to the
 * seasonal-naive baseline (each held-out day = the same weekday of the last fitted week).
 */
export function backtest(history: DailyPoint[], holdout: number): BacktestResult | null {
  if (holdout < 1 || history.length - holdout < 14) return null;
  const train = history.slice(0, history.length - holdout);
  const test = history.slice(history.length - holdout);
  const f = predict(fit(train), test[0]!.date, holdout);
  const base = seasonalNaive(train, test[0]!.date, holdout);
  const actual = test.reduce((a, p) => a + p.value, 0);
  const absErr = test.reduce((a, p, i) => a + Math.abs(f[i]!.value - p.value), 0);
  const baseErr = test.reduce((a, p, i) => a + Math.abs(base[i]!.value - p.value), 0);
  const pos = test.map((p, i) => [p.value, f[i]!.value] as const).filter(([a]) => a > 0);
  return {
    holdout_days: holdout,
    wape: actual > 0 ? absErr / actual : null,
    mape: pos.length ? pos.reduce((a, [y, yh]) => a + Math.abs(yh - y) / y, 0) / pos.length : null,
    total_error: actual > 0 ? (f.reduce((a, p) => a + p.value, 0) - actual) / actual : null,
    baseline_wape: actual > 0 ? baseErr / actual : null,
  };
}

/** z of a two-sided 80% interval. */
const Z80 = 1.2816;

export interface SpendForecast {
  model: ForecastModel;
  /** The history as fitted: one point per day from the first data day through the last complete day. */
  series: DailyPoint[];
  daily: DailyPoint[];
  total: number;
  /** 80% interval of the total, assuming independent daily residuals. */
  total_low: number;
  total_high: number;
  backtest: BacktestResult | null;
}

/**
 * Forecast of the `days` days after the history. `through`: the last complete day; the history
 * is cut there (later points are partial days) and padded with zero days up to it, and the
 * forecast starts the day after.
 */
export function forecastSpend(history: DailyPoint[], days: number, opts: { through?: string } = {}): SpendForecast {
  const series = densify(history, opts.through);
  const model = fit(series);
  const from = series.length ? addDaysIso(series[series.length - 1]!.date, 1) : opts.through ? addDaysIso(opts.through, 1) : "1970-01-01";
  const daily = predict(model, from, days);
  const total = daily.reduce((a, p) => a + p.value, 0);
  const half = Z80 * model.residualStd * Math.sqrt(days);
  const holdout = Math.min(28, Math.max(7, days), Math.floor(series.length / 3));
  return { model, series, daily, total, total_low: Math.max(0, total - half), total_high: total + half, backtest: backtest(series, holdout) };
}

/** Last day (`YYYY-MM-DD`) of the month `YYYY-MM`. */
export const lastDayOfMonth = (month: string) => new Date(Date.UTC(Number(month.slice(0, 4)), Number(month.slice(5, 7)), 0)).toISOString().slice(0, 10);

/**
 * The month-end projection from complete days: the actual spend of the month's complete days in
 * `series` (which ends on the last complete day) and the forecast of every remaining day of the
 * month after it (today included). `forecast(from, days)` is the model (or a baseline).
 */
export function monthEnd(series: DailyPoint[], forecast: (from: string, days: number) => DailyPoint[], month: string, lastComplete?: string): { actual: DailyPoint[]; remaining: DailyPoint[] } {
  const last = lastComplete ?? series[series.length - 1]?.date;
  if (!last) return { actual: [], remaining: [] };
  const actual = series.filter((p) => p.date.startsWith(month) && p.date <= last);
  const n = dayIndex(last, lastDayOfMonth(month));
  const remaining = n > 0 ? forecast(addDaysIso(last, 1), n).filter((p) => p.date.startsWith(month)) : [];
  return { actual, remaining };
}

/** Data ends of providers this many days behind the freshest one mean a stopped export, not a lagging one. */
export const STALE_PROVIDER_DAYS = 7;

export interface Completeness {
  /** Today (UTC, service clock): never complete. */
  today: string;
  /** The last complete day: the day before today, or earlier when the data does not reach its end. */
  last_complete_date: string;
  /** The data end that decided it (ISO 8601), null when no provider's data told (only today was excluded). */
  data_end: string | null;
  /** Providers whose data end was ignored: over STALE_PROVIDER_DAYS days behind the freshest (stopped exports). */
  stale_providers: string[];
}

/**
 * Which days are complete. Today never is (still being billed). A day before it is complete
 * only when the billing data reaches the day's end: each provider's data end is the latest
 * ChargePeriodEnd of its rows of at most one day (`spendBy` data_end; an end at 23:59:59 counts
 * as midnight, as some exports write inclusive ends), and the earliest of the providers' data
 * ends decides (exports lag per provider, and a day is complete only when every provider's data
 * for it is in). A provider more than STALE_PROVIDER_DAYS behind the freshest is treated as
 * stopped, not lagging: its data end is ignored (its missing days count as zero, like any day
 * without rows). Without any data end only today is excluded.
 */
export function lastCompleteDay(now: Date, providerEnds: { provider: string; data_end: string | null }[]): Completeness {
  const today = now.toISOString().slice(0, 10);
  const yesterday = addDaysIso(today, -1);
  const known = providerEnds.filter((p): p is { provider: string; data_end: string } => p.data_end !== null);
  if (!known.length) return { today, last_complete_date: yesterday, data_end: null, stale_providers: [] };
  const t = (p: { data_end: string }) => Date.parse(p.data_end);
  const latest = Math.max(...known.map(t));
  const current = known.filter((p) => latest - t(p) <= STALE_PROVIDER_DAYS * DAY);
  const decisive = current.reduce((a, p) => (t(p) < t(a) ? p : a));
  return {
    today,
    last_complete_date: lastDayReached(t(decisive), now),
    data_end: new Date(t(decisive)).toISOString(),
    stale_providers: [...new Set(known.filter((p) => !current.includes(p)).map((p) => p.provider))].sort(),
  };
}

export const FORECAST_METHOD =
  "One billing currency at a time (amounts in different currencies are never added). History: the daily amortized spend (EffectiveCost per UTC day of the charge, in the cents the daily bill report cloud_bill_daily shows) of the complete days of the history window; days without billing rows count as zero. Complete days: never today (UTC), and a day before it only when the billing data reaches the day's end: each provider's data end is the latest ChargePeriodEnd of its rows of at most one day (an end at 23:59:59 counts as midnight), the earliest of them decides (a provider over 7 days behind the freshest counts as a stopped export and is ignored); later days are partial (exports lag) and are left out of the fit, and forecast instead. Model: linear trend + day-of-week profile, fitted as one least-squares regression of a slope and a level per day of the week (the weekday pattern never leaks into the trend; exactly periodic data is forecast exactly); one-off days (a monthly tax or credit, a spike) are left out of the fit one at a time while the largest residual exceeds 5 robust standard deviations (1.4826 × the median absolute residual), at most 10% of the days; the forecast never goes below zero. With under 14 days of history the weekday profile is dropped, under 7 days the mean is used. The forecast starts the day after the last complete day; the month-end projection = the actual spend of the month's complete days + the forecast of every remaining day of the month (today included). The 80% interval of the total assumes independent daily residuals. Back-test: the model is refitted without the last min(28, max(7, horizon), history/3) complete days and scored on them (WAPE, MAPE, total error), next to a seasonal-naive baseline that repeats the last fitted week.";

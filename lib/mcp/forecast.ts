/**
 * Daily spend forecast: a least-squares linear trend plus an additive day-of-week profile
 * (weekday mean of the de-trended residuals), i.e. "linear trend + seasonal naive by weekday".
 * Cloud spend is dominated by a slowly moving level with weekday/weekend swings, which this
 * captures with few parameters and no tuning; it is back-tested on the series' own tail so the
 * caller always sees how wrong it has recently been.
 *
 * Pure: no database, no clock. Dates are UTC `YYYY-MM-DD`.
 */
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
export const addDaysIso = (d: string, n: number) => new Date(Date.parse(`${d}T00:00:00Z`) + n * DAY).toISOString().slice(0, 10);
const dow = (d: string) => new Date(`${d}T00:00:00Z`).getUTCDay();

/** Fills missing days between the first and last point with 0 (no billing rows = no spend). */
export function densify(points: DailyPoint[]): DailyPoint[] {
  if (!points.length) return [];
  const sorted = [...points].sort((a, b) => a.date.localeCompare(b.date));
  const byDate = new Map<string, number>();
  for (const p of sorted) byDate.set(p.date, (byDate.get(p.date) ?? 0) + p.value);
  const out: DailyPoint[] = [];
  const first = sorted[0]!.date;
  const last = sorted[sorted.length - 1]!.date;
  for (let d = first; d <= last; d = addDaysIso(d, 1)) out.push({ date: d, value: byDate.get(d) ?? 0 });
  return out;
}

export function fit(history: DailyPoint[]): ForecastModel {
  const n = history.length;
  if (n === 0) return { intercept: 0, slope: 0, weekday: new Array(7).fill(0), residualStd: 0, historyStart: "1970-01-01", points: 0, method: "mean" };
  const start = history[0]!.date;
  const ys = history.map((p) => p.value);
  const mean = ys.reduce((a, b) => a + b, 0) / n;
  let intercept = mean;
  let slope = 0;
  let method: ForecastModel["method"] = "mean";
  if (n >= 7) {
    const tMean = (n - 1) / 2;
    let sxy = 0;
    let sxx = 0;
    for (let t = 0; t < n; t++) {
      sxy += (t - tMean) * (ys[t]! - mean);
      sxx += (t - tMean) ** 2;
    }
    slope = sxx > 0 ? sxy / sxx : 0;
    intercept = mean - slope * tMean;
    method = "trend";
  }
  const weekday = new Array(7).fill(0);
  if (n >= 14) {
    const sums = new Array(7).fill(0);
    const counts = new Array(7).fill(0);
    history.forEach((p, t) => {
      const k = dow(p.date);
      sums[k] += p.value - (intercept + slope * t);
      counts[k]++;
    });
    for (let k = 0; k < 7; k++) weekday[k] = counts[k] ? sums[k] / counts[k] : 0;
    const avg = weekday.reduce((a, b) => a + b, 0) / 7;
    for (let k = 0; k < 7; k++) weekday[k] -= avg;
    method = "trend_weekday";
  }
  let sse = 0;
  history.forEach((p, t) => {
    sse += (p.value - (intercept + slope * t + weekday[dow(p.date)]!)) ** 2;
  });
  const dof = Math.max(1, n - (method === "trend_weekday" ? 8 : method === "trend" ? 2 : 1));
  return { intercept, slope, weekday, residualStd: Math.sqrt(sse / dof), historyStart: start, points: n, method };
}

/** Forecast of each day in [from, from + days); spend never goes below zero. */
export function predict(m: ForecastModel, from: string, days: number): DailyPoint[] {
  const out: DailyPoint[] = [];
  for (let i = 0; i < days; i++) {
    const d = addDaysIso(from, i);
    const t = dayIndex(m.historyStart, d);
    out.push({ date: d, value: Math.max(0, m.intercept + m.slope * t + m.weekday[dow(d)]!) });
  }
  return out;
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
  const lastWeek = train.slice(-7);
  const base = test.map((_, i) => lastWeek[i % 7]!.value);
  const actual = test.reduce((a, p) => a + p.value, 0);
  const absErr = test.reduce((a, p, i) => a + Math.abs(f[i]!.value - p.value), 0);
  const baseErr = test.reduce((a, p, i) => a + Math.abs(base[i]! - p.value), 0);
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
  daily: DailyPoint[];
  total: number;
  /** 80% interval of the total, assuming independent daily residuals. */
  total_low: number;
  total_high: number;
  backtest: BacktestResult | null;
}

export function forecastSpend(history: DailyPoint[], days: number): SpendForecast {
  const series = densify(history);
  const model = fit(series);
  const from = series.length ? addDaysIso(series[series.length - 1]!.date, 1) : "1970-01-01";
  const daily = predict(model, from, days);
  const total = daily.reduce((a, p) => a + p.value, 0);
  const half = Z80 * model.residualStd * Math.sqrt(days);
  const holdout = Math.min(28, Math.max(7, days), Math.floor(series.length / 3));
  return { model, daily, total, total_low: Math.max(0, total - half), total_high: total + half, backtest: backtest(series, holdout) };
}

export const FORECAST_METHOD =
  "Least-squares linear trend over the daily amortized spend (EffectiveCost) of the history window plus an additive day-of-week profile (weekday mean of the de-trended residuals); days without billing rows count as zero; the forecast never goes below zero. With under 14 days of history the weekday profile is dropped, under 7 days the mean is used. The 80% interval of the total assumes independent daily residuals. Back-test: the model is refitted without the last min(28, max(7, horizon), history/3) days and scored on them (WAPE, MAPE, total error), next to a seasonal-naive baseline that repeats the last fitted week.";

/**
 * Unusual daily spend (anomalies) in one daily series: the effective cost of one account or one
 * service, in one currency, per UTC day. Pure: no database, no clock; dates are `YYYY-MM-DD`.
 *
 * Method (docs/features/assistant-anomalies.md; parameters chosen with bench/anomalies.ts):
 * - Baseline of day t: the median of the same weekday over the previous `weeks` weeks (the
 *   day-of-week pattern, robust to an earlier spike). One-step residual: actual − baseline.
 * - Residuals are measured relative to their day's size (the mean |spend| of those same
 *   weekdays, at least `scaleFloor` × the window's mean |spend|): cloud spend varies in
 *   proportion to its size, so a quiet weekend varies less in money than a busy weekday.
 *   Intermittent series (more than `maxZeroShare` of the window's days at zero) keep their
 *   residuals in money.
 * - Expected value: baseline + the median residual of the previous `residualDays` days (a level
 *   correction: a steady trend or a lasting level change stops reading as a run of spikes);
 *   never below zero when those days were all ≥ 0.
 * - Spread (the typical daily deviation, in money): the largest of 1.4826 × the MAD of those
 *   residuals around their median and their 10–90 % quantile range ÷ 2.5631 (both σ for
 *   Gaussian noise; the second keeps zero-heavy series from reading as "no noise"; for
 *   intermittent series also the same range of the window's own values, known before any
 *   residual), scaled to the day's size, a relative floor (`relFloor` × |expected|) and an
 *   absolute floor (`absFloor`, money: tiny series do not alert on cents).
 * - Anomaly: |actual − expected| ≥ k × spread AND ≥ `minImpact` (money). Spike when above,
 *   drop when below; score = (actual − expected) ÷ spread.
 * - Only complete days are scored: never past `completeThrough` (decided from the data by the
 *   caller, see `lastCompleteDay`: never today, and not a trailing day the data does not cover
 *   to midnight), and only once the series has `minWeeks` same-weekday values and
 *   `minResiduals` residuals behind the day (from its 29th day on with the defaults). Days
 *   without rows between the series' first day and `completeThrough` count as zero spend.
 */
import { addDaysIso, lastDayReached, median } from "./days.ts";

const DAY = 86_400_000;

export interface DailyValue {
  date: string;
  value: number;
}

export interface AnomalyParams {
  /** Threshold in spreads. */
  k: number;
  /** Same-weekday history of the baseline, in weeks. */
  weeks: number;
  /** Same-weekday values needed before a day is scored. */
  minWeeks: number;
  /** Days of one-step residuals behind the level correction and the spread. */
  residualDays: number;
  /** Residuals needed before a day is scored. */
  minResiduals: number;
  /** Spread floor relative to |expected|. */
  relFloor: number;
  /** Spread floor in money (billing currency). */
  absFloor: number;
  /** Minimum |actual − expected| in money (billing currency). */
  minImpact: number;
  /** Add the median recent residual to the weekday median (off: the bench's comparison). */
  levelCorrection: boolean;
  /** Measure residuals relative to their day's size (off: in money; the bench's comparison). */
  relative: boolean;
  /** Smallest size of a day, as a share of the window's mean |spend| (zero-heavy series). */
  scaleFloor: number;
  /** Intermittent series (a larger share of zero days in the window) keep their residuals in money. */
  maxZeroShare: number;
}

/** The chosen parameters (bench/anomalies.ts: false-positive rate ≤ 1 % of days, see MEASURED). */
export const ANOMALY_DEFAULTS: AnomalyParams = { k: 3.5, weeks: 8, minWeeks: 3, residualDays: 56, minResiduals: 7, relFloor: 0.02, absFloor: 0.5, minImpact: 1, levelCorrection: true, relative: true, scaleFloor: 0.25, maxZeroShare: 0.1 };

/** Days of history a scored day reads: the baseline weeks plus the residual window. */
export const historyDays = (p: AnomalyParams = ANOMALY_DEFAULTS) => p.weeks * 7 + p.residualDays;

export interface ScoredDay {
  date: string;
  actual: number;
  expected: number;
  /** The typical daily deviation (money) the score is measured in. */
  spread: number;
  /** actual − expected. */
  impact: number;
  /** impact ÷ spread. */
  score: number;
  direction: "spike" | "drop";
  anomaly: boolean;
}

export interface SeriesScore {
  /** Every scored day (anomaly or not), in date order. */
  days: ScoredDay[];
  /** Days of [from, to) up to completeThrough that had too little history to be scored. */
  unscored: number;
}

export { addDaysIso };

/** Linear-interpolated quantile of sorted values. */
function quantile(sorted: ArrayLike<number>, q: number): number {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

/**
 * The series as consecutive days from its first point to `completeThrough` (inclusive; points
 * after it are dropped), missing days = 0.
 */
export function denseSeries(points: DailyValue[], completeThrough: string | null): DailyValue[] {
  if (!points.length || completeThrough === null) return [];
  const byDate = new Map<string, number>();
  for (const p of points) if (p.date <= completeThrough) byDate.set(p.date, (byDate.get(p.date) ?? 0) + p.value);
  if (!byDate.size) return [];
  const first = [...byDate.keys()].sort()[0]!;
  const out: DailyValue[] = [];
  for (let d = first; d <= completeThrough; d = addDaysIso(d, 1)) out.push({ date: d, value: byDate.get(d) ?? 0 });
  return out;
}

/**
 * Scores the days of [from, to) (to exclusive) of one series. `points` may start earlier (the
 * history); days after `completeThrough` are neither scored nor used.
 */
export function scoreSeries(points: DailyValue[], window: { from: string; to: string; completeThrough: string | null }, params: Partial<AnomalyParams> = {}): SeriesScore {
  const p = { ...ANOMALY_DEFAULTS, ...params };
  const xs = denseSeries(points, window.completeThrough);
  const n = xs.length;
  const v = xs.map((x) => x.value);
  // Every day's same-weekday baseline (NaN while the history is too short) and size.
  const base: number[] = [];
  const size: number[] = [];
  for (let i = 0; i < n; i++) {
    const same: number[] = [];
    for (let j = 1; j <= p.weeks && i - 7 * j >= 0; j++) same.push(v[i - 7 * j]!);
    base.push(same.length >= p.minWeeks ? median(same) : NaN);
    size.push(same.reduce((a, x) => a + Math.abs(x), 0) / Math.max(1, same.length));
  }
  const resid = v.map((x, i) => x - base[i]!);
  const days: ScoredDay[] = [];
  let unscored = 0;
  for (let i = 0; i < n; i++) {
    const date = xs[i]!.date;
    if (date < window.from || date >= window.to) continue;
    // The residual window: the previous `residualDays` days.
    const lo = Math.max(0, i - p.residualDays);
    let allNonNegative = true;
    let absSum = 0;
    let zeroDays = 0;
    for (let s = lo; s < i; s++) {
      if (v[s]! < 0) allNonNegative = false;
      if (Math.abs(v[s]!) < 0.005) zeroDays++;
      absSum += Math.abs(v[s]!);
    }
    const floorScale = (p.scaleFloor * absSum) / Math.max(1, i - lo);
    const intermittent = zeroDays > p.maxZeroShare * (i - lo);
    const relative = p.relative && !intermittent;
    const scale = (s: number) => (relative ? Math.max(size[s]!, floorScale) || 1 : 1);
    const u: number[] = [];
    for (let s = lo; s < i; s++) if (!Number.isNaN(resid[s]!)) u.push(resid[s]! / scale(s));
    if (Number.isNaN(base[i]!) || u.length < p.minResiduals) {
      unscored++;
      continue;
    }
    const si = scale(i);
    const center = median(u);
    let expected = base[i]! + (p.levelCorrection ? center * si : 0);
    if (allNonNegative && expected < 0) expected = 0;
    const dev = Float64Array.from(u, (x) => x - center).sort();
    const mad = median(Array.from(dev, Math.abs));
    let robust = Math.max(1.4826 * mad, (quantile(dev, 0.9) - quantile(dev, 0.1)) / 2.5631);
    if (intermittent) {
      // Intermittent series: also the spread of the window's own values (known from the series'
      // first day, before residuals exist), so the first weeks do not read every charge as new.
      const xsSorted = Float64Array.from(v.slice(lo, i)).sort();
      robust = Math.max(robust, (quantile(xsSorted, 0.9) - quantile(xsSorted, 0.1)) / 2.5631);
    }
    const spread = Math.max(si * robust, p.relFloor * Math.abs(expected), p.absFloor);
    const impact = v[i]! - expected;
    const score = impact / spread;
    days.push({ date, actual: v[i]!, expected, spread, impact, score, direction: impact >= 0 ? "spike" : "drop", anomaly: Math.abs(score) >= p.k && Math.abs(impact) >= p.minImpact });
  }
  // Days of the window the series does not reach (it starts later) are not "unscored": it had no spend yet.
  return { days, unscored };
}

/**
 * The last complete day of billing data: the day before the UTC day holding `horizon` (the
 * latest end of the usage charge periods, capped at `now`). A period ending within the last
 * minute of a day (23:59:59, as some exports write) counts as reaching midnight. Today is
 * therefore never complete. null: no usage data.
 */
export function lastCompleteDay(horizon: Date | string | null, now: Date): string | null {
  return horizon === null ? null : lastDayReached(horizon, now);
}

/**
 * What `bun bench/anomalies.ts` measured for ANOMALY_DEFAULTS (seeded, reproducible): 2,400
 * generated series (periodic, trending, heavy-tailed noisy, zero-heavy; 1,200 clean and 1,200
 * with 2 injected spikes/drops each), 63 scored days per series. false_positive_rate: flagged
 * days ÷ scored days of the clean series (75,600 days); precision: flagged injected days ÷
 * flagged days of the injected series; recall by injected size in σ of the series' noise. The
 * table is in docs/features/assistant-anomalies.md.
 */
export const MEASURED = {
  false_positive_rate: 0.0058,
  precision: 0.8268,
  recall_3_sigma: 0.249,
  recall_5_sigma: 0.7997,
  recall_8_sigma: 0.9875,
  source: "bun bench/anomalies.ts: 2,400 generated daily series (1,200 without anomalies, 75,600 scored days), docs/features/assistant-anomalies.md",
};

export const ANOMALY_METHOD =
  "Per series (one account or service, one currency; effective cost per UTC day of the charge period start; days without rows count as zero): baseline = median of the same weekday over the previous 8 weeks; one-step residuals (actual − baseline) of the previous 56 days, relative to each day's size (mean spend of its same weekdays; in money for intermittent series with over 10% zero days); expected = baseline + median residual (level/trend correction), never below zero for non-negative spend; spread = max(1.4826 × MAD of the residuals, their 10–90% quantile range ÷ 2.5631; for intermittent series also that range of the window's values) at the day's size, at least 2% of |expected| and 0.50 of the currency; anomaly when |actual − expected| ≥ 3.5 × spread and ≥ min_impact: a spike above, a drop below; score = (actual − expected) ÷ spread. Only complete days are scored: never today, and for each billing account only up to the last day its usage data reaches to midnight (latest usage ChargePeriodEnd); a series is scored from its 29th day on (3 same-weekday values and 7 residuals behind the day).";

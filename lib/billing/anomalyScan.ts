/**
 * Unusual daily spend of an org over a window of days: the org's daily series (per account or
 * service and currency, lib/billing/dailySpend.ts) scored by the detector (lib/billing/anomalies.ts)
 * up to each series' last complete day. Shared by the assistant's detect_spend_anomalies tool,
 * which adds sorting, limits and totals, and by the anomaly.detected events
 * (lib/events/anomalies.ts), which emit each anomaly once.
 */
import type { DbOrTx } from "../db/index.ts";
import { ValidationError } from "../errors.ts";
import { cents } from "../pricing/index.ts";
import { fromCents, rate6, toCents } from "../pricing/display.ts";
import { ymd } from "./costExplorer.ts";
import { addDaysIso, historyDays, lastCompleteDay, scoreSeries } from "./anomalies.ts";
import { dailySpendBy, usageDataHorizons, type SpendDimension } from "./dailySpend.ts";
import type { Provider } from "./sql.ts";

const DAY = 86_400_000;
/** Days scored when the caller names no start. */
export const DEFAULT_ANOMALY_DAYS = 30;
/** The widest window that may be scored at once. */
export const MAX_ANOMALY_DAYS = 366;
const WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"] as const;

function calendarDate(s: string, field: string): string {
  const d = new Date(`${s}T00:00:00Z`);
  if (Number.isNaN(d.getTime()) || ymd(d) !== s) throw new ValidationError(`${s} is not a calendar date.`, { [field]: ["a calendar date YYYY-MM-DD"] });
  return s;
}
const daysBetween = (a: string, b: string) => Math.round((Date.parse(`${b}T00:00:00Z`) - Date.parse(`${a}T00:00:00Z`)) / DAY);

export interface AnomalyScanQuery {
  dimension: SpendDimension;
  provider?: Provider;
  /** First day scored (YYYY-MM-DD, inclusive). Default: DEFAULT_ANOMALY_DAYS before `end`. */
  start?: string;
  /** Day after the last day scored (exclusive; at most today). Default: the day after the last complete day of billing data. */
  end?: string;
  direction: "spike" | "drop" | "both";
  /** Smallest |actual − expected| kept, in each series' currency. */
  minImpact: number;
}

/** One unusual day of one series, money as shown (cents; impact = actual − expected of the shown figures). */
export interface SpendAnomaly {
  provider: string;
  currency: string;
  key: string | null;
  name: string | null;
  date: string;
  weekday: string;
  expected: number;
  actual: number;
  impact: number;
  spread: number;
  score: number;
  direction: "spike" | "drop";
}

export interface AnomalyScan {
  window: { start_date: string; end_date: string };
  /** How far each billing account's usage data reaches (its last complete day). */
  complete: { provider: string; billing_account_id: string; date: string | null }[];
  scoredSeries: number;
  scoredDays: number;
  /** Days of the window with too little history behind them to be scored. */
  unscored: number;
  /** Every anomaly of the window, in series then date order. */
  found: SpendAnomaly[];
}

/** Scores the org's daily spend series over the window; ValidationError for a window that cannot be scored. */
export async function scanSpendAnomalies(db: DbOrTx, orgId: string, now: Date, q: AnomalyScanQuery): Promise<AnomalyScan> {
  const today = ymd(now);
  const start = q.start ? calendarDate(q.start, "start_date") : null;
  let end = q.end ? calendarDate(q.end, "end_date") : null;
  if (end && end > today) end = today;
  const hist = historyDays();
  // A window that cannot be valid is refused before any billing data is read (the default end
  // is at the latest today, so a start over MAX_ANOMALY_DAYS back never fits).
  if (start && daysBetween(start, end ?? today) > MAX_ANOMALY_DAYS) throw new ValidationError(`The window may span at most ${MAX_ANOMALY_DAYS} days.`, { start_date: [`at most ${MAX_ANOMALY_DAYS} days before end_date`] });
  // How far each billing account's usage data reaches (rows starting before now).
  const probeTo = end ?? today;
  const probeFrom = addDaysIso(start ?? addDaysIso(probeTo, -DEFAULT_ANOMALY_DAYS), -hist);
  const horizonsFrom = async (day: string) =>
    (await usageDataHorizons(db, orgId, { from: `${day}T00:00:00Z`, to: now, provider: q.provider })).map((h) => ({
      provider: h.provider,
      billing_account_id: h.billing_account_id,
      date: lastCompleteDay(h.horizon, now),
    }));
  let complete = await horizonsFrom(probeFrom);
  if (!end) {
    const latest = complete.map((c) => c.date).filter((d): d is string => d !== null).sort().pop();
    end = latest ? addDaysIso(latest, 1) : today;
    if (start && end <= start) end = today;
  }
  const from = start ?? addDaysIso(end, -DEFAULT_ANOMALY_DAYS);
  if (from >= today) throw new ValidationError("start_date must be before today: today is never a complete day.", { start_date: ["before today"] });
  if (end <= from) throw new ValidationError("end_date must be after start_date.", { end_date: ["after start_date"] });
  if (daysBetween(from, end) > MAX_ANOMALY_DAYS) throw new ValidationError(`The window may span at most ${MAX_ANOMALY_DAYS} days.`, { start_date: [`at most ${MAX_ANOMALY_DAYS} days before end_date`] });
  // The default end moved back to the data's last complete day: probe the whole history read.
  if (addDaysIso(from, -hist) < probeFrom) complete = await horizonsFrom(addDaysIso(from, -hist));

  const { points, series } = await dailySpendBy(db, orgId, { from: `${addDaysIso(from, -hist)}T00:00:00Z`, to: `${end}T00:00:00Z`, provider: q.provider, dimension: q.dimension });
  const byAccount = new Map(complete.map((c) => [`${c.provider}\u0000${c.billing_account_id}`, c.date]));
  const yesterday = addDaysIso(today, -1);
  const bySeries = new Map<string, typeof points>();
  const id = (p: { provider: string; currency: string; key: string | null }) => JSON.stringify([p.provider, p.currency, p.key]);
  for (const p of points) {
    const k = id(p);
    const list = bySeries.get(k);
    if (list) list.push(p);
    else bySeries.set(k, [p]);
  }

  const found: SpendAnomaly[] = [];
  let scoredSeries = 0;
  let scoredDays = 0;
  let unscored = 0;
  for (const s of series) {
    const pts = bySeries.get(id(s));
    if (!pts) continue;
    // Complete through: the earliest last complete day among the series' billing accounts whose
    // data reaches the window (one whose data ended earlier no longer holds it back); with none
    // known (no usage rows), the clock alone (yesterday).
    const known = s.billing_account_ids.map((b) => byAccount.get(`${s.provider}\u0000${b}`)).filter((d): d is string => !!d).sort();
    const active = known.filter((d) => d >= from);
    const through = active.length ? active[0]! : known.length ? known[known.length - 1]! : yesterday;
    const r = scoreSeries(pts.map((p) => ({ date: p.date, value: p.effective_cost })), { from, to: end, completeThrough: through }, { minImpact: q.minImpact });
    if (r.days.length) scoredSeries++;
    scoredDays += r.days.length;
    unscored += r.unscored;
    for (const d of r.days) {
      if (!d.anomaly) continue;
      const actual = toCents(d.actual);
      const expected = toCents(d.expected);
      const impact = actual - expected;
      if (Math.abs(impact) < toCents(q.minImpact) || impact === 0) continue;
      const direction = impact > 0 ? "spike" : "drop";
      if (q.direction !== "both" && q.direction !== direction) continue;
      found.push({
        provider: s.provider,
        currency: s.currency,
        key: s.key,
        name: s.name,
        date: d.date,
        weekday: WEEKDAYS[new Date(`${d.date}T00:00:00Z`).getUTCDay()]!,
        expected: fromCents(expected),
        actual: fromCents(actual),
        impact: fromCents(impact),
        spread: cents(d.spread),
        score: rate6(d.score),
        direction,
      });
    }
  }
  return { window: { start_date: from, end_date: end }, complete, scoredSeries, scoredDays, unscored, found };
}

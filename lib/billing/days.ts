/**
 * Days of billing data (UTC, `YYYY-MM-DD`): the one rule for when a day is complete, shared by
 * the forecast and the anomaly detection, and the small day arithmetic both need. Pure.
 */
const DAY = 86_400_000;

/** Exports that write inclusive ends (23:59:59) still reach the day's end: such an end counts as midnight. */
export const DAY_END_SLACK_MS = 1000;

export const addDaysIso = (d: string, n: number) => new Date(Date.parse(`${d}T00:00:00Z`) + n * DAY).toISOString().slice(0, 10);

export function median(xs: ArrayLike<number>): number {
  const s = Float64Array.from(xs).sort();
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * The last complete day given how far the billing data reaches (`dataEnd`: its latest
 * ChargePeriodEnd): the last day whose end the data reaches, and never today (still being
 * billed) or later.
 */
export function lastDayReached(dataEnd: Date | string | number, now: Date): string {
  const reach = Math.floor((new Date(dataEnd).getTime() + DAY_END_SLACK_MS) / DAY) * DAY;
  const today = Math.floor(now.getTime() / DAY) * DAY;
  return new Date(Math.min(reach, today) - DAY).toISOString().slice(0, 10);
}

/**
 * Execution dates of an auto-purchase schedule, as UTC calendar dates (YYYY-MM-DD).
 * daily: every day from start_date; weekly: start_date + 7k; monthly: start_date's day of month
 * each month (clamped to the month's last day). All end at end_date (inclusive) when set.
 */
import type { Schedule } from "./enums.ts";

export interface ScheduleSpec {
  schedule: Schedule;
  start_date: string;
  end_date: string | null;
}

const DAY = 86_400_000;

export function isValidDate(s: unknown): s is string {
  if (typeof s !== "string" || !/^\d{4}-\d{2}-\d{2}$/.test(s)) return false;
  const d = new Date(`${s}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === s;
}

export function utcDate(d: Date): string {
  return d.toISOString().slice(0, 10);
}

function toMs(s: string): number {
  return Date.parse(`${s}T00:00:00Z`);
}

function fromMs(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export function addDays(s: string, n: number): string {
  return fromMs(toMs(s) + n * DAY);
}

/** start + k months, on start's day of month clamped to the target month's length. */
function addMonthsClamped(start: string, k: number): string {
  const [y, m, d] = start.split("-").map(Number) as [number, number, number];
  const total = m - 1 + k;
  const ty = y + Math.floor(total / 12);
  const tm = ((total % 12) + 12) % 12;
  const last = new Date(Date.UTC(ty, tm + 1, 0)).getUTCDate();
  return fromMs(Date.UTC(ty, tm, Math.min(d, last)));
}

/** The latest execution date on or before `onOrBefore`, or null when none. */
export function latestExecutionDate(spec: ScheduleSpec, onOrBefore: string): string | null {
  let bound = onOrBefore;
  if (spec.end_date && spec.end_date < bound) bound = spec.end_date;
  if (bound < spec.start_date) return null;
  const days = Math.round((toMs(bound) - toMs(spec.start_date)) / DAY);
  switch (spec.schedule) {
    case "daily":
      return bound;
    case "weekly":
      return addDays(spec.start_date, days - (days % 7));
    case "monthly": {
      const [sy, sm] = spec.start_date.split("-").map(Number) as [number, number];
      const [by, bm] = bound.split("-").map(Number) as [number, number];
      let k = (by - sy) * 12 + (bm - sm);
      let c = addMonthsClamped(spec.start_date, k);
      while (c > bound && k > 0) c = addMonthsClamped(spec.start_date, --k);
      return c <= bound ? c : null;
    }
  }
}

/** The first execution date strictly after `after`, or null when the schedule has ended. */
export function firstExecutionDateAfter(spec: ScheduleSpec, after: string): string | null {
  let c: string;
  if (after < spec.start_date) c = spec.start_date;
  else {
    const prev = latestExecutionDate({ ...spec, end_date: null }, after)!;
    if (spec.schedule === "daily") c = addDays(prev, 1);
    else if (spec.schedule === "weekly") c = addDays(prev, 7);
    else {
      const [sy, sm] = spec.start_date.split("-").map(Number) as [number, number];
      const [py, pm] = prev.split("-").map(Number) as [number, number];
      c = addMonthsClamped(spec.start_date, (py - sy) * 12 + (pm - sm) + 1);
    }
  }
  return spec.end_date && c > spec.end_date ? null : c;
}

/**
 * The execution a tick at `today` should run: the latest slot on or before today, unless it
 * already ran or it precedes `notBefore` (the day the schedule was set: a schedule created with
 * a start date in the past does not buy for a slot that passed before it existed). Missed slots
 * are not replayed one by one: after downtime only the latest runs.
 */
export function dueExecutionDate(spec: ScheduleSpec, today: string, lastExecutionDate: string | null, notBefore: string | null = null): string | null {
  const latest = latestExecutionDate(spec, today);
  if (!latest) return null;
  if (notBefore && latest < notBefore) return null;
  return lastExecutionDate && lastExecutionDate >= latest ? null : latest;
}

/** What the API shows as next_execution_date: a pending (due) slot, else the next one. */
export function nextExecutionDate(spec: ScheduleSpec, today: string, lastExecutionDate: string | null, notBefore: string | null = null): string | null {
  return dueExecutionDate(spec, today, lastExecutionDate, notBefore) ?? firstExecutionDateAfter(spec, today);
}

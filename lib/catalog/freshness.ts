/**
 * Freshness of prices (DESIGN §15): the date a price was last confirmed current, and whether a
 * Pricing built from it is stale.
 *
 * A price of a live feed (a row whose `feed` is in `catalog_feeds` with a `checked_at`) is
 * confirmed as of the UTC day of that check: a refresh that finds the feed unchanged moves
 * `checked_at` without touching the rows. Any other price (the bundled snapshot, a manual
 * `catalog import`) is confirmed as of its own `as_of`, normalized to a day.
 */
import type { Services } from "../services.ts";

const DAY_MS = 86_400_000;

/** What deciding staleness needs: the service's clock and PRICE_STALE_DAYS. */
export interface Freshness {
  now: Date;
  staleDays: number;
}

export function freshnessOf(s: Pick<Services, "now" | "config">): Freshness {
  return { now: s.now(), staleDays: s.config.priceStaleDays };
}

const ymd = (d: Date) => d.toISOString().slice(0, 10);

/**
 * An `as_of` as a day YYYY-MM-DD: "2024-04-04" as is, "2025-06" → "2025-06-01", "2025" →
 * "2025-01-01", leading non-digits ("~2025-06") stripped; null when it names no calendar date.
 */
export function normalizeAsOf(asOf: string | null | undefined): string | null {
  const m = /^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?(?![\d-])/.exec((asOf ?? "").replace(/^[^0-9]+/, ""));
  if (!m) return null;
  const day = `${m[1]}-${m[2] ?? "01"}-${m[3] ?? "01"}`;
  const d = new Date(`${day}T00:00:00Z`);
  return Number.isNaN(d.getTime()) || ymd(d) !== day ? null : day;
}

/** The day a price is confirmed as of: its live feed's last check (UTC day), else its own `as_of`. */
export function confirmedAsOf(feedCheckedDay: string | null, asOf: string): string | null {
  return feedCheckedDay ?? normalizeAsOf(asOf);
}

/** The oldest of some days (YYYY-MM-DD compare as strings); null when none is known. */
export function oldestDay(days: Iterable<string | null | undefined>): string | null {
  let oldest: string | null = null;
  for (const d of days) if (d && (oldest === null || d < oldest)) oldest = d;
  return oldest;
}

/**
 * Stale: confirmed before the UTC day `staleDays` days before now, i.e. more than `staleDays`
 * whole days ago (35 days old is not stale with 35, 36 is). Unknown (null) is never stale.
 */
export function isStale(pricesAsOf: string | null, f: Freshness): boolean {
  return pricesAsOf !== null && pricesAsOf < ymd(new Date(f.now.getTime() - f.staleDays * DAY_MS));
}

/** The freshness of a Pricing in words, for the assistant's answers ("" without a priced line). */
export function freshnessSentence(pricesAsOf: string | null, stale: boolean, staleDays: number): string {
  if (pricesAsOf === null) return "";
  if (stale) return `These prices are stale: last confirmed ${pricesAsOf}, more than ${staleDays} days ago; the figures may differ from the providers' current prices until the price catalog is refreshed (an administrator runs \`catalog refresh\`).`;
  return `Prices as of ${pricesAsOf}.`;
}

/**
 * Spend anomaly questions (detect_spend_anomalies), checked against the allocation reports to
 * the cent. They hold on the eval organization as it is (no rows added):
 * - the generated demo data repeats week after week (every weekday costs what it cost the weeks
 *   before, within cents), except the monthly one-time charges the generator dates on the first
 *   of each closed month: a sales tax of 12.50 on each provider's first account and a credit
 *   of -5.00 on its second. So in May, by account, the unusual days are exactly the accounts with
 *   a non-zero other_cost (tax, credits) in cloud_bill_by_account, on 2026-05-01, with that
 *   amount as impact; by service, the Tax (spike) and Credits (drop) services;
 * - the small EUR Azure account (the only EUR account) bills 48.12 a day on 3-5 May and 1-3 June
 *   and nothing between: its series starts on 3 May (too little history to be scored in May) and
 *   its return on 1 June is a spike; being alone in its currency, its days are the EUR rows of
 *   cloud_bill_daily, and its expected value is the median of the same weekday over the 8 weeks
 *   before (days without a row are zero);
 * - today (2026-06-17) holds 12 hours of data in cloud_bill_daily: never scored.
 */
import { expect } from "bun:test";
import { EUR_ACCOUNT, expectCents, sumShown, type EvalContext, type EvalQuestion } from "./harness.ts";

const MAY = { start_date: "2026-05-01", end_date: "2026-06-01" };
type Row = Record<string, any>;
const report = async (ev: EvalContext, type: string, month: number): Promise<Row[]> => (await ev.rest(`/allocation-reports/${type}?year=2026&month=${month}`)).rows;
const addDays = (d: string, n: number) => new Date(Date.parse(`${d}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);
function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Each anomaly's impact is its actual minus its expected value, as shown. */
function expectConsistent(anomalies: Row[]) {
  for (const a of anomalies) expectCents(a.impact, sumShown([a.actual, -a.expected]), `${a.key} ${a.date} impact`);
}

/** Totals per currency: the sums of the shown impacts, spikes and drops apart, never across currencies. */
function expectTotals(r: Row) {
  const currencies = [...new Set(r.anomalies.map((a: Row) => a.currency))].sort();
  expect(r.totals.map((t: Row) => t.currency)).toEqual(currencies);
  for (const t of r.totals) {
    const mine = r.anomalies.filter((a: Row) => a.currency === t.currency);
    expect(t.anomalies).toBe(mine.length);
    expectCents(t.spike_impact, sumShown(mine.filter((a: Row) => a.impact > 0).map((a: Row) => a.impact)), `${t.currency} spikes`);
    expectCents(t.drop_impact, sumShown(mine.filter((a: Row) => a.impact < 0).map((a: Row) => a.impact)), `${t.currency} drops`);
  }
}

export const questions: EvalQuestion[] = [
  {
    question: "Did anything unusual happen to our daily spend last month?",
    tools: ["detect_spend_anomalies"],
    async run(ev) {
      const r = await ev.call("detect_spend_anomalies", { ...MAY, limit: 500 });
      expect(r.window).toEqual(MAY);
      expect(r.truncated).toBe(false);
      expect(r.measured.false_positive_rate).toBeLessThanOrEqual(0.01);
      // The month's one-time charges (tax, credits) per account, from the account report.
      const rows = (await report(ev, "cloud_bill_by_account", 5)).filter((x) => Number(x.other_cost) !== 0);
      expect(rows.length).toBeGreaterThan(0);
      const key = (provider: string, currency: string, account: string) => `${provider}|${currency}|${account}`;
      expect(r.anomalies.map((a: Row) => key(a.provider, a.currency, a.key)).sort()).toEqual(rows.map((x) => key(x.provider, x.billing_currency, x.account_id)).sort());
      for (const a of r.anomalies) {
        const row = rows.find((x) => key(x.provider, x.billing_currency, x.account_id) === key(a.provider, a.currency, a.key))!;
        // Charged on the first of the month (their period starts with the billing period).
        expect(a.date).toBe("2026-05-01");
        expectCents(a.impact, row.other_cost, `${a.key} impact = the month's tax/credit`);
        expect(a.direction).toBe(Number(row.other_cost) > 0 ? "spike" : "drop");
        expect(a.name).toBe(row.account_name);
      }
      expectConsistent(r.anomalies);
      expectTotals(r);
      // The EUR account started on 3 May: too little history to be scored in May, so no EUR figure.
      expect(r.anomalies.some((a: Row) => a.key === EUR_ACCOUNT)).toBe(false);
      expect(r.scored.days_without_enough_history).toBeGreaterThan(0);
    },
  },
  {
    question: "Which service spiked last month, and by how much?",
    tools: ["detect_spend_anomalies"],
    async run(ev) {
      const r = await ev.call("detect_spend_anomalies", { ...MAY, dimension: "service", direction: "spike" });
      expect(r.anomalies.length).toBeGreaterThan(0);
      expect(r.anomalies.every((a: Row) => a.direction === "spike" && a.impact > 0)).toBe(true);
      // The services with positive one-time charges in May (the report's other_cost): all of it
      // charged on one day, nothing the weeks before — so that day's actual is the month's total.
      const rows = (await report(ev, "cloud_bill_by_service", 5)).filter((x) => Number(x.other_cost) > 0);
      const key = (provider: string, currency: string, service: string) => `${provider}|${currency}|${service}`;
      expect(r.anomalies.map((a: Row) => key(a.provider, a.currency, a.key)).sort()).toEqual(rows.map((x) => key(x.provider, x.billing_currency, x.service_name)).sort());
      for (const a of r.anomalies) {
        const row = rows.find((x) => key(x.provider, x.billing_currency, x.service_name) === key(a.provider, a.currency, a.key))!;
        expect(a.date).toBe("2026-05-01");
        expectCents(a.actual, row.total_cost, `${a.provider} ${a.key} actual = May total`);
        expectCents(a.expected, 0, `${a.provider} ${a.key} expected`);
        expectCents(a.impact, row.total_cost, `${a.provider} ${a.key} impact`);
      }
      expectConsistent(r.anomalies);
      expectTotals(r);
      const totalTax = sumShown(rows.map((x) => x.total_cost));
      expectCents(r.totals.find((t: Row) => t.currency === "USD").spike_impact, totalTax, "USD spikes = May tax");
    },
  },
  {
    question: "Has any account's daily spend jumped in the last 30 days, compared with its usual level?",
    tools: ["detect_spend_anomalies"],
    async run(ev) {
      const r = await ev.call("detect_spend_anomalies", {});
      // The last 30 complete days: today (17 June, 12 hours of data) is left out.
      expect(r.window).toEqual({ start_date: "2026-05-18", end_date: "2026-06-17" });
      const daily = [...(await report(ev, "cloud_bill_daily", 4)), ...(await report(ev, "cloud_bill_daily", 5)), ...(await report(ev, "cloud_bill_daily", 6))];
      expect(daily.some((x) => x.date === "2026-06-17")).toBe(true);
      expect(r.anomalies.some((a: Row) => a.date === "2026-06-17")).toBe(false);
      // The jump: the EUR account's return on 1 June, alone in its currency.
      expect(r.anomalies.length).toBeGreaterThan(0);
      for (const a of r.anomalies) {
        expect([a.provider, a.currency, a.key, a.direction]).toEqual(["azure", "EUR", EUR_ACCOUNT, "spike"]);
        const eur = (d: string) => Number(daily.find((x) => x.date === d && x.provider === "azure" && x.billing_currency === "EUR")?.total_cost ?? 0);
        expectCents(a.actual, eur(a.date), `${a.date} actual = cloud_bill_daily EUR`);
        // Expected: the median of the same weekday over the 8 weeks before (no row = zero).
        expectCents(a.expected, median(Array.from({ length: 8 }, (_, j) => eur(addDays(a.date, -7 * (j + 1))))), `${a.date} expected`);
      }
      expect(r.anomalies.map((a: Row) => a.date)).toContain("2026-06-01");
      expectConsistent(r.anomalies);
      expectTotals(r);
      expect(r.totals.map((t: Row) => t.currency)).toEqual(["EUR"]);
    },
  },
  {
    question: "Were there any drops in daily spend by account last month, and were they credits?",
    tools: ["detect_spend_anomalies"],
    async run(ev) {
      const r = await ev.call("detect_spend_anomalies", { ...MAY, direction: "drop" });
      const credits = (await report(ev, "cloud_bill_by_account", 5)).filter((x) => Number(x.other_cost) < 0);
      expect(credits.length).toBeGreaterThan(0);
      expect(r.anomalies.map((a: Row) => `${a.provider}|${a.key}`).sort()).toEqual(credits.map((x) => `${x.provider}|${x.account_id}`).sort());
      for (const a of r.anomalies) {
        const row = credits.find((x) => x.provider === a.provider && x.account_id === a.key)!;
        expect(a.direction).toBe("drop");
        expect(a.currency).toBe(row.billing_currency);
        expectCents(a.impact, row.other_cost, `${a.key} drop = the month's credit`);
        expect(a.actual).toBeLessThan(a.expected);
      }
      expectConsistent(r.anomalies);
      expectTotals(r);
      expectCents(r.totals.find((t: Row) => t.currency === "USD").drop_impact, sumShown(credits.map((x) => x.other_cost)), "USD drops = May credits");
    },
  },
];

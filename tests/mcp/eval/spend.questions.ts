/**
 * Spend and forecast questions (get_spend, forecast_spend), each checked against the REST
 * reports to the cent. The reports compared are those whose shown rows reconcile with the
 * tool's grain: cloud_bill_by_service and cloud_bill_daily (refreshed daily, so the open month has
 * rows too), cloud_bill_by_account (May, closed and frozen) and cloud_bill_by_resource. get_spend
 * rounds as the reports do (largest remainder per invoice, days over their whole month), so its
 * rows are the reports' rows to the cent, not each amount rounded on its own. Every comparison
 * is per currency: the eval organization holds a small EUR Azure account beside the USD demo data.
 */
import { expect } from "bun:test";
import { EUR_ACCOUNT, EVAL_NOW, expectCents, sumShown, type EvalContext, type EvalQuestion } from "./harness.ts";

const MONTHS = [4, 5, 6] as const;
const DAY = 86_400_000;
const ymd = (t: number) => new Date(t).toISOString().slice(0, 10);
const mm = (m: number) => `2026-${String(m).padStart(2, "0")}`;

async function report(ev: EvalContext, type: string, month: number, extra = ""): Promise<any[]> {
  const r = await ev.rest(`/allocation-reports/${type}?year=2026&month=${month}${extra}`);
  return r.rows;
}

/** Σ of a shown money column over rows, per key. */
function sumBy(rows: any[], key: (r: any) => string, col: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of rows) out.set(key(r), sumShown([out.get(key(r)) ?? 0, r[col]]));
  return out;
}

export const questions: EvalQuestion[] = [
  {
    question: "What did we spend per month over the last three months?",
    tools: ["get_spend"],
    async run(ev) {
      const s = await ev.call("get_spend", { group_by: "month" });
      expect(s.window).toEqual({ start_date: "2026-04-01", end_date: "2026-07-01" });
      // One total per currency, never a mixed sum.
      expect(s.totals.map((t: any) => t.currency)).toEqual(["EUR", "USD"]);
      for (const r of s.rows) expect(["EUR", "USD"]).toContain(r.currency);
      const all: any[] = [];
      for (const m of MONTHS) {
        const rest = await report(ev, "cloud_bill_by_service", m);
        all.push(...rest);
        const cur = (r: any) => `${r.provider}/${r.billing_currency}`;
        const restEff = sumBy(rest, cur, "total_cost");
        const restBilled = sumBy(rest, cur, "billed_cost");
        const rows = s.rows.filter((r: any) => r.key === mm(m));
        expect(rows.map((r: any) => `${r.provider}/${r.currency}`).sort()).toEqual([...restEff.keys()].sort());
        for (const r of rows) {
          expectCents(r.effective_cost, restEff.get(`${r.provider}/${r.currency}`)!, `${mm(m)} ${r.provider} ${r.currency} effective`);
          expectCents(r.billed_cost, restBilled.get(`${r.provider}/${r.currency}`)!, `${mm(m)} ${r.provider} ${r.currency} billed`);
        }
      }
      // The window's totals per currency: Σ of the three months of the report in that currency.
      const restTotal = sumBy(all, (r) => r.billing_currency, "total_cost");
      for (const t of s.totals) {
        expectCents(t.effective_cost, restTotal.get(t.currency)!, `${t.currency} total`);
        expectCents(t.effective_cost, sumShown(s.rows.filter((r: any) => r.currency === t.currency).map((r: any) => r.effective_cost)));
      }
      const text = (await ev.callRaw("get_spend", { group_by: "month" })).content[0].text as string;
      expect(text).toContain(`EUR ${s.totals[0].effective_cost}`);
      expect(text).toContain(`USD ${s.totals[1].effective_cost}`);
    },
  },
  {
    question: "How much were we billed per linked account in May, and what did each account really cost (amortized)?",
    tools: ["get_spend"],
    async run(ev) {
      const s = await ev.call("get_spend", { group_by: "account", start_date: "2026-05-01", end_date: "2026-06-01" });
      // May is closed and frozen: cloud_bill_by_account has one row per account, at the tool's grain.
      const rest = await report(ev, "cloud_bill_by_account", 5);
      const key = (r: any) => `${r.provider}/${r.billing_currency}/${r.account_id}`;
      expect(rest.length).toBeGreaterThan(3);
      expect(s.rows.map((r: any) => `${r.provider}/${r.currency}/${r.key}`).sort()).toEqual(rest.map(key).sort());
      for (const r of s.rows) {
        const line = rest.find((x) => key(x) === `${r.provider}/${r.currency}/${r.key}`);
        expectCents(r.billed_cost, line.billed_cost, `${r.key} billed`);
        expectCents(r.effective_cost, line.total_cost, `${r.key} effective`);
        for (const col of ["ondemand_cost", "commitment_cost", "other_cost"]) expectCents(r[col], line[col], `${r.key} ${col}`);
      }
      // Every account's effective cost in the resource CSV adds up to the same invoice per currency.
      const csv = await ev.restCsv("/allocation-reports/cloud_bill_by_resource?year=2026&month=5&format=csv");
      for (const col of ["billed_cost", "total_cost"]) {
        const perCurrency = sumBy(csv, (r) => r.billing_currency, col);
        const field = col === "total_cost" ? "effective_cost" : col;
        expect(s.totals.map((t: any) => t.currency)).toEqual([...perCurrency.keys()].sort());
        for (const t of s.totals) {
          expectCents(t[field], perCurrency.get(t.currency)!, `${t.currency} ${field} total (resource CSV)`);
          expectCents(t[field], sumShown(rest.filter((x) => x.billing_currency === t.currency).map((x) => x[col])), `${t.currency} ${field} total (by account)`);
        }
      }
    },
  },
  {
    question: "What did we spend per day last week?",
    tools: ["get_spend"],
    async run(ev) {
      // Last week: Monday to Sunday before the week of EVAL_NOW (a Wednesday).
      const today = Date.UTC(EVAL_NOW.getUTCFullYear(), EVAL_NOW.getUTCMonth(), EVAL_NOW.getUTCDate());
      const monday = today - (((EVAL_NOW.getUTCDay() + 6) % 7) + 7) * DAY;
      const [start, end] = [ymd(monday), ymd(monday + 7 * DAY)];
      expect([start, end]).toEqual(["2026-06-08", "2026-06-15"]);
      const s = await ev.call("get_spend", { group_by: "day", start_date: start, end_date: end });
      // cloud_bill_daily of June, row by row (day, provider, currency), every money column to the cent.
      const rest = (await report(ev, "cloud_bill_daily", 6)).filter((r) => r.date >= start && r.date < end);
      const key = (date: string, provider: string, currency: string) => `${date}/${provider}/${currency}`;
      expect(new Set(rest.map((r) => r.date)).size).toBe(7);
      expect(s.rows.map((r: any) => key(r.key, r.provider, r.currency)).sort()).toEqual(rest.map((r) => key(r.date, r.provider, r.billing_currency)).sort());
      for (const r of s.rows) {
        const line = rest.find((x) => key(x.date, x.provider, x.billing_currency) === key(r.key, r.provider, r.currency));
        expectCents(r.effective_cost, line.total_cost, `${r.key} ${r.provider} effective`);
        for (const col of ["billed_cost", "ondemand_cost", "commitment_cost", "other_cost"]) expectCents(r[col], line[col], `${r.key} ${r.provider} ${col}`);
      }
      // The week's totals per currency: Σ of those report rows.
      const perCurrency = sumBy(rest, (r) => r.billing_currency, "total_cost");
      expect(s.totals.map((t: any) => t.currency)).toEqual([...perCurrency.keys()].sort());
      for (const t of s.totals) expectCents(t.effective_cost, perCurrency.get(t.currency)!, `${t.currency} week`);
      expect(s.total_rows).toBe(rest.length);
      expect(s.truncated).toBe(false);
    },
  },
  {
    question: "What will we spend by the end of the month?",
    tools: ["forecast_spend"],
    async run(ev) {
      const f = await ev.call("forecast_spend", {});
      // The largest currency, said in the answer; today (the 17th) is partial and left out.
      expect(f.currency).toBe("USD");
      expect(f.currencies.map((c: any) => c.currency)).toEqual(["EUR", "USD"]);
      expect(f.history.last_complete_date).toBe("2026-06-16");
      expect(f.history.excluded_incomplete_days).toEqual([EVAL_NOW.toISOString().slice(0, 10)]);
      expect(f.month_end.month).toBe("2026-06");
      // Actual to date = the complete days of cloud_bill_daily of June, USD, day by day.
      const daily = (await report(ev, "cloud_bill_daily", 6)).filter((r) => r.billing_currency === "USD" && r.date <= f.history.last_complete_date);
      const perDay = sumBy(daily, (r) => r.date, "total_cost");
      expect(f.month_end.actual_daily.map((p: any) => p.date)).toEqual([...perDay.keys()].sort());
      for (const p of f.month_end.actual_daily) expectCents(p.value, perDay.get(p.date)!, p.date);
      expectCents(f.month_end.actual_to_date, sumShown(daily.map((r) => r.total_cost)), "actual to date");
      // The rest of June (today included) is forecast; the projection adds the two parts as shown.
      expect(f.month_end.remaining_days).toBe(14);
      expect(f.forecast.start_date).toBe("2026-06-17");
      expectCents(f.month_end.forecast_remaining, sumShown(f.forecast.daily.filter((p: any) => p.date.startsWith("2026-06")).map((p: any) => p.value)));
      expectCents(f.month_end.projected_total, sumShown([f.month_end.actual_to_date, f.month_end.forecast_remaining]));
      // The demo data repeats its week: the back-test is at least as good as seasonal naive, up
      // to the cents the history's days are shown in (the report's largest remainder moves a cent
      // between days, so the week repeats to the cent only: a WAPE of a few 1e-5 either way).
      expect(f.backtest.wape).toBeLessThanOrEqual(f.backtest.baseline_wape + 1e-4);
    },
  },
  {
    question: "What did the EUR subscription cost in May?",
    tools: ["get_spend"],
    async run(ev) {
      const s = await ev.call("get_spend", { group_by: "account", currency: "EUR", start_date: "2026-05-01", end_date: "2026-06-01" });
      expect(s.rows).toHaveLength(1);
      const [row] = s.rows;
      expect(row).toMatchObject({ key: EUR_ACCOUNT, provider: "azure", currency: "EUR" });
      const rest = (await report(ev, "cloud_bill_by_resource", 5, `&account_id=${EUR_ACCOUNT}`)).filter((r) => r.billing_currency === "EUR");
      expect(rest.length).toBeGreaterThan(0);
      expectCents(row.effective_cost, sumShown(rest.map((r) => r.total_cost)), "effective");
      expectCents(row.billed_cost, sumShown(rest.map((r) => r.billed_cost)), "billed");
      expect(s.totals).toEqual([{ currency: "EUR", ...Object.fromEntries(["billed_cost", "effective_cost", "ondemand_cost", "commitment_cost", "other_cost"].map((k) => [k, row[k]])) }]);
      // Kept apart: the May spend in USD does not contain it, and no answer adds the two.
      const all = await ev.call("get_spend", { group_by: "month", start_date: "2026-05-01", end_date: "2026-06-01" });
      const usd = all.totals.find((t: any) => t.currency === "USD");
      const usdRest = (await report(ev, "cloud_bill_by_service", 5)).filter((r) => r.billing_currency === "USD");
      expectCents(usd.effective_cost, sumShown(usdRest.map((r) => r.total_cost)), "USD May");
      expectCents(all.totals.find((t: any) => t.currency === "EUR").effective_cost, row.effective_cost);
    },
  },
  {
    question: "What is the on-demand vs commitment split of April?",
    tools: ["get_spend"],
    async run(ev) {
      const s = await ev.call("get_spend", { group_by: "month", start_date: "2026-04-01", end_date: "2026-05-01" });
      const rest = await report(ev, "cloud_bill_by_service", 4);
      expect(s.totals.map((t: any) => t.currency)).toEqual(["USD"]);
      const [t] = s.totals;
      for (const col of ["ondemand_cost", "commitment_cost", "other_cost", "billed_cost"]) expectCents(t[col], sumShown(rest.map((r) => r[col])), col);
      expectCents(t.effective_cost, sumShown([t.ondemand_cost, t.commitment_cost, t.other_cost]));
      expect(t.commitment_cost).toBeGreaterThan(0);
      expect(t.ondemand_cost).toBeGreaterThan(0);
    },
  },
  {
    question: "How much will the EUR account cost this month?",
    tools: ["forecast_spend"],
    async run(ev) {
      const f = await ev.call("forecast_spend", { currency: "EUR" });
      expect(f.currency).toBe("EUR");
      const daily = (await report(ev, "cloud_bill_daily", 6)).filter((r) => r.billing_currency === "EUR" && r.date <= f.history.last_complete_date);
      expectCents(f.month_end.actual_to_date, sumShown(daily.map((r) => r.total_cost)), "EUR actual to date");
      // Its history is the EUR days only (May and June of cloud_bill_daily, none of the USD spend).
      const may = (await report(ev, "cloud_bill_daily", 5)).filter((r) => r.billing_currency === "EUR");
      expectCents(f.history.total, sumShown([...may, ...daily].map((r) => r.total_cost)), "EUR history");
      expect(f.history.last_complete_date).toBe("2026-06-03");
      expectCents(f.month_end.projected_total, sumShown([f.month_end.actual_to_date, f.month_end.forecast_remaining]));
      const text = (await ev.callRaw("forecast_spend", { currency: "EUR" })).content[0].text as string;
      expect(text).toContain("EUR");
      expect(text).toContain("USD");
    },
  },
];

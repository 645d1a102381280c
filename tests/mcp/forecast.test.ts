import { describe, expect, test } from "bun:test";
import { Readable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { addDaysIso, backtest, densify, fit, forecastSpend, lastCompleteDay, lastDayOfMonth, monthEnd, predict, seasonalNaive, type DailyPoint } from "../../lib/mcp/forecast.ts";
import { importFocus } from "../../lib/billing/focus.ts";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { focusCsv } from "../reports/helpers.ts";
import { generatedSpend } from "./generated.ts";
import { connectMcp } from "./fixtures.ts";

const DAY = 86_400_000;
const dow = (d: string) => new Date(`${d}T00:00:00Z`).getUTCDay();
/** A week of spend, Sunday first: weekends low, no two days alike. */
const WEEK = [61.37, 103.11, 104.29, 99.95, 101.01, 98.73, 59.99];
const periodic = (start: string, days: number, scale = 1): DailyPoint[] => Array.from({ length: days }, (_, i) => ({ date: addDaysIso(start, i), value: scale * WEEK[dow(addDaysIso(start, i))]! }));
const truthOf = (from: string, through: string, scale = 1) => {
  let s = 0;
  for (let d = from; d <= through; d = addDaysIso(d, 1)) s += Math.round(scale * WEEK[dow(d)]! * 100);
  return s / 100;
};

describe("spend forecast (linear trend + day-of-week profile)", () => {
  test("recovers trend and weekday effect from generated spend; beats seasonal-naive in the back-test", () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const g = generatedSpend({ seed, days: 120, level: 1000, slopePerDay: 2, weekendFactor: 0.7, noise: 0.05 });
      const m = fit(g.history);
      expect(m.method).toBe("trend_weekday");
      expect(m.slope).toBeGreaterThan(1.2);
      expect(m.slope).toBeLessThan(2.8);
      // Weekend days sit well below weekdays.
      expect(m.weekday[0]!).toBeLessThan(m.weekday[3]! - 150);
      const bt = backtest(g.history, 28)!;
      expect(bt.holdout_days).toBe(28);
      expect(bt.wape!).toBeLessThan(0.07);
      expect(bt.wape!).toBeLessThan(bt.baseline_wape!);
      expect(Math.abs(bt.total_error!)).toBeLessThan(0.05);
      // The next 30 days against the generator's noise-free truth.
      const f = forecastSpend(g.history, 30);
      const truth = g.future(30).reduce((a, p) => a + p.value, 0);
      expect(Math.abs(f.total - truth) / truth).toBeLessThan(0.05);
      expect(f.total_low).toBeLessThan(f.total);
      expect(f.total_high).toBeGreaterThan(f.total);
    }
  });

  test("exactly periodic data: no trend, an exact fit, and a back-test as good as seasonal naive (WAPE 0)", () => {
    // 60 days: not whole weeks, so a trend fitted apart from the weekday profile would see one.
    for (const [start, days] of [["2026-01-01", 60], ["2026-02-03", 45], ["2026-03-10", 90]] as const) {
      const h = periodic(start, days);
      const m = fit(h);
      expect(m.method).toBe("trend_weekday");
      expect(Math.abs(m.slope)).toBeLessThan(1e-9);
      expect(m.outliers).toEqual([]);
      const bt = backtest(h, 28)!;
      expect(bt.wape!).toBeLessThan(1e-9);
      expect(bt.wape!).toBeLessThanOrEqual(bt.baseline_wape! + 1e-12);
      expect(Math.abs(bt.total_error!)).toBeLessThan(1e-9);
      const f = forecastSpend(h, 21);
      for (const p of f.daily) expect(p.value).toBeCloseTo(WEEK[dow(p.date)]!, 9);
    }
  });

  test("month-end projection from complete days is unbiased on periodic data; today's partial day counted as a day biases it low", () => {
    const complete: number[] = [];
    const partial: number[] = [];
    // Every "today" from 2026-04-05 to 2026-06-28: history = the complete days before it.
    for (let today = "2026-04-05"; today <= "2026-06-28"; today = addDaysIso(today, 1)) {
      const month = today.slice(0, 7);
      const monthTruth = truthOf(`${month}-01`, lastDayOfMonth(month));
      const history = periodic("2026-01-05", Math.round((Date.parse(`${today}T00:00:00Z`) - Date.parse("2026-01-05T00:00:00Z")) / DAY));
      const f = forecastSpend(history, 40, { through: addDaysIso(today, -1) });
      const m = monthEnd(f.series, (from, n) => predict(f.model, from, n), month, addDaysIso(today, -1));
      const projected = [...m.actual, ...m.remaining].reduce((a, p) => a + p.value, 0);
      expect(m.actual.length + m.remaining.length).toBe(Number(lastDayOfMonth(month).slice(8)));
      complete.push(projected / monthTruth - 1);
      // The old way: today's half-billed day in the history as if complete.
      const withToday = [...history, { date: today, value: WEEK[dow(today)]! / 2 }];
      const g = forecastSpend(withToday, 40);
      const old = monthEnd(g.series, (from, n) => predict(g.model, from, n), month, today);
      partial.push([...old.actual, ...old.remaining].reduce((a, p) => a + p.value, 0) / monthTruth - 1);
    }
    for (const e of complete) expect(Math.abs(e)).toBeLessThan(1e-9);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(mean(partial)).toBeLessThan(-0.005);
  });

  test("one-off days (a monthly charge on the 1st) are left out of the fit, so the weekday profile stays exact", () => {
    const h = periodic("2026-01-05", 120).map((p) => (p.date.endsWith("-01") ? { ...p, value: p.value + 37.5 } : p));
    const m = fit(h);
    expect(m.outliers).toEqual(["2026-02-01", "2026-03-01", "2026-04-01", "2026-05-01"]);
    expect(Math.abs(m.slope)).toBeLessThan(1e-9);
    for (const p of predict(m, "2026-05-05", 14)) expect(p.value).toBeCloseTo(WEEK[dow(p.date)]!, 9);
    // Noise alone leaves (almost) every day in.
    for (const seed of [1, 2, 3]) {
      const g = generatedSpend({ seed, days: 120, level: 1000, slopePerDay: 1, weekendFactor: 0.7, noise: 0.15 });
      expect(fit(g.history).outliers.length).toBeLessThanOrEqual(1);
    }
  });

  test("short histories fall back to a trend, then to the mean", () => {
    const g = generatedSpend({ seed: 9, days: 10, level: 100, slopePerDay: 0, weekendFactor: 1, noise: 0 });
    expect(fit(g.history).method).toBe("trend");
    expect(fit(g.history.slice(0, 5)).method).toBe("mean");
    expect(fit([]).method).toBe("mean");
    expect(predict(fit(g.history.slice(0, 5)), "2030-01-01", 3).map((p) => p.value)).toEqual([100, 100, 100]);
    // Too short to back-test.
    expect(backtest(g.history, 5)).toBeNull();
  });

  test("missing days count as zero, forecasts never go negative, dates follow the last data day", () => {
    const pts: DailyPoint[] = [
      { date: "2026-01-01", value: 5 },
      { date: "2026-01-04", value: 7 },
      { date: "2026-01-04", value: 1 },
    ];
    expect(densify(pts)).toEqual([
      { date: "2026-01-01", value: 5 },
      { date: "2026-01-02", value: 0 },
      { date: "2026-01-03", value: 0 },
      { date: "2026-01-04", value: 8 },
    ]);
    // Through a day: later points (partial days) are cut, missing complete days padded with 0.
    expect(densify(pts, "2026-01-02")).toEqual([
      { date: "2026-01-01", value: 5 },
      { date: "2026-01-02", value: 0 },
    ]);
    expect(densify(pts, "2026-01-05").map((p) => p.value)).toEqual([5, 0, 0, 8, 0]);
    const falling = Array.from({ length: 30 }, (_, i) => ({ date: addDaysIso("2026-01-01", i), value: 300 - 10 * i }));
    const f = forecastSpend(falling, 20);
    expect(f.daily[0]!.date).toBe("2026-01-31");
    expect(f.daily.every((p) => p.value >= 0)).toBe(true);
    expect(f.daily[f.daily.length - 1]!.value).toBe(0);
    expect(forecastSpend(falling, 3, { through: "2026-01-20" }).daily[0]!.date).toBe("2026-01-21");
  });

  test("seasonal naive repeats the same weekday of the last week, wherever the forecast starts", () => {
    const h = periodic("2026-01-05", 30);
    for (const from of [addDaysIso(h[h.length - 1]!.date, 1), addDaysIso(h[h.length - 1]!.date, 4)]) {
      for (const p of seasonalNaive(h, from, 10)) expect(p.value).toBe(WEEK[dow(p.date)]!);
    }
  });

  test("complete days: never today; a day only when the data reaches its end; the earliest current provider decides", () => {
    const now = new Date("2026-06-17T12:00:00Z");
    const c = (ends: [string, string | null][]) => lastCompleteDay(now, ends.map(([provider, data_end]) => ({ provider, data_end })));
    expect(c([])).toEqual({ today: "2026-06-17", last_complete_date: "2026-06-16", data_end: null, stale_providers: [] });
    // Data up to now (or beyond) still leaves today out.
    expect(c([["aws", "2026-06-17T12:00:00Z"]]).last_complete_date).toBe("2026-06-16");
    expect(c([["aws", "2026-06-20T00:00:00Z"]]).last_complete_date).toBe("2026-06-16");
    expect(c([["aws", "2026-06-17T00:00:00Z"]]).last_complete_date).toBe("2026-06-16");
    // The export stops at 18:00 on the 16th: the 16th is not complete.
    expect(c([["aws", "2026-06-16T18:00:00Z"]])).toMatchObject({ last_complete_date: "2026-06-15", data_end: "2026-06-16T18:00:00.000Z" });
    // Inclusive 23:59:59 ends count as the day's end.
    expect(c([["azure", "2026-06-15T23:59:59Z"]]).last_complete_date).toBe("2026-06-15");
    expect(c([["azure", "2026-06-15T23:59:58Z"]]).last_complete_date).toBe("2026-06-14");
    // Two exports: the lagging one decides; one stopped over 7 days before the freshest is ignored.
    expect(c([["aws", "2026-06-17T00:00:00Z"], ["azure", "2026-06-15T00:00:00Z"], ["gcp", "2026-06-01T00:00:00Z"], ["x", null]])).toEqual({
      today: "2026-06-17",
      last_complete_date: "2026-06-14",
      data_end: "2026-06-15T00:00:00.000Z",
      stale_providers: ["gcp"],
    });
  });
});

// ---- forecast_spend through the SDK client, the real app and FOCUS imports, on both drivers ----

async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
  const r: any = await client.callTool({ name, arguments: args });
  if (r.isError) throw new Error(`${name}: ${r.content?.[0]?.text}`);
  expect(JSON.parse(r.content[1].text)).toEqual(r.structuredContent);
  return { ...r.structuredContent, summary: r.content[0].text as string };
}

const PROVIDER_NAME = { aws: "AWS", azure: "Microsoft", gcp: "Google Cloud" } as const;

/** FOCUS rows: one per day of [first, last] per provider, WEEK × scale; `end` overrides a day's ChargePeriodEnd. */
function dailyRows(o: { provider: keyof typeof PROVIDER_NAME; currency?: string; first: string; last: string; scale?: number; ends?: Record<string, string>; values?: Record<string, number> }) {
  const rows = [];
  for (let d = o.first; d <= o.last; d = addDaysIso(d, 1)) {
    const month = d.slice(0, 7);
    const value = o.values?.[d] ?? Math.round((o.scale ?? 1) * WEEK[dow(d)]! * 100) / 100;
    rows.push({
      ProviderName: PROVIDER_NAME[o.provider], BillingAccountId: `${o.provider}-${o.currency ?? "USD"}-payer`, SubAccountId: `${o.provider}-${o.currency ?? "USD"}-1`, BillingCurrency: o.currency ?? "USD",
      BillingPeriodStart: `${month}-01T00:00:00Z`, BillingPeriodEnd: `${addDaysIso(lastDayOfMonth(month), 1)}T00:00:00Z`,
      ChargePeriodStart: `${d}T00:00:00Z`, ChargePeriodEnd: o.ends?.[d] ?? `${addDaysIso(d, 1)}T00:00:00Z`,
      BilledCost: value, EffectiveCost: value, ListCost: value, ContractedCost: value,
    });
  }
  return rows;
}

describeEachDb("mcp forecast_spend: complete days, one currency", (driver) => {
  let clock = new Date("2026-06-17T12:00:00Z");
  const t = useTestApp(driver, { now: () => clock });
  const orgWith = async (name: string, rows: Record<string, unknown>[]) => {
    const org = await t.newOrg(name);
    await importFocus(t.s.db, org.id, Readable.from([focusCsv(rows as any)]), { fileName: `${name}.csv`, now: clock });
    return connectMcp(t, org.key);
  };

  test("today's partial day is left out: periodic data gives the exact month end and a back-test WAPE of 0", async () => {
    clock = new Date("2026-06-17T12:00:00Z");
    // Two providers through the 16th, and today half-billed (00:00–12:00, half a day's spend).
    const rows = [
      ...dailyRows({ provider: "aws", first: "2026-04-01", last: "2026-06-16" }),
      ...dailyRows({ provider: "azure", first: "2026-04-01", last: "2026-06-16", scale: 2 }),
      ...dailyRows({ provider: "aws", first: "2026-06-17", last: "2026-06-17", ends: { "2026-06-17": "2026-06-17T12:00:00Z" }, values: { "2026-06-17": 52 } }),
      ...dailyRows({ provider: "azure", first: "2026-06-17", last: "2026-06-17", ends: { "2026-06-17": "2026-06-17T12:00:00Z" }, values: { "2026-06-17": 104 } }),
    ];
    const client = await orgWith("partial-today", rows);
    const f = await call(client, "forecast_spend", { horizon_days: 14 });
    expect(f.currency).toBe("USD");
    expect(f.history).toMatchObject({ last_data_date: "2026-06-17", last_complete_date: "2026-06-16", excluded_incomplete_days: ["2026-06-17"], data_end: "2026-06-17T12:00:00.000Z", one_off_days: [] });
    expect(f.forecast.start_date).toBe("2026-06-17");
    expect(f.forecast.trend_per_day).toBe(0);
    // Each forecast day is the periodic truth (aws ×1 + azure ×2), to the cent.
    for (const p of f.forecast.daily) expect(Math.round(p.value * 100)).toBe(Math.round((Math.round(WEEK[dow(p.date)]! * 100) / 100 + Math.round(2 * WEEK[dow(p.date)]! * 100) / 100) * 100));
    const truth = (from: string, to: string) => Math.round((truthOf(from, to) + truthOf(from, to, 2)) * 100);
    expect(f.month_end).toMatchObject({ month: "2026-06", actual_days: 16, remaining_days: 14, actual_source: "cloud_bill_daily" });
    expect(Math.round(f.month_end.actual_to_date * 100)).toBe(truth("2026-06-01", "2026-06-16"));
    expect(Math.round(f.month_end.forecast_remaining * 100)).toBe(truth("2026-06-17", "2026-06-30"));
    expect(Math.round(f.month_end.projected_total * 100)).toBe(truth("2026-06-01", "2026-06-30"));
    expect(f.backtest.wape).toBe(0);
    expect(f.backtest.wape).toBeLessThanOrEqual(f.backtest.baseline_wape);
    expect(f.method).toContain("never today");
    expect(f.summary).toContain("left out as incomplete: 2026-06-17");
    await client.close();
  }, 60_000);

  test("a trailing day the export has not finished is skipped (and forecast), on a lagging provider's clock", async () => {
    clock = new Date("2026-06-17T12:00:00Z");
    // aws stops at 18:00 on the 16th (three quarters of the day billed); nothing today.
    const rows = [
      ...dailyRows({ provider: "aws", first: "2026-04-06", last: "2026-06-16", ends: { "2026-06-16": "2026-06-16T18:00:00Z" }, values: { "2026-06-16": Math.round(WEEK[dow("2026-06-16")]! * 75) / 100 } }),
    ];
    const client = await orgWith("lagging-export", rows);
    const f = await call(client, "forecast_spend", { horizon_days: 30 });
    expect(f.history).toMatchObject({ last_data_date: "2026-06-16", last_complete_date: "2026-06-15", excluded_incomplete_days: ["2026-06-16"], data_end: "2026-06-16T18:00:00.000Z" });
    expect(f.forecast.start_date).toBe("2026-06-16");
    expect(f.month_end).toMatchObject({ actual_days: 15, remaining_days: 15 });
    expect(Math.round(f.month_end.actual_to_date * 100)).toBe(Math.round(truthOf("2026-06-01", "2026-06-15") * 100));
    expect(Math.round(f.month_end.projected_total * 100)).toBe(Math.round(truthOf("2026-06-01", "2026-06-30") * 100));
    expect(f.backtest.wape).toBe(0);

    // A second provider lagging two days decides for both; a third one stopped weeks ago is not waited for.
    const two = await orgWith("two-exports", [
      ...dailyRows({ provider: "aws", first: "2026-04-06", last: "2026-06-16" }),
      ...dailyRows({ provider: "azure", first: "2026-04-06", last: "2026-06-14" }),
      ...dailyRows({ provider: "gcp", first: "2026-04-06", last: "2026-05-20", scale: 0.1 }),
    ]);
    const g = await call(two, "forecast_spend", {});
    expect(g.history).toMatchObject({ last_complete_date: "2026-06-14", data_end: "2026-06-15T00:00:00.000Z", excluded_incomplete_days: ["2026-06-15", "2026-06-16"], stale_providers: ["gcp"] });
    expect(g.forecast.start_date).toBe("2026-06-15");
    expect(g.month_end.actual_days).toBe(14);
    await client.close();
    await two.close();
  }, 60_000);

  test("one currency at a time: the largest by default, EUR on request, never added; 23:59:59 ends count as complete", async () => {
    clock = new Date("2026-06-17T12:00:00Z");
    const eurEnds = Object.fromEntries(Array.from({ length: 80 }, (_, i) => addDaysIso("2026-03-29", i)).map((d) => [d, `${d}T23:59:59Z`]));
    const client = await orgWith("two-currencies", [
      ...dailyRows({ provider: "aws", first: "2026-04-01", last: "2026-06-16", scale: 3 }),
      ...dailyRows({ provider: "azure", currency: "EUR", first: "2026-04-01", last: "2026-06-12", ends: eurEnds }),
    ]);
    const usd = await call(client, "forecast_spend", {});
    expect(usd.currency).toBe("USD");
    expect(usd.currencies.map((c: any) => c.currency)).toEqual(["EUR", "USD"]);
    expect(usd.currencies.find((c: any) => c.currency === "EUR").effective_cost).toBe(truthOf("2026-04-01", "2026-06-12"));
    expect(Math.round(usd.history.total * 100)).toBe(Math.round(truthOf("2026-04-01", "2026-06-16", 3) * 100));
    expect(usd.history.last_complete_date).toBe("2026-06-16");
    expect(Math.round(usd.month_end.projected_total * 100)).toBe(Math.round(truthOf("2026-06-01", "2026-06-30", 3) * 100));
    expect(usd.summary).toContain("USD forecast");
    expect(usd.summary).toContain("Other currencies are not included (EUR)");

    const eur = await call(client, "forecast_spend", { currency: "EUR" });
    expect(eur.currency).toBe("EUR");
    expect(eur.history).toMatchObject({ last_complete_date: "2026-06-12", data_end: "2026-06-12T23:59:59.000Z", excluded_incomplete_days: [] });
    expect(Math.round(eur.history.total * 100)).toBe(Math.round(truthOf("2026-04-01", "2026-06-12") * 100));
    expect(Math.round(eur.month_end.actual_to_date * 100)).toBe(Math.round(truthOf("2026-06-01", "2026-06-12") * 100));
    expect(Math.round(eur.month_end.projected_total * 100)).toBe(Math.round(truthOf("2026-06-01", "2026-06-30") * 100));
    expect(eur.summary).toContain("Billing data reaches only");

    const none = await call(client, "forecast_spend", { currency: "JPY" });
    expect(none).toMatchObject({ currency: "JPY", month_end: null, forecast: { start_date: null, total: 0, daily: [] } });
    expect(none.summary).toContain("No complete day of JPY");
    const empty = await connectMcp(t, (await t.newOrg("no data")).key);
    const e = await call(empty, "forecast_spend", {});
    expect(e).toMatchObject({ currency: null, currencies: [], month_end: null });
    expect(e.summary).toContain("No billing data");
    await client.close();
    await empty.close();
  }, 60_000);
});

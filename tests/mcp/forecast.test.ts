import { describe, expect, test } from "bun:test";
import { addDaysIso, backtest, densify, fit, forecastSpend, predict, type DailyPoint } from "../../lib/mcp/forecast.ts";
import { generatedSpend } from "./generated.ts";

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
    const falling = Array.from({ length: 30 }, (_, i) => ({ date: addDaysIso("2026-01-01", i), value: 300 - 10 * i }));
    const f = forecastSpend(falling, 20);
    expect(f.daily[0]!.date).toBe("2026-01-31");
    expect(f.daily.every((p) => p.value >= 0)).toBe(true);
    expect(f.daily[f.daily.length - 1]!.value).toBe(0);
  });
});

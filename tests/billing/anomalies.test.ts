import { describe, expect, test } from "bun:test";
import { addDaysIso, ANOMALY_DEFAULTS, denseSeries, historyDays, lastCompleteDay, scoreSeries, type DailyValue } from "../../lib/billing/anomalies.ts";
import { rng } from "../../lib/billing/generator.ts";

const START = "2026-01-05"; // a Monday

/** Daily spend: weekday level, weekends × weekend, multiplicative Gaussian noise (cv), seeded. */
function series(o: { seed: number; days: number; level: number; weekend: number; cv: number; slope?: number }): { points: DailyValue[]; sigma: number[] } {
  const r = rng(o.seed);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
  const points: DailyValue[] = [];
  const sigma: number[] = [];
  for (let t = 0; t < o.days; t++) {
    const date = addDaysIso(START, t);
    const dow = new Date(`${date}T00:00:00Z`).getUTCDay();
    const truth = (o.level + (o.slope ?? 0) * t) * (dow === 0 || dow === 6 ? o.weekend : 1);
    points.push({ date, value: Math.max(0, truth * (1 + o.cv * gauss())) });
    sigma.push(o.cv * truth);
  }
  return { points, sigma };
}

const lastOf = (p: DailyValue[]) => p[p.length - 1]!.date;
/** Scores the last `days` days of a series that is complete through its last point. */
const scoreTail = (points: DailyValue[], days: number) => scoreSeries(points, { from: addDaysIso(lastOf(points), -days + 1), to: addDaysIso(lastOf(points), 1), completeThrough: lastOf(points) });

describe("spend anomalies: the method (pure)", () => {
  test("an injected spike and an injected drop are found, with expected, impact, score and direction", () => {
    for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
      const { points, sigma } = series({ seed, days: 140, level: 1000, weekend: 0.6, cv: 0.04 });
      const spike = 120; // a Tuesday
      const drop = 131; // a Saturday
      const truthSpike = points[spike]!.value;
      points[spike]!.value += 8 * sigma[spike]!;
      points[drop]!.value -= 8 * sigma[drop]!;
      const r = scoreTail(points, 35);
      expect(r.days.length).toBe(35);
      const found = r.days.filter((d) => d.anomaly);
      const s = found.find((d) => d.date === points[spike]!.date);
      expect(s?.direction).toBe("spike");
      // Expected: the weekday level (1000 ± noise), not the spiked value.
      expect(Math.abs(s!.expected - 1000)).toBeLessThan(60);
      expect(s!.impact).toBeCloseTo(s!.actual - s!.expected, 9);
      expect(s!.score).toBeGreaterThanOrEqual(ANOMALY_DEFAULTS.k);
      expect(s!.actual).toBeCloseTo(truthSpike + 8 * sigma[spike]!, 9);
      const d = found.find((x) => x.date === points[drop]!.date);
      expect(d?.direction).toBe("drop");
      expect(d!.score).toBeLessThanOrEqual(-ANOMALY_DEFAULTS.k);
      expect(Math.abs(d!.expected - 600)).toBeLessThan(40);
      // And not much else: at most one other day of 35.
      expect(found.length).toBeLessThanOrEqual(3);
    }
  });

  test("a strong day-of-week pattern is not flagged (weekends at 30 % of weekdays)", () => {
    let flagged = 0;
    let scored = 0;
    for (let seed = 1; seed <= 20; seed++) {
      const { points } = series({ seed, days: 175, level: 500, weekend: 0.3, cv: 0.03 });
      const r = scoreTail(points, 63);
      scored += r.days.length;
      flagged += r.days.filter((d) => d.anomaly).length;
      // Weekend days are expected low: their expected value follows the weekend, not the week.
      for (const d of r.days.filter((x) => [0, 6].includes(new Date(`${x.date}T00:00:00Z`).getUTCDay()))) expect(d.expected).toBeLessThan(200);
    }
    expect(scored).toBe(20 * 63);
    expect(flagged / scored).toBeLessThan(0.01);
  });

  test("a steady trend (+1 % a day) is not a run of spikes", () => {
    let flagged = 0;
    for (let seed = 1; seed <= 10; seed++) {
      const { points } = series({ seed, days: 175, level: 1000, weekend: 0.7, cv: 0.03, slope: 10 });
      flagged += scoreTail(points, 63).days.filter((d) => d.anomaly).length;
    }
    expect(flagged).toBeLessThan(7); // < 1 % of 630 days
  });

  test("zero-heavy series raise no alert storm; tiny series never alert on cents", () => {
    let flagged = 0;
    let scored = 0;
    for (let seed = 1; seed <= 30; seed++) {
      const r = rng(seed);
      const gauss = () => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
      const p = 0.2 + 0.4 * r();
      const amount = 5 + 200 * r();
      const points = Array.from({ length: 150 }, (_, t) => ({ date: addDaysIso(START, t), value: r() < p ? amount * Math.exp(0.3 * gauss()) : 0 }));
      const res = scoreTail(points, 63);
      scored += res.days.length;
      flagged += res.days.filter((d) => d.anomaly).length;
    }
    expect(scored).toBe(30 * 63);
    expect(flagged / scored).toBeLessThan(0.02);
    // Cents: a service costing a few cents on some days, with a 10× "spike" of 0.40.
    const tiny = Array.from({ length: 120 }, (_, t) => ({ date: addDaysIso(START, t), value: t % 3 === 0 ? 0.04 : 0 }));
    tiny[110]!.value = 0.4;
    const res = scoreTail(tiny, 40);
    expect(res.days.length).toBe(40);
    expect(res.days.filter((d) => d.anomaly)).toEqual([]);
    // The same shape at 1,000× the money is flagged: the floors are in money, not in shape.
    const big = tiny.map((x) => ({ date: x.date, value: x.value * 1000 }));
    expect(scoreTail(big, 40).days.filter((d) => d.anomaly).map((d) => d.date)).toEqual([tiny[110]!.date]);
  });

  test("a trailing day with partial data is not scored; days past completeThrough are ignored", () => {
    const { points } = series({ seed: 3, days: 100, level: 800, weekend: 1, cv: 0.02 });
    // The last day holds only part of its data (an export cut at noon).
    points[99]!.value *= 0.45;
    const last = points[99]!.date;
    const before = addDaysIso(last, -1);
    const window = { from: addDaysIso(last, -20), to: addDaysIso(last, 1) };
    const cut = scoreSeries(points, { ...window, completeThrough: before });
    expect(cut.days.map((d) => d.date)).not.toContain(last);
    expect(cut.days[cut.days.length - 1]!.date).toBe(before);
    expect(cut.days.filter((d) => d.anomaly)).toEqual([]);
    // Scored as if complete, the same day reads as a drop: the rule is what keeps it out.
    const naive = scoreSeries(points, { ...window, completeThrough: last });
    const d = naive.days.find((x) => x.date === last)!;
    expect(d.anomaly).toBe(true);
    expect(d.direction).toBe("drop");
    // Nothing is scored with no complete day.
    expect(scoreSeries(points, { ...window, completeThrough: null }).days).toEqual([]);
  });

  test("days without rows count as zero; a series is scored from its 29th day", () => {
    const pts = Array.from({ length: 60 }, (_, t) => ({ date: addDaysIso(START, t), value: 100 }));
    const gap = pts.filter((_, t) => t !== 45); // day 45 has no rows
    const dense = denseSeries(gap, lastOf(pts));
    expect(dense.length).toBe(60);
    expect(dense[45]!.value).toBe(0);
    const r = scoreSeries(gap, { from: START, to: addDaysIso(START, 60), completeThrough: lastOf(pts) });
    // Days 0-27 lack history (3 same-weekday values and 7 residuals).
    expect(r.unscored).toBe(28);
    expect(r.days[0]!.date).toBe(addDaysIso(START, 28));
    expect(r.days.filter((d) => d.anomaly).map((d) => [d.date, d.direction, d.expected, d.actual])).toEqual([[addDaysIso(START, 45), "drop", 100, 0]]);
    expect(historyDays()).toBe(ANOMALY_DEFAULTS.weeks * 7 + ANOMALY_DEFAULTS.residualDays);
  });

  test("min impact: a large score on a small amount is not an anomaly", () => {
    const pts = Array.from({ length: 70 }, (_, t) => ({ date: addDaysIso(START, t), value: 10 }));
    pts[65]!.value = 13; // 3 above a flat series: score 6 (spread at its 0.50 floor)
    const at = (minImpact: number) => scoreSeries(pts, { from: pts[60]!.date, to: addDaysIso(lastOf(pts), 1), completeThrough: lastOf(pts) }, { minImpact }).days.find((d) => d.date === pts[65]!.date)!;
    expect(at(1).anomaly).toBe(true);
    expect(at(1).score).toBeCloseTo(6, 9);
    expect(at(5).anomaly).toBe(false);
  });

  test("negative spend (credits) keeps its sign; expected is never below zero for non-negative series", () => {
    const pts = Array.from({ length: 70 }, (_, t) => ({ date: addDaysIso(START, t), value: t % 7 === 2 ? 2 : 0 }));
    const r = scoreSeries(pts, { from: pts[40]!.date, to: addDaysIso(lastOf(pts), 1), completeThrough: lastOf(pts) });
    for (const d of r.days) expect(d.expected).toBeGreaterThanOrEqual(0);
    const credits = Array.from({ length: 70 }, (_, t) => ({ date: addDaysIso(START, t), value: -20 }));
    credits[66]!.value = -80;
    const c = scoreSeries(credits, { from: credits[60]!.date, to: addDaysIso(lastOf(credits), 1), completeThrough: lastOf(credits) });
    expect(c.days.find((d) => d.date === credits[66]!.date)).toMatchObject({ expected: -20, actual: -80, impact: -60, direction: "drop", anomaly: true });
  });

  test("the last complete day comes from the data's reach and the clock", () => {
    const now = new Date("2026-06-17T12:00:00Z");
    expect(lastCompleteDay("2026-06-17T12:00:00Z", now)).toBe("2026-06-16"); // today's partial data
    expect(lastCompleteDay("2026-06-16T08:00:00Z", now)).toBe("2026-06-15"); // a day cut at 08:00
    expect(lastCompleteDay("2026-06-16T00:00:00Z", now)).toBe("2026-06-15"); // exclusive end at midnight
    expect(lastCompleteDay("2026-06-03T23:59:59Z", now)).toBe("2026-06-03"); // 23:59:59 reaches midnight
    expect(lastCompleteDay("2026-06-30T00:00:00Z", now)).toBe("2026-06-16"); // dated in the future: the clock caps it
    expect(lastCompleteDay("2026-06-18T00:00:00Z", new Date("2026-06-17T23:59:30Z"))).toBe("2026-06-16"); // never today
    expect(lastCompleteDay(null, now)).toBeNull();
  });
});

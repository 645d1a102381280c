import { describe, expect, test } from "bun:test";
import { bestOption, evaluateUnits, optimalUnits, sizeCommitments, UsageProfile, type PlanningGroup, type UnitQuote } from "../../lib/planning/optimize.ts";

const H = 24 * 30;

function quote(over: Partial<UnitQuote> & { ondemand: number; effective: number }): UnitQuote {
  return {
    offerId: over.offerId ?? crypto.randomUUID(),
    commitmentType: over.commitmentType ?? "reserved_instance",
    contractTerm: over.contractTerm ?? "one_year",
    paymentOption: over.paymentOption ?? "no_upfront",
    effectiveHourlyRate: over.effective,
    ondemandHourlyRate: over.ondemand,
    upfrontPerUnit: over.upfrontPerUnit ?? 0,
    durationSeconds: over.durationSeconds ?? 31_536_000,
    feeRate: over.feeRate ?? 0,
    lockInDays: over.lockInDays ?? 365,
    spendBased: over.spendBased ?? false,
  };
}

/** Independent simulation: hour by hour, what buying `units` would have saved per month. */
function simulateNet(usage: Float64Array, q: UnitQuote, units: number): number {
  let ondemandCovered = 0;
  for (const u of usage) ondemandCovered += Math.min(u, units) * q.ondemandHourlyRate;
  const cloud = units * q.effectiveHourlyRate * usage.length;
  const gross = ondemandCovered - cloud;
  return ((gross - q.feeRate * Math.max(gross, 0)) * 730) / usage.length;
}

function bruteForceBest(usage: Float64Array, q: UnitQuote): { units: number; net: number } {
  let best = { units: 0, net: 0 };
  const max = Math.max(...usage);
  for (let a = 0; a <= max; a++) {
    const net = simulateNet(usage, q, a);
    if (net > best.net + 1e-9) best = { units: a, net };
  }
  return best;
}

const profiles: Record<string, Float64Array> = {
  flat: Float64Array.from({ length: H }, () => 10),
  // 8 instances at night, up to 20 at the afternoon peak
  diurnal: Float64Array.from({ length: H }, (_, h) => Math.round(14 - 6 * Math.cos((2 * Math.PI * (h % 24)) / 24))),
  // 3 always on, 25 during 9-18 on weekdays
  business_hours: Float64Array.from({ length: H }, (_, h) => {
    const day = Math.floor(h / 24) % 7;
    const hour = h % 24;
    return day < 5 && hour >= 9 && hour < 18 ? 25 : 3;
  }),
  // shrinking fleet: 30 → 6 over the month
  declining: Float64Array.from({ length: H }, (_, h) => Math.round(30 - (24 * h) / H)),
};

const quotes = {
  oneYear: quote({ ondemand: 0.1, effective: 0.062 }), // d = 0.38
  threeYear: quote({ ondemand: 0.1, effective: 0.04, contractTerm: "three_year", paymentOption: "all_upfront", upfrontPerUnit: 1051.2 }), // d = 0.6
  insured: quote({ ondemand: 0.1, effective: 0.045, contractTerm: "thirty_day_gris", feeRate: 0.25, lockInDays: 30 }),
};

describe("optimal amount = usage quantile at the discount rate", () => {
  for (const [name, usage] of Object.entries(profiles)) {
    for (const [qn, q] of Object.entries(quotes)) {
      test(`${name} × ${qn}: matches the brute-force optimum`, () => {
        const profile = new UsageProfile(usage, usage.reduce((a, b) => a + b, 0));
        const units = optimalUnits(profile, q);
        const brute = bruteForceBest(usage, q);
        expect(simulateNet(usage, q, units)).toBeCloseTo(brute.net, 6);
        expect(units).toBe(brute.units);
        const o = evaluateUnits({ key: "g" }, profile, q, units);
        expect(o.monthlyNetSavings).toBeCloseTo(brute.net, 6);
      });
    }
  }

  test("hand-checked: business hours buys the peak only when busy-hours share > 1 − discount", () => {
    // 22 weekdays × 9 h = 198 of 720 hours (27.5%) run 25 instances, the rest 3. An instance
    // above 3 is busy 27.5% of the time: it pays off only when c/p = 1 − d < 0.275.
    const profile = new UsageProfile(profiles.business_hours!, 0);
    expect(optimalUnits(profile, quotes.oneYear)).toBe(3); // 1 − d = 0.62
    expect(optimalUnits(profile, quote({ ondemand: 1, effective: 0.3 }))).toBe(3); // 0.30 > 0.275
    expect(optimalUnits(profile, quote({ ondemand: 1, effective: 0.25 }))).toBe(25); // 0.25 < 0.275
  });

  test("hand-checked: flat usage is fully covered, declining usage at its quantile", () => {
    expect(optimalUnits(new UsageProfile(profiles.flat!, 0), quotes.oneYear)).toBe(10);
    // declining 30 → 6 linearly: the 38% quantile is about 30 − 24·(1 − 0.38) ≈ 15.
    const a = optimalUnits(new UsageProfile(profiles.declining!, 0), quotes.oneYear);
    expect(a).toBeGreaterThanOrEqual(14);
    expect(a).toBeLessThanOrEqual(16);
  });

  test("no discount → buy nothing", () => {
    const profile = new UsageProfile(profiles.flat!, 0);
    expect(optimalUnits(profile, quote({ ondemand: 0.1, effective: 0.1 }))).toBe(0);
    expect(optimalUnits(profile, quote({ ondemand: 0.1, effective: 0.12 }))).toBe(0);
  });

  test("spend-based options are continuous and still at the quantile", () => {
    const usage = Float64Array.from({ length: 500 }, (_, i) => 1 + ((i * 7919) % 500) / 100); // 1..6 spread
    const q = quote({ ondemand: 1, effective: 0.7, spendBased: true, commitmentType: "compute_savings_plan" });
    const profile = new UsageProfile(usage, 0);
    const a = optimalUnits(profile, q);
    let bestNet = -Infinity;
    for (let x = 0; x <= 7; x += 0.005) bestNet = Math.max(bestNet, simulateNet(usage, q, x));
    expect(simulateNet(usage, q, a)).toBeGreaterThanOrEqual(bestNet - 1e-9);
    expect(evaluateUnits({ key: "g" }, profile, q, a).amount).toBeCloseTo(a * 0.7, 9);
  });

  test("beats naive rules (cover the average, cover the minimum) on every profile", () => {
    for (const usage of Object.values(profiles)) {
      const q = quotes.oneYear;
      const opt = simulateNet(usage, q, optimalUnits(new UsageProfile(usage, 0), q));
      const avg = Math.round(usage.reduce((a, b) => a + b, 0) / usage.length);
      const min = Math.min(...usage);
      expect(opt).toBeGreaterThanOrEqual(simulateNet(usage, q, avg) - 1e-9);
      expect(opt).toBeGreaterThanOrEqual(simulateNet(usage, q, min) - 1e-9);
    }
    // and strictly on the shapes where the naive rules go wrong
    const diurnal = profiles.diurnal!;
    const dAvg = Math.round(diurnal.reduce((a, b) => a + b, 0) / diurnal.length);
    expect(simulateNet(diurnal, quotes.oneYear, optimalUnits(new UsageProfile(diurnal, 0), quotes.oneYear))).toBeGreaterThan(simulateNet(diurnal, quotes.oneYear, dAvg));
    const bh = profiles.business_hours!;
    const strong = quote({ ondemand: 1, effective: 0.1 });
    expect(simulateNet(bh, strong, optimalUnits(new UsageProfile(bh, 0), strong))).toBeGreaterThan(simulateNet(bh, strong, 3));
  });
});

describe("choosing among contract specs and fitting the upfront budget", () => {
  const group = (key: string, usage: Float64Array, qs: UnitQuote[], coverage?: number): PlanningGroup => ({ key, usage, quotes: qs, coverage });

  test("best spec per group by net savings; existing coverage is subtracted", () => {
    const r = sizeCommitments([group("a", profiles.flat!, [quotes.oneYear, quotes.insured])], 0);
    expect(r.items).toHaveLength(1);
    const one = simulateNet(profiles.flat!, quotes.oneYear, 10);
    const ins = simulateNet(profiles.flat!, quotes.insured, 10);
    expect(r.items[0]!.quote).toBe(ins > one ? quotes.insured : quotes.oneYear);
    const covered = sizeCommitments([group("a", profiles.flat!, [quotes.oneYear], 4)], 0);
    expect(covered.items[0]!.units).toBe(6);
    expect(covered.items[0]!.expectedCoverage).toBeCloseTo(0.6, 9);
    expect(covered.items[0]!.expectedUtilization).toBeCloseTo(1, 9);
  });

  test("never exceeds the upfront budget and spends it where savings per dollar are highest", () => {
    const groups = [
      group("flat", profiles.flat!, [quotes.oneYear, quotes.threeYear]),
      group("diurnal", profiles.diurnal!, [quotes.oneYear, quotes.threeYear]),
      group("declining", profiles.declining!, [quotes.oneYear, quotes.threeYear]),
    ];
    const unlimited = sizeCommitments(groups, 1e12);
    for (const budget of [0, 1000, 5000, 12_345, 20_000, unlimited.totalUpfront]) {
      const r = sizeCommitments(groups, budget);
      expect(r.totalUpfront).toBeLessThanOrEqual(budget + 1e-6);
      expect(new Set(r.items.map((i) => i.groupKey)).size).toBe(3);
      // more budget never saves less
      expect(r.monthlyNetSavings).toBeLessThanOrEqual(unlimited.monthlyNetSavings + 1e-9);
    }
    const none = sizeCommitments(groups, 0);
    expect(none.items.every((i) => i.quote === quotes.oneYear)).toBe(true);
    const some = sizeCommitments(groups, 12_345);
    expect(some.monthlyNetSavings).toBeGreaterThan(none.monthlyNetSavings);
    // the flat group pays back best per upfront dollar (full utilization): it is upgraded first
    expect(some.items.find((i) => i.groupKey === "flat")!.quote).toBe(quotes.threeYear);
  });

  test("a budget that buys part of a group mixes upfront units with no-upfront ones above them", () => {
    const g = group("flat", profiles.flat!, [quotes.oneYear, quotes.threeYear]);
    const r = sizeCommitments([g], 5000); // 4 three-year units (4 × 1051.2 = 4204.8) fit
    const three = r.items.find((i) => i.quote === quotes.threeYear)!;
    const one = r.items.find((i) => i.quote === quotes.oneYear)!;
    expect(three.units).toBe(4);
    expect(one.units).toBe(6);
    expect(r.totalUpfront).toBeCloseTo(4204.8, 6);
    // hand-checked: 4 × (0.10 − 0.04) × 730 + 6 × (0.10 − 0.062) × 730
    expect(r.monthlyNetSavings).toBeCloseTo(4 * 0.06 * 730 + 6 * 0.038 * 730, 6);
  });

  test("best option is null when nothing saves", () => {
    const usage = profiles.flat!;
    expect(bestOption({ key: "x", usage, quotes: [] }, new UsageProfile(usage, 0), [quote({ ondemand: 0.1, effective: 0.2 })])).toBeNull();
  });
});

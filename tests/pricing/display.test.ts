import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { evaluateOption, priceEstimate, priceLine, type CommitmentOption, type PricingLine } from "../../lib/pricing/index.ts";
import { displayEstimatePricing, displayLine, displayOption, rate6, toCents } from "../../lib/pricing/display.ts";
import { cents } from "../../lib/pricing/index.ts";
import { YEAR, arbLease as arbLeaseOf, lease, offer, pl, sel, sku } from "./fixtures.ts";
import { decimals, expectShownOption, expectShownPricing } from "./shown.ts";


/** A model option with its monthly rates replaced, to pin the rounding cases. */
function withRates(o: CommitmentOption, r: { recurring: number; amortized: number; premium: number; covered: number }): CommitmentOption {
  const cloud = r.recurring + r.amortized;
  const gross = r.covered - cloud;
  return {
    ...o,
    commitment_financials_monthly_rate: {
      commitment_cost: { total: cloud + r.premium, breakdown: { cloud_provider_cost: { total: cloud, breakdown: { recurring: r.recurring, amortized_upfront: r.amortized } }, service_premium: r.premium } },
      commitment_savings: { net: gross - r.premium, gross },
      covered_ondemand_cost: r.covered,
    },
  };
}

// 0.68 $/h × 730 h = 496.40000000000003 in doubles; a 0.425 $/h commitment saves 0.37500000000000006 of it.
const riNoUpfront = lease(offer({ commitmentType: "reserved_instance", offeringClass: "standard", contractTerm: "one_year", paymentOption: "no_upfront", durationSeconds: YEAR, lockInDays: 365 }), 0.425, 0);
const riAllUpfront = lease(offer({ commitmentType: "reserved_instance", offeringClass: "standard", contractTerm: "one_year", paymentOption: "all_upfront", durationSeconds: YEAR, lockInDays: 365 }), 0, 2714);
const gris30 = lease(offer({ provider: "gcp", commitmentType: "resource_cud", contractTerm: "thirty_day_gris", paymentOption: "no_upfront", durationSeconds: 30 * 86400, lockInDays: 30, feeRate: 0.3, isInsured: true }), 0.033172, 0);
const m = sku("aws", 0.68, [riNoUpfront, riAllUpfront]);
const e2 = sku("aws", 0.073715, [gris30]);

describe("money at the edge, hand-computed", () => {
  test("float noise is gone: 496.40000000000003 → 496.4, 0.37500000000000006 → 0.375", () => {
    const raw = priceLine(m, pl(m, 1, { selected: sel(riNoUpfront) }));
    expect(raw.ondemand_monthly_cost).toBe(496.40000000000003);
    expect(raw.matched_commitment_option!.discount_rate).toBe(0.37500000000000006);
    const shown = displayLine(raw);
    expect(shown.ondemand_monthly_cost).toBe(496.4);
    const o = shown.matched_commitment_option!;
    expect(o.discount_rate).toBe(0.375);
    expect(o.commitment_financials_monthly_rate).toEqual({
      commitment_cost: { total: 310.25, breakdown: { cloud_provider_cost: { total: 310.25, breakdown: { recurring: 310.25, amortized_upfront: 0 } }, service_premium: 0 } },
      commitment_savings: { net: 186.15, gross: 186.15 },
      covered_ondemand_cost: 496.4,
    });
    expect(shown.estimated_monthly_cost).toBe(310.25);
    expect(shown.monthly_net_savings).toBe(186.15);
    // 310.25 / 496.4 × 365 = 228.125 days
    expect(o.breakeven_days).toBe(228.13);
  });

  test("insured option: every total is derived from the parts shown, not rounded on its own", () => {
    const o = displayOption(evaluateOption(e2, gris30, 1, "resource_count"));
    const f = o.commitment_financials_monthly_rate;
    // model: covered 53.81195, provider cost 24.21556, premium 0.3 × 29.59639 = 8.878917
    expect(f.covered_ondemand_cost).toBe(53.81);
    expect(f.commitment_cost.breakdown.cloud_provider_cost).toEqual({ total: 24.22, breakdown: { recurring: 24.22, amortized_upfront: 0 } });
    expect(f.commitment_cost.breakdown.service_premium).toBe(8.88);
    // 24.22 + 8.88 (the model's 33.094477 would round to 33.09)
    expect(f.commitment_cost.total).toBe(33.1);
    // 53.81 − 24.22 = 29.59 (model 29.59639 → 29.60); 29.59 − 8.88 = 20.71 (model 20.717473 → 20.72)
    expect(f.commitment_savings).toEqual({ gross: 29.59, net: 20.71 });
    // 20.71 / 53.81 = 0.38487270024…
    expect(o.discount_rate).toBe(0.384873);
    // model: 33.094477 / 53.81195 × 30 = 18.45007…
    expect(o.breakeven_days).toBe(18.45);
  });

  test("the provider cost is the sum of its shown parts (half cents round up in each part)", () => {
    const raw = withRates(evaluateOption(m, riNoUpfront, 1, "resource_count"), { recurring: 10.005, amortized: 20.005, premium: 0, covered: 40 });
    expect(raw.commitment_financials_monthly_rate.commitment_cost.breakdown.cloud_provider_cost.total).toBeCloseTo(30.01, 9);
    const f = displayOption(raw).commitment_financials_monthly_rate;
    expect(f.commitment_cost.breakdown.cloud_provider_cost).toEqual({ total: 30.02, breakdown: { recurring: 10.01, amortized_upfront: 20.01 } });
    expect(f.commitment_cost.total).toBe(30.02);
    expect(f.commitment_savings).toEqual({ gross: 9.98, net: 9.98 });
  });

  test("a covered cost that shows as 0 gives discount_rate 0 and breakeven_days 0", () => {
    const raw = withRates(evaluateOption(m, riNoUpfront, 1, "resource_count"), { recurring: 0.001, amortized: 0, premium: 0, covered: 0.004 });
    const o = displayOption({ ...raw, discount_rate: 0.75, breakeven_days: 91.25 });
    expect(o.commitment_financials_monthly_rate.covered_ondemand_cost).toBe(0);
    expect(o.discount_rate).toBe(0);
    expect(o.breakeven_days).toBe(0);
  });

  test("a loss shows as negative savings without -0", () => {
    const raw = withRates(evaluateOption(m, riNoUpfront, 1, "resource_count"), { recurring: 12.344, amortized: 0, premium: 0, covered: 12.341 });
    const o = displayOption(raw);
    // 12.34 − 12.34: a loss of 0.003 shows as no saving at all
    expect(Object.is(o.commitment_financials_monthly_rate.commitment_savings.net, 0)).toBe(true);
    expect(Object.is(o.discount_rate, 0)).toBe(true);
    const loss = displayOption(withRates(raw, { recurring: 15, amortized: 0, premium: 0, covered: 12.341 }));
    expect(loss.commitment_financials_monthly_rate.commitment_savings.net).toBe(-2.66);
    // −2.66 / 12.34 = −0.215559157…
    expect(loss.discount_rate).toBe(-0.215559);
  });

  test("selected_amount keeps its precision without noise; upfront in cents", () => {
    // $/hour commitment of a savings plan: 0.1 + 0.2 $/h shows as 0.3
    const o = displayOption({ ...evaluateOption(m, riAllUpfront, 1 / 3, "resource_count"), selected_amount: 0.1 + 0.2 });
    expect(o.selected_amount).toBe(0.3);
    // 2714 / 3 = 904.666…
    expect(o.commitment_upfront_cost).toBe(904.67);
    expect(displayOption(evaluateOption(m, riAllUpfront, 1 / 3, "resource_count")).selected_amount).toBe(0.333333);
  });

  test("totals: enabled lines only, summed from the shown line values", () => {
    // three lines of 1/3 instance: each shows 496.4 / 3 = 165.4666… → 165.47 on-demand and 2714 / 3 = 904.67 upfront
    const lines = [pl(m, 1 / 3, { selected: sel(riAllUpfront) }), pl(m, 1 / 3, { selected: sel(riAllUpfront) }), pl(m, 1 / 3), pl(m, 5, { isEnabled: false, selected: sel(riNoUpfront) })];
    const raw = priceEstimate(lines, new Map([[m.sku.id, m]]));
    const shown = displayEstimatePricing(lines, raw);
    const [a, b, c, off] = shown.line_items;
    expect(a!.ondemand_monthly_cost).toBe(165.47);
    expect(a!.matched_commitment_option!.commitment_upfront_cost).toBe(904.67);
    // amortized 2714 / 12 / 3 = 75.3888… → 75.39; net 165.47 − 75.39 = 90.08
    expect(a!.estimated_monthly_cost).toBe(75.39);
    expect(a!.monthly_net_savings).toBe(90.08);
    expect(b).toEqual({ ...a!, line_item_id: lines[1]!.id });
    expect(c!.estimated_monthly_cost).toBe(165.47);
    // the disabled line is still priced on its own line: 5 × 496.4
    expect(off!.ondemand_monthly_cost).toBe(2482);
    expect(shown.totals).toEqual({
      ondemand_monthly_cost: 496.41, // 3 × 165.47 (the model's 496.4 is not what the lines show)
      estimated_monthly_cost: 316.25, // 75.39 + 75.39 + 165.47
      monthly_net_savings: 180.16, // 2 × 90.08
      commitment_upfront_cost: 1809.34, // 2 × 904.67 (the model's 1809.333… would show 1809.33)
    });
  });

  test("unpriced lines and the options grid are shown too", () => {
    const withdrawn = { ...m, sku: { ...m.sku, isAvailable: false } };
    const p = displayLine(priceLine(withdrawn, pl(withdrawn, 2), { includeOptions: true }));
    expect(p).toMatchObject({ status: "sku_unavailable", ondemand_monthly_cost: 0, estimated_monthly_cost: 0, monthly_net_savings: 0, matched_commitment_option: null, commitment_options: [] });
    const grid = displayLine(priceLine(m, pl(m, 1.234567), { includeOptions: true })).commitment_options!;
    expect(grid.length).toBe(2);
    for (const o of grid) expectShownOption(o);
    expect(displayLine(priceLine(m, pl(m, 1))).commitment_options).toBeUndefined();
  });

  test("decimals() reads the JSON form", () => {
    expect(decimals(700.8000000000001)).toBe(13);
    expect(decimals(700.8)).toBe(1);
    expect(decimals(3)).toBe(0);
    expect(decimals(1e-7)).toBe(7);
    expect(decimals(-0.375)).toBe(3);
  });
});

// ---- properties over the model's own output ----------------------------------------------------

const arbLease = arbLeaseOf(["reserved_instance", "compute_savings_plan", "resource_cud"]);

const arbBasket = fc
  .array(fc.record({ hourly: fc.double({ min: 0.001, max: 10, noNaN: true }), leases: fc.array(arbLease, { maxLength: 3 }) }).map((r) => sku("aws", r.hourly, r.leases)), { minLength: 1, maxLength: 3 })
  .chain((skus) =>
    fc
      .array(
        fc.record({
          i: fc.integer({ min: 0, max: skus.length - 1 }),
          quantity: fc.oneof(fc.integer({ min: 0, max: 200 }), fc.double({ min: 0, max: 1000, noNaN: true })),
          basis: fc.constantFrom("resource_count", "usage_hours", "usage_quantity") as fc.Arbitrary<PricingLine["quantityBasis"]>,
          enabled: fc.boolean(),
          pick: fc.integer({ min: -1, max: 2 }),
        }),
        { maxLength: 8 },
      )
      .map((ls) => ({
        skus,
        lines: ls.map((r) => {
          const s = skus[r.i]!;
          return pl(s, r.quantity, { quantityBasis: r.basis, isEnabled: r.enabled, selected: r.pick >= 0 && s.leases[r.pick] ? sel(s.leases[r.pick]!) : null });
        }),
      })),
  );

describe("money at the edge, properties", () => {
  test("every shown document adds up as displayed and stays within rounding of the model", () => {
    fc.assert(
      fc.property(arbBasket, ({ skus, lines }) => {
        const raw = priceEstimate(lines, new Map(skus.map((s) => [s.sku.id, s])), { includeOptions: true });
        const shown = displayEstimatePricing(lines, raw);
        expectShownPricing(shown, lines.map((l) => l.isEnabled));
        shown.line_items.forEach((p, i) => {
          const r = raw.line_items[i]!;
          expect(Math.abs(p.ondemand_monthly_cost - r.ondemand_monthly_cost)).toBeLessThanOrEqual(0.005 + 1e-9);
          r.commitment_options!.forEach((ro, j) => {
            const f = p.commitment_options![j]!.commitment_financials_monthly_rate;
            const rf = ro.commitment_financials_monthly_rate;
            // each part is within half a cent; a total of n parts within n half cents
            expect(Math.abs(f.covered_ondemand_cost - rf.covered_ondemand_cost)).toBeLessThanOrEqual(0.005 + 1e-9);
            expect(Math.abs(f.commitment_cost.total - rf.commitment_cost.total)).toBeLessThanOrEqual(0.015 + 1e-9);
            expect(Math.abs(f.commitment_savings.net - rf.commitment_savings.net)).toBeLessThanOrEqual(0.02 + 1e-9);
          });
        });
      }),
      { numRuns: 300 },
    );
  });
});

describe("rounding at the edge agrees with PostgreSQL's ROUND (half away from zero, on the decimal)", () => {
  test("ties the binary double hides: 0.145 → 0.15, 1.005 → 1.01, -0.125 → -0.13; rates at 6 decimals; never -0", () => {
    expect([cents(0.145), cents(1.005), cents(-0.125), cents(2.675), cents(-0.004)]).toEqual([0.15, 1.01, -0.13, 2.68, 0]);
    expect(Object.is(cents(-0.004), -0)).toBe(false);
    expect([rate6(0.0001245), rate6(-0.0000005), rate6(0.1234565)]).toEqual([0.000125, -0.000001, 0.123457]);
    expect([toCents(0.145), toCents(-0.125)]).toEqual([15, -13]);
  });

  test("property: cents of any amount a double carries exactly to 15 digits (up to 7 + 8) is its exact half-away rounding", () => {
    // The expectation in exact integers (as numeric does), independent of the code under test.
    const exactCents = (int: bigint, frac: string, negative: boolean) => {
      const scaled = int * 10n ** 10n + BigInt(frac.padEnd(10, "0"));
      const c = (scaled + 50_000_000n) / 100_000_000n;
      return Number(negative ? -c : c);
    };
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 6n }), fc.stringMatching(/^[0-9]{0,8}$/), fc.boolean(), (int, frac, negative) => {
        const text = `${negative ? "-" : ""}${int}.${frac || "0"}`;
        expect(toCents(Number(text))).toBe(exactCents(int, frac, negative) + 0);
      }),
      { numRuns: 20000 },
    );
  });
});

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import {
  commitmentOptions,
  evaluateOption,
  offerUnitEconomics,
  priceEstimate,
  priceLine,
  type PricingLine,
  type SkuPricingInputs,
} from "../../lib/pricing/index.ts";
import { YEAR, arbLease as arbLeaseOf, lease, offer, pl, sel, sku } from "./fixtures.ts";

// Rates below are copied from the bundled price snapshot (data/pricing/prices.csv) so the
// hand computations are the ones a FinOps analyst would do with the published list prices.

// AWS c5.xlarge Windows ap-northeast-1 (AWS Pricing Calculator transcript): on-demand 0.398 $/h.
const riAllUpfront = lease(offer({ commitmentType: "reserved_instance", offeringClass: "standard", contractTerm: "one_year", paymentOption: "all_upfront", durationSeconds: YEAR, lockInDays: 365 }), 0, 2714);
const riNoUpfront = lease(offer({ commitmentType: "reserved_instance", offeringClass: "standard", contractTerm: "one_year", paymentOption: "no_upfront", durationSeconds: YEAR, lockInDays: 365 }), 0.319, 0);
const computeSp = lease(offer({ commitmentType: "compute_savings_plan", planType: "compute", isFlexible: true, contractTerm: "one_year", paymentOption: "no_upfront", durationSeconds: YEAR, lockInDays: 365 }), 0.361, 0);
const c5 = sku("aws", 0.398, [riAllUpfront, riNoUpfront, computeSp]);

describe("money model, hand-computed", () => {
  test("AWS RI 1-year all upfront, 2 instances", () => {
    const o = evaluateOption(c5, riAllUpfront, 2, "resource_count");
    const f = o.commitment_financials_monthly_rate;
    // covered = 2 × 730 h × 0.398 = 581.08
    expect(f.covered_ondemand_cost).toBeCloseTo(581.08, 9);
    // recurring = 0; amortized = 2714 × 2,628,000 / 31,536,000 × 2 = 2714 / 12 × 2 = 452.3333…
    expect(f.commitment_cost.breakdown.cloud_provider_cost.breakdown.recurring).toBe(0);
    expect(f.commitment_cost.breakdown.cloud_provider_cost.breakdown.amortized_upfront).toBeCloseTo(452.333333333, 6);
    expect(f.commitment_cost.total).toBeCloseTo(452.333333333, 6);
    expect(f.commitment_cost.breakdown.service_premium).toBe(0);
    // gross = net = 581.08 − 452.3333 = 128.746667
    expect(f.commitment_savings.gross).toBeCloseTo(128.746666667, 6);
    expect(f.commitment_savings.net).toBeCloseTo(128.746666667, 6);
    // discount = 128.746667 / 581.08 = 0.2215644…; breakeven = 452.3333 / 581.08 × 365 = 284.12898…
    expect(o.discount_rate).toBeCloseTo(0.2215644, 6);
    expect(o.breakeven_days).toBeCloseTo(284.12898, 4);
    // upfront = 2714 × 2 = 5428, one-time, never in the monthly rates
    expect(o.commitment_upfront_cost).toBe(5428);
    expect(o.selected_amount).toBe(2);
  });

  test("AWS RI 1-year no upfront, 2 instances", () => {
    const o = evaluateOption(c5, riNoUpfront, 2, "resource_count");
    const f = o.commitment_financials_monthly_rate;
    // recurring = 0.319 × 730 × 2 = 465.74; gross = 581.08 − 465.74 = 115.34
    expect(f.commitment_cost.breakdown.cloud_provider_cost.breakdown.recurring).toBeCloseTo(465.74, 9);
    expect(f.commitment_cost.breakdown.cloud_provider_cost.breakdown.amortized_upfront).toBe(0);
    expect(f.commitment_savings.net).toBeCloseTo(115.34, 9);
    // discount = 115.34 / 581.08 = 0.198492…; breakeven = 465.74 / 581.08 × 365 = 292.5503…
    expect(o.discount_rate).toBeCloseTo(0.1984925, 6);
    expect(o.breakeven_days).toBeCloseTo(292.55025, 4);
    expect(o.commitment_upfront_cost).toBe(0);
  });

  test("AWS Compute Savings Plan 1-year no upfront: amount in $/hour", () => {
    const o = evaluateOption(c5, computeSp, 2, "resource_count");
    // selected_amount = 0.361 $/h × 2 instances = 0.722 $/h of commitment
    expect(o.selected_amount).toBeCloseTo(0.722, 12);
    // recurring = 0.361 × 730 × 2 = 527.06; gross = 581.08 − 527.06 = 54.02
    expect(o.commitment_financials_monthly_rate.commitment_cost.total).toBeCloseTo(527.06, 9);
    expect(o.commitment_financials_monthly_rate.commitment_savings.gross).toBeCloseTo(54.02, 9);
    expect(o.discount_rate).toBeCloseTo(54.02 / 581.08, 12);
  });

  test("Azure reservation 1-year (B2ms eastus): no-upfront and all-upfront cost the same per month", () => {
    // PAYG 0.0832 $/h; reservation effective 0.0486 $/h; all upfront = 0.0486 × 8760 = 425.736 per VM
    const noUp = lease(offer({ provider: "azure", commitmentType: "reservation", contractTerm: "one_year", paymentOption: "no_upfront", durationSeconds: YEAR, lockInDays: 365 }), 0.0486, 0);
    const allUp = lease(offer({ provider: "azure", commitmentType: "reservation", contractTerm: "one_year", paymentOption: "all_upfront", durationSeconds: YEAR, lockInDays: 365 }), 0, 425.736);
    const b2ms = sku("azure", 0.0832, [noUp, allUp]);
    const a = evaluateOption(b2ms, noUp, 3, "resource_count");
    const b = evaluateOption(b2ms, allUp, 3, "resource_count");
    // covered = 0.0832 × 730 × 3 = 182.208; commitment = 0.0486 × 730 × 3 = 106.434; net = 75.774
    expect(a.commitment_financials_monthly_rate.covered_ondemand_cost).toBeCloseTo(182.208, 9);
    expect(a.commitment_financials_monthly_rate.commitment_cost.total).toBeCloseTo(106.434, 9);
    expect(b.commitment_financials_monthly_rate.commitment_cost.total).toBeCloseTo(106.434, 9);
    expect(b.commitment_financials_monthly_rate.commitment_savings.net).toBeCloseTo(75.774, 9);
    // all upfront: 425.736 × 3 = 1277.208 paid once
    expect(b.commitment_upfront_cost).toBeCloseTo(1277.208, 9);
    expect(a.commitment_upfront_cost).toBe(0);
  });

  const cud3 = lease(offer({ provider: "gcp", commitmentType: "resource_cud", contractTerm: "three_year", paymentOption: "no_upfront", durationSeconds: 3 * YEAR, lockInDays: 1095 }), 0.033172, 0);
  const gris30 = lease(offer({ provider: "gcp", commitmentType: "resource_cud", contractTerm: "thirty_day_gris", paymentOption: "no_upfront", durationSeconds: 30 * 86400, lockInDays: 30, feeRate: 0.3, isInsured: true }), 0.033172, 0);
  const gris365 = lease(offer({ provider: "gcp", commitmentType: "resource_cud", contractTerm: "one_year_gris", paymentOption: "no_upfront", durationSeconds: YEAR, lockInDays: 365, feeRate: 0.2, isInsured: true }), 0.033172, 0);
  const e2 = sku("gcp", 0.073715, [cud3, gris30, gris365]);

  test("GCP resource CUD 3-year (e2-standard-2 europe-west1), 730 usage hours", () => {
    const o = evaluateOption(e2, cud3, 730, "usage_hours");
    // covered = 730 × 0.073715 = 53.81195; recurring = 730 × 0.033172 = 24.21556; net = 29.59639
    expect(o.commitment_financials_monthly_rate.covered_ondemand_cost).toBeCloseTo(53.81195, 9);
    expect(o.commitment_financials_monthly_rate.commitment_cost.total).toBeCloseTo(24.21556, 9);
    expect(o.commitment_financials_monthly_rate.commitment_savings.net).toBeCloseTo(29.59639, 9);
    // breakeven = 24.21556 / 53.81195 × 1095 = 492.75371… days
    expect(o.breakeven_days).toBeCloseTo((24.21556 / 53.81195) * 1095, 9);
    expect(o.breakeven_days).toBeCloseTo(492.75371, 4);
  });

  test("insured 30-day and 1-year lock-in: premium on realized gross savings", () => {
    const a = evaluateOption(e2, gris30, 1, "resource_count");
    const f = a.commitment_financials_monthly_rate;
    // gross = 53.81195 − 24.21556 = 29.59639; premium = 0.3 × 29.59639 = 8.878917
    expect(f.commitment_savings.gross).toBeCloseTo(29.59639, 9);
    expect(f.commitment_cost.breakdown.service_premium).toBeCloseTo(8.878917, 9);
    // net = 29.59639 − 8.878917 = 20.717473; total = 24.21556 + 8.878917 = 33.094477
    expect(f.commitment_savings.net).toBeCloseTo(20.717473, 9);
    expect(f.commitment_cost.total).toBeCloseTo(33.094477, 9);
    expect(f.commitment_cost.breakdown.cloud_provider_cost.total).toBeCloseTo(24.21556, 9);
    // breakeven = 33.094477 / 53.81195 × 30 = 18.45007… days; discount = 20.717473 / 53.81195 = 0.384998
    expect(a.breakeven_days).toBeCloseTo(18.45007, 4);
    expect(a.discount_rate).toBeCloseTo(0.384998, 5);
    const b = evaluateOption(e2, gris365, 1, "resource_count");
    // premium = 0.2 × 29.59639 = 5.919278; breakeven = (24.21556 + 5.919278) / 53.81195 × 365 = 204.40099
    expect(b.commitment_financials_monthly_rate.commitment_cost.breakdown.service_premium).toBeCloseTo(5.919278, 9);
    expect(b.breakeven_days).toBeCloseTo(204.40099, 4);
  });

  test("insured premium is never charged on a loss", () => {
    const bad = lease(offer({ commitmentType: "resource_cud", contractTerm: "thirty_day_gris", paymentOption: "no_upfront", durationSeconds: 30 * 86400, lockInDays: 30, feeRate: 0.3, isInsured: true }), 0.1, 0);
    const o = evaluateOption(sku("gcp", 0.073715, [bad]), bad, 1, "resource_count");
    expect(o.commitment_financials_monthly_rate.commitment_cost.breakdown.service_premium).toBe(0);
    expect(o.commitment_financials_monthly_rate.commitment_savings.net).toBeLessThan(0);
  });

  test("tiered usage SKU: tiers apply within the line", () => {
    // 0–100 GB at 0.10, 100–1000 at 0.08, above at 0.05; 1,500 GB = 10 + 72 + 25 = 107
    const storage: SkuPricingInputs = {
      sku: { id: "s", orgId: "public", provider: "gcp", providerSkuId: "storage", displayName: "storage", usageUnit: "GiBy.mo", isAvailable: true },
      tiers: [
        { startQuantity: 0, endQuantity: 100, unitPrice: 0.1 },
        { startQuantity: 100, endQuantity: 1000, unitPrice: 0.08 },
        { startQuantity: 1000, endQuantity: null, unitPrice: 0.05 },
      ],
      leases: [],
      pricesAsOf: null,
    };
    const p = priceLine(storage, { ...pl(storage, 1500), quantityBasis: "usage_quantity" });
    expect(p.ondemand_monthly_cost).toBeCloseTo(107, 9);
    expect(p.status).toBe("no_commitment_options");
    // Two lines of 750 GB each are priced on their own: 10 + 52 = 62 each (not 107 / 2)
    expect(priceLine(storage, { ...pl(storage, 750), quantityBasis: "usage_quantity" }).ondemand_monthly_cost).toBeCloseTo(62, 9);
  });

  test("zero quantity: everything zero, no division by zero", () => {
    const p = priceLine(c5, pl(c5, 0, { selected: sel(riAllUpfront) }), { includeOptions: true });
    expect(p.ondemand_monthly_cost).toBe(0);
    expect(p.matched_commitment_option!.discount_rate).toBe(0);
    expect(p.matched_commitment_option!.breakeven_days).toBe(0);
    expect(p.matched_commitment_option!.commitment_upfront_cost).toBe(0);
    for (const o of p.commitment_options!) expect(Number.isFinite(o.discount_rate)).toBe(true);
  });

  test("disabled line: priced per line, out of the totals", () => {
    const on = pl(c5, 2, { selected: sel(riNoUpfront) });
    const off = pl(c5, 5, { isEnabled: false, selected: sel(riAllUpfront) });
    const r = priceEstimate([on, off], new Map([[c5.sku.id, c5]]));
    // the disabled line still shows its price: 5 × 730 × 0.398 = 1452.7
    expect(r.line_items[1]!.ondemand_monthly_cost).toBeCloseTo(1452.7, 9);
    expect(r.line_items[1]!.matched_commitment_option).not.toBeNull();
    // totals = the enabled line only: on-demand 581.08, estimated 465.74, net 115.34, upfront 0
    expect(r.totals.ondemand_monthly_cost).toBeCloseTo(581.08, 9);
    expect(r.totals.estimated_monthly_cost).toBeCloseTo(465.74, 9);
    expect(r.totals.monthly_net_savings).toBeCloseTo(115.34, 9);
    expect(r.totals.commitment_upfront_cost).toBe(0);
  });

  test("selection re-matching: lease menu item, then offer, else selection_unavailable", () => {
    const line = pl(c5, 1, { selected: sel(riNoUpfront) });
    expect(priceLine(c5, line).status).toBe("ok");
    // the lease menu item was replaced but the offer is still sold for this SKU
    const replaced = { ...c5, leases: [lease(riNoUpfront.offer, 0.3, 0)] };
    const m = priceLine(replaced, line);
    expect(m.status).toBe("ok");
    expect(m.matched_commitment_option!.commitment_financials_monthly_rate.commitment_cost.total).toBeCloseTo(0.3 * 730, 9);
    const gone = { ...c5, leases: [computeSp] };
    const u = priceLine(gone, line);
    expect(u.status).toBe("selection_unavailable");
    expect(u.matched_commitment_option).toBeNull();
    expect(u.estimated_monthly_cost).toBeCloseTo(0.398 * 730, 9);
  });

  test("only_most_flexible_commitment_type keeps the most flexible type's options", () => {
    const all = commitmentOptions(c5, 1, "resource_count");
    expect(new Set(all.map((o) => o.commitment_type))).toEqual(new Set(["reserved_instance", "compute_savings_plan"]));
    const flex = commitmentOptions(c5, 1, "resource_count", { onlyMostFlexibleCommitmentType: true });
    expect(flex.map((o) => o.commitment_type)).toEqual(["compute_savings_plan"]);
  });

  test("offerUnitEconomics gives plan generation the per-offer figures", () => {
    const u = offerUnitEconomics(c5, riAllUpfront);
    expect(u.upfrontCost).toBe(2714);
    expect(u.durationSeconds).toBe(YEAR);
    expect(u.ondemandHourlyRate).toBeCloseTo(0.398, 12);
    // effective = 2714 × 3600 / 31,536,000 = 0.309817… $/h
    expect(u.effectiveHourlyRate).toBeCloseTo(0.3098174, 6);
    expect(u.discountRate).toBeCloseTo(1 - 0.3098174 / 0.398, 6);
    expect(u.feeRate).toBe(0);
  });

  test("withdrawn SKU costs nothing and says why", () => {
    const w = { ...c5, sku: { ...c5.sku, isAvailable: false } };
    const p = priceLine(w, pl(w, 3));
    expect(p.status).toBe("sku_unavailable");
    expect(p.ondemand_monthly_cost).toBe(0);
    expect(p.detail).toContain("withdrawn");
  });
});

// ---- properties ---------------------------------------------------------------------------

const arbLease = arbLeaseOf(["reserved_instance", "compute_savings_plan", "resource_cud", "savings_plan"]);

const arbSku = fc
  .record({ hourly: fc.double({ min: 0.001, max: 10, noNaN: true }), leases: fc.array(arbLease, { minLength: 0, maxLength: 4 }) })
  .map((r) => sku("aws", r.hourly, r.leases));

const arbLine = (s: SkuPricingInputs) =>
  fc.record({
    quantity: fc.double({ min: 0, max: 1000, noNaN: true }),
    basis: fc.constantFrom("resource_count", "usage_hours", "usage_quantity") as fc.Arbitrary<PricingLine["quantityBasis"]>,
    enabled: fc.boolean(),
    pick: fc.integer({ min: -1, max: 3 }),
  }).map((r) => pl(s, r.quantity, { quantityBasis: r.basis, isEnabled: r.enabled, selected: r.pick >= 0 && s.leases[r.pick] ? sel(s.leases[r.pick]!) : null }));

const arbBasket = fc.array(arbSku, { minLength: 1, maxLength: 4 }).chain((skus) =>
  fc.array(fc.integer({ min: 0, max: skus.length - 1 }).chain((i) => arbLine(skus[i]!)), { minLength: 0, maxLength: 8 }).map((lines) => ({ skus, lines })),
);

const close = (a: number, b: number) => Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(a), Math.abs(b));

describe("money model, properties", () => {
  test("totals equal the sum over enabled lines", () => {
    fc.assert(
      fc.property(arbBasket, ({ skus, lines }) => {
        const r = priceEstimate(lines, new Map(skus.map((s) => [s.sku.id, s])));
        const enabled = r.line_items.filter((_, i) => lines[i]!.isEnabled);
        const sum = (f: (p: (typeof enabled)[number]) => number) => enabled.reduce((a, p) => a + f(p), 0);
        expect(close(r.totals.ondemand_monthly_cost, sum((p) => p.ondemand_monthly_cost))).toBe(true);
        expect(close(r.totals.estimated_monthly_cost, sum((p) => p.matched_commitment_option?.commitment_financials_monthly_rate.commitment_cost.total ?? p.ondemand_monthly_cost))).toBe(true);
        expect(close(r.totals.monthly_net_savings, sum((p) => p.matched_commitment_option?.commitment_financials_monthly_rate.commitment_savings.net ?? 0))).toBe(true);
        expect(close(r.totals.commitment_upfront_cost, sum((p) => p.matched_commitment_option?.commitment_upfront_cost ?? 0))).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  test("a line's pricing does not change when sibling lines change", () => {
    fc.assert(
      fc.property(arbBasket, arbBasket, ({ skus, lines }, other) => {
        fc.pre(lines.length > 0);
        const map = new Map([...skus, ...other.skus].map((s) => [s.sku.id, s]));
        const alone = priceEstimate([lines[0]!], map, { includeOptions: true }).line_items[0];
        const withSiblings = priceEstimate([lines[0]!, ...other.lines, ...lines.slice(1)], map, { includeOptions: true }).line_items[0];
        expect(withSiblings).toEqual(alone!);
      }),
      { numRuns: 150 },
    );
  });

  test("discount_rate and breakeven_days are consistent with the costs", () => {
    fc.assert(
      fc.property(arbSku, fc.double({ min: 0, max: 500, noNaN: true }), (s, q) => {
        for (const o of commitmentOptions(s, q, "resource_count")) {
          const f = o.commitment_financials_monthly_rate;
          const covered = f.covered_ondemand_cost;
          const total = f.commitment_cost.total;
          expect(close(total, f.commitment_cost.breakdown.cloud_provider_cost.total + f.commitment_cost.breakdown.service_premium)).toBe(true);
          expect(close(f.commitment_savings.net, covered - total)).toBe(true);
          expect(f.commitment_cost.breakdown.service_premium).toBeGreaterThanOrEqual(0);
          if (covered > 0) {
            expect(close(o.discount_rate, f.commitment_savings.net / covered)).toBe(true);
            const lockIn = s.leases.find((l) => l.leaseMenuItemId === o.lease_menu_item_id)!.offer.lockInDays;
            expect(close(o.breakeven_days, (total / covered) * lockIn)).toBe(true);
            // saving money ⇔ breaking even before the lock-in ends
            if (o.discount_rate > 1e-9) expect(o.breakeven_days).toBeLessThan(lockIn);
            if (o.discount_rate < -1e-9) expect(o.breakeven_days).toBeGreaterThan(lockIn);
          } else {
            expect(o.discount_rate).toBe(0);
            expect(o.breakeven_days).toBe(0);
          }
        }
      }),
      { numRuns: 200 },
    );
  });
});

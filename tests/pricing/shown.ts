import { expect } from "bun:test";

/**
 * Checks of DESIGN §12 "money at the edge" on pricing as a client receives it (JSON numbers):
 * money has at most 2 decimals, rates at most 6, and every total equals, to the cent, the sum
 * of the parts shown beside it. Used by the pure tests and the HTTP property test alike.
 */

/** Decimals of a number as JSON writes it (`700.8000000000001` → 13, `1.5e-7` → 8). */
export function decimals(x: number): number {
  const [mantissa, exponent] = String(Math.abs(x)).split("e");
  const fraction = mantissa!.split(".")[1]?.length ?? 0;
  return Math.max(0, fraction - Number(exponent ?? 0));
}

/** Integer cents of a shown money value (exact once it has at most 2 decimals). */
const c = (x: number) => Math.round(x * 100);
const round6 = (x: number) => Math.round(x * 1e6) / 1e6;

function expectMoney(x: unknown, what: string) {
  expect(typeof x, what).toBe("number");
  expect(decimals(x as number), `${what} = ${x}`).toBeLessThanOrEqual(2);
  expect(Object.is(x, -0), `${what} is -0`).toBe(false);
}

export function expectShownOption(o: any) {
  const f = o.commitment_financials_monthly_rate;
  const cloud = f.commitment_cost.breakdown.cloud_provider_cost;
  const money: [string, number][] = [
    ["recurring", cloud.breakdown.recurring],
    ["amortized_upfront", cloud.breakdown.amortized_upfront],
    ["cloud_provider_cost.total", cloud.total],
    ["service_premium", f.commitment_cost.breakdown.service_premium],
    ["commitment_cost.total", f.commitment_cost.total],
    ["gross", f.commitment_savings.gross],
    ["net", f.commitment_savings.net],
    ["covered_ondemand_cost", f.covered_ondemand_cost],
    ["commitment_upfront_cost", o.commitment_upfront_cost],
  ];
  for (const [what, x] of money) expectMoney(x, what);
  expect(decimals(o.discount_rate), `discount_rate = ${o.discount_rate}`).toBeLessThanOrEqual(6);
  expect(decimals(o.selected_amount), `selected_amount = ${o.selected_amount}`).toBeLessThanOrEqual(6);
  expect(decimals(o.breakeven_days), `breakeven_days = ${o.breakeven_days}`).toBeLessThanOrEqual(2);

  expect(c(cloud.total)).toBe(c(cloud.breakdown.recurring) + c(cloud.breakdown.amortized_upfront));
  expect(c(f.commitment_cost.total)).toBe(c(cloud.total) + c(f.commitment_cost.breakdown.service_premium));
  expect(c(f.commitment_savings.gross)).toBe(c(f.covered_ondemand_cost) - c(cloud.total));
  expect(c(f.commitment_savings.net)).toBe(c(f.commitment_savings.gross) - c(f.commitment_cost.breakdown.service_premium));
  const covered = c(f.covered_ondemand_cost);
  const rate = covered === 0 ? 0 : round6(c(f.commitment_savings.net) / covered);
  expect(o.discount_rate === rate, `discount_rate ${o.discount_rate} ≠ round6(net / covered) = ${rate}`).toBe(true);
  if (covered === 0) expect(o.breakeven_days).toBe(0);
}

export function expectShownLine(p: any) {
  expectMoney(p.ondemand_monthly_cost, "ondemand_monthly_cost");
  expectMoney(p.estimated_monthly_cost, "estimated_monthly_cost");
  expectMoney(p.monthly_net_savings, "monthly_net_savings");
  const m = p.matched_commitment_option;
  if (m) {
    expectShownOption(m);
    expect(p.estimated_monthly_cost).toBe(m.commitment_financials_monthly_rate.commitment_cost.total);
    expect(p.monthly_net_savings).toBe(m.commitment_financials_monthly_rate.commitment_savings.net);
  } else {
    expect(p.estimated_monthly_cost).toBe(p.ondemand_monthly_cost);
    expect(p.monthly_net_savings).toBe(0);
  }
  for (const o of p.commitment_options ?? []) expectShownOption(o);
}

/** `enabled[i]`: whether line i counts in the totals. */
export function expectShownPricing(pricing: any, enabled: boolean[]) {
  expect(pricing.line_items.length).toBe(enabled.length);
  let ondemand = 0;
  let estimated = 0;
  let net = 0;
  let upfront = 0;
  pricing.line_items.forEach((p: any, i: number) => {
    expectShownLine(p);
    if (!enabled[i]) return;
    const m = p.matched_commitment_option;
    ondemand += c(p.ondemand_monthly_cost);
    estimated += c(m ? m.commitment_financials_monthly_rate.commitment_cost.total : p.ondemand_monthly_cost);
    net += m ? c(m.commitment_financials_monthly_rate.commitment_savings.net) : 0;
    upfront += m ? c(m.commitment_upfront_cost) : 0;
  });
  const t = pricing.totals;
  for (const k of ["ondemand_monthly_cost", "estimated_monthly_cost", "monthly_net_savings", "commitment_upfront_cost"]) expectMoney(t[k], `totals.${k}`);
  expect(c(t.ondemand_monthly_cost)).toBe(ondemand);
  expect(c(t.estimated_monthly_cost)).toBe(estimated);
  expect(c(t.monthly_net_savings)).toBe(net);
  expect(c(t.commitment_upfront_cost)).toBe(upfront);
}

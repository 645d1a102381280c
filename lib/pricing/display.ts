/**
 * Money at the edge (DESIGN §12) for cost estimates. The money model (./index.ts) keeps full
 * precision because planning, purchasing and optimisation compound its values; a client instead
 * checks a document with the numbers it shows, so here money becomes cents, rates 6 decimals,
 * and every total is re-derived from the rounded parts shown beside it, in integer cents (no
 * float noise). The rule, field by field: docs/features/estimates.md "Money at the edge".
 */
import { cents, roundDecimal, type CommitmentOption, type EstimatePricing, type LinePricing, type PricingLine, type PricingTotals } from "./index.ts";

/** Integer cents of a full-precision amount (the same rounding as `cents`). */
export const toCents = (v: number): number => Math.round(cents(v) * 100) + 0;

/** Integer cents back to a number with at most 2 decimals (never -0). */
export const fromCents = (c: number): number => c / 100 + 0;

/** Rates and other ratios at the edge: 6 decimals. */
export const rate6 = (v: number): number => roundDecimal(v, 6);

/** Durations in days at the edge: 2 decimals. */
export const days2 = (v: number): number => roundDecimal(v, 2);

/** One CommitmentOption as shown: rounded parts, totals and rates derived from them. */
export function displayOption(o: CommitmentOption): CommitmentOption {
  const f = o.commitment_financials_monthly_rate;
  const provider = f.commitment_cost.breakdown.cloud_provider_cost.breakdown;
  const recurring = toCents(provider.recurring);
  const amortizedUpfront = toCents(provider.amortized_upfront);
  const cloudProviderCost = recurring + amortizedUpfront;
  const premium = toCents(f.commitment_cost.breakdown.service_premium);
  const total = cloudProviderCost + premium;
  const covered = toCents(f.covered_ondemand_cost);
  const gross = covered - cloudProviderCost;
  const net = gross - premium;
  return {
    offer_id: o.offer_id,
    offer_org_id: o.offer_org_id,
    lease_menu_item_id: o.lease_menu_item_id,
    selected_amount: rate6(o.selected_amount),
    commitment_type: o.commitment_type,
    contract_term: o.contract_term,
    payment_option: o.payment_option,
    discount_rate: covered !== 0 ? rate6(net / covered) : 0,
    breakeven_days: covered !== 0 ? days2(o.breakeven_days) : 0,
    commitment_upfront_cost: fromCents(toCents(o.commitment_upfront_cost)),
    offer: { ...o.offer },
    commitment_financials_monthly_rate: {
      commitment_cost: {
        total: fromCents(total),
        breakdown: {
          cloud_provider_cost: {
            total: fromCents(cloudProviderCost),
            breakdown: { recurring: fromCents(recurring), amortized_upfront: fromCents(amortizedUpfront) },
          },
          service_premium: fromCents(premium),
        },
      },
      commitment_savings: { net: fromCents(net), gross: fromCents(gross) },
      covered_ondemand_cost: fromCents(covered),
    },
  };
}

/** One pricing line as shown; its estimated cost and net savings are those of the shown option. */
export function displayLine(p: LinePricing): LinePricing {
  const matched = p.matched_commitment_option ? displayOption(p.matched_commitment_option) : null;
  const ondemand = fromCents(toCents(p.ondemand_monthly_cost));
  return {
    line_item_id: p.line_item_id,
    status: p.status,
    detail: p.detail,
    prices_as_of: p.prices_as_of,
    ondemand_monthly_cost: ondemand,
    estimated_monthly_cost: matched ? matched.commitment_financials_monthly_rate.commitment_cost.total : ondemand,
    monthly_net_savings: matched ? matched.commitment_financials_monthly_rate.commitment_savings.net : 0,
    matched_commitment_option: matched,
    ...(p.commitment_options ? { commitment_options: p.commitment_options.map(displayOption) } : {}),
  };
}

/** Totals over the enabled lines (DESIGN §7), summed in cents from the shown line values. */
export function displayTotals(lines: PricingLine[], shown: LinePricing[]): PricingTotals {
  let ondemand = 0;
  let estimated = 0;
  let net = 0;
  let upfront = 0;
  shown.forEach((p, i) => {
    if (!lines[i]!.isEnabled) return;
    ondemand += toCents(p.ondemand_monthly_cost);
    estimated += toCents(p.estimated_monthly_cost);
    net += toCents(p.monthly_net_savings);
    if (p.matched_commitment_option) upfront += toCents(p.matched_commitment_option.commitment_upfront_cost);
  });
  return {
    ondemand_monthly_cost: fromCents(ondemand),
    estimated_monthly_cost: fromCents(estimated),
    monthly_net_savings: fromCents(net),
    commitment_upfront_cost: fromCents(upfront),
  };
}

/** An estimate's pricing as shown (`lines` in the same order as `pricing.line_items`); its freshness as priced. */
export function displayEstimatePricing(lines: PricingLine[], pricing: EstimatePricing): EstimatePricing {
  const shown = pricing.line_items.map(displayLine);
  return { line_items: shown, totals: displayTotals(lines, shown), prices_as_of: pricing.prices_as_of, stale: pricing.stale };
}

/** Shown money (each value rounded to cents first) summed in integer cents. */
export function sumCents(values: Iterable<number>): number {
  let c = 0;
  for (const v of values) c += toCents(v);
  return fromCents(c);
}

/** The money of one plan item as shown (already in cents). */
export interface ShownPlanItemMoney {
  upfront_cost: number;
  monthly_cost: number;
  monthly_net_savings: number;
}

/**
 * A commitment plan's totals as shown: the sums of its items' shown cents, so the plan adds up
 * as displayed (REST /commitment-plans, the MCP planning tools and the auto-purchase threshold).
 */
export function planTotals(items: readonly ShownPlanItemMoney[]): { total_upfront_cost: number; monthly_cost: number; monthly_net_savings: number } {
  return {
    total_upfront_cost: sumCents(items.map((x) => x.upfront_cost)),
    monthly_cost: sumCents(items.map((x) => x.monthly_cost)),
    monthly_net_savings: sumCents(items.map((x) => x.monthly_net_savings)),
  };
}

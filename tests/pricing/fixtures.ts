/** Money-model inputs built by hand: offers, leases, SKUs and pricing lines, as lib/pricing takes them. */
import fc from "fast-check";
import type { CommitmentSelection, LeaseRate, PricingLine, PricingOffer, SkuPricingInputs } from "../../lib/pricing/index.ts";

export const YEAR = 31_536_000;

export function offer(p: Partial<PricingOffer> & Pick<PricingOffer, "commitmentType" | "contractTerm" | "paymentOption" | "durationSeconds" | "lockInDays">): PricingOffer {
  return {
    id: crypto.randomUUID(),
    orgId: "public",
    provider: "aws",
    offeringClass: null,
    planType: null,
    region: null,
    instanceType: null,
    instanceFamily: null,
    productDescription: null,
    displayName: `${p.commitmentType} ${p.contractTerm} ${p.paymentOption}`,
    guaranteedDisplayName: null,
    isFlexible: false,
    feeRate: 0,
    isInsured: false,
    ...p,
  };
}

export function lease(o: PricingOffer, recurringHourlyRate: number, upfrontCost: number): LeaseRate {
  return { leaseMenuItemId: crypto.randomUUID(), offer: o, recurringHourlyRate, upfrontCost };
}

export function sku(provider: "aws" | "azure" | "gcp", hourly: number, leases: LeaseRate[]): SkuPricingInputs {
  return {
    sku: { id: crypto.randomUUID(), orgId: "public", provider, providerSkuId: "x", displayName: "x", usageUnit: "Hrs", isAvailable: true },
    tiers: [{ startQuantity: 0, endQuantity: null, unitPrice: hourly }],
    leases,
    pricesAsOf: null,
  };
}

export const pl = (inputs: SkuPricingInputs, quantity: number, extra: Partial<PricingLine> = {}): PricingLine => ({
  id: crypto.randomUUID(),
  catalogSkuId: inputs.sku.id,
  quantity,
  quantityBasis: "resource_count",
  isEnabled: true,
  selected: null,
  ...extra,
});

/** The selection of a lease, as a client copies it from an option. */
export const sel = (l: LeaseRate): CommitmentSelection => ({
  commitment_type: l.offer.commitmentType,
  contract_term: l.offer.contractTerm,
  payment_option: l.offer.paymentOption,
  lease_menu_item_id: l.leaseMenuItemId,
  offer_id: l.offer.id,
  offer_org_id: l.offer.orgId,
});

/** Generated leases of the given commitment types: 1-year, 3-year or insured terms, any payment option, fee rates of the insured offers. */
export const arbLease = (types: string[]): fc.Arbitrary<LeaseRate> =>
  fc
    .record({
      type: fc.constantFrom(...types),
      term: fc.constantFrom(["one_year", YEAR, 365], ["three_year", 3 * YEAR, 1095], ["thirty_day_gris", 30 * 86400, 30]) as fc.Arbitrary<[string, number, number]>,
      payment: fc.constantFrom("no_upfront", "partial_upfront", "all_upfront"),
      recurring: fc.double({ min: 0, max: 5, noNaN: true }),
      upfront: fc.double({ min: 0, max: 20000, noNaN: true }),
      fee: fc.constantFrom(0, 0.2, 0.3),
    })
    .map((r) => lease(offer({ commitmentType: r.type, contractTerm: r.term[0], paymentOption: r.payment, durationSeconds: r.term[1], lockInDays: r.term[2], feeRate: r.fee }), r.recurring, r.upfront));

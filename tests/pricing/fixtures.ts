/** Money-model inputs built by hand: offers, leases, SKUs and pricing lines, as lib/pricing takes them. */
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

import type { CatalogBatch, OfferInput } from "./model.ts";

/**
 * Insured (`_gris`) commitments are the service's own product: it buys a 3-year no-upfront
 * commitment and guarantees buyback or a rebate of the unused value after the lock-in. The
 * customer pays the provider's 3-year no-upfront rate plus a premium on realized savings; the
 * shorter the lock-in, the higher the fee rate.
 */
export const INSURED_TERMS = [
  { contractTerm: "thirty_day_gris", lockInDays: 30, feeRate: 0.3, label: "30-day lock-in" },
  { contractTerm: "one_year_gris", lockInDays: 365, feeRate: 0.2, label: "1-year lock-in" },
] as const;

/** The insured offers derived from every 3-year no-upfront offer of the batch. */
export function insuredOffers(batch: CatalogBatch): OfferInput[] {
  const out: OfferInput[] = [];
  for (const o of batch.offers) {
    if (o.isInsured || o.contractTerm !== "three_year" || o.paymentOption !== "no_upfront") continue;
    for (const g of INSURED_TERMS) {
      out.push({
        ...o,
        offerKey: `${o.offerKey}|${g.contractTerm}`,
        contractTerm: g.contractTerm,
        // The commitment underneath is the provider's 3-year one: it keeps covering usage for
        // its whole term; only the customer's obligation ends with the lock-in (lockInDays).
        durationSeconds: o.durationSeconds,
        lockInDays: g.lockInDays,
        feeRate: g.feeRate,
        isInsured: true,
        displayName: `Insured ${o.displayName.replace(/3-year /, "")} (${g.label})`,
        guaranteedDisplayName: `Guaranteed buyback after ${g.label}; ${Math.round(g.feeRate * 100)}% of realized savings`,
        leases: o.leases.map((l) => ({ ...l, upfrontCost: 0 })),
      });
    }
  }
  return out;
}

/** The batch with its insured offers added (idempotent: existing insured offers are kept). */
export function withInsuredOffers(batch: CatalogBatch): CatalogBatch {
  return { ...batch, offers: [...batch.offers, ...insuredOffers(batch)] };
}

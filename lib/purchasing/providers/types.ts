/**
 * What the purchase state machine (lib/purchasing/executor.ts) asks of a provider, whatever the
 * provider (DESIGN §14). One implementation per purchasing connection kind, each on the
 * provider's official SDK, each pointed at `endpoint_url` when the connection sets one.
 *
 * The state machine commits an item's intent and token before it calls `buy`, and after a
 * crash it calls `findExisting` before it calls `buy` again, so an implementation must:
 * - pass `item.token` to the provider wherever the API takes an idempotency token or lets the
 *   caller name the purchase (client token, request id, our resource name or order id);
 * - make `findExisting` find a purchase made with this token even when our process died right
 *   after the provider said yes (for EC2 reserved instances, which take no token: by the tag
 *   written after the purchase, else by the offering and the time window since `submittedAt`,
 *   never returning an id listed in `claimedIds`);
 * - never buy in `quote`, `dryRun` or `findExisting`.
 */

import { INSURED_TERMS } from "../../templates/enums.ts";
import { cents } from "../../pricing/index.ts";

export const PURCHASING_KINDS = ["aws_purchasing", "azure_purchasing", "gcp_purchasing"] as const;
export type PurchasingKind = (typeof PURCHASING_KINDS)[number];

/** One plan item to buy, as the state machine hands it to a provider. */
export interface PurchaseItemSpec {
  /** Our idempotency token for this item: a lower-case UUID, committed before any provider call. */
  token: string;
  /** DESIGN §5: aws compute_savings_plan | ec2_instance_savings_plan | database_savings_plan | reserved_instance; azure savings_plan | reservation; gcp spend_cud | resource_cud. */
  commitmentType: string;
  /** one_year | three_year | thirty_day_gris | one_year_gris (insured terms are bought as three_year no_upfront underneath). */
  contractTerm: string;
  /** no_upfront | partial_upfront | all_upfront */
  paymentOption: string;
  /** The provider's region code (us-east-1, eastus, us-central1); null when the plan had none. */
  region: string | null;
  /** Instance type / VM size / machine type of a resource commitment (db.* for AWS RDS); null for spend-based ones. */
  instanceType: string | null;
  /** Instance family (m5, Dsv3, n2) for EC2 instance savings plans and GCP resource CUDs. */
  instanceFamily: string | null;
  /** Resource count (reserved instances, reservations, resource CUDs) or $/hour commitment (savings plans, spend CUDs). */
  amount: number;
  /** The most this item may cost upfront, in USD, for the whole quantity: the plan's figure. A dearer offer is refused (`price_changed`). */
  maxUpfront: number;
  /** The plan's recurring $/hour for the whole quantity (for messages and the dry-run record). */
  plannedHourly: number;
  /** When the intent was first committed: the lookup window of APIs without a token. */
  submittedAt: Date;
}

/** The provider's offering for an item and its price, for the whole quantity. */
export interface OfferQuote {
  /** The provider's offering id (EC2/RDS offering id, savings plan offering id, Azure sku+term, GCP plan+type). */
  offeringId: string;
  upfront: number;
  /** Recurring cost per hour for the whole quantity. */
  hourly: number;
  currency: string;
  durationSeconds: number;
}

/** What the provider holds after a purchase (or a dry run found it would hold). */
export interface PurchaseOutcome {
  /** The provider's id of what was bought: RI id, savings plan id, RDS reserved DB instance id, Azure reservation order id, GCP commitment selfLink. */
  providerPurchaseId: string;
  upfront: number;
  hourly: number;
  currency: string;
  startsAt: Date | null;
  endsAt: Date | null;
  /** The provider's own state word (payment-pending, active, Succeeded, CREATING, …). */
  providerState: string;
}

/** A commitment as the provider lists it (inventory reconciliation). */
export interface ProviderCommitment {
  providerCommitmentId: string;
  commitmentType: string;
  category: "Spend" | "Usage";
  /** one_year | three_year, or null when the provider's duration is neither. */
  contractTerm: string | null;
  paymentOption: string | null;
  region: string | null;
  instanceType: string | null;
  instanceFamily: string | null;
  /** Count, or $/hour for spend-based ones. */
  amount: number;
  upfrontCost: number;
  recurringHourlyCost: number;
  startsAt: Date | null;
  endsAt: Date | null;
  /** active: in force now; pending: bought, not yet in force; retired: expired, cancelled, exchanged or failed. */
  state: "active" | "pending" | "retired";
  name: string | null;
}

export const PURCHASE_FAILURE_CAUSES = ["credentials", "permission", "no_offering", "price_changed", "unsupported", "limit_exceeded", "refused", "unreachable", "internal"] as const;
export type PurchaseFailureCause = (typeof PURCHASE_FAILURE_CAUSES)[number];

/**
 * A provider said no, or nothing it offers matches the item. `retryable`: a later tick may
 * succeed (throttling, 5xx, network) and the item stays where it was; otherwise the item fails.
 * The message is shown to users: it never holds a secret.
 */
export class PurchaseFailure extends Error {
  constructor(
    readonly cause: PurchaseFailureCause,
    message: string,
    readonly retryable = false,
  ) {
    super(message);
  }
}

export interface ProviderPurchaser {
  readonly kind: PurchasingKind;
  /** The offering that matches the item and its current price. Throws PurchaseFailure (`no_offering`, `unsupported`, …). */
  quote(item: PurchaseItemSpec): Promise<OfferQuote>;
  /** The provider's own dry-run / price calculation for the item (EC2 DryRun, Azure calculatePrice, …): nothing is bought. Returns what was checked, in one line. */
  dryRun(item: PurchaseItemSpec, quote: OfferQuote): Promise<{ summary: string }>;
  /** The purchase this item's token already made, if any. */
  findExisting(item: PurchaseItemSpec, claimedIds: ReadonlySet<string>): Promise<PurchaseOutcome | null>;
  /** Buys the item under its token at no more than `quote` (EC2 LimitPrice, …). Throws PurchaseFailure. */
  buy(item: PurchaseItemSpec, quote: OfferQuote): Promise<PurchaseOutcome>;
  /** Every commitment the connection can see at the provider, in every region it buys in. */
  listCommitments(regions: string[]): Promise<ProviderCommitment[]>;
  /** One cheap authenticated read: throws PurchaseFailure (`credentials`, `permission`, `unreachable`) when the connection cannot work. */
  check(): Promise<void>;
  close?(): void | Promise<void>;
}

/** Term lengths as the providers count them. */
export const YEAR_SECONDS = 31_536_000;
export const THREE_YEAR_SECONDS = 94_608_000;

/**
 * The term and payment bought at the provider for an item: insured (`_gris`) offers are
 * three-year no-upfront commitments underneath (DESIGN §5); any other term is refused.
 */
export function providerTerm(item: Pick<PurchaseItemSpec, "contractTerm" | "paymentOption">): { years: 1 | 3; seconds: number; paymentOption: string } {
  if (INSURED_TERMS.has(item.contractTerm)) return { years: 3, seconds: THREE_YEAR_SECONDS, paymentOption: "no_upfront" };
  if (item.contractTerm === "one_year") return { years: 1, seconds: YEAR_SECONDS, paymentOption: item.paymentOption };
  if (item.contractTerm === "three_year") return { years: 3, seconds: THREE_YEAR_SECONDS, paymentOption: item.paymentOption };
  throw new PurchaseFailure("unsupported", `Providers sell one- and three-year commitments, not "${item.contractTerm}".`);
}

/** A quote may exceed the plan's upfront by rounding only. */
export const PRICE_TOLERANCE = 0.01;

/**
 * The price rule of every purchase: a provider may ask at most the plan's upfront (plus
 * rounding), checked before anything is bought; above it the item fails and the next plan
 * prices it anew.
 */
export function refuseAbovePlan(item: PurchaseItemSpec, upfront: number, what: string): void {
  if (upfront > item.maxUpfront + PRICE_TOLERANCE + 1e-9) {
    throw new PurchaseFailure("price_changed", `The provider now asks ${upfront.toFixed(2)} USD upfront for ${what}, above the plan's ${item.maxUpfront.toFixed(2)}: nothing was bought (the next plan prices it anew).`);
  }
}

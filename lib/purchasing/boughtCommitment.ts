/**
 * The inventory row of a bought item, whoever bought it (the ledger at once, or the state
 * machine once the provider confirmed): one place decides its category, its end, and an insured
 * offer's lock-in.
 */
import type { commitments } from "../db/schema/index.ts";
import { INSURED_TERMS, SPEND_BASED_TYPES, type Provider } from "../templates/enums.ts";
import type { PurchaseItemSpec } from "./providers/types.ts";

const DAY_MS = 86_400_000;

export type BoughtItem = Pick<PurchaseItemSpec, "commitmentType" | "contractTerm" | "paymentOption" | "region" | "instanceType" | "instanceFamily"> & {
  orgId: string;
  provider: Provider;
  purchaseId: string;
  /** Count, or $/hour for spend-based types (exact text or a number). */
  amount: string | number;
  durationSeconds: number;
  feeRate: string | number;
  lockInDays: number | null;
};

export interface Purchased {
  providerCommitmentId: string;
  startsAt: Date;
  /** The provider's end, else start + the item's duration. */
  endsAt: Date | null;
  upfront: number;
  hourly: number;
  providerState: "active" | "pending" | null;
  at: Date;
}

export const commitmentName = (i: Pick<BoughtItem, "commitmentType" | "contractTerm" | "paymentOption" | "instanceType" | "region">) =>
  `${i.commitmentType} ${i.contractTerm} ${i.paymentOption}${i.instanceType ? ` ${i.instanceType}` : ""}${i.region ? ` ${i.region}` : ""}`;

export function boughtCommitment(i: BoughtItem, p: Purchased): typeof commitments.$inferInsert {
  const insured = INSURED_TERMS.has(i.contractTerm);
  const spend = SPEND_BASED_TYPES.has(i.commitmentType);
  return {
    orgId: i.orgId,
    provider: i.provider,
    providerCommitmentId: p.providerCommitmentId,
    name: commitmentName(i),
    commitmentType: i.commitmentType,
    category: spend ? "Spend" : "Usage",
    contractTerm: i.contractTerm,
    paymentOption: i.paymentOption,
    region: i.region,
    instanceType: spend ? null : i.instanceType,
    instanceFamily: i.instanceFamily,
    startsAt: p.startsAt,
    endsAt: p.endsAt ?? new Date(p.startsAt.getTime() + i.durationSeconds * 1000),
    amount: String(i.amount),
    upfrontCost: String(p.upfront),
    recurringHourlyCost: String(p.hourly),
    insured,
    feeRate: String(i.feeRate),
    lockInEndsAt: insured && i.lockInDays ? new Date(p.startsAt.getTime() + i.lockInDays * DAY_MS) : null,
    source: "purchase",
    purchaseId: i.purchaseId,
    providerState: p.providerState,
    reconciledAt: p.providerState ? p.at : null,
  };
}

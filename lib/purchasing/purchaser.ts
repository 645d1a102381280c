/**
 * How a plan is bought. The default purchaser is the ledger: it records the order in
 * `purchases` and adds the commitments to the inventory in the caller's transaction, so the
 * order, the inventory and the run's completion commit together or not at all. Cloud adapters
 * plug in behind the same interface (set `s.extras.purchaser`); they must pass
 * `idempotencyKey` to the provider as the client token, since their side is not transactional.
 */
import type { Tx } from "../db/index.ts";
import { commitments, purchases } from "../db/schema/index.ts";
import type { Services } from "../services.ts";
import type { SizedOption } from "../planning/optimize.ts";
import { INSURED_TERMS, type Provider } from "../templates/enums.ts";

export interface PurchaseOrder {
  orgId: string;
  provider: Provider;
  templateId: string | null;
  executionDate: string | null;
  planId: string;
  /** `<template id>:<execution date>`: the same slot always yields the same key. */
  idempotencyKey: string;
  items: SizedOption[];
  totalUpfront: number;
  monthlyNetSavings: number;
  now: Date;
}

export interface Purchaser {
  name: string;
  purchase(tx: Tx, order: PurchaseOrder): Promise<{ purchaseId: string }>;
}

const DAY_MS = 86_400_000;

export const ledgerPurchaser: Purchaser = {
  name: "ledger",
  async purchase(tx, o) {
    const [p] = await tx
      .insert(purchases)
      .values({
        orgId: o.orgId,
        provider: o.provider,
        templateId: o.templateId,
        executionDate: o.executionDate,
        planId: o.planId,
        idempotencyKey: o.idempotencyKey,
        purchaser: "ledger",
        totalUpfrontCost: String(o.totalUpfront),
        monthlyNetSavings: String(o.monthlyNetSavings),
        itemCount: o.items.length,
      })
      .returning({ id: purchases.id });
    const purchaseId = p!.id;
    if (o.items.length) {
      await tx.insert(commitments).values(
        o.items.map((i, n) => {
          const q = i.quote;
          const insured = INSURED_TERMS.has(q.contractTerm);
          return {
            orgId: o.orgId,
            provider: o.provider,
            providerCommitmentId: `commitops-purchase:${purchaseId}:${n + 1}`,
            name: `${q.commitmentType} ${q.contractTerm} ${q.paymentOption}${i.instanceType ? ` ${i.instanceType}` : ""}${i.region ? ` ${i.region}` : ""}`,
            commitmentType: q.commitmentType,
            category: q.spendBased ? "Spend" : "Usage",
            contractTerm: q.contractTerm,
            paymentOption: q.paymentOption,
            region: i.region,
            instanceType: q.spendBased ? null : i.instanceType,
            instanceFamily: i.groupKey.split("|")[1] ?? null,
            startsAt: o.now,
            endsAt: new Date(o.now.getTime() + q.durationSeconds * 1000),
            amount: String(i.amount),
            upfrontCost: String(i.upfrontCost),
            recurringHourlyCost: String((q.recurringHourlyRate ?? q.effectiveHourlyRate) * i.units),
            insured,
            feeRate: String(q.feeRate),
            lockInEndsAt: insured ? new Date(o.now.getTime() + q.lockInDays * DAY_MS) : null,
            source: "purchase" as const,
            purchaseId,
          };
        }),
      );
    }
    return { purchaseId };
  },
};

/** The purchaser of this process: a test or a cloud adapter may set `s.extras.purchaser`. */
export function purchaserOf(s: Services): Purchaser {
  return (s.extras.purchaser as Purchaser | undefined) ?? ledgerPurchaser;
}

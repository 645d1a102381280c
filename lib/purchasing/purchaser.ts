/**
 * How a plan's order is placed, inside the auto-purchase run's transaction (so the order, its
 * items and the run's completion commit together or not at all):
 * - with the org's enabled purchasing connection for the provider, the order and one
 *   purchase item per plan item are recorded (`pending_approval` or `approved`); the provider is
 *   called afterwards, item by item, by the purchase executor (lib/purchasing/executor.ts);
 * - without one, the ledger "buys" it at once: the order is confirmed and its commitments are
 *   added to the inventory (demos, and orgs that buy by hand from the plans); a template with
 *   `require_approval: true` makes it wait for approval first, as with a connection. A disabled
 *   connection still takes its orders (they fail when bought), so the ledger never records a
 *   commitment that exists nowhere.
 * A test may set `s.extras.purchaser` to place orders its own way.
 */
import type { Tx } from "../db/index.ts";
import { purchaseItems, purchases } from "../db/schema/index.ts";
import type { Services } from "../services.ts";
import type { SizedOption } from "../planning/optimize.ts";
import type { Provider } from "../templates/enums.ts";
import { confirmInLedger } from "./ledger.ts";
import { purchasingConnectionFor } from "./connections.ts";
import { recordEvent } from "./events.ts";
import { supersedePendingApprovals } from "./orders.ts";

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
  /** The template's approval settings (null: approval when the connection really buys). */
  requireApproval?: boolean | null;
  autoApproveMaxUpfront?: number | null;
  /** Days a pending approval stays open (PURCHASE_APPROVAL_TTL_DAYS). */
  approvalTtlDays?: number;
}

export interface Purchaser {
  name: string;
  purchase(tx: Tx, order: PurchaseOrder): Promise<{ purchaseId: string }>;
}

const DAY_MS = 86_400_000;
const familyOf = (i: SizedOption) => i.groupKey.split("|")[1] ?? null;
const plannedHourly = (i: SizedOption) => (i.quote.recurringHourlyRate ?? i.quote.effectiveHourlyRate) * i.units;

/** The order's own columns, whoever buys it. */
function orderRow(o: PurchaseOrder) {
  return {
    orgId: o.orgId,
    provider: o.provider,
    templateId: o.templateId,
    executionDate: o.executionDate,
    planId: o.planId,
    idempotencyKey: o.idempotencyKey,
    totalUpfrontCost: String(o.totalUpfront),
    monthlyNetSavings: String(o.monthlyNetSavings),
    itemCount: o.items.length,
    createdAt: o.now,
    updatedAt: o.now,
  };
}

function itemRow(o: PurchaseOrder, purchaseId: string, i: SizedOption, n: number) {
  const q = i.quote;
  return {
    orgId: o.orgId,
    purchaseId,
    position: n + 1,
    provider: o.provider,
    token: crypto.randomUUID(),
    commitmentType: q.commitmentType,
    contractTerm: q.contractTerm,
    paymentOption: q.paymentOption,
    region: i.region,
    instanceType: q.spendBased ? null : i.instanceType,
    instanceFamily: familyOf(i),
    amount: String(i.amount),
    plannedUpfront: String(i.upfrontCost),
    plannedHourly: String(plannedHourly(i)),
    monthlyNetSavings: String(i.monthlyNetSavings),
    durationSeconds: q.durationSeconds,
    feeRate: String(q.feeRate),
    lockInDays: q.lockInDays,
    createdAt: o.now,
    updatedAt: o.now,
  };
}

/** Whether the order waits for a person: `required` by the template, unless its upfront is within `auto_approve_max_upfront`. */
function approvalOf(o: PurchaseOrder, required: boolean) {
  const autoApproved = required && o.autoApproveMaxUpfront != null && o.totalUpfront <= o.autoApproveMaxUpfront;
  const waits = required && !autoApproved;
  const expiresAt = new Date(o.now.getTime() + (o.approvalTtlDays ?? 7) * DAY_MS);
  return {
    waits,
    autoApproved,
    columns: {
      status: waits ? ("pending_approval" as const) : ("approved" as const),
      requiresApproval: required,
      approvalExpiresAt: waits ? expiresAt : null,
      decidedBy: autoApproved ? "auto" : null,
      decidedAt: autoApproved || !required ? o.now : null,
      decisionNote: autoApproved ? `upfront ${o.totalUpfront.toFixed(2)} within auto_approve_max_upfront ${o.autoApproveMaxUpfront!.toFixed(2)}` : null,
    },
    waitingEvent: { event: "pending_approval", message: `Waiting for approval until ${expiresAt.toISOString()}.`, notify: true },
  };
}

/**
 * Without a purchasing connection the ledger records the order as bought at once. A template
 * that asks for approval (`require_approval: true`) keeps its promise here too: the order waits
 * for a person like any other, and is recorded in the ledger when approved (lib/purchasing/orders.ts).
 */
export const ledgerPurchaser: Purchaser = {
  name: "ledger",
  async purchase(tx, o) {
    if (o.templateId) await supersedePendingApprovals(tx, o.orgId, o.templateId, o.now);
    const a = approvalOf(o, o.requireApproval === true);
    const [p] = await tx
      .insert(purchases)
      .values({ ...orderRow(o), purchaser: "ledger", ...a.columns })
      .returning({ id: purchases.id });
    const purchaseId = p!.id;
    await tx.insert(purchaseItems).values(o.items.map((i, n) => ({ ...itemRow(o, purchaseId, i, n), status: a.columns.status, nextAttemptAt: o.now })));
    if (a.waits) {
      const what = `${o.items.length} item(s), upfront ${o.totalUpfront.toFixed(2)} USD, monthly net savings ${o.monthlyNetSavings.toFixed(2)} USD`;
      await recordEvent(tx, { orgId: o.orgId, purchaseId, event: "created", message: `Order placed in the ledger (no purchasing connection for ${o.provider}): ${what}; recorded in the inventory once approved.`, at: o.now });
      await recordEvent(tx, { orgId: o.orgId, purchaseId, ...a.waitingEvent, at: o.now });
      return { purchaseId };
    }
    if (a.autoApproved) await recordEvent(tx, { orgId: o.orgId, purchaseId, event: "approved", message: "Approved automatically: the upfront is within auto_approve_max_upfront.", at: o.now });
    await confirmInLedger(tx, { id: purchaseId, orgId: o.orgId, provider: o.provider }, o.now);
    return { purchaseId };
  },
};

/**
 * Records the order for the org's purchasing connection: items wait for approval when the
 * template asks for it (by default whenever the connection really buys), unless the order's
 * upfront is within `auto_approve_max_upfront`. An older order of the same template still
 * waiting for approval is superseded: approving both would buy the same need twice.
 */
export const connectionPurchaser: Purchaser = {
  name: "connection",
  async purchase(tx, o) {
    const connection = await purchasingConnectionFor(tx, o.orgId, o.provider);
    // A disabled connection still takes the order (its items fail as "disabled" when bought): the
    // ledger would show commitments in the inventory that nobody bought at the provider.
    if (!connection) return ledgerPurchaser.purchase(tx, o);
    if (o.templateId) await supersedePendingApprovals(tx, o.orgId, o.templateId, o.now);
    const a = approvalOf(o, o.requireApproval ?? !connection.dryRun);
    const [p] = await tx
      .insert(purchases)
      .values({ ...orderRow(o), purchaser: connection.kind, connectionId: connection.id, dryRun: connection.dryRun, ...a.columns })
      .returning({ id: purchases.id });
    const purchaseId = p!.id;
    await tx.insert(purchaseItems).values(o.items.map((i, n) => ({ ...itemRow(o, purchaseId, i, n), connectionId: connection.id, dryRun: connection.dryRun, status: a.columns.status, nextAttemptAt: o.now })));
    const what = `${o.items.length} item(s), upfront ${o.totalUpfront.toFixed(2)} USD, monthly net savings ${o.monthlyNetSavings.toFixed(2)} USD${connection.dryRun ? " (dry run: nothing will be bought)" : ""}`;
    await recordEvent(tx, { orgId: o.orgId, purchaseId, event: "created", message: `Order placed through purchasing connection "${connection.name}": ${what}.`, at: o.now });
    if (a.waits) await recordEvent(tx, { orgId: o.orgId, purchaseId, ...a.waitingEvent, at: o.now });
    else await recordEvent(tx, { orgId: o.orgId, purchaseId, event: "approved", message: a.autoApproved ? "Approved automatically: the upfront is within auto_approve_max_upfront." : "No approval required by the template.", at: o.now });
    return { purchaseId };
  },
};

/** The purchaser of this process: a test may set `s.extras.purchaser`. */
export function purchaserOf(s: Services): Purchaser {
  return (s.extras.purchaser as Purchaser | undefined) ?? connectionPurchaser;
}

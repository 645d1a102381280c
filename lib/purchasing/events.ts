/**
 * A purchase's story, written in the transaction of the change it tells of. The order-level
 * moments worth a person's attention (pending approval, approval, and each outcome) are also
 * events of the organization's log (lib/events/emit.ts) in the same transaction: delivered to its
 * webhook and Slack endpoints, emailed, and to the deprecated PURCHASE_WEBHOOK_URL
 * (lib/webhooks/legacy.ts).
 */
import { and, eq } from "drizzle-orm";
import type { DbOrTx } from "../db/index.ts";
import { purchaseEvents, purchaseItems, purchaseRuns, purchases } from "../db/schema/index.ts";
import { emitEvent } from "../events/emit.ts";
import type { EventType } from "../events/catalog.ts";
import type { PurchaseEventData } from "../events/data/purchase.ts";
import { sumCents } from "../pricing/display.ts";
import { purchaseLinks } from "../events/links.ts";

export interface PurchaseEventInput {
  orgId: string;
  purchaseId: string;
  itemId?: string | null;
  event: string;
  message: string;
  detail?: Record<string, unknown> | null;
  at: Date;
  /** Worth telling people (an outcome, a wait for approval): also an event of the org's log. */
  notify?: boolean;
}

/** The org event of each order-level story event (`expired` is a rejection by the clock; a partial failure is a failure). */
const EVENT_TYPE_OF: Record<string, EventType> = {
  pending_approval: "purchase.pending_approval",
  approved: "purchase.approved",
  rejected: "purchase.rejected",
  expired: "purchase.rejected",
  confirmed: "purchase.confirmed",
  failed: "purchase.failed",
  partially_failed: "purchase.failed",
  dry_run: "purchase.dry_run",
};

export async function recordEvent(db: DbOrTx, e: PurchaseEventInput): Promise<void> {
  const message = e.message.slice(0, 2000);
  await db.insert(purchaseEvents).values({
    orgId: e.orgId,
    purchaseId: e.purchaseId,
    itemId: e.itemId ?? null,
    event: e.event,
    message,
    detail: e.detail ?? null,
    at: e.at,
    notify: e.notify ?? false,
  });
  const type = e.itemId ? undefined : EVENT_TYPE_OF[e.event];
  // Every approval is an event (a person's, the template's or auto_approve_max_upfront's): it is when money is committed to be spent.
  if (type && (e.notify || e.event === "approved")) await emitPurchaseEvent(db, { ...e, message }, type);
}

/**
 * The event's `data`: the order as it stands at this moment (fixed then, small): its status,
 * message, provider, plan/template/run, totals as `GET /purchases/{id}` shows them (sums of the
 * items' cents) and the decision.
 */
async function emitPurchaseEvent(db: DbOrTx, e: PurchaseEventInput, type: EventType): Promise<void> {
  const [p] = await db.select().from(purchases).where(eq(purchases.id, e.purchaseId));
  if (!p) return;
  const items = await db.select({ plannedUpfront: purchaseItems.plannedUpfront, monthlyNetSavings: purchaseItems.monthlyNetSavings }).from(purchaseItems).where(eq(purchaseItems.purchaseId, p.id));
  const [run] =
    p.templateId && p.executionDate
      ? await db
          .select({ id: purchaseRuns.id })
          .from(purchaseRuns)
          .where(and(eq(purchaseRuns.templateId, p.templateId), eq(purchaseRuns.executionDate, p.executionDate)))
      : [];
  const data: PurchaseEventData = {
    purchase_id: p.id,
    status: e.event as PurchaseEventData["status"],
    message: e.message,
    provider: p.provider,
    purchaser: p.purchaser,
    dry_run: p.dryRun,
    template_id: p.templateId,
    plan_id: p.planId,
    run_id: run?.id ?? null,
    execution_date: p.executionDate,
    item_count: p.itemCount,
    total_upfront_cost: sumCents(items.map((i) => Number(i.plannedUpfront))),
    monthly_net_savings: sumCents(items.map((i) => Number(i.monthlyNetSavings))),
    currency: "USD",
    requires_approval: p.requiresApproval,
    approval_expires_at: p.approvalExpiresAt ? p.approvalExpiresAt.toISOString() : null,
    decided_by: p.decidedBy,
    decided_at: p.decidedAt ? p.decidedAt.toISOString() : null,
  };
  await emitEvent(db, {
    orgId: e.orgId,
    type,
    occurredAt: e.at,
    data: data as unknown as Record<string, unknown>,
    ...purchaseLinks(e.orgId, p.id),
    // Each status is reached once per order.
    dedupeKey: `purchase:${p.id}:${e.event}`,
  });
}

export type PurchaseEventRow = typeof purchaseEvents.$inferSelect;

export function eventView(e: PurchaseEventRow) {
  return { at: e.at.toISOString(), event: e.event, item_id: e.itemId, message: e.message, detail: (e.detail as Record<string, unknown> | null) ?? null };
}

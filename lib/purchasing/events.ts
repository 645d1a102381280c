/**
 * A purchase's story, and the outbox of the purchase webhook. Every event is written in the
 * transaction of the change it tells of; the ones worth a person's attention (`notify`: pending
 * approval, and each outcome) are POSTed to PURCHASE_WEBHOOK_URL by `deliverPurchaseEvents`,
 * as the support outbox does (lib/webhook.ts): claimed with a lease, retried with backoff until a 2xx, with the
 * event id as `Idempotency-Key` since a crash between the receiver's 2xx and our commit means
 * one more delivery.
 */
import { and, asc, eq, inArray, isNull, lt, lte, or, sql } from "drizzle-orm";
import type { DbOrTx } from "../db/index.ts";
import { purchaseEvents } from "../db/schema/index.ts";
import type { Services } from "../services.ts";
import { backoffMs, postWebhook, safeTarget } from "../webhook.ts";

export interface PurchaseEventInput {
  orgId: string;
  purchaseId: string;
  itemId?: string | null;
  event: string;
  message: string;
  detail?: Record<string, unknown> | null;
  at: Date;
  notify?: boolean;
}

export async function recordEvent(db: DbOrTx, e: PurchaseEventInput): Promise<void> {
  await db.insert(purchaseEvents).values({
    orgId: e.orgId,
    purchaseId: e.purchaseId,
    itemId: e.itemId ?? null,
    event: e.event,
    message: e.message.slice(0, 2000),
    detail: e.detail ?? null,
    at: e.at,
    notify: e.notify ?? false,
    nextDeliveryAt: e.at,
  });
}

export type PurchaseEventRow = typeof purchaseEvents.$inferSelect;

export function eventView(e: PurchaseEventRow) {
  return { at: e.at.toISOString(), event: e.event, item_id: e.itemId, message: e.message, detail: (e.detail as Record<string, unknown> | null) ?? null };
}

const LEASE_MS = 120_000;

/** The webhook's JSON body for one event. */
export interface PurchaseWebhookPayload {
  id: string;
  event: `purchase.${string}`;
  at: string;
  org_id: string;
  purchase_id: string;
  message: string;
  purchase: unknown;
}

/**
 * Delivers due purchase events to PURCHASE_WEBHOOK_URL. `viewOf` renders the purchase as
 * `GET /purchases/{id}` shows it (passed in so this module stays below orders.ts).
 */
export async function deliverPurchaseEvents(
  s: Services,
  viewOf: (db: DbOrTx, orgId: string, purchaseId: string) => Promise<unknown>,
  opts: { batchSize?: number; maxBatches?: number; timeoutMs?: number } = {},
): Promise<{ delivered: number; failed: number }> {
  const url = s.config.purchaseWebhookUrl;
  const report = { delivered: 0, failed: 0 };
  if (!url) return report;
  const timeoutMs = Math.min(opts.timeoutMs ?? 10_000, LEASE_MS / 2);
  for (let batch = 0; batch < (opts.maxBatches ?? 10); batch++) {
    const now = s.now();
    const due = s.db
      .select({ id: purchaseEvents.id })
      .from(purchaseEvents)
      .where(and(eq(purchaseEvents.notify, true), isNull(purchaseEvents.deliveredAt), lte(purchaseEvents.nextDeliveryAt, now), or(isNull(purchaseEvents.deliveryLeaseUntil), lt(purchaseEvents.deliveryLeaseUntil, now))))
      .orderBy(asc(purchaseEvents.seq))
      .limit(opts.batchSize ?? 20)
      .for("update", { skipLocked: true });
    const claimed = await s.db
      .update(purchaseEvents)
      .set({ deliveryLeaseUntil: new Date(now.getTime() + LEASE_MS), deliveryAttempts: sql`${purchaseEvents.deliveryAttempts} + 1` })
      .where(inArray(purchaseEvents.id, due))
      .returning();
    if (!claimed.length) break;
    claimed.sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0));
    for (const e of claimed) {
      const payload: PurchaseWebhookPayload = {
        id: e.id,
        event: `purchase.${e.event}`,
        at: e.at.toISOString(),
        org_id: e.orgId,
        purchase_id: e.purchaseId,
        message: e.message,
        purchase: await viewOf(s.db, e.orgId, e.purchaseId),
      };
      const error = await postWebhook(url, payload, { idempotencyKey: e.id, userAgent: "commitops-purchase-webhook/1", attempt: e.deliveryAttempts, timeoutMs });
      // Only the holder of this lease records the outcome (the timeout keeps a request within it).
      const mine = and(eq(purchaseEvents.id, e.id), eq(purchaseEvents.deliveryLeaseUntil, e.deliveryLeaseUntil!));
      const at = s.now();
      if (error === null) {
        report.delivered++;
        await s.db.update(purchaseEvents).set({ deliveredAt: at, deliveryLeaseUntil: null, lastDeliveryError: null }).where(mine);
      } else {
        report.failed++;
        s.log.warn("purchase webhook delivery failed", { event_id: e.id, target: safeTarget(url), attempts: e.deliveryAttempts, error });
        await s.db.update(purchaseEvents).set({ deliveryLeaseUntil: null, lastDeliveryError: error, nextDeliveryAt: new Date(at.getTime() + backoffMs(e.deliveryAttempts)) }).where(mine);
      }
    }
  }
  return report;
}

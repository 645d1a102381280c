/**
 * An endpoint's delivery log (`GET …/webhook-endpoints/{id}/deliveries` and their attempts) and
 * manual redelivery. Every read is scoped to the caller's organization through the endpoint.
 */
import { and, asc, desc, eq, sql } from "drizzle-orm";
import type { DbOrTx } from "../db/index.ts";
import { events, webhookAttempts, webhookDeliveries, webhookEndpoints } from "../db/schema/events.ts";
import { ConflictError, NotFoundError } from "../errors.ts";
import type { Page, PageRequest } from "../http/paging.ts";
import type { Services } from "../services.ts";
import { getEndpointRow } from "./endpoints.ts";

export const DELIVERY_STATUSES = ["pending", "succeeded", "failed"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

type DeliveryRow = typeof webhookDeliveries.$inferSelect;
type AttemptRow = typeof webhookAttempts.$inferSelect;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function deliveryView(d: DeliveryRow, eventType: string) {
  return {
    id: d.id,
    endpoint_id: d.endpointId,
    event_id: d.eventId,
    event_type: eventType,
    event_occurred_at: d.eventOccurredAt.toISOString(),
    status: d.status,
    attempts: d.attempts,
    last_attempt_at: iso(d.lastAttemptAt),
    last_status_code: d.lastStatusCode,
    last_latency_ms: d.lastLatencyMs,
    last_response_excerpt: d.lastResponseExcerpt,
    last_error: d.lastError,
    delivered_at: iso(d.deliveredAt),
    redelivery_requested: d.redeliverRequestedAt !== null,
    created_at: d.createdAt.toISOString(),
  };
}
export type DeliveryView = ReturnType<typeof deliveryView>;

export function attemptView(a: AttemptRow) {
  return {
    attempt: a.attempt,
    at: a.at.toISOString(),
    status_code: a.statusCode,
    latency_ms: a.latencyMs,
    response_excerpt: a.responseExcerpt,
    error: a.error,
    manual: a.manual,
  };
}
export type AttemptView = ReturnType<typeof attemptView>;

const deliveryNotFound = () => new NotFoundError("No delivery with this id for this webhook endpoint.", "webhook_delivery_not_found");

/** The endpoint's deliveries, newest event first, optionally of one status. */
export async function pageDeliveries(db: DbOrTx, orgId: string, endpointId: string, opts: { status?: DeliveryStatus }, p: Pick<PageRequest, "offset" | "limit">): Promise<Page<DeliveryView>> {
  await getEndpointRow(db, orgId, endpointId);
  const where = and(eq(webhookDeliveries.endpointId, endpointId), opts.status ? eq(webhookDeliveries.status, opts.status) : undefined);
  const [counted] = await db.select({ n: sql<number>`count(*)::int` }).from(webhookDeliveries).where(where);
  const rows = await db
    .select({ d: webhookDeliveries, type: events.type })
    .from(webhookDeliveries)
    .innerJoin(events, eq(events.id, webhookDeliveries.eventId))
    .where(where)
    .orderBy(desc(webhookDeliveries.eventOccurredAt), desc(webhookDeliveries.eventSeq))
    .limit(p.limit)
    .offset(p.offset);
  return { items: rows.map((r) => deliveryView(r.d, r.type)), total: Number(counted?.n ?? 0) };
}

async function deliveryRow(db: DbOrTx, orgId: string, endpointId: string, deliveryId: string): Promise<DeliveryRow> {
  const [row] = await db
    .select({ d: webhookDeliveries })
    .from(webhookDeliveries)
    .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookDeliveries.endpointId))
    .where(and(eq(webhookEndpoints.orgId, orgId), eq(webhookDeliveries.endpointId, endpointId), eq(webhookDeliveries.id, deliveryId)));
  if (!row) throw deliveryNotFound();
  return row.d;
}

/** One delivery's attempts, oldest first. */
export async function pageAttempts(db: DbOrTx, orgId: string, endpointId: string, deliveryId: string, p: Pick<PageRequest, "offset" | "limit">): Promise<Page<AttemptView>> {
  await getEndpointRow(db, orgId, endpointId);
  await deliveryRow(db, orgId, endpointId, deliveryId);
  const where = eq(webhookAttempts.deliveryId, deliveryId);
  const [counted] = await db.select({ n: sql<number>`count(*)::int` }).from(webhookAttempts).where(where);
  const rows = await db.select().from(webhookAttempts).where(where).orderBy(asc(webhookAttempts.attempt), asc(webhookAttempts.at)).limit(p.limit).offset(p.offset);
  return { items: rows.map(attemptView), total: Number(counted?.n ?? 0) };
}

/**
 * Manual redelivery: the delivery goes back to pending (same event, so the same `webhook-id`:
 * a receiver that already has it dedupes it) and the endpoint is due now; the worker sends it in
 * its place in the endpoint's event order, and marks that attempt `manual`. A delivery still
 * pending is only made due now. A disabled endpoint must be enabled first.
 */
export async function redeliver(s: Services, orgId: string, endpointId: string, deliveryId: string): Promise<DeliveryView> {
  const now = s.now();
  return s.db.transaction(async (tx) => {
    const [endpoint] = await tx
      .select()
      .from(webhookEndpoints)
      .where(and(eq(webhookEndpoints.orgId, orgId), eq(webhookEndpoints.id, endpointId)))
      .for("no key update");
    if (!endpoint) throw new NotFoundError("No webhook endpoint with this id in this organization.", "webhook_endpoint_not_found");
    const current = await deliveryRow(tx, orgId, endpointId, deliveryId);
    if (!endpoint.enabled) throw new ConflictError("This endpoint is disabled: enable it (PATCH enabled: true), then redeliver.", "webhook_endpoint_disabled");
    const [updated] = await tx
      .update(webhookDeliveries)
      .set({ status: "pending", deliveredAt: null, redeliverRequestedAt: now })
      .where(eq(webhookDeliveries.id, current.id))
      .returning();
    await tx.update(webhookEndpoints).set({ nextAttemptAt: now }).where(eq(webhookEndpoints.id, endpointId));
    const [event] = await tx.select({ type: events.type }).from(events).where(eq(events.id, updated!.eventId));
    return deliveryView(updated!, event!.type);
  });
}

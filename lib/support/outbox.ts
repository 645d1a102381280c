import { and, eq, inArray, isNull, lte, or, lt, sql, asc } from "drizzle-orm";
import { supportOutbox, supportTickets } from "../db/schema/support.ts";
import type { Services } from "../services.ts";
import { backoffMs, postWebhook, safeTarget } from "../webhook.ts";

import { ticketView, ticketUrl, type SupportTicketView } from "./tickets.ts";

export interface DeliverOptions {
  /** Clock of this run (defaults to the service clock). */
  now?: Date;
  /** Rows claimed per batch. */
  batchSize?: number;
  /** Batches per run at most, so one run stays short. */
  maxBatches?: number;
  /** Per-request timeout; must stay well under the lease. */
  timeoutMs?: number;
}

export interface DeliverReport {
  delivered: number;
  failed: number;
}

/** How long a claimed row stays ours: longer than any request can take (timeoutMs). */
const LEASE_MS = 120_000;

/** The webhook's JSON body for one ticket. */
export interface SupportWebhookPayload {
  event: "support_ticket.created";
  ticket: SupportTicketView & { ticket_url: string };
}


/**
 * Delivers due outbox rows to the configured webhook (SUPPORT_WEBHOOK_URL).
 *
 * Each batch is claimed in one short statement: due, undelivered rows whose lease is free are
 * selected `FOR UPDATE SKIP LOCKED` and given a lease, so concurrent deliverers (replicas, or
 * overlapping runs) never take the same row. The POST happens outside any transaction (PGlite
 * has a single connection; a long transaction would stall the API). A 2xx marks the row
 * delivered; anything else schedules a retry with exponential backoff, forever: an outage loses
 * nothing. Receivers dedupe on the `Idempotency-Key` header (the ticket key), since a crash
 * between their 2xx and our commit means one more delivery.
 */
export async function deliverSupportOutbox(s: Services, opts: DeliverOptions = {}): Promise<DeliverReport> {
  const url = s.config.supportWebhookUrl;
  const report: DeliverReport = { delivered: 0, failed: 0 };
  if (!url) return report;
  const batchSize = opts.batchSize ?? 20;
  const maxBatches = opts.maxBatches ?? 10;
  const timeoutMs = Math.min(opts.timeoutMs ?? 10_000, LEASE_MS / 2);

  for (let batch = 0; batch < maxBatches; batch++) {
    const now = opts.now ?? s.now();
    const due = s.db
      .select({ id: supportOutbox.id })
      .from(supportOutbox)
      .where(
        and(
          isNull(supportOutbox.deliveredAt),
          lte(supportOutbox.nextAttemptAt, now),
          or(isNull(supportOutbox.leaseUntil), lt(supportOutbox.leaseUntil, now)),
        ),
      )
      .orderBy(asc(supportOutbox.nextAttemptAt))
      .limit(batchSize)
      .for("update", { skipLocked: true });
    const claimed = await s.db
      .update(supportOutbox)
      .set({ leaseUntil: new Date(now.getTime() + LEASE_MS), attempts: sql`${supportOutbox.attempts} + 1` })
      .where(inArray(supportOutbox.id, due))
      .returning({ id: supportOutbox.id, ticketId: supportOutbox.ticketId, attempts: supportOutbox.attempts, leaseUntil: supportOutbox.leaseUntil });
    if (claimed.length === 0) break;
    const fresh = claimed;

    const tickets = await s.db
      .select()
      .from(supportTickets)
      .where(inArray(supportTickets.id, fresh.map((c) => c.ticketId)));
    const byId = new Map(tickets.map((t) => [t.id, t]));

    await Promise.all(
      fresh.map(async (c) => {
        const row = byId.get(c.ticketId)!;
        const view = ticketView(row);
        const payload: SupportWebhookPayload = {
          event: "support_ticket.created",
          ticket: { ...view, ticket_url: ticketUrl(s, row.orgId, view.ticket_key) },
        };
        const error = await postWebhook(url, payload, { idempotencyKey: view.ticket_key, userAgent: "commitops-support-webhook/1", attempt: c.attempts, timeoutMs });
        // Only the holder of this lease records the outcome (a lease can only be lost if the
        // request outlived it, which the timeout prevents).
        const mine = and(eq(supportOutbox.id, c.id), eq(supportOutbox.leaseUntil, c.leaseUntil!));
        const finishedAt = opts.now ?? s.now();
        if (error === null) {
          await s.db.update(supportOutbox).set({ deliveredAt: finishedAt, leaseUntil: null, lastError: null }).where(mine);
          report.delivered++;
        } else {
          await s.db
            .update(supportOutbox)
            .set({ nextAttemptAt: new Date(finishedAt.getTime() + backoffMs(c.attempts)), leaseUntil: null, lastError: error })
            .where(mine);
          report.failed++;
          s.log.warn("support webhook delivery failed", { ticket_key: view.ticket_key, attempt: c.attempts, error, target: safeTarget(url) });
        }
      }),
    );
    if (claimed.length < batchSize) break;
  }
  return report;
}

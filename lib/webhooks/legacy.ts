/**
 * The deprecated process-wide webhooks, PURCHASE_WEBHOOK_URL and SUPPORT_WEBHOOK_URL, as
 * endpoints of the event system: one row each (org_id NULL, `legacy_key` purchase | support),
 * written from the configuration when the server starts and by the delivery job (and deleted,
 * with their pending deliveries, when the variable is unset). They receive their types from
 * every organization through the same worker — per-endpoint order, retries with backoff, the
 * delivery log — in the bodies they always had, with their old `Idempotency-Key`. Unlike an
 * organization's endpoints they are never disabled (no organization admin to tell; an outage
 * loses nothing, as before) and may point at private addresses (the operator chose them).
 */
import { eq, isNotNull, sql } from "drizzle-orm";
import { webhookEndpoints } from "../db/schema/events.ts";
import { EVENT_TYPES } from "../events/catalog.ts";
import { NotFoundError } from "../errors.ts";
import { getPurchase } from "../purchasing/orders.ts";
import type { Services } from "../services.ts";
import { getSupportTicket, ticketUrl, type SupportTicketView } from "../support/tickets.ts";
import type { EventRow } from "./payload.ts";

export type LegacyKey = "purchase" | "support";

interface LegacySpec {
  url(s: Services): string | undefined;
  eventTypes(): string[];
  variable: string;
  userAgent: string;
}

const LEGACY: Record<LegacyKey, LegacySpec> = {
  purchase: {
    url: (s) => s.config.purchaseWebhookUrl,
    eventTypes: () => EVENT_TYPES.filter((t) => t.startsWith("purchase.")),
    variable: "PURCHASE_WEBHOOK_URL",
    userAgent: "commitops-purchase-webhook/1",
  },
  support: {
    url: (s) => s.config.supportWebhookUrl,
    eventTypes: () => ["support.ticket_created"],
    variable: "SUPPORT_WEBHOOK_URL",
    userAgent: "commitops-support-webhook/1",
  },
};

/** The body PURCHASE_WEBHOOK_URL has always received for one purchase event. */
export interface PurchaseWebhookPayload {
  id: string;
  event: `purchase.${string}`;
  at: string;
  org_id: string;
  purchase_id: string;
  message: string;
  /** The purchase as `GET /purchases/{id}` shows it when the event is delivered. */
  purchase: unknown;
}

/** The body SUPPORT_WEBHOOK_URL has always received for one ticket. */
export interface SupportWebhookPayload {
  event: "support_ticket.created";
  ticket: SupportTicketView & { ticket_url: string };
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((v, i) => v === b[i]);

/**
 * Makes the compatibility endpoints match the configuration: created or updated where the
 * variable is set (a changed URL starts afresh: due now, no failures), deleted where it is not.
 * Writes only when something differs (the job calls it often).
 */
export async function syncLegacyEndpoints(s: Services): Promise<void> {
  const rows = await s.db
    .select({ legacyKey: webhookEndpoints.legacyKey, url: webhookEndpoints.url, eventTypes: webhookEndpoints.eventTypes, enabled: webhookEndpoints.enabled })
    .from(webhookEndpoints)
    .where(isNotNull(webhookEndpoints.legacyKey));
  for (const key of Object.keys(LEGACY) as LegacyKey[]) {
    const spec = LEGACY[key];
    const url = spec.url(s);
    const row = rows.find((r) => r.legacyKey === key);
    if (!url) {
      if (row) await s.db.delete(webhookEndpoints).where(eq(webhookEndpoints.legacyKey, key));
      continue;
    }
    const eventTypes = spec.eventTypes();
    if (row && row.url === url && row.enabled && sameList(row.eventTypes, eventTypes)) continue;
    const now = s.now();
    const fresh = { consecutiveFailures: 0, failingSince: null, nextAttemptAt: now, leaseToken: null, leaseUntil: null, disabledAt: null, disabledReason: null };
    await s.db
      .insert(webhookEndpoints)
      .values({ orgId: null, legacyKey: key, kind: "webhook", url, eventTypes, enabled: true, description: `${spec.variable} (deprecated)`, createdAt: now, updatedAt: now, nextAttemptAt: now })
      .onConflictDoUpdate({
        target: webhookEndpoints.legacyKey,
        targetWhere: sql`legacy_key IS NOT NULL`,
        set: {
          eventTypes,
          enabled: true,
          updatedAt: now,
          ...(row && row.url === url ? {} : { url, ...fresh }),
        },
      });
  }
}

/** Whether an endpoint row is a compatibility endpoint (never disabled, private addresses allowed). */
export function isLegacy(endpoint: { legacyKey: string | null }): boolean {
  return endpoint.legacyKey !== null;
}

/** The old body and headers of a compatibility endpoint's delivery. */
export async function legacyMessage(s: Services, key: string, event: EventRow, attempt: number): Promise<{ body: string; headers: Record<string, string> }> {
  const spec = LEGACY[key as LegacyKey];
  const data = event.data as Record<string, any>;
  let payload: PurchaseWebhookPayload | SupportWebhookPayload;
  let idempotencyKey: string;
  if (key === "support") {
    const ticketKey = String(data.ticket_key);
    const ticket = await getSupportTicket(s.db, ticketKey, event.orgId);
    if (!ticket) throw new NotFoundError("the ticket of this event no longer exists");
    payload = { event: "support_ticket.created", ticket: { ...ticket, ticket_url: ticketUrl(s, event.orgId, ticket.ticket_key) } };
    idempotencyKey = ticket.ticket_key;
  } else {
    let purchase: unknown = null;
    try {
      purchase = await getPurchase(s.db, event.orgId, String(data.purchase_id));
    } catch (e) {
      if (!(e instanceof NotFoundError)) throw e;
    }
    payload = {
      id: event.id,
      event: `purchase.${String(data.status)}`,
      at: event.occurredAt.toISOString(),
      org_id: event.orgId,
      purchase_id: String(data.purchase_id),
      message: String(data.message ?? ""),
      purchase,
    };
    idempotencyKey = event.id;
  }
  return {
    body: JSON.stringify(payload),
    headers: {
      "content-type": "application/json",
      "idempotency-key": idempotencyKey,
      "user-agent": spec?.userAgent ?? "commitops-webhooks/1",
      "x-commitops-delivery-attempt": String(attempt),
    },
  };
}


/**
 * Writes an event into the organization's log in the caller's transaction (the outbox pattern:
 * the event exists exactly when the change it tells of committed), and fans it out in the same
 * transaction: one delivery row per subscribed, enabled endpoint (the org's own and the
 * deprecated process-wide ones) and the emails of members who chose this type.
 */
import { sql } from "drizzle-orm";
import type { DbOrTx } from "../db/index.ts";
import { events } from "../db/schema/events.ts";
import { queueEventEmails } from "../notifications/email.ts";
import { EVENT_CATALOG, type EventType } from "./catalog.ts";

export interface EventInput {
  orgId: string;
  type: EventType;
  occurredAt: Date;
  data: Record<string, unknown>;
  /** API path of the resource (relative to the public URL, e.g. `/beta/v1/org/…/purchases/…`). */
  resourcePath?: string | null;
  /** Console page of the resource (relative to the public URL, e.g. `/app/purchases/…`). */
  consolePath?: string | null;
  /** When set, a second event with the same key in this org is not written (returns null). */
  dedupeKey?: string | null;
}

export interface EmittedEvent {
  id: string;
  seq: number;
  orgId: string;
  type: EventType;
  dataVersion: number;
  occurredAt: Date;
  data: Record<string, unknown>;
  resourcePath: string | null;
  consolePath: string | null;
}

/** The event written, or null when its dedupe key was already used. */
export async function emitEvent(tx: DbOrTx, e: EventInput): Promise<EmittedEvent | null> {
  const dataVersion = EVENT_CATALOG[e.type].version;
  const inserted = await tx
    .insert(events)
    .values({
      orgId: e.orgId,
      type: e.type,
      dataVersion,
      occurredAt: e.occurredAt,
      data: e.data,
      resourcePath: e.resourcePath ?? null,
      consolePath: e.consolePath ?? null,
      dedupeKey: e.dedupeKey ?? null,
    })
    .onConflictDoNothing({ target: [events.orgId, events.dedupeKey], where: sql`dedupe_key IS NOT NULL` })
    .returning({ id: events.id, seq: events.seq });
  if (!inserted.length) return null;
  const event: EmittedEvent = {
    id: inserted[0]!.id,
    seq: inserted[0]!.seq!,
    orgId: e.orgId,
    type: e.type,
    dataVersion,
    occurredAt: e.occurredAt,
    data: e.data,
    resourcePath: e.resourcePath ?? null,
    consolePath: e.consolePath ?? null,
  };
  await tx.execute(sql`
    INSERT INTO webhook_deliveries (org_id, endpoint_id, event_id, event_seq, event_occurred_at)
    SELECT ${e.orgId}::uuid, id, ${event.id}::uuid, ${event.seq}, ${e.occurredAt.toISOString()}::timestamptz
    FROM webhook_endpoints
    WHERE (org_id = ${e.orgId}::uuid OR org_id IS NULL) AND enabled
      AND (${e.type} = ANY(event_types) OR '*' = ANY(event_types))
    ON CONFLICT (endpoint_id, event_id) DO NOTHING`);
  await queueEventEmails(tx, event);
  return event;
}

/**
 * Writes an event into the organization's log in the caller's transaction (the outbox pattern:
 * the event exists exactly when the change it tells of committed), and fans it out in the same
 * transaction: one delivery row per subscribed, enabled endpoint (the org's own and the
 * deprecated process-wide ones) and the emails of members who chose this type.
 */
import { sql } from "drizzle-orm";
import type { DbOrTx } from "../db/index.ts";
import { rowsOf } from "../billing/sql.ts";
import { queueEventEmailsSql } from "../notifications/email.ts";
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
  const occurredAt = e.occurredAt.toISOString();
  // One statement (one round trip inside the caller's transaction): the event, its delivery
  // rows for every subscribed, enabled endpoint (the org's own and the process-wide ones), and
  // its emails (lib/notifications/email.ts).
  const written = rowsOf<{ id: string; seq: number | string }>(
    await tx.execute(sql`
      WITH event AS (
        INSERT INTO events (org_id, type, data_version, occurred_at, data, resource_path, console_path, dedupe_key)
        VALUES (${e.orgId}::uuid, ${e.type}, ${dataVersion}, ${occurredAt}::timestamptz, ${JSON.stringify(e.data)}::jsonb,
                ${e.resourcePath ?? null}, ${e.consolePath ?? null}, ${e.dedupeKey ?? null})
        ON CONFLICT (org_id, dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING
        RETURNING id, seq
      ), deliveries AS (
        INSERT INTO webhook_deliveries (org_id, endpoint_id, event_id, event_seq, event_occurred_at)
        SELECT ${e.orgId}::uuid, w.id, event.id, event.seq, ${occurredAt}::timestamptz
        FROM event, webhook_endpoints w
        WHERE (w.org_id = ${e.orgId}::uuid OR w.org_id IS NULL) AND w.enabled
          AND (${e.type} = ANY(w.event_types) OR '*' = ANY(w.event_types))
        ON CONFLICT (endpoint_id, event_id) DO NOTHING
      ), emails AS (${queueEventEmailsSql(e.orgId, e.type, e.occurredAt)})
      SELECT id, seq FROM event`),
  );
  if (!written.length) return null;
  const event: EmittedEvent = {
    id: written[0]!.id,
    seq: Number(written[0]!.seq),
    orgId: e.orgId,
    type: e.type,
    dataVersion,
    occurredAt: e.occurredAt,
    data: e.data,
    resourcePath: e.resourcePath ?? null,
    consolePath: e.consolePath ?? null,
  };
  return event;
}

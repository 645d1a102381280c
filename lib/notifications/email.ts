import { sql, type SQL } from "drizzle-orm";
import { ADMIN_DEFAULT_EMAIL_EVENTS, ALWAYS_EMAILED_TO_ADMINS } from "./preferences.ts";

const pgTextArray = (values: readonly string[]) => `{${values.map((v) => `"${v}"`).join(",")}}`;
const ADMIN_DEFAULTS = pgTextArray(ADMIN_DEFAULT_EMAIL_EVENTS);
const ADMINS_ALWAYS = pgTextArray(ALWAYS_EMAILED_TO_ADMINS);

/**
 * The statement part that queues the emails of the event the CTE `event` (columns id, seq) just
 * wrote, in that event's transaction (lib/events/emit.ts runs it in the same statement): to each
 * member of the org who chose this event type (a member who never chose has their role's
 * defaults, lib/notifications/preferences.ts) and, for the types that always reach admins, to
 * every admin. The (event, user) unique index records each recipient once; due at once (the
 * event's time, or now if a clock ran ahead). The demo organization's people are made-up
 * addresses: nothing is queued for them. Rows are queued whether or not SMTP_URL is set: the
 * sender (lib/notifications/delivery.ts) sends them once a mail server is configured, within 3
 * days of the event, and gives up on older ones.
 */
export function queueEventEmailsSql(orgId: string, type: string, occurredAt: Date): SQL {
  return sql`
    INSERT INTO email_notifications (org_id, user_id, event_id, to_address, next_attempt_at)
    SELECT m.org_id, m.user_id, event.id, u.email, LEAST(now(), ${occurredAt.toISOString()}::timestamptz)
    FROM event
    CROSS JOIN memberships m
    JOIN users u ON u.id = m.user_id
    JOIN organizations o ON o.id = m.org_id AND NOT o.is_demo
    LEFT JOIN notification_preferences p ON p.org_id = m.org_id AND p.user_id = m.user_id
    WHERE m.org_id = ${orgId}::uuid
      AND (
        ${type} = ANY(p.email_event_types)
        OR (p.user_id IS NULL AND m.role = 'admin' AND ${type} = ANY(${ADMIN_DEFAULTS}::text[]))
        OR (m.role = 'admin' AND ${type} = ANY(${ADMINS_ALWAYS}::text[]))
      )
    ON CONFLICT (event_id, user_id) DO NOTHING`;
}

import { sql } from "drizzle-orm";
import { index, integer, pgTable, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { organizations, users } from "./core.ts";
import { events } from "./events.ts";

/**
 * Which event types email one member of one organization (PUT /notification-preferences). A
 * member without a row has the defaults of their role (lib/notifications/preferences.ts). Only
 * members are read or mailed (every use joins memberships): a removed member's row is inert,
 * and applies again if they are added back.
 */
export const notificationPreferences = pgTable(
  "notification_preferences",
  {
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    userId: uuid("user_id").notNull().references(() => users.id, { onDelete: "cascade" }),
    emailEventTypes: text("email_event_types").array().notNull(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex("notification_preferences_org_user_uq").on(t.orgId, t.userId)],
);

/**
 * The email outbox: one row per event and recipient, written in the event's transaction
 * (lib/notifications/email.ts), sent by jobs/email-delivery.ts. Unique per event and user, so
 * an event is mailed to a member once however often it is fanned out.
 */
export const emailNotifications = pgTable(
  "email_notifications",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    userId: uuid("user_id").notNull().references(() => users.id, { onDelete: "cascade" }),
    eventId: uuid("event_id").notNull().references(() => events.id, { onDelete: "cascade" }),
    /** The member's address when the event was written. */
    toAddress: text("to_address").notNull(),
    /** pending → sent | failed (refused by the server, no longer a member, or not sent within 3 days). */
    status: text("status", { enum: ["pending", "sent", "failed"] }).notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: timestamp("next_attempt_at", { withTimezone: true }).notNull().defaultNow(),
    /** The sender holding the row (a crashed one's lease runs out and the row is sent again, with the same Message-ID). */
    leaseToken: uuid("lease_token"),
    leaseUntil: timestamp("lease_until", { withTimezone: true }),
    lastError: text("last_error"),
    sentAt: timestamp("sent_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("email_notifications_event_user_uq").on(t.eventId, t.userId),
    index("email_notifications_due_idx").on(t.nextAttemptAt).where(sql`status = 'pending'`),
    index("email_notifications_org_idx").on(t.orgId, t.createdAt),
  ],
);

/**
 * Each member's choice of which events email them, per organization
 * (GET/PUT /notification-preferences). A member who never chose has their role's defaults:
 * admins are emailed what needs an admin (an approval, a failing billing sync, a budget
 * crossed, a disabled webhook endpoint); viewers and members nothing until they choose.
 * Admins are always emailed when an endpoint is disabled, whatever they chose: it is the only
 * way they hear that their other channels went quiet.
 */
import { and, eq, sql } from "drizzle-orm";
import type { DbOrTx } from "../db/index.ts";
import { memberships, notificationPreferences } from "../db/schema/index.ts";
import type { Role } from "../auth/scopes.ts";
import { ForbiddenError } from "../errors.ts";
import { isEventType, type EventType } from "../events/catalog.ts";

export const ADMIN_DEFAULT_EMAIL_EVENTS = ["purchase.pending_approval", "billing_sync.failed", "budget.threshold_crossed", "webhook_endpoint.disabled"] as const satisfies readonly EventType[];

/** Emailed to every admin regardless of their choice. */
export const ALWAYS_EMAILED_TO_ADMINS = ["webhook_endpoint.disabled"] as const satisfies readonly EventType[];

export function defaultEmailEventTypes(role: Role): EventType[] {
  return role === "admin" ? [...ADMIN_DEFAULT_EMAIL_EVENTS].sort() : [];
}

export function alwaysEmailedTypes(role: Role): EventType[] {
  return role === "admin" ? [...ALWAYS_EMAILED_TO_ADMINS] : [];
}

export interface NotificationPreferencesView {
  email_event_types: EventType[];
  is_default: boolean;
  always_emailed: EventType[];
  email_enabled: boolean;
  updated_at: string | null;
}

/** Known types only (a type dropped from the catalog is no longer offered), sorted, each once. */
function known(types: readonly string[]): EventType[] {
  return [...new Set(types)].filter(isEventType).sort();
}

async function roleOf(db: DbOrTx, orgId: string, userId: string | null): Promise<{ userId: string; role: Role }> {
  if (!userId)
    throw new ForbiddenError(
      "Notification preferences belong to a person, and this API key was made without one (by the command line). Use an OAuth token or an API key created by a member.",
      "user_required",
    );
  const [m] = await db.select({ role: memberships.role }).from(memberships).where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId))).limit(1);
  if (!m) throw new ForbiddenError("Only members of the organization have notification preferences in it.", "not_a_member");
  return { userId, role: m.role };
}

export async function getNotificationPreferences(db: DbOrTx, orgId: string, userId: string | null, emailEnabled: boolean): Promise<NotificationPreferencesView> {
  const member = await roleOf(db, orgId, userId);
  const [row] = await db
    .select()
    .from(notificationPreferences)
    .where(and(eq(notificationPreferences.orgId, orgId), eq(notificationPreferences.userId, member.userId)))
    .limit(1);
  return {
    email_event_types: row ? known(row.emailEventTypes) : defaultEmailEventTypes(member.role),
    is_default: !row,
    always_emailed: alwaysEmailedTypes(member.role),
    email_enabled: emailEnabled,
    updated_at: row ? row.updatedAt.toISOString() : null,
  };
}

/** Replaces the caller's choice in this organization (one upsert). */
export async function setNotificationPreferences(db: DbOrTx, orgId: string, userId: string | null, types: readonly string[], now: Date, emailEnabled: boolean): Promise<NotificationPreferencesView> {
  const member = await roleOf(db, orgId, userId);
  const chosen = known(types);
  const [row] = await db
    .insert(notificationPreferences)
    .values({ orgId, userId: member.userId, emailEventTypes: chosen, updatedAt: now })
    .onConflictDoUpdate({
      target: [notificationPreferences.orgId, notificationPreferences.userId],
      set: { emailEventTypes: sql`excluded.email_event_types`, updatedAt: sql`excluded.updated_at` },
    })
    .returning();
  return {
    email_event_types: known(row!.emailEventTypes),
    is_default: false,
    always_emailed: alwaysEmailedTypes(member.role),
    email_enabled: emailEnabled,
    updated_at: row!.updatedAt.toISOString(),
  };
}

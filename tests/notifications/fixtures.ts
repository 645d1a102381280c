import { randomUUID } from "node:crypto";
import type { Services } from "../../lib/services.ts";
import { createOrganization, createUser, addMember } from "../../lib/orgs/service.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { emitEvent, type EmittedEvent } from "../../lib/events/emit.ts";
import type { EventType } from "../../lib/events/catalog.ts";
import type { Role } from "../../lib/auth/scopes.ts";
import { deliverEmails, type EmailDeliveryOptions, type EmailDeliveryReport } from "../../lib/notifications/delivery.ts";

export interface TestMember {
  userId: string;
  email: string;
  role: Role;
  /** An API key of this member (every scope, bounded by the role). */
  key: string;
}

export async function orgWithMembers(s: Services, name: string, roles: Record<string, Role>): Promise<{ id: string; members: Record<string, TestMember> }> {
  const org = await createOrganization(s.db, { name });
  const members: Record<string, TestMember> = {};
  for (const [label, role] of Object.entries(roles)) members[label] = await addTestMember(s, org.id, label, role);
  return { id: org.id, members };
}

export async function addTestMember(s: Services, orgId: string, label: string, role: Role, existing?: { userId: string; email: string }): Promise<TestMember> {
  const user = existing ? { id: existing.userId, email: existing.email } : await createUser(s.db, { email: `${label}-${randomUUID().slice(0, 8)}@example.com` });
  await addMember(s.db, { orgId, userId: user.id, role });
  const key = (await createApiKey(s.db, { orgId, createdBy: user.id })).key;
  return { userId: user.id, email: user.email, role, key };
}

/** An event written as producers write them: in a transaction of its own. */
export async function emit(
  s: Services,
  orgId: string,
  type: EventType,
  data: Record<string, unknown> = {},
  links: { consolePath?: string | null; resourcePath?: string | null } = { consolePath: "/app/things/1", resourcePath: `/beta/v1/org/${orgId}/things/1` },
): Promise<EmittedEvent> {
  const e = await s.db.transaction((tx) => emitEvent(tx, { orgId, type, occurredAt: s.now(), data, ...links }));
  return e!;
}

export async function outboxOf(s: Services, where: { eventId?: string; orgId?: string }): Promise<any[]> {
  if (where.eventId) return s.handle.query<any>("SELECT * FROM email_notifications WHERE event_id = $1 ORDER BY to_address", [where.eventId]);
  return s.handle.query<any>("SELECT * FROM email_notifications WHERE org_id = $1 ORDER BY created_at, to_address", [where.orgId]);
}

export async function recipientsOf(s: Services, eventId: string): Promise<string[]> {
  return (await outboxOf(s, { eventId })).map((r) => r.to_address).sort();
}

/** Delivery passes until one claims nothing. */
export async function deliverAll(s: Services, opts: EmailDeliveryOptions = {}, maxPasses = 20): Promise<EmailDeliveryReport> {
  const total: EmailDeliveryReport = { sent: 0, retried: 0, failed: 0 };
  for (let i = 0; i < maxPasses; i++) {
    const r = await deliverEmails(s, opts);
    total.sent += r.sent;
    total.retried += r.retried;
    total.failed += r.failed;
    if (!r.sent && !r.retried && !r.failed) break;
  }
  return total;
}

/** A sample `purchase.*` data document (lib/events/data/purchase.ts). */
export function purchaseData(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    purchase_id: randomUUID(),
    status: "pending_approval",
    message: "Planned 3 items from the weekly plan; waiting for an admin.",
    provider: "aws",
    purchaser: "ledger",
    dry_run: false,
    template_id: randomUUID(),
    plan_id: randomUUID(),
    run_id: null,
    execution_date: "2025-03-03",
    item_count: 3,
    total_upfront_cost: 12345,
    monthly_net_savings: 1234.5,
    currency: "USD",
    requires_approval: true,
    approval_expires_at: "2025-03-10T00:00:00.000Z",
    decided_by: null,
    decided_at: null,
    ...over,
  };
}

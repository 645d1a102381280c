import { and, desc, eq, sql } from "drizzle-orm";
import { supportDailyCounts, supportTickets } from "../db/schema/support.ts";
import { events, webhookDeliveries, webhookEndpoints } from "../db/schema/events.ts";
import { emitEvent } from "../events/emit.ts";
import type { SupportTicketCreatedData } from "../events/data/purchase.ts";
import type { DbOrTx } from "../db/index.ts";
import type { Principal } from "../auth/principal.ts";
import type { Services } from "../services.ts";
import type { Page, PageRequest } from "../http/paging.ts";

export type { Provider } from "../providers.ts";
import type { Provider } from "../providers.ts";
import { supportTicketLinks } from "../events/links.ts";

export interface BugReportInput {
  summary: string;
  user_verbatim: string;
  what_happened: string;
  steps_to_reproduce: string;
  expected_behavior: string;
  app_url?: string | null;
  provider?: Provider | null;
}

export interface FeatureRequestInput {
  summary: string;
  user_verbatim: string;
  problem: string;
  desired_behavior: string;
  business_value: string;
}

export type TicketFiling = { kind: "bug"; input: BugReportInput } | { kind: "feature"; input: FeatureRequestInput };

/** The spec's support ticket result. */
export type SupportTicketResult =
  | { status: "created"; ticket_key: string; ticket_url: string }
  | { status: "rate_limited"; reason: string }
  | { status: "not_filed"; reason: string };

export function ticketKey(n: number): string {
  return `SUP-${n}`;
}

/** The number of a `SUP-<n>` key (case-insensitive), or null when it is not one. */
export function parseTicketKey(key: string): number | null {
  const m = /^SUP-([1-9][0-9]{0,15})$/i.exec(key.trim());
  if (!m) return null;
  const n = Number(m[1]);
  return Number.isSafeInteger(n) ? n : null;
}

/** Where the filer can read the ticket back (GET with a credential of the same org). */
export function ticketUrl(s: Services, orgId: string, key: string): string {
  return `${s.config.publicUrl}/beta/v1/org/${orgId}/support/tickets/${key}`;
}

/** The UTC day (YYYY-MM-DD) a filing at `at` counts against. */
export function capDayOf(at: Date): string {
  return at.toISOString().slice(0, 10);
}

function nextUtcMidnight(at: Date): string {
  const d = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() + 1));
  return d.toISOString().replace(".000Z", "Z");
}

/**
 * Files a bug report or feature request for the caller's organization.
 *
 * - Filing disabled in the environment → `not_filed` (nothing stored, nothing counted).
 * - The org's per-UTC-day counter is bumped only while below the cap, by one conditional upsert
 *   in the same transaction as the ticket insert: concurrent filings serialize on the counter
 *   row, so exactly `cap` tickets are created per org and day, whatever the concurrency.
 * - The `support.ticket_created` event is written in the same transaction (the outbox of every
 *   endpoint subscribed to it, SUPPORT_WEBHOOK_URL's included), so a ticket is never stored
 *   without its deliveries being scheduled (and never delivered without being stored).
 * - Repeated reports are stored like any other (the service team merges them).
 */
export async function fileSupportTicket(s: Services, principal: Principal, filing: TicketFiling): Promise<SupportTicketResult> {
  if (!s.config.supportFilingEnabled) {
    return {
      status: "not_filed",
      reason: "Filing support tickets is disabled in this environment; nothing was recorded. Please contact the service team through your usual support channel.",
    };
  }
  const now = s.now();
  const day = capDayOf(now);
  const cap = Math.max(0, Math.floor(s.config.supportDailyCap));
  const limited: SupportTicketResult = {
    status: "rate_limited",
    reason: `This organization has reached its daily limit of ${cap} support tickets (per UTC day). Nothing was filed; try again after ${nextUtcMidnight(now)}.`,
  };
  if (cap === 0) return limited;

  const created = await s.db.transaction(async (tx) => {
    const counted = await tx
      .insert(supportDailyCounts)
      .values({ orgId: principal.orgId, day, count: 1 })
      .onConflictDoUpdate({
        target: [supportDailyCounts.orgId, supportDailyCounts.day],
        set: { count: sql`${supportDailyCounts.count} + 1` },
        setWhere: sql`${supportDailyCounts.count} < ${cap}`,
      })
      .returning({ count: supportDailyCounts.count });
    if (counted.length === 0) return null;

    const fields =
      filing.kind === "bug"
        ? {
            whatHappened: filing.input.what_happened,
            stepsToReproduce: filing.input.steps_to_reproduce,
            expectedBehavior: filing.input.expected_behavior,
            appUrl: filing.input.app_url ?? null,
            provider: filing.input.provider ?? null,
          }
        : {
            problem: filing.input.problem,
            desiredBehavior: filing.input.desired_behavior,
            businessValue: filing.input.business_value,
          };
    const [ticket] = await tx
      .insert(supportTickets)
      .values({
        orgId: principal.orgId,
        kind: filing.kind,
        userId: principal.userId,
        credentialId: principal.credentialId,
        credentialKind: principal.kind,
        summary: filing.input.summary,
        userVerbatim: filing.input.user_verbatim,
        ...fields,
        capDay: day,
        createdAt: now,
      })
      .returning({ id: supportTickets.id, number: supportTickets.number });
    const key = ticketKey(ticket!.number);
    const data: SupportTicketCreatedData = {
      ticket_key: key,
      kind: filing.kind,
      summary: filing.input.summary,
      provider: filing.kind === "bug" ? (filing.input.provider ?? null) : null,
      filed_by: { user_id: principal.userId, credential_kind: principal.kind },
      ticket_url: ticketUrl(s, principal.orgId, key),
    };
    await emitEvent(tx, {
      orgId: principal.orgId,
      type: "support.ticket_created",
      occurredAt: now,
      data: data as unknown as Record<string, unknown>,
      ...supportTicketLinks(principal.orgId, key),
      dedupeKey: ticketEventKey(ticket!.id),
    });
    return ticket!;
  });
  if (!created) return limited;
  const key = ticketKey(created.number);
  s.log.info("support ticket filed", { org_id: principal.orgId, ticket_key: key, kind: filing.kind });
  return { status: "created", ticket_key: key, ticket_url: ticketUrl(s, principal.orgId, key) };
}

/** A stored ticket as shown to the org (API), the service team (CLI) and the webhook. */
export interface SupportTicketView {
  ticket_key: string;
  kind: "bug" | "feature";
  org_id: string;
  summary: string;
  user_verbatim: string;
  what_happened?: string | null;
  steps_to_reproduce?: string | null;
  expected_behavior?: string | null;
  app_url?: string | null;
  provider?: Provider | null;
  problem?: string | null;
  desired_behavior?: string | null;
  business_value?: string | null;
  filed_by: { user_id: string | null; credential_kind: "api_key" | "oauth"; credential_id: string };
  created_at: string;
}

type TicketRow = typeof supportTickets.$inferSelect;

export function ticketView(row: TicketRow): SupportTicketView {
  const common = {
    ticket_key: ticketKey(row.number),
    kind: row.kind,
    org_id: row.orgId,
    summary: row.summary,
    user_verbatim: row.userVerbatim,
  };
  const specific =
    row.kind === "bug"
      ? {
          what_happened: row.whatHappened,
          steps_to_reproduce: row.stepsToReproduce,
          expected_behavior: row.expectedBehavior,
          app_url: row.appUrl,
          provider: row.provider,
        }
      : { problem: row.problem, desired_behavior: row.desiredBehavior, business_value: row.businessValue };
  return {
    ...common,
    ...specific,
    filed_by: { user_id: row.userId, credential_kind: row.credentialKind, credential_id: row.credentialId },
    created_at: new Date(row.createdAt).toISOString(),
  };
}

/** One ticket by key; `orgId` restricts it to that organization (null for the service team). */
export async function getSupportTicket(db: DbOrTx, key: string, orgId: string | null): Promise<SupportTicketView | null> {
  const n = parseTicketKey(key);
  if (n === null) return null;
  const where = orgId === null ? eq(supportTickets.number, n) : and(eq(supportTickets.number, n), eq(supportTickets.orgId, orgId));
  const [row] = await db.select().from(supportTickets).where(where).limit(1);
  return row ? ticketView(row) : null;
}

/**
 * One page of the tickets the org filed (GET /support/tickets), newest first (the ticket number
 * as tiebreak), optionally of one kind: the same view as one ticket read back.
 */
export async function pageOrgSupportTickets(db: DbOrTx, orgId: string, opts: { kind?: "bug" | "feature" }, p: Pick<PageRequest, "offset" | "limit">): Promise<Page<SupportTicketView>> {
  const where = and(eq(supportTickets.orgId, orgId), opts.kind ? eq(supportTickets.kind, opts.kind) : undefined);
  const [counted] = await db.select({ n: sql<number>`count(*)::int` }).from(supportTickets).where(where);
  const rows = await db.select().from(supportTickets).where(where).orderBy(desc(supportTickets.createdAt), desc(supportTickets.number)).limit(p.limit).offset(p.offset);
  return { items: rows.map(ticketView), total: Number(counted?.n ?? 0) };
}

/** The dedupe key of a ticket's `support.ticket_created` event: how the service team's list finds its delivery. */
const TICKET_EVENT_KEY_PREFIX = "support-ticket:";
function ticketEventKey(ticketId: string): string {
  return TICKET_EVENT_KEY_PREFIX + ticketId;
}

export interface TicketListItem {
  ticket_key: string;
  kind: "bug" | "feature";
  org_id: string;
  summary: string;
  created_at: string;
  /** Delivery to SUPPORT_WEBHOOK_URL: `delivered`, `pending` (with attempts so far) or `none` (no webhook then, or given up). */
  delivery: "delivered" | "pending" | "none";
  delivery_attempts: number;
  last_delivery_error: string | null;
}

/** Tickets for the service team, newest first, optionally of one org, with their delivery to SUPPORT_WEBHOOK_URL. */
export async function listSupportTickets(db: DbOrTx, opts: { orgId?: string; limit?: number } = {}): Promise<TicketListItem[]> {
  const rows = await db
    .select({
      number: supportTickets.number,
      kind: supportTickets.kind,
      orgId: supportTickets.orgId,
      summary: supportTickets.summary,
      createdAt: supportTickets.createdAt,
      deliveryStatus: webhookDeliveries.status,
      attempts: webhookDeliveries.attempts,
      lastError: webhookDeliveries.lastError,
    })
    .from(supportTickets)
    .leftJoin(events, and(eq(events.orgId, supportTickets.orgId), eq(events.dedupeKey, sql`${TICKET_EVENT_KEY_PREFIX} || ${supportTickets.id}::text`)))
    .leftJoin(webhookEndpoints, eq(webhookEndpoints.legacyKey, "support"))
    .leftJoin(webhookDeliveries, and(eq(webhookDeliveries.eventId, events.id), eq(webhookDeliveries.endpointId, webhookEndpoints.id)))
    .where(opts.orgId ? eq(supportTickets.orgId, opts.orgId) : undefined)
    .orderBy(desc(supportTickets.number))
    .limit(opts.limit ?? 100);
  return rows.map((r) => ({
    ticket_key: ticketKey(r.number),
    kind: r.kind,
    org_id: r.orgId,
    summary: r.summary,
    created_at: new Date(r.createdAt).toISOString(),
    delivery: r.deliveryStatus === "succeeded" ? "delivered" : r.deliveryStatus === "pending" ? "pending" : "none",
    delivery_attempts: r.attempts ?? 0,
    last_delivery_error: r.lastError ?? null,
  }));
}

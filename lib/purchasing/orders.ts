/**
 * Purchases (orders) as people see and decide them: the list and one purchase with its items
 * and story, approval and rejection, the lapse of stale approvals (whose plans are then
 * regenerated, never bought stale), and the order's status settled from its items'.
 */
import { and, asc, desc, eq, inArray, lte, sql } from "drizzle-orm";
import type { Page, PageRequest } from "../http/paging.ts";
import type { DbOrTx, Tx } from "../db/index.ts";
import { purchaseEvents, purchaseItems, purchases } from "../db/schema/index.ts";
import { ConflictError, NotFoundError } from "../errors.ts";
import { queryRows } from "../billing/sql.ts";
import { utcDate } from "../templates/schedule.ts";
import type { Services } from "../services.ts";
import { eventView, recordEvent } from "./events.ts";
import { confirmInLedger } from "./ledger.ts";
import { centsOrNull } from "../pricing/index.ts";
import { rate6, sumCents } from "../pricing/display.ts";

export const PURCHASE_STATUSES = ["pending_approval", "approved", "confirmed", "partially_failed", "failed", "rejected", "expired", "dry_run"] as const;
export type PurchaseStatus = (typeof PURCHASE_STATUSES)[number];
export const ITEM_STATUSES = ["pending_approval", "approved", "submitting", "confirmed", "failed", "rejected", "expired", "dry_run"] as const;

type PurchaseRow = typeof purchases.$inferSelect;
type ItemRow = typeof purchaseItems.$inferSelect;

const iso = (d: Date | null) => (d ? d.toISOString() : null);
const num = (v: string | null) => (v === null ? null : Number(v));
/** Money at the edge (DESIGN §12): cents. */
const cents = (v: string | null) => centsOrNull(num(v));
/** Rates and quantities ($/hour costs, amounts) at the edge: 6 decimals. */
const rate = (v: string | null) => (v === null ? null : rate6(Number(v)));

export function itemView(i: ItemRow) {
  return {
    id: i.id,
    position: i.position,
    status: i.status,
    dry_run: i.dryRun,
    commitment_type: i.commitmentType,
    contract_term: i.contractTerm,
    payment_option: i.paymentOption,
    region: i.region,
    instance_type: i.instanceType,
    instance_family: i.instanceFamily,
    amount: rate(i.amount)!,
    planned_upfront_cost: cents(i.plannedUpfront)!,
    planned_hourly_cost: rate(i.plannedHourly)!,
    monthly_net_savings: cents(i.monthlyNetSavings)!,
    idempotency_token: i.token,
    offering_id: i.offeringId,
    quoted_upfront_cost: cents(i.quotedUpfront),
    quoted_hourly_cost: rate(i.quotedHourly),
    provider_purchase_id: i.providerPurchaseId,
    provider_state: i.providerState,
    actual_upfront_cost: cents(i.actualUpfront),
    actual_hourly_cost: rate(i.actualHourly),
    currency: i.currency,
    starts_at: iso(i.startsAt),
    ends_at: iso(i.endsAt),
    commitment_id: i.commitmentId,
    dry_run_summary: i.dryRunSummary,
    failure_cause: i.failureCause,
    failure_message: i.failureMessage,
    attempts: i.attempts,
    submitted_at: iso(i.submittedAt),
    finished_at: iso(i.finishedAt),
  };
}

/** An order's money as its items show it (cents): its totals are summed from these. */
interface ShownItemMoney {
  planned_upfront_cost: number;
  monthly_net_savings: number;
}

/** The order's totals: the sums of its items' shown cents, so the document adds up as displayed. */
function orderTotals(items: readonly ShownItemMoney[]) {
  return { total_upfront_cost: sumCents(items.map((i) => i.planned_upfront_cost)), monthly_net_savings: sumCents(items.map((i) => i.monthly_net_savings)) };
}

/** The shown money of each order's items, by purchase id (for the lists). */
async function shownItemMoneyOf(db: DbOrTx, orgId: string, purchaseIds: string[]): Promise<Map<string, ShownItemMoney[]>> {
  const byPurchase = new Map<string, ShownItemMoney[]>();
  if (!purchaseIds.length) return byPurchase;
  const rows = await db
    .select({ purchaseId: purchaseItems.purchaseId, plannedUpfront: purchaseItems.plannedUpfront, monthlyNetSavings: purchaseItems.monthlyNetSavings })
    .from(purchaseItems)
    .where(and(eq(purchaseItems.orgId, orgId), inArray(purchaseItems.purchaseId, purchaseIds)));
  for (const r of rows) {
    const list = byPurchase.get(r.purchaseId) ?? [];
    list.push({ planned_upfront_cost: cents(r.plannedUpfront)!, monthly_net_savings: cents(r.monthlyNetSavings)! });
    byPurchase.set(r.purchaseId, list);
  }
  return byPurchase;
}

/** One order as listed; `items` are its items' shown money, which its totals are summed from. */
export function purchaseSummaryView(p: PurchaseRow, items: readonly ShownItemMoney[]) {
  return {
    id: p.id,
    provider: p.provider,
    status: p.status,
    purchaser: p.purchaser,
    connection_id: p.connectionId,
    dry_run: p.dryRun,
    template_id: p.templateId,
    execution_date: p.executionDate,
    plan_id: p.planId,
    item_count: p.itemCount,
    ...orderTotals(items),
    requires_approval: p.requiresApproval,
    approval_expires_at: iso(p.approvalExpiresAt),
    decided_by: p.decidedBy,
    decided_at: iso(p.decidedAt),
    decision_note: p.decisionNote,
    created_at: p.createdAt.toISOString(),
    updated_at: p.updatedAt.toISOString(),
  };
}

const notFound = () => new NotFoundError("No purchase with this id in this organization.", "purchase_not_found");

export async function listPurchases(db: DbOrTx, orgId: string, opts: { status?: PurchaseStatus; limit?: number } = {}) {
  const rows = await db
    .select()
    .from(purchases)
    .where(and(eq(purchases.orgId, orgId), opts.status ? eq(purchases.status, opts.status) : undefined))
    .orderBy(desc(purchases.createdAt), desc(purchases.id))
    .limit(opts.limit ?? 100);
  const money = await shownItemMoneyOf(db, orgId, rows.map((r) => r.id));
  return rows.map((r) => purchaseSummaryView(r, money.get(r.id) ?? []));
}

/** One page of the org's purchases, newest first (id as tiebreak), optionally of one status. */
export async function pagePurchases(db: DbOrTx, orgId: string, opts: { status?: PurchaseStatus }, p: Pick<PageRequest, "offset" | "limit">): Promise<Page<PurchaseSummaryView>> {
  const where = and(eq(purchases.orgId, orgId), opts.status ? eq(purchases.status, opts.status) : undefined);
  const [counted] = await db.select({ n: sql<number>`count(*)::int` }).from(purchases).where(where);
  const rows = await db.select().from(purchases).where(where).orderBy(desc(purchases.createdAt), desc(purchases.id)).limit(p.limit).offset(p.offset);
  const money = await shownItemMoneyOf(db, orgId, rows.map((r) => r.id));
  return { items: rows.map((r) => purchaseSummaryView(r, money.get(r.id) ?? [])), total: Number(counted?.n ?? 0) };
}
export type PurchaseSummaryView = ReturnType<typeof purchaseSummaryView>;

export async function getPurchase(db: DbOrTx, orgId: string, id: string) {
  const [p] = await db.select().from(purchases).where(and(eq(purchases.orgId, orgId), eq(purchases.id, id)));
  if (!p) throw notFound();
  const items = await db.select().from(purchaseItems).where(eq(purchaseItems.purchaseId, id)).orderBy(asc(purchaseItems.position));
  const story = await db.select().from(purchaseEvents).where(eq(purchaseEvents.purchaseId, id)).orderBy(asc(purchaseEvents.seq));
  const shown = items.map(itemView);
  return { ...purchaseSummaryView(p, shown), items: shown, events: story.map(eventView) };
}
export type PurchaseView = Awaited<ReturnType<typeof getPurchase>>;

async function lockPurchase(tx: Tx, orgId: string, id: string): Promise<PurchaseRow> {
  const [p] = await tx.select().from(purchases).where(and(eq(purchases.orgId, orgId), eq(purchases.id, id))).for("update");
  if (!p) throw notFound();
  return p;
}

/** Moves a pending order and its waiting items to a final decision, with its event. */
async function closePending(tx: Tx, p: PurchaseRow, status: "rejected" | "expired", now: Date, who: string | null, message: string, note: string | null = null) {
  await tx.update(purchases).set({ status, decidedBy: who, decidedAt: now, decisionNote: note, updatedAt: now }).where(eq(purchases.id, p.id));
  await tx.update(purchaseItems).set({ status, finishedAt: now, updatedAt: now }).where(and(eq(purchaseItems.purchaseId, p.id), eq(purchaseItems.status, "pending_approval")));
  await recordEvent(tx, { orgId: p.orgId, purchaseId: p.id, event: status, message, at: now, notify: true, detail: note ? { note } : null });
}

/**
 * Schedules a regenerated plan for an expired order's template: a new auto-purchase run dated
 * today (at most one per template and day), which prices today's usage and catalog.
 */
async function regenerateLater(tx: Tx, p: PurchaseRow, now: Date): Promise<void> {
  if (!p.templateId) return;
  await queryRows(tx, `INSERT INTO purchase_runs (org_id, template_id, execution_date, status) VALUES ($1, $2, $3, 'pending') ON CONFLICT (template_id, execution_date) DO NOTHING`, [p.orgId, p.templateId, utcDate(now)]);
}

export interface Decision {
  /** Who decides: the API key or user behind the request. */
  by: string;
  note?: string | null;
}

/**
 * The answer to a decision on an order that is no longer pending: 409 naming the decision that
 * was made (approved, rejected or expired), by whom and when, so a second approver knows whose
 * decision stands.
 */
function alreadyDecided(p: PurchaseRow, attempted: "approved" | "rejected"): ConflictError {
  const decision = p.status === "rejected" ? "rejected" : p.status === "expired" ? "expired" : "approved";
  const who = p.decidedBy ? ` by ${p.decidedBy}` : decision === "approved" ? " without a person (the template required no approval)" : "";
  const when = p.decidedAt ? ` at ${p.decidedAt.toISOString()}` : "";
  return new ConflictError(
    `This purchase was already ${decision}${who}${when} and is now ${p.status}: only a purchase pending approval can be ${attempted}.`,
    "purchase_not_pending",
    {},
    { status: p.status, decision, decided_by: p.decidedBy, decided_at: iso(p.decidedAt) },
  );
}

/**
 * Approves an order pending approval. The order row is locked for the decision, so of any number
 * of concurrent approvals and rejections exactly one finds it pending and wins; every other is
 * refused with `alreadyDecided`. A ledger order (no purchasing connection) is recorded in the
 * ledger in the same transaction; otherwise its items are `approved` for the state machine.
 */
export async function approvePurchase(s: Services, orgId: string, id: string, d: Decision) {
  const now = s.now();
  const outcome = await s.db.transaction(async (tx) => {
    const p = await lockPurchase(tx, orgId, id);
    if (p.status === "pending_approval" && p.approvalExpiresAt && p.approvalExpiresAt <= now) {
      await closePending(tx, p, "expired", now, null, "The approval window lapsed before the approval arrived; the plan will be regenerated.");
      await regenerateLater(tx, p, now);
      return { won: false as const, expired: true as const };
    }
    if (p.status !== "pending_approval") return { won: false as const, refused: p };
    await tx.update(purchases).set({ status: "approved", decidedBy: d.by, decidedAt: now, decisionNote: d.note ?? null, updatedAt: now }).where(eq(purchases.id, id));
    await tx.update(purchaseItems).set({ status: "approved", nextAttemptAt: now, updatedAt: now }).where(and(eq(purchaseItems.purchaseId, id), eq(purchaseItems.status, "pending_approval")));
    await recordEvent(tx, { orgId, purchaseId: id, event: "approved", message: `Approved by ${d.by}.`, at: now, detail: d.note ? { note: d.note } : null });
    if (p.purchaser === "ledger" && !p.connectionId) await confirmInLedger(tx, p, now, { notify: true });
    return { won: true as const };
  });
  if ("expired" in outcome) throw new ConflictError("This purchase's approval window has lapsed: it was not bought and its plan will be regenerated.", "purchase_expired");
  if (!outcome.won) throw alreadyDecided(outcome.refused, "approved");
  return getPurchase(s.db, orgId, id);
}

/** Rejects an order pending approval: one decision wins, as for `approvePurchase`. */
export async function rejectPurchase(s: Services, orgId: string, id: string, d: Decision) {
  const now = s.now();
  const refused = await s.db.transaction(async (tx) => {
    const p = await lockPurchase(tx, orgId, id);
    if (p.status !== "pending_approval") return p;
    await closePending(tx, p, "rejected", now, d.by, `Rejected by ${d.by}.`, d.note ?? null);
    return null;
  });
  if (refused) throw alreadyDecided(refused, "rejected");
  return getPurchase(s.db, orgId, id);
}

/** Orders of a template still waiting for approval give way to a newer plan of that template. */
export async function supersedePendingApprovals(tx: Tx, orgId: string, templateId: string, now: Date): Promise<void> {
  const pending = await tx
    .select()
    .from(purchases)
    .where(and(eq(purchases.orgId, orgId), eq(purchases.templateId, templateId), eq(purchases.status, "pending_approval")))
    .for("update");
  for (const p of pending) await closePending(tx, p, "expired", now, null, "Superseded by a newer plan of the same template before it was approved: not bought.");
}

/** Lapses every approval past its window (claimed row by row; replicas skip each other's). Returns how many lapsed. */
export async function expireStaleApprovals(s: Services): Promise<number> {
  let expired = 0;
  for (;;) {
    const now = s.now();
    const done = await s.db.transaction(async (tx) => {
      const [p] = await tx
        .select()
        .from(purchases)
        .where(and(eq(purchases.status, "pending_approval"), lte(purchases.approvalExpiresAt, now)))
        .orderBy(asc(purchases.approvalExpiresAt))
        .limit(1)
        .for("update", { skipLocked: true });
      if (!p) return false;
      await closePending(tx, p, "expired", now, null, "Not approved within PURCHASE_APPROVAL_TTL_DAYS: not bought (prices and usage go stale); the plan will be regenerated.");
      await regenerateLater(tx, p, now);
      return true;
    });
    if (!done) return expired;
    expired++;
  }
}

/** Whether the template has an order being bought now: a new plan must wait for it, or it would buy the same need twice. */
export async function purchaseInFlight(db: DbOrTx, templateId: string): Promise<boolean> {
  const rows = await db
    .select({ id: purchaseItems.id })
    .from(purchaseItems)
    .innerJoin(purchases, eq(purchases.id, purchaseItems.purchaseId))
    .where(and(eq(purchases.templateId, templateId), inArray(purchaseItems.status, ["approved", "submitting"])))
    .limit(1);
  return rows.length > 0;
}

/**
 * Locks an order while an item's outcome is written (FOR NO KEY UPDATE: the order's key never
 * changes, and inserts of its events, which key-share lock it, are not held up). Every such
 * writer takes it before the item, so recorders of one order's items queue here instead of
 * deadlocking.
 */
export async function lockOrderForItems(tx: Tx, purchaseId: string): Promise<PurchaseRow | undefined> {
  const [p] = await tx.select().from(purchases).where(eq(purchases.id, purchaseId)).for("no key update");
  return p;
}

/**
 * The order's status once none of its items is open any more; recorded with the outcome event.
 * `locked`: the order row as this transaction already locked it (`lockOrderForItems`).
 */
export async function settlePurchase(tx: Tx, purchaseId: string, now: Date, locked?: PurchaseRow): Promise<void> {
  const p = locked ?? (await lockOrderForItems(tx, purchaseId));
  if (!p || p.status !== "approved") return;
  const counts = await queryRows<{ status: string; n: number }>(tx, `SELECT status, count(*)::int AS n FROM purchase_items WHERE purchase_id = $1 GROUP BY status`, [purchaseId]);
  const by = Object.fromEntries(counts.map((c) => [c.status, Number(c.n)]));
  if ((by.approved ?? 0) + (by.submitting ?? 0) + (by.pending_approval ?? 0) > 0) return;
  const confirmed = by.confirmed ?? 0;
  const failed = by.failed ?? 0;
  const status: PurchaseStatus = by.dry_run && !confirmed && !failed ? "dry_run" : failed === 0 ? "confirmed" : confirmed === 0 ? "failed" : "partially_failed";
  await tx.update(purchases).set({ status, updatedAt: now }).where(eq(purchases.id, purchaseId));
  const message =
    status === "dry_run"
      ? `Dry run complete: ${by.dry_run} item(s) priced and checked at the provider; nothing was bought.`
      : status === "confirmed"
        ? `All ${confirmed} item(s) bought at the provider.`
        : status === "failed"
          ? `No item could be bought (${failed} failed).`
          : `${confirmed} item(s) bought, ${failed} failed.`;
  await recordEvent(tx, { orgId: p.orgId, purchaseId, event: status, message, at: now, notify: true });
}

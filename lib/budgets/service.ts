/**
 * Budgets of an organization: create, read (with the current month's status), change, delete,
 * and the per-month history. A change is evaluated at once after it commits (its status is in
 * the answer); an evaluation's failure is logged, never the change's.
 */
import { and, asc, desc, eq, count, inArray, sql } from "drizzle-orm";
import type { DbOrTx } from "../db/index.ts";
import { pgErrorCode } from "../db/index.ts";
import { budgetMonths, budgets, budgetThresholdCrossings } from "../db/schema/budgets.ts";
import { ConflictError, NotFoundError } from "../errors.ts";
import type { Page, PageRequest } from "../http/paging.ts";
import { errorForLog } from "../log.ts";
import { fromCents } from "../pricing/display.ts";
import type { Services } from "../services.ts";
import { evaluateBudgets, loadBudgets, monthOf, nextUtcDay, percentOf, thresholdCents, type BudgetRow } from "./evaluate.ts";
import { checkedAmount, checkedThresholds, MAX_BUDGETS_PER_ORG, normalizedFilter, type Basis, type BudgetFilter, type BudgetInput, type BudgetPatch, type Threshold } from "./model.ts";

export interface ThresholdStatusView {
  percent: number;
  basis: Basis;
  /** amount × percent / 100. */
  threshold_amount: number;
  /** When this month's actual or forecast reached it (it fires once per month); null: not reached. */
  crossed_at: string | null;
}

export interface BudgetStatusView {
  month: string;
  amount: number;
  actual: number;
  forecast: number | null;
  remaining: number;
  percent_used: number;
  forecast_percent_used: number | null;
  last_complete_date: string | null;
  evaluated_at: string;
  thresholds: ThresholdStatusView[];
}

export interface BudgetView {
  id: string;
  name: string;
  amount: number;
  currency: string;
  filter: BudgetFilter;
  thresholds: Threshold[];
  created_at: string;
  updated_at: string;
  status: BudgetStatusView | null;
}

export interface CrossingView {
  percent: number;
  basis: Basis;
  /** The actual or forecast that reached it. */
  value: number;
  crossed_at: string;
}

export interface BudgetMonthView {
  month: string;
  amount: number;
  currency: string;
  actual: number;
  forecast: number | null;
  percent_used: number;
  forecast_percent_used: number | null;
  last_complete_date: string | null;
  evaluated_at: string;
  crossed: CrossingView[];
}

const notFound = () => new NotFoundError("No budget with this id in this organization.", "budget_not_found");
const nameTaken = (name: string) => new ConflictError(`A budget named "${name.slice(0, 200)}" already exists in this organization.`, "budget_name_taken");
const cents = (numeric: string | number) => Math.round(Number(numeric) * 100);
const money = (numeric: string | number) => fromCents(cents(numeric));
const iso = (d: Date | string) => new Date(d).toISOString();
const dateString = (d: unknown) => (d === null || d === undefined ? null : typeof d === "string" ? d.slice(0, 10) : (d as Date).toISOString().slice(0, 10));

type MonthRow = typeof budgetMonths.$inferSelect;
type CrossingRow = typeof budgetThresholdCrossings.$inferSelect;

function statusView(b: BudgetRow, m: MonthRow, crossings: CrossingRow[]): BudgetStatusView {
  const amount = cents(m.amount);
  const actual = cents(m.actual);
  const forecast = m.forecast === null ? null : cents(m.forecast);
  const crossedAt = (th: Threshold) => crossings.find((c) => c.basis === th.basis && c.percent === th.percent)?.crossedAt ?? null;
  return {
    month: m.month.slice(0, 7),
    amount: fromCents(amount),
    actual: fromCents(actual),
    forecast: forecast === null ? null : fromCents(forecast),
    remaining: fromCents(amount - actual),
    percent_used: percentOf(actual, amount),
    forecast_percent_used: forecast === null ? null : percentOf(forecast, amount),
    last_complete_date: dateString(m.lastCompleteDate),
    evaluated_at: iso(m.computedAt),
    thresholds: b.thresholds.map((th) => {
      const at = crossedAt(th);
      return { percent: th.percent, basis: th.basis, threshold_amount: fromCents(thresholdCents(amount, th.percent)), crossed_at: at ? iso(at) : null };
    }),
  };
}

function budgetView(b: BudgetRow, month: MonthRow | undefined, crossings: CrossingRow[]): BudgetView {
  return {
    id: b.id,
    name: b.name,
    amount: money(b.amount),
    currency: b.currency,
    filter: normalizedFilter(b.filter),
    thresholds: b.thresholds.map((th) => ({ percent: th.percent, basis: th.basis })),
    created_at: iso(b.createdAt),
    updated_at: iso(b.updatedAt),
    status: month ? statusView(b, month, crossings) : null,
  };
}

/** The views of budgets with their status in the current month (as of their last evaluation). */
async function viewsOf(db: DbOrTx, rows: BudgetRow[], now: Date): Promise<BudgetView[]> {
  if (!rows.length) return [];
  const ids = rows.map((b) => b.id);
  const month = `${monthOf(now)}-01`;
  const [months, crossings] = await Promise.all([
    db.select().from(budgetMonths).where(and(inArray(budgetMonths.budgetId, ids), eq(budgetMonths.month, month))),
    db.select().from(budgetThresholdCrossings).where(and(inArray(budgetThresholdCrossings.budgetId, ids), eq(budgetThresholdCrossings.month, month))),
  ]);
  return rows.map((b) =>
    budgetView(
      b,
      months.find((m) => m.budgetId === b.id),
      crossings.filter((c) => c.budgetId === b.id),
    ),
  );
}

export async function pageBudgets(s: Services, orgId: string, p: PageRequest): Promise<Page<BudgetView>> {
  const [ids, [total]] = await Promise.all([
    s.db.select({ id: budgets.id }).from(budgets).where(eq(budgets.orgId, orgId)).orderBy(asc(budgets.createdAt), asc(budgets.id)).limit(p.limit).offset(p.offset),
    s.db.select({ n: count() }).from(budgets).where(eq(budgets.orgId, orgId)),
  ]);
  const rows = ids.length ? await loadBudgets(s.db, orgId, ids.map((r) => r.id)) : [];
  return { items: await viewsOf(s.db, rows, s.now()), total: Number(total?.n ?? 0) };
}

/** Every budget of the org with its status (at most MAX_BUDGETS_PER_ORG): the assistant's list. */
export async function listBudgets(s: Services, orgId: string): Promise<BudgetView[]> {
  return viewsOf(s.db, await loadBudgets(s.db, orgId), s.now());
}

export async function getBudget(s: Services, orgId: string, id: string): Promise<BudgetView> {
  const [b] = await loadBudgets(s.db, orgId, [id]);
  if (!b) throw notFound();
  return (await viewsOf(s.db, [b], s.now()))[0]!;
}

/** Evaluates a budget just written; its failure is logged (the write stands, the daily evaluation catches up). */
async function evaluateWritten(s: Services, orgId: string, id: string): Promise<void> {
  try {
    await evaluateBudgets(s, orgId, { budgetIds: [id] });
  } catch (e) {
    s.log.error("budget evaluation after a change failed", { org_id: orgId, budget_id: id, error: errorForLog(e) });
  }
}


/** At most MAX_BUDGETS_PER_ORG per organization, counted under a per-org lock (409 `budget_limit_reached`). */
export async function createBudget(s: Services, orgId: string, input: BudgetInput): Promise<BudgetView> {
  const amount = checkedAmount(input.amount);
  const thresholds = checkedThresholds(input.thresholds);
  const filter = normalizedFilter(input.filter);
  const now = s.now();
  let id: string;
  try {
    id = await s.db.transaction(async (tx) => {
      await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtext(${`budgets:${orgId}`}))`);
      const [{ n }] = (await tx.select({ n: count() }).from(budgets).where(eq(budgets.orgId, orgId))) as [{ n: number }];
      if (Number(n) >= MAX_BUDGETS_PER_ORG) throw new ConflictError(`This organization already has ${MAX_BUDGETS_PER_ORG} budgets, the most it may have; delete one first.`, "budget_limit_reached");
      const [row] = await tx
        .insert(budgets)
        .values({ orgId, name: input.name, amount: amount.toFixed(2), currency: input.currency, filter, thresholds, createdAt: now, updatedAt: now, nextEvaluationAt: nextUtcDay(now) })
        .returning({ id: budgets.id });
      return row!.id;
    });
  } catch (e) {
    if (pgErrorCode(e) === "23505") throw nameTaken(input.name);
    throw e;
  }
  await evaluateWritten(s, orgId, id);
  return getBudget(s, orgId, id);
}

/** Merge: only the fields given change; `filter: null` (or `{}`) counts the whole organization again. */
export async function updateBudget(s: Services, orgId: string, id: string, patch: BudgetPatch): Promise<BudgetView> {
  try {
    await s.db.transaction(async (tx) => {
      const [row] = await tx.select({ version: budgets.version }).from(budgets).where(and(eq(budgets.orgId, orgId), eq(budgets.id, id))).for("update");
      // An unknown budget is 404 whatever the body says.
      if (!row) throw notFound();
      const set: Partial<typeof budgets.$inferInsert> = {};
      if (patch.name !== undefined) set.name = patch.name;
      if (patch.amount !== undefined) set.amount = checkedAmount(patch.amount).toFixed(2);
      if (patch.currency !== undefined) set.currency = patch.currency;
      if (patch.filter !== undefined) set.filter = normalizedFilter(patch.filter);
      if (patch.thresholds !== undefined) set.thresholds = checkedThresholds(patch.thresholds);
      await tx
        .update(budgets)
        .set({ ...set, version: row.version + 1, updatedAt: s.now() })
        .where(eq(budgets.id, id));
    });
  } catch (e) {
    if (pgErrorCode(e) === "23505") throw nameTaken(patch.name ?? "");
    throw e;
  }
  await evaluateWritten(s, orgId, id);
  return getBudget(s, orgId, id);
}

/** Deletes a budget with its history; the events it fired stay in the log. */
export async function deleteBudget(db: DbOrTx, orgId: string, id: string): Promise<void> {
  const gone = await db.delete(budgets).where(and(eq(budgets.orgId, orgId), eq(budgets.id, id))).returning({ id: budgets.id });
  if (!gone.length) throw notFound();
}

/** The budget's months, newest first: the figures of each month's last evaluation and the thresholds it crossed. */
export async function pageBudgetHistory(s: Services, orgId: string, id: string, p: PageRequest): Promise<Page<BudgetMonthView>> {
  const [b] = await loadBudgets(s.db, orgId, [id]);
  if (!b) throw notFound();
  const [months, [total]] = await Promise.all([
    s.db.select().from(budgetMonths).where(eq(budgetMonths.budgetId, id)).orderBy(desc(budgetMonths.month)).limit(p.limit).offset(p.offset),
    s.db.select({ n: count() }).from(budgetMonths).where(eq(budgetMonths.budgetId, id)),
  ]);
  const crossings = months.length
    ? await s.db
        .select()
        .from(budgetThresholdCrossings)
        .where(and(eq(budgetThresholdCrossings.budgetId, id), inArray(budgetThresholdCrossings.month, months.map((m) => m.month))))
        .orderBy(asc(budgetThresholdCrossings.crossedAt), asc(budgetThresholdCrossings.basis), asc(budgetThresholdCrossings.percent))
    : [];
  const items = months.map((m) => {
    const amount = cents(m.amount);
    const actual = cents(m.actual);
    const forecast = m.forecast === null ? null : cents(m.forecast);
    return {
      month: m.month.slice(0, 7),
      amount: fromCents(amount),
      currency: m.currency,
      actual: fromCents(actual),
      forecast: forecast === null ? null : fromCents(forecast),
      percent_used: percentOf(actual, amount),
      forecast_percent_used: forecast === null ? null : percentOf(forecast, amount),
      last_complete_date: dateString(m.lastCompleteDate),
      evaluated_at: iso(m.computedAt),
      crossed: crossings
        .filter((c) => c.month === m.month)
        .map((c) => ({ percent: c.percent, basis: c.basis, value: money(c.value), crossed_at: iso(c.crossedAt) })),
    };
  });
  return { items, total: Number(total?.n ?? 0) };
}

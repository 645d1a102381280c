/**
 * Budget evaluation: a budget's actual and forecast for the month (lib/budgets/figures.ts) are
 * recorded as its status, and each threshold they reach fires `budget.threshold_crossed` once per
 * month — the crossing row (its key: budget, month, basis, percent) and the event (its dedupe key
 * `budget:<id>:<YYYY-MM>:<basis>:<percent>`) are written in the transaction that records the
 * figures, so any number of evaluations, on any number of replicas, fire a threshold once.
 *
 * Runs after every billing import or sync (`evaluateBudgetsAfterImport`: its failure is logged,
 * never the import's) and daily (jobs/budgets.ts, `runDueBudgetEvaluations`). The month
 * evaluated is the current UTC month, and the previous one while a billing period of it is still
 * open, for budgets that existed before it ended (its last days' data arrive after it ended: a
 * month closing over budget is told too).
 */
import { and, asc, eq, inArray } from "drizzle-orm";
import type { DbOrTx } from "../db/index.ts";
import { budgets } from "../db/schema/budgets.ts";
import { emitEvent } from "../events/emit.ts";
import { queryRows } from "../billing/sql.ts";
import { errorForLog } from "../log.ts";
import { fromCents, rate6 } from "../pricing/display.ts";
import type { Services } from "../services.ts";
import { actualCents, completenessOf, monthEndForecasts, readDataEnds } from "./figures.ts";
import { costFiltersOf, type Basis, type BudgetFilter, type Threshold } from "./model.ts";
import { budgetLinks } from "../events/links.ts";

export interface BudgetRow {
  id: string;
  orgId: string;
  name: string;
  amount: string;
  currency: string;
  filter: BudgetFilter;
  thresholds: Threshold[];
  version: number;
  createdAt: Date;
  updatedAt: Date;
  lastEvaluatedAt: Date | null;
}

const budgetColumns = {
  id: budgets.id,
  orgId: budgets.orgId,
  name: budgets.name,
  amount: budgets.amount,
  currency: budgets.currency,
  filter: budgets.filter,
  thresholds: budgets.thresholds,
  version: budgets.version,
  createdAt: budgets.createdAt,
  updatedAt: budgets.updatedAt,
  lastEvaluatedAt: budgets.lastEvaluatedAt,
};

export async function loadBudgets(db: DbOrTx, orgId: string, ids?: string[]): Promise<BudgetRow[]> {
  const where = ids ? and(eq(budgets.orgId, orgId), inArray(budgets.id, ids.length ? ids : ["00000000-0000-0000-0000-000000000000"])) : eq(budgets.orgId, orgId);
  return (await db.select(budgetColumns).from(budgets).where(where).orderBy(asc(budgets.createdAt), asc(budgets.id))) as BudgetRow[];
}

/** `YYYY-MM` of a date (UTC). */
export const monthOf = (d: Date) => d.toISOString().slice(0, 7);
const monthWindowStart = (d: Date) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1));
const previousMonth = (d: Date) => monthOf(new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - 1, 1)));
const centsOf = (numeric: string) => Math.round(Number(numeric) * 100);

/** actual ÷ amount × 100, 6 decimals (DESIGN §12). */
export const percentOf = (cents: number, amountCents: number) => rate6((cents * 100) / amountCents);

/** A threshold is reached when value ≥ amount × percent / 100, compared in whole cents (no float at the boundary). */
export const reaches = (valueCents: number, amountCents: number, percent: number) => BigInt(valueCents) * 100n >= BigInt(amountCents) * BigInt(percent);

/** amount × percent / 100 in cents (half up), for display. */
export const thresholdCents = (amountCents: number, percent: number) => Number((BigInt(amountCents) * BigInt(percent) + 50n) / 100n);


export interface MonthFigures {
  month: string;
  amountCents: number;
  actualCents: number;
  forecastCents: number | null;
  lastCompleteDate: string | null;
}

export interface FiredThreshold {
  budget_id: string;
  month: string;
  basis: Basis;
  percent: number;
  event_id: string | null;
}

export interface BudgetEvaluation {
  budget_id: string;
  months: MonthFigures[];
  fired: FiredThreshold[];
  /** False when the budget changed or went away while it was evaluated (its own evaluation follows the change). */
  recorded: boolean;
}

/** The months evaluated now: the current one, and the previous one while any of its billing periods is open. */
async function monthsToEvaluate(db: DbOrTx, orgId: string, now: Date): Promise<string[]> {
  const prev = previousMonth(now);
  const open = await queryRows(db, `SELECT 1 FROM billing_periods WHERE org_id = $1::uuid AND month = $2::date AND status = 'open' LIMIT 1`, [orgId, `${prev}-01`]);
  return open.length ? [prev, monthOf(now)] : [monthOf(now)];
}

/**
 * Evaluates the org's budgets (or those of `budgetIds`): their figures for the months evaluated
 * now are recorded, and each threshold reached fires once per month. Throws on a database error
 * (the callers after an import use evaluateBudgetsAfterImport).
 */
export async function evaluateBudgets(s: Services, orgId: string, opts: { budgetIds?: string[] } = {}): Promise<BudgetEvaluation[]> {
  const list = await loadBudgets(s.db, orgId, opts.budgetIds);
  if (!list.length) return [];
  const now = s.now();
  const months = await monthsToEvaluate(s.db, orgId, now);
  const dataEnds = await readDataEnds(s.db, orgId, now);
  // Budgets counting the same cost (currency and filter) share its queries.
  const forecastsOf = new Map<string, ReturnType<typeof monthEndForecasts>>();
  const actualsOf = new Map<string, Promise<number>>();
  const out: BudgetEvaluation[] = [];
  for (const b of list) {
    const filters = costFiltersOf(b.filter);
    const scope = JSON.stringify([b.currency, filters]);
    if (!forecastsOf.has(scope)) {
      const completeness = completenessOf(now, dataEnds, b.currency, b.filter.provider);
      forecastsOf.set(scope, monthEndForecasts(s.db, orgId, now, { currency: b.currency, filters, months, completeness }));
    }
    const forecasts = await forecastsOf.get(scope)!;
    const figures: MonthFigures[] = [];
    // A budget tells of the months it existed in: one created this month leaves the month before alone.
    for (const month of months.filter((m) => m === monthOf(now) || b.createdAt < monthWindowStart(now))) {
      const key = `${scope}|${month}`;
      if (!actualsOf.has(key)) actualsOf.set(key, actualCents(s.db, orgId, month, b.currency, filters));
      const actual = await actualsOf.get(key)!;
      const f = forecasts.get(month);
      // A month-end forecast never shows less than what the month has already cost.
      figures.push({ month, amountCents: centsOf(b.amount), actualCents: actual, forecastCents: f ? Math.max(f.cents, actual) : null, lastCompleteDate: f?.last_complete_date ?? null });
    }
    out.push(await record(s, b, figures, now));
  }
  return out;
}

/** Records a budget's figures and fires the thresholds they reach, in one transaction. */
async function record(s: Services, b: BudgetRow, figures: MonthFigures[], computedAt: Date): Promise<BudgetEvaluation> {
  return s.db.transaction(async (tx) => {
    // Deleted or changed since it was read: nothing is recorded (a change evaluates it again).
    const [current] = await queryRows<{ version: number }>(tx, `SELECT version FROM budgets WHERE id = $1::uuid AND org_id = $2::uuid FOR SHARE`, [b.id, b.orgId]);
    if (!current || Number(current.version) !== b.version) return { budget_id: b.id, months: figures, fired: [], recorded: false };
    const fired: FiredThreshold[] = [];
    for (const f of figures) {
      // An evaluation that started earlier never overwrites a later one's figures.
      await queryRows(
        tx,
        `INSERT INTO budget_months (budget_id, org_id, month, amount, currency, actual, forecast, last_complete_date, computed_at)
         VALUES ($1::uuid, $2::uuid, $3::date, $4::numeric, $5, $6::numeric, $7::numeric, $8::date, $9::timestamptz)
         ON CONFLICT (budget_id, month) DO UPDATE SET amount = EXCLUDED.amount, currency = EXCLUDED.currency, actual = EXCLUDED.actual,
           forecast = EXCLUDED.forecast, last_complete_date = EXCLUDED.last_complete_date, computed_at = EXCLUDED.computed_at
         WHERE budget_months.computed_at <= EXCLUDED.computed_at`,
        [
          b.id,
          b.orgId,
          `${f.month}-01`,
          fromCents(f.amountCents).toFixed(2),
          b.currency,
          fromCents(f.actualCents).toFixed(2),
          f.forecastCents === null ? null : fromCents(f.forecastCents).toFixed(2),
          f.lastCompleteDate,
          computedAt.toISOString(),
        ],
      );
      for (const th of b.thresholds) {
        const value = th.basis === "actual" ? f.actualCents : f.forecastCents;
        if (value === null || !reaches(value, f.amountCents, th.percent)) continue;
        const crossed = await queryRows(
          tx,
          `INSERT INTO budget_threshold_crossings (budget_id, org_id, month, basis, percent, value, crossed_at)
           VALUES ($1::uuid, $2::uuid, $3::date, $4, $5, $6::numeric, $7::timestamptz)
           ON CONFLICT (budget_id, month, basis, percent) DO NOTHING RETURNING 1`,
          [b.id, b.orgId, `${f.month}-01`, th.basis, th.percent, fromCents(value).toFixed(2), computedAt.toISOString()],
        );
        if (!crossed.length) continue;
        const event = await emitEvent(tx, {
          orgId: b.orgId,
          type: "budget.threshold_crossed",
          occurredAt: computedAt,
          dedupeKey: `budget:${b.id}:${f.month}:${th.basis}:${th.percent}`,
          ...budgetLinks(b.orgId, b.id),
          data: {
            budget_id: b.id,
            budget_name: b.name,
            month: f.month,
            basis: th.basis,
            threshold_percent: th.percent,
            threshold_amount: fromCents(thresholdCents(f.amountCents, th.percent)),
            amount: fromCents(f.amountCents),
            currency: b.currency,
            actual: fromCents(f.actualCents),
            forecast: f.forecastCents === null ? null : fromCents(f.forecastCents),
            percent_used: percentOf(f.actualCents, f.amountCents),
            forecast_percent_used: f.forecastCents === null ? null : percentOf(f.forecastCents, f.amountCents),
            filter: b.filter,
          },
        });
        if (event)
          await queryRows(tx, `UPDATE budget_threshold_crossings SET event_id = $5::uuid WHERE budget_id = $1::uuid AND month = $2::date AND basis = $3 AND percent = $4`, [
            b.id,
            `${f.month}-01`,
            th.basis,
            th.percent,
            event.id,
          ]);
        fired.push({ budget_id: b.id, month: f.month, basis: th.basis, percent: th.percent, event_id: event?.id ?? null });
      }
    }
    await tx.update(budgets).set({ lastEvaluatedAt: computedAt }).where(eq(budgets.id, b.id));
    return { budget_id: b.id, months: figures, fired, recorded: true };
  });
}

/**
 * After an import or a sync committed: evaluates the org's budgets, and only logs a failure —
 * the import succeeded whatever the budgets do (the daily evaluation catches up).
 */
export async function evaluateBudgetsAfterImport(s: Services, orgId: string): Promise<BudgetEvaluation[]> {
  try {
    return await evaluateBudgets(s, orgId);
  } catch (e) {
    s.log.error("budget evaluation after an import failed", { org_id: orgId, error: errorForLog(e) });
    return [];
  }
}

/** How long a claimed daily evaluation holds before another replica may take it (a replica that died mid-way). */
export const EVALUATION_LEASE_SECONDS = 600;

/** The start of the UTC day after `now`: when a budget evaluated today is due again. */
export const nextUtcDay = (now: Date) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));

/**
 * The daily evaluation: the due budgets of one organization at a time are claimed (their due time
 * moved a lease ahead, rows locked with SKIP LOCKED, so two replicas never take the same budget),
 * evaluated, and made due again at the next UTC day. A failed evaluation is logged and retried
 * once its lease lapses. Returns the budgets this call evaluated.
 */
export async function runDueBudgetEvaluations(s: Services, opts: { leaseSeconds?: number; maxOrgs?: number } = {}): Promise<string[]> {
  const done: string[] = [];
  const lease = opts.leaseSeconds ?? EVALUATION_LEASE_SECONDS;
  // A stopping process claims no more organizations (lib/shutdown).
  for (let orgs = 0; orgs < (opts.maxOrgs ?? Infinity) && !s.shutdown.stopRequested(); orgs++) {
    const now = s.now();
    const until = new Date(now.getTime() + lease * 1000);
    const claimed = await queryRows<{ id: string; org_id: string }>(
      s.db,
      `UPDATE budgets SET next_evaluation_at = $2::timestamptz
       WHERE next_evaluation_at <= $1::timestamptz
         AND org_id = (SELECT org_id FROM budgets WHERE next_evaluation_at <= $1::timestamptz ORDER BY next_evaluation_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
       RETURNING id, org_id`,
      [now.toISOString(), until.toISOString()],
    );
    if (!claimed.length) break;
    const orgId = claimed[0]!.org_id;
    const ids = claimed.map((c) => c.id);
    try {
      await evaluateBudgets(s, orgId, { budgetIds: ids });
      await s.db
        .update(budgets)
        .set({ nextEvaluationAt: nextUtcDay(now) })
        .where(and(inArray(budgets.id, ids), eq(budgets.nextEvaluationAt, until)));
      done.push(...ids);
    } catch (e) {
      s.log.error("daily budget evaluation failed", { org_id: orgId, budgets: ids.length, error: errorForLog(e) });
    }
  }
  return done;
}


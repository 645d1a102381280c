/**
 * Auto-purchase (DESIGN §9). A tick:
 * 1. finds scheduled templates whose latest slot on or before today (UTC) has not run, and
 *    inserts a `pending` purchase_runs row per (template, execution date), ON CONFLICT DO
 *    NOTHING: the row is the one claim of that slot. After downtime only the latest slot is
 *    claimed, so a missed stretch catches up once.
 * 2. takes pending rows one at a time with FOR UPDATE SKIP LOCKED and, in that transaction,
 *    regenerates the plan, buys it when enabled and worth `min_monthly_savings` (through the
 *    purchaser, which writes the ledger and the inventory in the same transaction), and marks
 *    the run done. A second replica skips the locked row; a crash (or kill) rolls everything
 *    back and leaves the row pending for the next tick; a finished row is never redone.
 *    `purchases` is also unique per (template, execution date) as a last line of defence.
 */
import { classifyError } from "../http/classifyError.ts";
import { and, eq, isNotNull, lte } from "drizzle-orm";
import type { Tx } from "../db/index.ts";
import { commitmentPlanTemplates } from "../db/schema/index.ts";
import { queryRows } from "../billing/sql.ts";
import { errorForLog } from "../log.ts";
import type { Services } from "../services.ts";
import { getSegment } from "../segments/service.ts";
import { dueExecutionDate, utcDate } from "../templates/schedule.ts";
import { autoPurchaseOf, configurationOf } from "../templates/service.ts";
import { generatePlan, savePlan } from "../planning/generate.ts";
import { belowMinMonthlySavings } from "../planning/reasons.ts";
import { sumCents } from "../pricing/display.ts";
import { purchaserOf, type Purchaser } from "./purchaser.ts";
import { expireStaleApprovals, purchaseInFlight } from "./orders.ts";
import { processPurchaseItems, type ItemReport, type PurchaseHooks } from "./executor.ts";

/** Runs that keep failing stop being retried after this many attempts (status `failed`). */
export const MAX_ATTEMPTS = 5;

export type RunOutcome = "purchased" | "disabled" | "below_min_monthly_savings" | "nothing_to_buy" | "superseded" | "schedule_removed" | "purchase_in_progress";

export interface RunReport {
  run_id: string;
  template_id: string;
  execution_date: string;
  outcome: RunOutcome | "error";
  plan_id: string | null;
  purchase_id: string | null;
  monthly_net_savings: number | null;
  error?: string;
}

/** Inserts the pending claim of every due slot; returns how many were new. */
export async function claimDueRuns(s: Services): Promise<number> {
  const today = utcDate(s.now());
  const scheduled = await s.db
    .select()
    .from(commitmentPlanTemplates)
    .where(and(isNotNull(commitmentPlanTemplates.schedule), lte(commitmentPlanTemplates.startDate, today)));
  let claimed = 0;
  for (const t of scheduled) {
    const ap = autoPurchaseOf(t);
    if (!ap) continue;
    const due = dueExecutionDate(ap, today, t.lastExecutionDate ?? null, t.scheduleSetOn ?? null);
    if (!due) continue;
    const rows = await queryRows(
      s.db,
      `INSERT INTO purchase_runs (org_id, template_id, execution_date, status) VALUES ($1, $2, $3, 'pending')
       ON CONFLICT (template_id, execution_date) DO NOTHING RETURNING id`,
      [t.orgId, t.id, due],
    );
    claimed += rows.length;
  }
  return claimed;
}

interface PendingRun {
  id: string;
  org_id: string;
  template_id: string;
  execution_date: string;
  attempts: number;
}

const dateStr = (v: unknown) => (v instanceof Date ? v.toISOString().slice(0, 10) : String(v).slice(0, 10));

async function executeRun(s: Services, tx: Tx, run: PendingRun, purchaser: Purchaser): Promise<RunReport> {
  const now = s.now();
  const today = utcDate(now);
  const report: RunReport = { run_id: run.id, template_id: run.template_id, execution_date: run.execution_date, outcome: "nothing_to_buy", plan_id: null, purchase_id: null, monthly_net_savings: null };
  const finish = async (outcome: RunOutcome, planId: string | null, purchaseId: string | null) => {
    await queryRows(
      tx,
      `UPDATE purchase_runs SET status = 'done', outcome = $2, plan_id = $3, purchase_id = $4, attempts = attempts + 1, completed_at = now(), last_error = NULL WHERE id = $1`,
      [run.id, outcome, planId, purchaseId],
    );
    return { ...report, outcome, plan_id: planId, purchase_id: purchaseId };
  };
  // One run per template at a time: the template row is locked until this run commits.
  const [t] = await tx.select().from(commitmentPlanTemplates).where(eq(commitmentPlanTemplates.id, run.template_id)).for("update");
  const ap = t && autoPurchaseOf(t);
  if (!t || !ap) return finish("schedule_removed", null, null);
  const due = dueExecutionDate(ap, today, t.lastExecutionDate ?? null, t.scheduleSetOn ?? null);
  // A slot older than the latest due one (left pending by a crash before a long outage), or
  // one already covered by a later run, is not bought separately: catch-up happens once.
  if ((t.lastExecutionDate && run.execution_date <= t.lastExecutionDate) || (due && run.execution_date < due)) return finish("superseded", null, null);

  // An earlier order of this template is still being bought: its commitments are not in the
  // inventory yet, so a plan now would buy the same need again. The slot is done; the next one plans anew.
  if (await purchaseInFlight(tx, t.id)) {
    await tx.update(commitmentPlanTemplates).set({ lastExecutionDate: run.execution_date, lastExecutedAt: now }).where(eq(commitmentPlanTemplates.id, t.id));
    return finish("purchase_in_progress", null, null);
  }
  const segment = await getSegment(tx, t.orgId, t.segmentId);
  const config = configurationOf(t);
  const plan = await generatePlan(tx, t.orgId, segment, config, now);
  const savings = plan.sizing.monthlyNetSavings;
  // The threshold is held against the plan's monthly net savings as shown (the sum of its
  // items' cents, as GET /commitment-plans shows it), so the decision agrees with the document.
  const shownSavings = sumCents(plan.sizing.items.map((i) => i.monthlyNetSavings));
  let outcome: RunOutcome;
  if (!ap.enabled) outcome = "disabled";
  else if (!plan.sizing.items.length) outcome = "nothing_to_buy";
  else if (belowMinMonthlySavings(shownSavings, ap.min_monthly_savings)) outcome = "below_min_monthly_savings";
  else outcome = "purchased";
  const planId = await savePlan(tx, {
    orgId: t.orgId,
    segmentId: t.segmentId,
    templateId: t.id,
    executionDate: run.execution_date,
    status: outcome === "purchased" ? "purchased" : "not_purchased",
    statusReason: outcome,
    lookbackDays: config.lookback_days,
    maxUpfrontCost: config.max_upfront_cost,
    plan,
  });
  let purchaseId: string | null = null;
  if (outcome === "purchased") {
    ({ purchaseId } = await purchaser.purchase(tx, {
      orgId: t.orgId,
      provider: t.provider,
      templateId: t.id,
      executionDate: run.execution_date,
      planId,
      idempotencyKey: `${t.id}:${run.execution_date}`,
      items: plan.sizing.items,
      totalUpfront: plan.sizing.totalUpfront,
      monthlyNetSavings: savings,
      now,
      requireApproval: ap.require_approval,
      autoApproveMaxUpfront: ap.auto_approve_max_upfront,
      approvalTtlDays: s.config.purchaseApprovalTtlDays,
    }));
  }
  await tx.update(commitmentPlanTemplates).set({ lastExecutionDate: run.execution_date, lastExecutedAt: now }).where(eq(commitmentPlanTemplates.id, t.id));
  const r = await finish(outcome, planId, purchaseId);
  return { ...r, monthly_net_savings: shownSavings };
}

/**
 * What a failed run records: a plain reason, never a statement or its parameters (a database
 * error reads as its cause, e.g. "canceling statement due to statement timeout"), and whether it
 * is final — an error of ours about the request or its data (4xx other than 409/429), which a
 * retry would meet again.
 */
function runFailureOf(e: unknown): { message: string; final: boolean } {
  // The one mapping of an error to what a caller is told (a database outage is a 503, a data
  // exception a 400…): what it tells a caller is what the run records.
  const { error, internal } = classifyError(e);
  if (!internal) return { message: error.message, final: error.status >= 400 && error.status < 500 && error.status !== 409 && error.status !== 429 };
  let cur: unknown = e;
  // drizzle's "Failed query: <SQL> params: …" wraps the driver's error as its cause.
  while (cur instanceof Error && /^Failed query:/.test(cur.message) && cur.cause) cur = cur.cause;
  const text = cur instanceof Error ? cur.message : String(cur);
  const plain = /^Failed query:/.test(text) ? "a database statement failed" : text.split("\n")[0]!;
  return { message: cur === e ? plain : `the database failed: ${plain}`, final: false };
}

/** Works off every pending run this process can lock. */
export async function processPendingRuns(s: Services, purchaser: Purchaser = purchaserOf(s)): Promise<RunReport[]> {
  const reports: RunReport[] = [];
  const tried: string[] = [];
  for (;;) {
    let attempted: PendingRun | null = null;
    try {
      const report = await s.db.transaction(async (tx) => {
        const params: unknown[] = [];
        const skip = tried.length ? `AND id NOT IN (${tried.map((id) => `$${params.push(id)}`).join(", ")})` : "";
        const [run] = await queryRows<any>(
          tx,
          `SELECT id, org_id, template_id, execution_date, attempts FROM purchase_runs
           WHERE status = 'pending' ${skip} ORDER BY execution_date, created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED`,
          params,
        );
        if (!run) return null;
        attempted = { ...run, execution_date: dateStr(run.execution_date) };
        tried.push(run.id);
        return executeRun(s, tx, attempted!, purchaser);
      });
      if (!report) break;
      reports.push(report);
      s.log.info("auto-purchase run", { ...report });
    } catch (e) {
      const run = attempted as PendingRun | null;
      const { message, final } = runFailureOf(e);
      s.log.error("auto-purchase run failed", { run_id: run?.id, template_id: run?.template_id, error: errorForLog(e) });
      if (!run) throw e;
      // A failure the data decides (a refused input, usage too coarse to plan on) fails the run
      // at once: running it again would fail the same way. Others are retried up to MAX_ATTEMPTS.
      await queryRows(
        s.db,
        `UPDATE purchase_runs SET attempts = attempts + 1, last_error = $2, status = CASE WHEN $4::boolean OR attempts + 1 >= $3 THEN 'failed' ELSE 'pending' END WHERE id = $1 AND status = 'pending'`,
        [run.id, message.slice(0, 1000), MAX_ATTEMPTS, final],
      ).catch(() => {});
      reports.push({ run_id: run.id, template_id: run.template_id, execution_date: run.execution_date, outcome: "error", plan_id: null, purchase_id: null, monthly_net_savings: null, error: message });
    }
  }
  return reports;
}

/** One tick: claim due slots, then run every pending one (tests and the CLI call this). */
export async function runDueAutoPurchases(s: Services, opts: { purchaser?: Purchaser } = {}): Promise<RunReport[]> {
  await claimDueRuns(s);
  return processPendingRuns(s, opts.purchaser ?? purchaserOf(s));
}

export interface PurchasingTickReport {
  runs: RunReport[];
  expired_approvals: number;
  items: ItemReport[];
}

/**
 * Everything the auto-purchase job does in one tick: run due schedules (placing orders), lapse
 * stale approvals (their plans are regenerated by the next tick), then buy every approved item
 * at its provider through the state machine.
 */
export async function runPurchasingTick(s: Services, opts: { purchaser?: Purchaser; hooks?: PurchaseHooks } = {}): Promise<PurchasingTickReport> {
  const runs = await runDueAutoPurchases(s, { purchaser: opts.purchaser });
  const expired = await expireStaleApprovals(s);
  const items = await processPurchaseItems(s, { hooks: opts.hooks });
  return { runs, expired_approvals: expired, items };
}

/**
 * Auto-purchase runs as the API shows them (GET /purchase-runs): the once-only claims of each
 * (template, execution date) slot (lib/purchasing/autoPurchase.ts), with what came of them and
 * links to the plan they generated and the purchase they placed. Read only, scoped to the org.
 */
import { and, desc, eq, sql, type SQL } from "drizzle-orm";
import type { DbOrTx } from "../db/index.ts";
import { purchaseRuns } from "../db/schema/index.ts";
import type { Page, PageRequest } from "../http/paging.ts";

export const RUN_STATUSES = ["pending", "done", "failed"] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

type RunRow = typeof purchaseRuns.$inferSelect;

export function runView(r: RunRow) {
  return {
    id: r.id,
    template_id: r.templateId,
    execution_date: r.executionDate,
    status: r.status,
    outcome: r.outcome,
    plan_id: r.planId,
    purchase_id: r.purchaseId,
    attempts: r.attempts,
    // The error text itself is an exception message (DESIGN §4: never shown; it is in the log).
    last_attempt_failed: r.lastError !== null,
    created_at: r.createdAt.toISOString(),
    completed_at: r.completedAt ? r.completedAt.toISOString() : null,
  };
}
export type RunView = ReturnType<typeof runView>;

export interface RunFilter {
  templateId?: string;
  status?: RunStatus;
}

/** One page of the org's runs, latest execution date first, then newest claim, id as tiebreak. */
export async function pageRuns(db: DbOrTx, orgId: string, f: RunFilter, p: Pick<PageRequest, "offset" | "limit">): Promise<Page<RunView>> {
  const conds: (SQL | undefined)[] = [eq(purchaseRuns.orgId, orgId)];
  if (f.templateId) conds.push(eq(purchaseRuns.templateId, f.templateId.toLowerCase()));
  if (f.status) conds.push(eq(purchaseRuns.status, f.status));
  const where = and(...conds);
  const [counted] = await db.select({ n: sql<number>`count(*)::int` }).from(purchaseRuns).where(where);
  const rows = await db
    .select()
    .from(purchaseRuns)
    .where(where)
    .orderBy(desc(purchaseRuns.executionDate), desc(purchaseRuns.createdAt), desc(purchaseRuns.id))
    .limit(p.limit)
    .offset(p.offset);
  return { items: rows.map(runView), total: Number(counted?.n ?? 0) };
}

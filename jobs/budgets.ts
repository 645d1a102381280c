import type { Services } from "../lib/services.ts";
import { runDueBudgetEvaluations } from "../lib/budgets/evaluate.ts";
import type { Job } from "./index.ts";

/**
 * The daily budget evaluation (imports and syncs evaluate at once; this catches the days that
 * pass without one: a forecast moves as days complete, and a new month starts). Every replica
 * wakes every 15 minutes; each due budget is claimed by one of them (lib/budgets/evaluate.ts) and
 * made due again at the next UTC day, and its thresholds fire once per month whoever evaluates it.
 */
export const budgetsJob: Job = {
  name: "budgets",
  pattern: "0 */15 * * * *",
  async run(s: Services) {
    const evaluated = await runDueBudgetEvaluations(s);
    if (evaluated.length) s.log.info("budgets evaluated", { budgets: evaluated.length });
  },
};

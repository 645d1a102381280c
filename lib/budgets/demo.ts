import type { Services } from "../services.ts";
import type { DemoSeeder } from "../demo/seeders.ts";
import { queryRows } from "../billing/sql.ts";
import { fromCents } from "../pricing/display.ts";
import { costFiltersOf, type BudgetFilter, type Threshold } from "./model.ts";
import { actualCents } from "./figures.ts";
import { createBudget } from "./service.ts";

const CURRENCY = "USD";

/** A round monthly amount near `cents` × `factor` (whole hundreds of the currency, at least 100). */
const roundAmount = (cents: number, factor: number) => Math.max(100, Math.round(fromCents(cents) * factor / 100) * 100);

/**
 * Two demo budgets on the billing demo's data (run after it): one for the whole organization,
 * sized a little above last month so it shows a month on track, and one for AWS sized below it,
 * so its forecast and actual thresholds cross this month and `budget.threshold_crossed` events
 * (GET /events, the Notifications page) exist from the first start.
 */
export const budgetsDemoSeeder: DemoSeeder = {
  name: "budgets",
  async run(s: Services, orgId: string) {
    const [already] = await queryRows(s.db, `SELECT 1 FROM budgets WHERE org_id = $1::uuid LIMIT 1`, [orgId]);
    if (already) return;
    const now = s.now();
    const lastMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)).toISOString().slice(0, 7);
    const budgets: { name: string; factor: number; filter: BudgetFilter; thresholds: Threshold[] }[] = [
      {
        name: "Whole organization",
        factor: 1.15,
        filter: {},
        thresholds: [
          { percent: 50, basis: "actual" },
          { percent: 90, basis: "actual" },
          { percent: 100, basis: "forecast" },
        ],
      },
      {
        name: "AWS",
        factor: 0.6,
        filter: { provider: "aws" },
        thresholds: [
          { percent: 25, basis: "actual" },
          { percent: 80, basis: "actual" },
          { percent: 100, basis: "forecast" },
        ],
      },
    ];
    for (const b of budgets) {
      const last = await actualCents(s.db, orgId, lastMonth, CURRENCY, costFiltersOf(b.filter));
      await createBudget(s, orgId, { name: b.name, amount: roundAmount(last, b.factor), currency: CURRENCY, filter: b.filter, thresholds: b.thresholds });
    }
  },
};

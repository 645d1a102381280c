/** Budgets (lib/budgets): the same views as REST GET /budgets, /budgets/{id} and /budgets/{id}/history. */
import * as z from "zod";
import { getBudget, listBudgets, pageBudgetHistory, type BudgetView } from "../../budgets/service.ts";
import { defineTool } from "./common.ts";

const basis = z.enum(["actual", "forecast"]);

const filterOut = z.object({
  provider: z.string().optional(),
  billing_account_id: z.string().optional(),
  account_id: z.string().optional(),
  service: z.string().optional(),
  tag: z.object({ key: z.string(), value: z.string() }).optional(),
});

const statusOut = z.object({
  month: z.string().describe("YYYY-MM (UTC)"),
  amount: z.number(),
  actual: z.number().describe("The month's effective (amortized) cost matching the filter, in the budget's currency (GET /costs's figure)."),
  forecast: z.number().nullable().describe("Month-end forecast (forecast_spend's model on complete days, for this filter), never below actual; null without history."),
  remaining: z.number(),
  percent_used: z.number(),
  forecast_percent_used: z.number().nullable(),
  last_complete_date: z.string().nullable(),
  evaluated_at: z.string(),
  thresholds: z.array(z.object({ percent: z.number().int(), basis, threshold_amount: z.number(), crossed_at: z.string().nullable() })),
});

const budgetOut = z.object({
  id: z.string(),
  name: z.string(),
  amount: z.number(),
  currency: z.string(),
  filter: filterOut,
  thresholds: z.array(z.object({ percent: z.number().int(), basis })),
  created_at: z.string(),
  updated_at: z.string(),
  status: statusOut.nullable().describe("The current month as of the last evaluation (after every import or sync, and daily); null until evaluated this month."),
});

const filterText = (b: BudgetView) => {
  const f = b.filter;
  const parts = [f.provider && `provider ${f.provider}`, f.billing_account_id && `billing account ${f.billing_account_id}`, f.account_id && `account ${f.account_id}`, f.service && `service ${f.service}`, f.tag && `tag ${f.tag.key}=${f.tag.value}`].filter(Boolean);
  return parts.length ? parts.join(", ") : "whole organization";
};

const statusText = (b: BudgetView) => {
  const st = b.status;
  if (!st) return `${b.name}: ${b.currency} ${b.amount}/month (${filterText(b)}), not evaluated this month yet`;
  const crossed = st.thresholds.filter((t) => t.crossed_at).map((t) => `${t.percent}% ${t.basis}`);
  return `${b.name}: ${b.currency} ${st.actual} of ${st.amount} in ${st.month} (${st.percent_used.toFixed(1)}%)${st.forecast !== null ? `, forecast ${st.forecast} (${st.forecast_percent_used!.toFixed(1)}%)` : ""}${crossed.length ? `; crossed ${crossed.join(", ")}` : ""} [${filterText(b)}]`;
};

export const listBudgetsTool = defineTool({
  name: "list_budgets",
  title: "Budgets",
  description:
    "The organization's monthly budgets (at most 100), as REST GET /budgets: each budget's amount and currency, what it counts (whole organization, or a provider / billing account / account / service / tag filter), its thresholds on actual and forecast spend, and the current month's status: actual (effective cost to date matching the filter, GET /costs's figure), month-end forecast (the forecast_spend model on complete days), percent used, and which thresholds were crossed when. Each threshold fires the event budget.threshold_crossed once per month.",
  scopes: ["budgets:read"],
  input: {},
  output: { total_count: z.number().int(), over_budget: z.number().int().describe("Budgets whose actual reached their amount this month."), budgets: z.array(budgetOut) },
  async run(ctx) {
    const budgets = await listBudgets(ctx.s, ctx.orgId);
    const over = budgets.filter((b) => b.status && b.status.percent_used >= 100).length;
    return {
      structured: { total_count: budgets.length, over_budget: over, budgets },
      summary: budgets.length ? `${budgets.length} budget(s)${over ? `, ${over} over budget` : ""}: ${budgets.map(statusText).join("; ")}.` : "No budgets in this organization.",
    };
  },
});

export const getBudgetStatusTool = defineTool({
  name: "get_budget_status",
  title: "Budget status and history",
  description:
    "One budget, as REST GET /budgets/{id} and /budgets/{id}/history: the current month's actual, month-end forecast, percent used and remaining, each threshold with when it was crossed, and the last months' actual and forecast (newest first) with the thresholds each crossed.",
  scopes: ["budgets:read"],
  input: {
    budget_id: z.string().uuid().describe("The budget's id (from list_budgets)."),
    history_months: z.number().int().min(1).max(24).default(6).describe("Months of history returned, newest first (1-24)."),
  },
  output: {
    budget: budgetOut,
    history: z.array(
      z.object({
        month: z.string(),
        amount: z.number(),
        currency: z.string(),
        actual: z.number(),
        forecast: z.number().nullable(),
        percent_used: z.number(),
        forecast_percent_used: z.number().nullable(),
        last_complete_date: z.string().nullable(),
        evaluated_at: z.string(),
        crossed: z.array(z.object({ percent: z.number().int(), basis, value: z.number(), crossed_at: z.string() })),
      }),
    ),
  },
  async run(ctx, a) {
    const id = a.budget_id.toLowerCase();
    const budget = await getBudget(ctx.s, ctx.orgId, id);
    const history = await pageBudgetHistory(ctx.s, ctx.orgId, id, { page: 1, pageSize: a.history_months, offset: 0, limit: a.history_months });
    return {
      structured: { budget, history: history.items },
      summary: `${statusText(budget)}. History: ${history.items.map((m) => `${m.month} ${m.currency} ${m.actual} (${m.percent_used.toFixed(1)}%)`).join(", ") || "none"}.`,
    };
  },
});

export const budgetTools = [listBudgetsTool, getBudgetStatusTool];

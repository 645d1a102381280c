import { t } from "elysia";
import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { pagedList } from "../../../../../../lib/http/paging.ts";
import { NO_CONTENT } from "../../../../../../lib/http/openapiComponents.ts";
import { createBudget, deleteBudget, getBudget, pageBudgetHistory, pageBudgets, updateBudget } from "../../../../../../lib/budgets/service.ts";
import { Budget, BudgetMonth, BudgetParams, CreateBudgetBody, ListBudgetsQuery, UpdateBudgetBody } from "./model.ts";

const tags = ["Budgets"];

const EVALUATION =
  "Evaluated after every billing import or sync, daily, and on every change: `actual` is the month's effective (amortized) cost in the budget's currency matching its filter, exactly GET /costs's total for that month and filter; `forecast` is the month-end projection of the assistant's forecast model on complete days. Each threshold fires the event `budget.threshold_crossed` once per month (changing a budget does not re-arm a threshold already crossed that month).";

/**
 * Monthly budgets (lib/budgets): CRUD, the current month's status and the per-month history.
 * Reads need budgets:read (every role), changes budgets:write (admins).
 */
export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix)
    .get("", async (ctx) => pagedList(ctx, s.config.publicUrl, (p) => pageBudgets(s, ctx.principal.orgId, p)), {
      scope: "budgets:read",
      query: ListBudgetsQuery,
      response: { 200: t.Array(Budget) },
      detail: { tags, summary: "List the organization's budgets with their current month's status, oldest first" },
    })
    .post(
      "",
      async ({ principal, body, set }) => {
        const budget = await createBudget(s, principal.orgId, body);
        set.status = 201;
        set.headers["location"] = `${prefix.replace(":org_id", principal.orgId)}/${budget.id}`;
        return budget;
      },
      {
        scope: "budgets:write",
        body: CreateBudgetBody,
        response: { 201: Budget },
        detail: {
          tags,
          summary: "Create a monthly budget with thresholds on actual and forecast spend",
          description: `A monthly amount in one currency for the whole organization or a filter (provider, billing account, account, service, tag). 201 with the budget, evaluated at once, and its \`Location\`. 409 \`budget_name_taken\` for a name already used (case-insensitive), 409 \`budget_limit_reached\` past 100 budgets. ${EVALUATION} Honours \`Idempotency-Key\`.`,
        },
      },
    )
    .get("/:budget_id", ({ principal, params }) => getBudget(s, principal.orgId, params.budget_id.toLowerCase()), {
      scope: "budgets:read",
      params: BudgetParams,
      response: { 200: Budget },
      detail: { tags, summary: "One budget and its current month's status: actual, forecast, percent used, thresholds and when each was crossed", description: EVALUATION },
    })
    .patch("/:budget_id", ({ principal, params, body }) => updateBudget(s, principal.orgId, params.budget_id.toLowerCase(), body), {
      scope: "budgets:write",
      params: BudgetParams,
      body: UpdateBudgetBody,
      response: { 200: Budget },
      detail: { tags, summary: "Change a budget (merge: only the fields given); evaluated again at once", description: `\`filter: null\` counts the whole organization again. ${EVALUATION}` },
    })
    .delete(
      "/:budget_id",
      async ({ principal, params, set }) => {
        await deleteBudget(s.db, principal.orgId, params.budget_id.toLowerCase());
        set.status = 204;
      },
      {
        scope: "budgets:write",
        params: BudgetParams,
        detail: { tags, responses: NO_CONTENT, summary: "Delete a budget and its history (the events it fired stay in the event log)" },
      },
    )
    .get("/:budget_id/history", async (ctx) => pagedList(ctx, s.config.publicUrl, (p) => pageBudgetHistory(s, ctx.principal.orgId, ctx.params.budget_id.toLowerCase(), p)), {
      scope: "budgets:read",
      params: BudgetParams,
      query: ListBudgetsQuery,
      response: { 200: t.Array(BudgetMonth) },
      detail: { tags, summary: "The budget's months, newest first: actual, forecast and the thresholds crossed, as of each month's last evaluation" },
    }),
);

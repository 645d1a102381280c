import { t, type TSchema } from "elysia";
import type { EventTypeSpec } from "../catalog.ts";

const money = (description: string) => t.Number({ description });

/** The cost a budget counts (lib/budgets/model.ts `BudgetFilter`); `{}` = the whole organization. */
export const BudgetFilterData = t.Object(
  {
    provider: t.Optional(t.String({ description: "aws, azure or gcp" })),
    billing_account_id: t.Optional(t.String({ description: "FOCUS BillingAccountId" })),
    account_id: t.Optional(t.String({ description: "The account as the cost explorer's `account` dimension: FOCUS SubAccountId, else BillingAccountId" })),
    service: t.Optional(t.String({ description: "FOCUS ServiceName" })),
    tag: t.Optional(t.Object({ key: t.String(), value: t.String() }, { description: "A FOCUS tag and its value" })),
  },
  { description: "Only cost matching every field counts (the filters of GET /costs); {} = the whole organization" },
);

/** Data document of budget.threshold_crossed (version 1). */
export const BudgetThresholdCrossedData = t.Object({
  budget_id: t.String({ format: "uuid" }),
  budget_name: t.String(),
  month: t.String({ description: "The budget month, YYYY-MM (UTC)" }),
  basis: t.Union([t.Literal("actual"), t.Literal("forecast")], { description: "Which figure crossed the threshold: the month-to-date actual or the month-end forecast" }),
  threshold_percent: t.Integer({ description: "The threshold, in percent of the amount" }),
  threshold_amount: money("amount × threshold_percent / 100, in cents"),
  amount: money("The budget's monthly amount"),
  currency: t.String({ description: "ISO 4217 billing currency of every amount of this document" }),
  actual: money("Month-to-date effective (amortized) cost matching the filter, as GET /costs shows it for the month"),
  forecast: t.Union([t.Number(), t.Null()], { description: "Month-end forecast (the assistant's model on complete days), null without history to forecast from" }),
  percent_used: t.Number({ description: "actual ÷ amount × 100 (6 decimals)" }),
  forecast_percent_used: t.Union([t.Number(), t.Null()], { description: "forecast ÷ amount × 100 (6 decimals)" }),
  filter: BudgetFilterData,
});

export const budgetEventTypes = {
  "budget.threshold_crossed": {
    version: 1,
    description: "A budget's actual or forecast spend crossed one of its thresholds this month (once per threshold per month).",
    data: BudgetThresholdCrossedData as TSchema,
  },
} satisfies Record<string, EventTypeSpec>;

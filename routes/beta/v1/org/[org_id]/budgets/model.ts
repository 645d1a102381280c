import { t } from "elysia";
import { component, nullable } from "../../../../../../lib/http/openapiComponents.ts";
import { PageQueryFields } from "../../../../../../lib/http/paging.ts";
import { Text, TextEnum } from "../../../../../../lib/http/text.ts";
import { PROVIDERS } from "../../../../../../lib/providers.ts";
import { AMOUNT_MAX, BASES, FILTER_VALUE_MAX, MAX_THRESHOLDS, NAME_MAX, PERCENT_MAX, PERCENT_MIN, TAG_KEY_MAX } from "../../../../../../lib/budgets/model.ts";

export const BudgetParams = t.Object({ org_id: t.String(), budget_id: t.String({ format: "uuid" }) });
export const ListBudgetsQuery = t.Object({ ...PageQueryFields }, { additionalProperties: false });

const value = (description: string) => Text({ minLength: 1, maxLength: FILTER_VALUE_MAX, description });

const filterFields = {
  provider: t.Optional(TextEnum(PROVIDERS, { description: "Only this provider's cost (GET /costs `provider`)" })),
  billing_account_id: t.Optional(value("Only this billing account's cost: FOCUS BillingAccountId (GET /costs `billing_account`)")),
  account_id: t.Optional(value("Only this account's cost: the linked account (FOCUS SubAccountId), else the billing account (GET /costs `account`)")),
  service: t.Optional(value("Only this service's cost: FOCUS ServiceName, exact (GET /costs `service`)")),
  tag: t.Optional(
    t.Object(
      { key: Text({ minLength: 1, maxLength: TAG_KEY_MAX, description: "Tag key" }), value: value("Tag value, exact") },
      { additionalProperties: false, description: "Only cost carrying this FOCUS tag with this value (GET /costs `tag:<key>=<value>`)" },
    ),
  ),
};

const FILTER_TEXT = "The cost the budget counts: every field given must match (as GET /costs filters); {} or null = the whole organization.";
const FilterInput = t.Object(filterFields, { additionalProperties: false, description: FILTER_TEXT });

const ThresholdInput = t.Object(
  {
    percent: t.Integer({ minimum: PERCENT_MIN, maximum: PERCENT_MAX, description: `Percent of the amount (${PERCENT_MIN}–${PERCENT_MAX})` }),
    basis: TextEnum(BASES, { description: "`actual`: the month-to-date cost reaches it; `forecast`: the month-end forecast does" }),
  },
  { additionalProperties: false },
);

const fields = {
  name: Text({ minLength: 1, maxLength: NAME_MAX, description: `Unique in the organization (case-insensitive), 1–${NAME_MAX} characters` }),
  amount: t.Number({ exclusiveMinimum: 0, maximum: AMOUNT_MAX, description: "The monthly amount in `currency`, in whole cents (at most 2 decimals)" }),
  currency: t.String({ pattern: "^[A-Z]{3}$", description: "three capital letters (an ISO 4217 code such as USD)" }),
  filter: t.Optional(t.Union([FilterInput, t.Null()], { description: FILTER_TEXT })),
  thresholds: t.Array(ThresholdInput, {
    minItems: 1,
    maxItems: MAX_THRESHOLDS,
    description: `1–${MAX_THRESHOLDS} thresholds, each percent and basis once; each fires \`budget.threshold_crossed\` once per month`,
  }),
};

export const CreateBudgetBody = t.Object(fields, { additionalProperties: false });

export const UpdateBudgetBody = t.Object(
  { name: t.Optional(fields.name), amount: t.Optional(fields.amount), currency: t.Optional(fields.currency), filter: fields.filter, thresholds: t.Optional(fields.thresholds) },
  { additionalProperties: false, description: "Merge: only the fields given change" },
);

// ---- Responses ----

export const BudgetFilter = component(
  "BudgetFilter",
  t.Object(
    {
      provider: t.Optional(t.String({ enum: [...PROVIDERS] })),
      billing_account_id: t.Optional(t.String()),
      account_id: t.Optional(t.String()),
      service: t.Optional(t.String()),
      tag: t.Optional(t.Object({ key: t.String(), value: t.String() })),
    },
    { description: "The cost the budget counts (GET /costs filters); {} = the whole organization" },
  ),
);

const BudgetThreshold = component("BudgetThreshold", t.Object({ percent: t.Integer(), basis: t.String({ enum: [...BASES] }) }));

const ThresholdStatus = component(
  "BudgetThresholdStatus",
  t.Object({
    percent: t.Integer(),
    basis: t.String({ enum: [...BASES] }),
    threshold_amount: t.Number({ description: "amount × percent / 100" }),
    crossed_at: t.Union([t.String({ format: "date-time" }), t.Null()], { description: "When this month's actual or forecast reached it (it fires once per month); null: not reached" }),
  }),
);

const Percent = (what: string) => t.Number({ description: `${what} ÷ amount × 100 (6 decimals)` });
const NullablePercent = (what: string) => t.Union([t.Number(), t.Null()], { description: `${what} ÷ amount × 100 (6 decimals); null without a forecast` });
const Forecast = t.Union([t.Number(), t.Null()], {
  description: "Month-end forecast: the assistant's forecast_spend model (linear trend + day of week, on complete days only) for the cost the budget counts — the month's complete days + the forecast of its remaining days, never below actual; null without a complete day of history",
});
const Actual = t.Number({ description: "The month's effective (amortized) cost in the budget's currency matching its filter: GET /costs's total for that month and filter" });

export const BudgetStatus = component(
  "BudgetStatus",
  t.Object({
    month: t.String({ description: "YYYY-MM (UTC)" }),
    amount: t.Number({ description: "The amount the month was evaluated against" }),
    actual: Actual,
    forecast: Forecast,
    remaining: t.Number({ description: "amount − actual (negative: over budget)" }),
    percent_used: Percent("actual"),
    forecast_percent_used: NullablePercent("forecast"),
    last_complete_date: t.Union([t.String({ format: "date" }), t.Null()], { description: "The last complete day of billing data the forecast was made on" }),
    evaluated_at: t.String({ format: "date-time", description: "When these figures were computed (after every import or sync, and daily)" }),
    thresholds: t.Array(ThresholdStatus),
  }),
);

export const Budget = component(
  "Budget",
  t.Object({
    id: t.String({ format: "uuid" }),
    name: t.String(),
    amount: t.Number({ description: "Monthly amount" }),
    currency: t.String({ description: "ISO 4217 (FOCUS BillingCurrency): only cost billed in this currency counts" }),
    filter: BudgetFilter,
    thresholds: t.Array(BudgetThreshold, { description: "Actual thresholds first, then forecast ones, by percent" }),
    created_at: t.String({ format: "date-time" }),
    updated_at: t.String({ format: "date-time" }),
    status: nullable(BudgetStatus, "The current month as of the last evaluation; null until the budget has been evaluated this month"),
  }),
);

export const BudgetMonth = component(
  "BudgetMonth",
  t.Object({
    month: t.String({ description: "YYYY-MM (UTC)" }),
    amount: t.Number(),
    currency: t.String(),
    actual: Actual,
    forecast: Forecast,
    percent_used: Percent("actual"),
    forecast_percent_used: NullablePercent("forecast"),
    last_complete_date: t.Union([t.String({ format: "date" }), t.Null()]),
    evaluated_at: t.String({ format: "date-time", description: "The month's last evaluation" }),
    crossed: t.Array(
      t.Object({ percent: t.Integer(), basis: t.String({ enum: [...BASES] }), value: t.Number({ description: "The actual or forecast that reached it" }), crossed_at: t.String({ format: "date-time" }) }),
      { description: "Thresholds crossed that month, in the order they fired" },
    ),
  }),
);

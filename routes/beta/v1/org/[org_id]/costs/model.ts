import { t } from "elysia";
import { Kind, Type, TypeRegistry } from "@sinclair/typebox";
import { component } from "../../../../../../lib/http/openapiComponents.ts";
import { API_MAX_GROUP_BY, COST_METRICS, FILTER_PARAMS } from "../../../../../../lib/billing/costExplorer.ts";
import { MAX_FILTER_VALUES, MAX_LIMIT, TAG_KEY_MAX } from "../../../../../../lib/billing/costQuery.ts";

/**
 * A query param published with its real type but checked by lib/billing/costExplorer.ts from the
 * request's URL (repeated params, `tag:<key>` filters, a 400 naming the param): Elysia's own
 * parsing would keep one value of a repeated param and cannot name `tag:<key>` params.
 */
const CHECKED_BY_EXPLORER = "CostQueryParam";
if (!TypeRegistry.Has(CHECKED_BY_EXPLORER)) TypeRegistry.Set(CHECKED_BY_EXPLORER, () => true);
const param = <T>(schema: Record<string, unknown>) => t.Optional(Type.Unsafe<T>({ ...schema, [Kind]: CHECKED_BY_EXPLORER }));

const DIMENSIONS_TEXT = `${FILTER_PARAMS.join(", ")} or tag:<key> (a FOCUS tag; key up to ${TAG_KEY_MAX} characters)`;

const windowParams = {
  start_date: param<string>({ type: "string", format: "date", description: "First day of the window (YYYY-MM-DD, UTC, inclusive). Default: the first day of the month two months ago" }),
  end_date: param<string>({ type: "string", format: "date", description: "Day after the window (YYYY-MM-DD, UTC, exclusive). Default: the first day of next month" }),
};

/** One param per base dimension (repeated for several values); `tag:<key>` params are taken as well. */
const filterParams = Object.fromEntries(
  FILTER_PARAMS.map((name) => [
    name,
    param<string[]>({
      type: "array",
      items: { type: "string" },
      maxItems: MAX_FILTER_VALUES,
      description: `Only rows whose ${name} is one of these values (repeat the param; an empty value matches rows where it is not set)`,
    }),
  ]),
);

const limitParam = (what: string) => param<number>({ type: "integer", minimum: 1, maximum: MAX_LIMIT, default: 100, description: `${what} returned, largest effective cost first (1–${MAX_LIMIT})` });

const FILTERS_TEXT = `Filters: a param per dimension (${DIMENSIONS_TEXT}), e.g. \`service=EC2&service=RDS\` or \`tag:team=data\`; repeat it for several values; an empty value matches rows where the dimension is not set (e.g. \`tag:team=\` = untagged). Values are exact (case-sensitive).`;

export const CostsQuery = t.Object(
  {
    ...windowParams,
    group_by: param<string[]>({
      type: "array",
      items: { type: "string" },
      maxItems: API_MAX_GROUP_BY,
      description: `Dimensions of the rows (0 to ${API_MAX_GROUP_BY}, in this order; repeated or comma-separated): ${DIMENSIONS_TEXT}. None: one row per currency`,
    }),
    metric: param<string>({
      type: "string",
      enum: [...COST_METRICS],
      default: "all",
      description: "Money columns: all; effective_cost only; billed_cost or list_cost beside effective_cost; split = effective_cost with its on-demand / commitment / other split",
    }),
    limit: limitParam("Rows"),
    format: param<string>({ type: "string", enum: ["json", "csv"], default: "json", description: "`csv` for a CSV download (text/csv) of the same rows" }),
    ...filterParams,
  },
  { additionalProperties: true, description: FILTERS_TEXT },
);

export const DimensionQuery = t.Object(
  {
    ...windowParams,
    prefix: param<string>({ type: "string", minLength: 1, maxLength: 256, description: "Only values starting with this text (case-insensitive)" }),
    limit: limitParam("Values"),
    ...filterParams,
  },
  { additionalProperties: true, description: FILTERS_TEXT },
);

export const DimensionParams = t.Object({
  org_id: t.String(),
  dimension: t.String({ description: `${DIMENSIONS_TEXT}, or tag_keys to list the tag keys` }),
});

// Responses: the assistant's query_costs / list_dimension_values answers. Money in the billing currency, rounded to cents.
const Window = t.Object({ start_date: t.String({ format: "date" }), end_date: t.String({ format: "date", description: "Exclusive" }) });
const money = (description: string) => t.Optional(t.Number({ description }));
const moneyFields = {
  effective_cost: t.Number({ description: "Amortized cost (upfront fees spread)" }),
  billed_cost: money("As invoiced (metric all, billed_cost)"),
  list_cost: money("At list prices, 0 for charges without one (metric all, list_cost)"),
  ondemand_cost: money("Effective cost of usage not covered by a commitment (metric all, split)"),
  commitment_cost: money("Effective cost of covered usage, unused commitment and commitment fees (metric all, split)"),
  other_cost: money("Tax, credits, adjustments (metric all, split)"),
};

export const CostRow = component(
  "CostRow",
  t.Object({
    currency: t.String({ description: "FOCUS BillingCurrency: amounts of different currencies are never added" }),
    keys: t.Record(t.String(), t.Union([t.String(), t.Null()]), { description: "Value of each group_by dimension, by its name as given; null = not set" }),
    ...moneyFields,
  }),
);

export const CostTotal = component("CostTotal", t.Object({ currency: t.String(), rows: t.Integer({ description: "Rows of this currency (also those beyond limit)" }), ...moneyFields }));

export const CostQueryResult = component(
  "CostQueryResult",
  t.Object({
    window: Window,
    group_by: t.Array(t.String()),
    metric: t.String({ enum: [...COST_METRICS] }),
    rows: t.Array(CostRow, { description: "Largest effective cost first within each currency, at most limit" }),
    total_rows: t.Integer(),
    truncated: t.Boolean(),
    totals: t.Array(CostTotal, { description: "Per currency over all rows, sorted by currency" }),
  }),
);

/** The same rows as `format=csv` serves them. */
export const COST_QUERY_CSV = {
  "text/csv": {
    schema: { type: "string", description: "RFC 4180 CSV: currency, one column per group_by dimension (empty = not set), then the metric's money columns; the JSON rows in the same order" },
  },
};

const CurrencyCost = t.Object({ currency: t.String(), effective_cost: t.Number() });

export const DimensionValues = component(
  "DimensionValues",
  t.Object({
    window: Window,
    dimension: t.String(),
    values: t.Array(t.Object({ value: t.Union([t.String(), t.Null()], { description: "null = rows where the dimension is not set" }), costs: t.Array(CurrencyCost) }), {
      description: "Most costly first, at most limit",
    }),
    total_values: t.Integer(),
    truncated: t.Boolean(),
    totals: t.Array(CurrencyCost, { description: "Per currency over all values (empty for tag_keys)" }),
  }),
);

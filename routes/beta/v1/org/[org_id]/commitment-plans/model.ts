import { t } from "elysia";
import { component } from "../../../../../../lib/http/openapiComponents.ts";
import { PageQueryFields } from "../../../../../../lib/http/paging.ts";
import { TextEnum } from "../../../../../../lib/http/text.ts";
import { PLAN_STATUSES } from "../../../../../../lib/planning/plans.ts";
import { PROVIDERS } from "../../../../../../lib/providers.ts";

export const PlanParams = t.Object({ org_id: t.String(), plan_id: t.String({ format: "uuid" }) });
export const ListPlansQuery = t.Object({
  provider: t.Optional(TextEnum(PROVIDERS, { description: "Only this provider's plans" })),
  template_id: t.Optional(t.String({ format: "uuid", description: "Only the plans of this template" })),
  status: t.Optional(TextEnum(PLAN_STATUSES, { description: "`generated`, `purchased` (an order was placed) or `not_purchased` (see `status_reason`)" })),
  ...PageQueryFields,
});

const Uuid = t.String({ format: "uuid" });
const NullableUuid = t.Union([Uuid, t.Null()]);
const Str = t.Union([t.String(), t.Null()]);
const Instant = t.Union([t.String({ format: "date-time" }), t.Null()]);
const Money = (description: string) => t.Number({ description: `${description} (USD, rounded to cents)` });

const summaryFields = {
  id: Uuid,
  provider: t.String({ enum: [...PROVIDERS] }),
  segment_id: t.Union([Uuid, t.Null()], { description: "The segment planned for (null once it was deleted)" }),
  template_id: t.Union([Uuid, t.Null()], { description: "The template it was generated from (null once it was deleted)" }),
  cost_estimate_id: NullableUuid,
  execution_date: t.Union([t.String({ format: "date" }), t.Null()], { description: "The auto-purchase slot (UTC date) that generated it; null when generated on request" }),
  status: t.String({ enum: [...PLAN_STATUSES] }),
  status_reason: t.Union([t.String(), t.Null()], { description: "Outcome of its run: purchased, disabled, below_min_monthly_savings, nothing_to_buy, …" }),
  purchase_id: t.Union([Uuid, t.Null()], { description: "The purchase (order) placed for it, if any (GET /purchases/{purchase_id})" }),
  lookback_days: t.Integer(),
  usage_from: Instant,
  usage_to: Instant,
  max_upfront_cost: t.Union([t.Number(), t.Null()], { description: "The template's upfront budget when generated (USD)" }),
  item_count: t.Integer(),
  total_upfront_cost: Money("Sum of the items' upfront costs"),
  monthly_cost: Money("Sum of the items' monthly costs"),
  monthly_net_savings: Money("Sum of the items' monthly net savings"),
  created_at: t.String({ format: "date-time" }),
};

export const CommitmentPlanSummary = component("CommitmentPlanSummary", t.Object(summaryFields));

export const CommitmentPlanItem = component(
  "CommitmentPlanItem",
  t.Object({
    id: Uuid,
    group_key: t.String({ description: "The commitment group (region and instance family) the item covers" }),
    commitment_type: t.String(),
    contract_term: t.String(),
    payment_option: t.String(),
    region: Str,
    instance_type: Str,
    units: t.Number({ description: "Units covered per hour (instances; on-demand $/h for spend-based groups)" }),
    amount: t.Number({ description: "Purchase amount: resource count, or $/hour commitment for savings plans and spend CUDs" }),
    upfront_cost: Money("Upfront cost"),
    monthly_cost: Money("Monthly cost"),
    monthly_net_savings: Money("Monthly net savings"),
    expected_coverage: t.Number({ minimum: 0, maximum: 1, description: "Share of the group's usage covered (6 decimals)" }),
    expected_utilization: t.Number({ minimum: 0, maximum: 1, description: "Share of the commitment used (6 decimals)" }),
    duration_seconds: t.Integer(),
    fee_rate: t.Number({ description: "Insurance fee rate of insured terms (6 decimals; 0 otherwise)" }),
    lock_in_days: t.Union([t.Integer(), t.Null()]),
    offer_id: Str,
    lease_menu_item_id: Str,
  }),
);

export const CommitmentPlan = component("CommitmentPlan", t.Object({ ...summaryFields, items: t.Array(CommitmentPlanItem) }));

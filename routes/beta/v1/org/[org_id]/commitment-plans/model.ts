import { t } from "elysia";
import { component } from "../../../../../../lib/http/openapiComponents.ts";
import { PageQueryFields } from "../../../../../../lib/http/paging.ts";
import { TextEnum } from "../../../../../../lib/http/text.ts";
import { PLAN_STATUSES } from "../../../../../../lib/planning/plans.ts";
import { PROVIDERS } from "../../../../../../lib/providers.ts";
import { MAX_PREVIEW_SETTINGS } from "../../../../../../lib/planning/requested.ts";
import { ContractSpec as ContractSpecBody, TemplateContractSpec } from "../commitment-plan-templates/model.ts";

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

// --- POST /commitment-plans and /commitment-plans/preview ------------------------------------

export const GeneratePlanBody = t.Object(
  { template_id: t.String({ format: "uuid", description: "The commitment plan template to generate from (GET /commitment-plan-templates)" }) },
  { additionalProperties: false },
);

const settingFields = {
  coverage_target: t.Optional(
    t.Number({
      minimum: 0,
      maximum: 100,
      description: "Percent (0–100) of each usage group's eligible usage to cover at most, active commitments included; each option's savings-maximizing amount is capped at it. Absent: sized for the most savings",
    }),
  ),
  contract_specs: t.Optional(t.Array(ContractSpecBody, { minItems: 1, maxItems: 50, description: "The term/payment mix allowed (replaces the template's contract_specs)" })),
  max_upfront_cost: t.Optional(t.Number({ minimum: 0, maximum: 1e15, description: "Upfront budget (USD; replaces the template's max_upfront_cost)" })),
};
const PlanSetting = t.Object(settingFields, { additionalProperties: false });

export const PreviewPlanBody = t.Object(
  {
    template_id: t.String({ format: "uuid", description: "The commitment plan template to start from" }),
    overrides: t.Optional(t.Object(settingFields, { additionalProperties: false, description: "Applied to every setting (a setting's own keys win)" })),
    settings: t.Optional(t.Array(PlanSetting, { minItems: 1, maxItems: MAX_PREVIEW_SETTINGS, description: `Up to ${MAX_PREVIEW_SETTINGS} what-if settings, each sized separately (absent: one setting, the overrides alone)` })),
  },
  { additionalProperties: false },
);

export const CommitmentPlanPreviewSetting = component(
  "CommitmentPlanPreviewSetting",
  t.Object({
    coverage_target: t.Union([t.Number(), t.Null()], { description: "The coverage target sized for (percent), null: none" }),
    max_upfront_cost: Money("The upfront budget sized for"),
    contract_specs: t.Array(TemplateContractSpec, { description: "The contract specs sized for" }),
    item_count: t.Integer({ description: "Number of plan items (purchases)" }),
    monthly_net_savings: Money("Monthly net savings: the sum of the items'"),
    term_net_savings: Money("Net savings over each item's term (monthly net savings × term months), summed"),
    total_upfront_cost: Money("Upfront payment"),
    monthly_cost: Money("Monthly commitment cost (recurring + amortized upfront + insurance premium)"),
    monthly_recurring_cost: Money("Monthly recurring payment (the monthly cost without the amortized upfront)"),
    lock_in_days: t.Number({ description: "Commitment lock-in: the items' lock-in days (remaining term at purchase: 30/365 for insured terms, the term for native ones) weighted by their committed monthly amount (recurring + amortized upfront); 0 with no items (2 decimals)" }),
    active_coverage: t.Number({ minimum: 0, maximum: 100, description: "Percent of the analysed usage (on-demand equivalent) active commitments already cover (6 decimals)" }),
    coverage_reached: t.Number({ minimum: 0, maximum: 100, description: "Percent of the analysed usage covered with the plan bought: active commitments plus the items (6 decimals)" }),
  }),
);

export const CommitmentPlanPreview = component(
  "CommitmentPlanPreview",
  t.Object({
    template_id: Uuid,
    provider: t.String({ enum: [...PROVIDERS] }),
    currency: t.String({ description: "Currency of the money fields (the catalog's: USD)" }),
    usage_window: t.Object({ from: t.String({ format: "date-time" }), to: t.String({ format: "date-time" }), lookback_days: t.Integer() }),
    settings: t.Array(CommitmentPlanPreviewSetting, { description: "One result per setting, in the order sent" }),
  }),
);

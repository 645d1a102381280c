import { t } from "elysia";
import { component } from "../../../../../../lib/http/openapiComponents.ts";
import { pageField, PageQueryFields } from "../../../../../../lib/http/paging.ts";
import { TextEnum } from "../../../../../../lib/http/text.ts";
import { COMMITMENT_STATUSES } from "../../../../../../lib/billing/commitmentViews.ts";
import { PROVIDERS } from "../../../../../../lib/providers.ts";

export const LIST_STATUSES = ["active", "expired", "all"] as const;
export const MAX_EXPIRING_DAYS = 3650;

export const CommitmentParams = t.Object({ org_id: t.String(), commitment_id: t.String({ format: "uuid" }) });

export const ListCommitmentsQuery = t.Object({
  provider: t.Optional(TextEnum(PROVIDERS, { description: "Only this provider's commitments" })),
  status: t.Optional(
    TextEnum(LIST_STATUSES, { description: "`active` (running now), `expired`, or `all` (also those not started yet). Default `all`, or `active` with expiring_within_days (the only status it takes)" }),
  ),
  expiring_within_days: pageField(
    "expiring_within_days",
    MAX_EXPIRING_DAYS,
    undefined,
    `Only active commitments that end within this many days from now (1–${MAX_EXPIRING_DAYS}), soonest end first: the renewal worklist`,
  ),
  ...PageQueryFields,
});

export const CommitmentQuery = t.Object({
  lookback_days: pageField("lookback_days", 365, 30, "Complete UTC days of billing data (before today) for `performance` (1–365)"),
});

const Str = t.Union([t.String(), t.Null()]);
const Instant = (description: string) => t.Union([t.String({ format: "date-time" }), t.Null()], { description });
const Num = (description: string) => t.Union([t.Number(), t.Null()], { description });

const commitmentFields = {
  id: t.String({ format: "uuid" }),
  provider: t.String({ enum: [...PROVIDERS] }),
  provider_commitment_id: t.String({ description: "The provider's id (FOCUS CommitmentDiscountId: ARN, reservation id, CUD name)" }),
  name: Str,
  commitment_type: t.String({ description: "reserved_instance, compute_savings_plan, ec2_instance_savings_plan, database_savings_plan, reservation, savings_plan, resource_cud, spend_cud" }),
  category: t.Union([t.String(), t.Null()], { description: "FOCUS CommitmentDiscountCategory: Spend or Usage" }),
  contract_term: t.Union([t.String(), t.Null()], { description: "one_year, three_year, thirty_day_gris, one_year_gris" }),
  payment_option: t.Union([t.String(), t.Null()], { description: "no_upfront, partial_upfront, all_upfront" }),
  offering_class: t.Union([t.String(), t.Null()], { description: "standard or convertible (RIs only)" }),
  region: Str,
  instance_type: Str,
  instance_family: Str,
  starts_at: Instant("Start of the term"),
  ends_at: Instant("End of the term"),
  days_until_expiry: t.Union([t.Integer(), t.Null()], { description: "Whole days from now to ends_at, rounded up (0 once ended)" }),
  amount: Num("Resource count (RI, reservation, resource CUD) or $/hour committed (savings plan, spend CUD), 6 decimals"),
  upfront_cost: Num("One-time upfront paid for the whole commitment, in the billing currency, rounded to cents"),
  recurring_hourly_cost: Num("Recurring cost per hour of the whole commitment, 6 decimals"),
  holding_account_id: t.Union([t.String(), t.Null()], { description: "The account that holds it (its Unused cost is billed there)" }),
  insured: t.Boolean({ description: "An insured `_gris` commitment (buyback or rebate after its lock-in)" }),
  fee_rate: Num("Insured: the share of realized savings paid as premium"),
  lock_in_ends_at: Instant("Insured: the end of the lock-in, after which it can be handed back"),
  source: t.String({ enum: ["billing", "purchase", "provider"], description: "billing: discovered from billing data; purchase: bought by commitops; provider: listed by a purchasing connection" }),
  status: t.String({ enum: [...COMMITMENT_STATUSES], description: "As of now: `not_started`, `active` or `expired`" }),
};

export const Commitment = component("Commitment", t.Object(commitmentFields, { description: "A commitment of the inventory, as the assistant's list_commitments shows it" }));

export const CommitmentPerformance = component(
  "CommitmentPerformance",
  t.Object(
    {
      start_date: t.String({ format: "date", description: "First day (UTC, inclusive)" }),
      end_date: t.String({ format: "date", description: "Day after the window (UTC, exclusive): today" }),
      used_cost: t.Number({ description: "EffectiveCost of the usage it covered, rounded to cents" }),
      unused_cost: t.Number({ description: "EffectiveCost of its unused part, rounded to cents" }),
      utilization: t.Union([t.Number(), t.Null()], { description: "used ÷ (used + unused), 0–1 to 6 decimals; null without billing activity" }),
      covered_ondemand_cost: t.Number({ description: "On-demand equivalent (list price) of the usage it covered, rounded to cents" }),
      savings: t.Number({ description: "covered_ondemand_cost − used_cost, rounded to cents" }),
    },
    { description: "Its figures over the last `lookback_days` complete days of billing data (those of the assistant's get_commitment)" },
  ),
);

export const CommitmentDetail = component("CommitmentDetail", t.Object({ ...commitmentFields, performance: CommitmentPerformance }));

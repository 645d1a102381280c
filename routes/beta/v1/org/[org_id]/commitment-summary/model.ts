import { t } from "elysia";
import { component } from "../../../../../../lib/http/openapiComponents.ts";
import { TextEnum } from "../../../../../../lib/http/text.ts";
import { MAX_MONTHS, MONTH_STATUSES } from "../../../../../../lib/reports/coverage.ts";
import { PROVIDERS } from "../../../../../../lib/providers.ts";

export const DEFAULT_MONTHS = 12;
const Month = (description: string) => t.String({ pattern: "^[0-9]{4}-(0[1-9]|1[0-2])$", description });

export const SummaryQuery = t.Object({
  from: t.Optional(Month(`First month, YYYY-MM (inclusive). Default: ${DEFAULT_MONTHS - 1} months before \`to\``)),
  to: t.Optional(Month(`Last month, YYYY-MM (inclusive; not after the current month; at most ${MAX_MONTHS} months after \`from\`). Default: the current month`)),
  provider: t.Optional(TextEnum(PROVIDERS, { description: "Only this provider (figures and lock-in)" })),
});

const Money = (description: string) => t.Number({ description: `${description}. In the row's billing currency, rounded to cents` });
const Ratio = (description: string) => t.Union([t.Number(), t.Null()], { description: `${description}. 0–1 to 6 decimals, from the cents shown; null when the denominator is 0` });
const MonthStatus = t.String({
  enum: [...MONTH_STATUSES],
  description:
    "`finalized` (the billing period is closed and its reports frozen: the figures no longer change), `in_progress` (the billing period is still open: figures grow as data arrives), `not_closed` (an ended month whose invoice is not closed yet), `no_data` (no billing data)",
});

const figures = {
  currency: t.String({ description: "Billing currency (ISO 4217): amounts in different currencies are never added" }),
  commitment_used_cost: Money("EffectiveCost of the usage commitments covered (commitment_cost_by_account)"),
  commitment_unused_allocated_cost: Money("The commitments' Unused cost, spread over the accounts that used them"),
  commitment_cost: Money("Commitment cost = commitment_used_cost + commitment_unused_allocated_cost"),
  covered_ondemand_cost: Money("On-demand equivalent (list price) of the usage commitments covered"),
  ondemand_cost: Money("EffectiveCost of every Usage charge without a commitment, all services (cloud_bill_by_account's ondemand_cost)"),
  ondemand_equivalent_cost: Money("On-demand-equivalent cost = covered_ondemand_cost + ondemand_cost: what the usage would have cost at on-demand rates"),
  savings: Money("Savings on covered usage = covered_ondemand_cost − commitment_used_cost (as the allocation reports show it)"),
  realized_savings: Money("Savings realized = savings − commitment_unused_allocated_cost: net of what the commitments cost unused (= on-demand equivalent − actual cost)"),
  coverage: Ratio("Coverage = covered_ondemand_cost ÷ ondemand_equivalent_cost"),
  utilization: Ratio("Utilization = commitment_used_cost ÷ commitment_cost"),
  effective_savings_rate: Ratio("Effective Savings Rate (ESR) = realized_savings ÷ ondemand_equivalent_cost: the share of the on-demand-equivalent cost saved, all effects (coverage, discount, unused commitments) together"),
};

export const CommitmentSummary = component(
  "CommitmentSummary",
  t.Object(
    {
      from: t.String({ description: "First month of the range (YYYY-MM)" }),
      to: t.String({ description: "Last month of the range (YYYY-MM)" }),
      provider: t.Union([t.String({ enum: [...PROVIDERS] }), t.Null()], { description: "The provider filter, null for all" }),
      months: t.Array(t.Object({ month: t.String(), status: MonthStatus }), { description: "Every month of the range, oldest first, with its status" }),
      rows: t.Array(t.Object({ month: t.String({ description: "YYYY-MM (billing period)" }), status: MonthStatus, ...figures }), {
        description: "One row per month and billing currency (the providers' figures summed), oldest first; months without data have none",
      }),
      totals: t.Array(t.Object(figures), { description: "The whole range per billing currency: money summed in cents over the rows, ratios (ESR included) from those sums" }),
      lock_in: t.Object(
        {
          as_of: t.String({ format: "date-time", description: "Computed as of this instant (now)" }),
          weighted_remaining_months: t.Union([t.Number(), t.Null()], {
            description:
              "Commitment lock-in in MONTHS (of 730 h), 2 decimals: Σ wᵢ·remainingᵢ ÷ Σ wᵢ over the commitments active now, remainingᵢ = time from now to the commitment's end (insured `_gris`: to the end of its lock-in), wᵢ = its committed cost per hour (recurring + upfront amortized over its term). null when none",
          }),
          weighted_remaining_years: t.Union([t.Number(), t.Null()], { description: "The same in years (months ÷ 12), 2 decimals" }),
          commitment_count: t.Integer({ description: "Active commitments weighed (those with an end and a cost)" }),
          committed_hourly_cost: t.Number({ description: "Σ wᵢ: their committed cost per hour, 6 decimals (each commitment in its own billing currency)" }),
        },
        { description: "How long the organization stays committed, weighted by what it committed" },
      ),
    },
    { description: "Coverage, utilization, savings and the Effective Savings Rate per month, and the commitment lock-in (the figures of the assistant's get_coverage_and_utilization, group_by period)" },
  ),
);

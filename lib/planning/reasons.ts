/**
 * Why a generated plan buys nothing (or nothing for some of its usage groups): the reason codes
 * plan generation decides (lib/planning/generate.ts `unplanned`, sizing's skipped groups in
 * lib/planning/optimize.ts), each with one plain sentence, for the assistant's planning tools.
 *
 * Plan-level reasons: `no_eligible_usage` (no usage group at all) and `below_min_monthly_savings`
 * (the template's enabled auto-purchase would not buy the plan: the rule of
 * lib/purchasing/autoPurchase.ts, held against the plan's monthly net savings as shown).
 */
import type { TemplateConfiguration } from "../templates/service.ts";
import type { GeneratedPlan, NoPurchaseReason, UnplannedGroup } from "./generate.ts";

export type PlanNoPurchaseReason = NoPurchaseReason | "below_min_monthly_savings";

/** Every reason code, in the order they are reported. */
export const NO_PURCHASE_REASONS: readonly PlanNoPurchaseReason[] = [
  "no_eligible_usage",
  "no_catalog_offer",
  "no_offer_for_contract_specs",
  "no_discount",
  "covered_by_active_commitments",
  "usage_below_one_unit",
  "usage_too_intermittent",
  "upfront_budget_exhausted",
  "below_min_monthly_savings",
];

export interface GroupReason {
  group_key: string;
  region: string;
  instance_family: string;
  instance_type: string | null;
  reason: NoPurchaseReason;
  message: string;
}

export interface PlanReason {
  reason: PlanNoPurchaseReason;
  /** Usage groups with this reason (0 for plan-level reasons). */
  group_count: number;
  message: string;
}

const pct = (v: number | null) => `${(Math.max(0, v ?? 0) * 100).toFixed(1)}%`;
const specText = (s: string) => s.split("/").join(" ");
const usd = (v: number) => `${v.toFixed(2)} USD`;
const day = (d: Date) => d.toISOString().slice(0, 10);

/** One sentence on why this group got no item. */
export function groupReasonMessage(g: UnplannedGroup, config: TemplateConfiguration, provider: string): string {
  switch (g.reason) {
    case "no_catalog_offer":
      return `The catalog has no priced ${provider} SKU with a commitment offer for the ${g.instanceFamily} family in ${g.region}: this usage cannot be committed to.`;
    case "no_offer_for_contract_specs":
      return `The catalog offers ${(g.offeredSpecs ?? []).map(specText).join(", ") || "nothing"} for ${g.instanceType ?? g.instanceFamily} in ${g.region}, but none of the template's contract specs (${config.contract_specs.map((c) => `${c.commitment_type} ${c.contract_term} ${c.payment_option}`).join(", ")}).`;
    case "no_discount":
      return `None of the template's offers for this usage is cheaper than on-demand (best discount ${pct(g.bestDiscount)}), so no commitment saves money.`;
    case "covered_by_active_commitments":
      return `Active commitments already cover ${pct(g.coveredShare)} of this usage; what they leave uncovered is too small or too irregular for another commitment to pay for itself.`;
    case "usage_below_one_unit":
      return `The steady usage is below one whole ${g.instanceType ?? "instance"}, the smallest reservation that can be bought: one would cost more than it saves.`;
    case "usage_too_intermittent":
      return `The usage runs in too few hours of the lookback: at the best offer's discount (${pct(g.bestDiscount)}) a commitment would sit idle too often to save money.`;
    case "upfront_budget_exhausted":
      return `Only options paid upfront save money here, and the template's upfront budget (max_upfront_cost ${usd(config.max_upfront_cost)}) went to groups saving more per upfront dollar.`;
    case "no_eligible_usage":
      return "The group's hours hold no usage in the lookback.";
  }
}

/** The sentence of a reason shared by several groups. */
function generalMessage(code: NoPurchaseReason, config: TemplateConfiguration, groups: UnplannedGroup[]): string {
  switch (code) {
    case "no_catalog_offer":
      return "the catalog has no priced SKU with a commitment offer for their instance family and region: this usage cannot be committed to.";
    case "no_offer_for_contract_specs":
      return `the catalog offers ${[...new Set(groups.flatMap((g) => g.offeredSpecs ?? []))].map(specText).join(", ")} for them, but none of the template's contract specs (${config.contract_specs.map((c) => `${c.commitment_type} ${c.contract_term} ${c.payment_option}`).join(", ")}).`;
    case "no_discount":
      return "none of the template's offers is cheaper than on-demand, so no commitment saves money.";
    case "covered_by_active_commitments":
      return "active commitments already cover their usage; what they leave uncovered is too small or too irregular for another commitment to pay for itself.";
    case "usage_below_one_unit":
      return "the steady usage is below one whole instance, the smallest reservation that can be bought.";
    case "usage_too_intermittent":
      return "the usage runs in too few hours of the lookback for a commitment to pay for itself.";
    case "upfront_budget_exhausted":
      return `only options paid upfront save money, and the template's upfront budget (max_upfront_cost ${usd(config.max_upfront_cost)}) went to groups saving more per upfront dollar.`;
    case "no_eligible_usage":
      return "their hours hold no usage in the lookback.";
  }
}

/**
 * The reasons of a generated plan: per group without an item, and per reason code (with the
 * groups it concerns). `shownMonthlyNetSavings` is the plan's total as shown (the sum of its
 * items' cents); `autoPurchase` the template's schedule settings, if any.
 */
export function explainPlan(
  plan: GeneratedPlan,
  config: TemplateConfiguration,
  opts: { shownMonthlyNetSavings: number; autoPurchase?: { enabled: boolean; min_monthly_savings: number } | null },
): { no_purchase_reasons: PlanReason[]; groups_without_purchase: GroupReason[] } {
  const groups: GroupReason[] = plan.unplanned.map((g) => ({
    group_key: g.groupKey,
    region: g.region,
    instance_family: g.instanceFamily,
    instance_type: g.instanceType,
    reason: g.reason,
    message: groupReasonMessage(g, config, plan.provider),
  }));
  const reasons: PlanReason[] = [];
  if (plan.usageGroupCount === 0) {
    reasons.push({
      reason: "no_eligible_usage",
      group_count: 0,
      message: plan.latestUsageAt
        ? `No usage that commitments can cover (instance hours with a region and an instance type, not already paid by a commitment) was billed for this segment${config.resource_ids.length ? " and the template's resources" : ""} in the ${config.lookback_days}-day lookback (${day(plan.usageFrom)} to ${day(plan.usageTo)}).`
        : `No ${plan.provider} usage was billed in the last two months: there is nothing to size commitments on.`,
    });
  }
  for (const code of NO_PURCHASE_REASONS) {
    const of = groups.filter((g) => g.reason === code);
    if (!of.length) continue;
    const which = of.map((g) => `${g.region} ${g.instance_family}`).join(", ");
    const message = of.length === 1 ? of[0]!.message : generalMessage(code as NoPurchaseReason, config, plan.unplanned.filter((u) => u.reason === code));
    reasons.push({ reason: code, group_count: of.length, message: `${of.length} usage group(s) (${which}): ${message}` });
  }
  const ap = opts.autoPurchase;
  if (ap?.enabled && plan.sizing.items.length && belowMinMonthlySavings(opts.shownMonthlyNetSavings, ap.min_monthly_savings)) {
    reasons.push({
      reason: "below_min_monthly_savings",
      group_count: 0,
      message: `The plan saves ${usd(opts.shownMonthlyNetSavings)} a month, below the template's auto-purchase minimum (min_monthly_savings ${usd(ap.min_monthly_savings)}): a scheduled run stores it without buying it.`,
    });
  }
  return { no_purchase_reasons: reasons, groups_without_purchase: groups };
}

/**
 * The auto-purchase threshold (DESIGN §9): a plan is bought only when its monthly net savings as
 * shown (the sum of its items' cents) reach the template's `min_monthly_savings`. The scheduled
 * run and the assistant's explanation both hold the plan to this one rule.
 */
export function belowMinMonthlySavings(shownMonthlyNetSavings: number, minMonthlySavings: number): boolean {
  return shownMonthlyNetSavings < minMonthlySavings;
}

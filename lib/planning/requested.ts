/**
 * Plans on request (REST POST /commitment-plans and /commitment-plans/preview):
 *
 * - `generateStoredPlan`: the plan the MCP tool `generate_commitment_plan` computes (the same
 *   template → segment → `generatePlan` path), stored as `generated` with no execution date,
 *   as the CLI `plans generate` does.
 * - `previewPlans`: what-if settings of one template (coverage target, contract specs, upfront
 *   budget), each sized by the same planner (`generatePlan` with SizingOptions), summarized for
 *   a chart. It only reads: nothing is stored.
 *
 * Money is shown in cents and every total is the sum of the items' rounded amounts, as the
 * stored plans' totals are (lib/planning/plans.ts), so a preview without overrides shows the
 * same totals as the plan POST /commitment-plans would store.
 */
import type { DbOrTx } from "../db/index.ts";
import { ValidationError, type FieldErrors } from "../errors.ts";
import { amortizedHourlyRate, cents, HOURS_PER_MONTH, SECONDS_PER_MONTH } from "../pricing/index.ts";
import { days2, rate6, sumCents } from "../pricing/display.ts";
import { getSegment } from "../segments/service.ts";
import { COMMITMENT_TYPES, INSURED_TERMS, type ContractSpec, type Provider } from "../templates/enums.ts";
import { getTemplate, type TemplateConfiguration, type TemplateView } from "../templates/service.ts";
import { CATALOG_CURRENCY } from "../catalog/model.ts";
import { generatePlan, savePlan, type GeneratedPlan, type PlanInputs } from "./generate.ts";
import { getPlan } from "./plans.ts";

/** How many settings one preview may compare. */
export const MAX_PREVIEW_SETTINGS = 10;

/** Generates a plan from the template now and stores it (status `generated`); the stored plan as GET /commitment-plans/{id} shows it. */
export async function generateStoredPlan(db: DbOrTx, orgId: string, templateId: string, now: Date) {
  const planId = await db.transaction(async (tx) => {
    const t = await getTemplate(tx, orgId, templateId.toLowerCase(), now);
    const segment = await getSegment(tx, orgId, t.segment_id);
    const plan = await generatePlan(tx, orgId, segment, t.configuration, now);
    return savePlan(tx, {
      orgId,
      segmentId: t.segment_id,
      templateId: t.id,
      executionDate: null,
      status: "generated",
      statusReason: null,
      lookbackDays: t.configuration.lookback_days,
      maxUpfrontCost: t.configuration.max_upfront_cost,
      plan,
    });
  });
  return getPlan(db, orgId, planId);
}

/** One what-if setting: each key present replaces the template's value. */
export interface PlanSettingOverrides {
  /** Percent (0–100) of each usage group's eligible usage to cover at most, active commitments included. */
  coverage_target?: number;
  contract_specs?: ContractSpec[];
  max_upfront_cost?: number;
}

export interface PreviewInput {
  template_id: string;
  /** Applied to every setting (a setting's own keys win). */
  overrides?: PlanSettingOverrides;
  /** Up to MAX_PREVIEW_SETTINGS settings; none: one setting of `overrides` alone. */
  settings?: PlanSettingOverrides[];
}

/** The provider's rules for contract specs (the ones templates are held to). */
function specErrors(provider: Provider, specs: ContractSpec[], at: string, errors: FieldErrors): void {
  const add = (k: string, m: string) => (errors[k] ??= []).push(m);
  const types = COMMITMENT_TYPES[provider];
  const seen = new Set<string>();
  specs.forEach((spec, i) => {
    const p = `${at}.contract_specs.${i}`;
    if (!types.includes(spec.commitment_type)) add(`${p}.commitment_type`, `must be one of ${types.map((x) => `\`${x}\``).join(", ")} for ${provider}`);
    if (INSURED_TERMS.has(spec.contract_term) && spec.payment_option !== "no_upfront") add(`${p}.payment_option`, `insured terms (${spec.contract_term}) are sold with \`no_upfront\` only`);
    const key = `${spec.commitment_type}/${spec.contract_term}/${spec.payment_option}`;
    if (seen.has(key)) add(p, "duplicates an earlier contract spec");
    seen.add(key);
  });
}

/** A setting's sized plan as the what-if panel charts it. */
function settingView(setting: { coverageTarget: number | null; config: TemplateConfiguration }, p: GeneratedPlan) {
  const items = p.sizing.items;
  const shown = items.map((i) => {
    const months = i.quote.durationSeconds / SECONDS_PER_MONTH;
    const amortizedUpfront = amortizedHourlyRate(0, i.upfrontCost, i.quote.durationSeconds) * HOURS_PER_MONTH;
    return {
      upfront: cents(i.upfrontCost),
      monthlyCost: cents(i.monthlyCost),
      recurring: cents(i.monthlyCost - amortizedUpfront),
      net: cents(i.monthlyNetSavings),
      termNet: cents(i.monthlyNetSavings * months),
      // What is committed each month (recurring + amortized upfront; the insured premium is paid on realized savings only).
      weight: i.monthlyCloudCost,
      lockInDays: i.quote.lockInDays,
    };
  });
  const weight = shown.reduce((a, x) => a + x.weight, 0);
  const lockIn = weight > 0 ? shown.reduce((a, x) => a + x.weight * x.lockInDays, 0) / weight : 0;
  const eligible = p.sizing.eligibleMonthlyOndemand;
  const newlyCovered = items.reduce((a, i) => a + i.monthlyCoveredOndemand, 0);
  const pct = (v: number) => (eligible > 0 ? rate6(Math.min(100, (100 * v) / eligible)) : 0);
  return {
    coverage_target: setting.coverageTarget,
    max_upfront_cost: cents(setting.config.max_upfront_cost),
    contract_specs: setting.config.contract_specs,
    item_count: items.length,
    monthly_net_savings: sumCents(shown.map((x) => x.net)),
    term_net_savings: sumCents(shown.map((x) => x.termNet)),
    total_upfront_cost: sumCents(shown.map((x) => x.upfront)),
    monthly_cost: sumCents(shown.map((x) => x.monthlyCost)),
    monthly_recurring_cost: sumCents(shown.map((x) => x.recurring)),
    lock_in_days: days2(lockIn),
    active_coverage: pct(p.sizing.activeCoveredMonthlyOndemand),
    coverage_reached: pct(p.sizing.activeCoveredMonthlyOndemand + newlyCovered),
  };
}
export type PreviewSettingView = ReturnType<typeof settingView>;

/**
 * Sizes each setting of the template against the current usage and inventory, in order; reads
 * only. 404 for a template not of this org; 422 for contract specs the provider does not sell
 * or too many settings.
 */
export async function previewPlans(db: DbOrTx, orgId: string, input: PreviewInput, now: Date) {
  const settings = input.settings ?? [{}];
  if (settings.length > MAX_PREVIEW_SETTINGS || settings.length === 0) {
    throw new ValidationError(`A preview compares 1 to ${MAX_PREVIEW_SETTINGS} settings.`, { settings: [`must list 1 to ${MAX_PREVIEW_SETTINGS} settings`] });
  }
  const t: TemplateView = await getTemplate(db, orgId, input.template_id.toLowerCase(), now);
  const errors: FieldErrors = {};
  if (input.overrides?.contract_specs) specErrors(t.provider, input.overrides.contract_specs, "overrides", errors);
  settings.forEach((s, i) => s.contract_specs && specErrors(t.provider, s.contract_specs, `settings.${i}`, errors));
  if (Object.keys(errors).length) {
    const [field, msgs] = Object.entries(errors)[0]!;
    throw new ValidationError(`The preview settings are invalid: ${field} ${msgs[0]}.`, errors);
  }
  const segment = await getSegment(db, orgId, t.segment_id);
  const out: PreviewSettingView[] = [];
  let window: GeneratedPlan | null = null;
  // Settings differ only in specs, upfront cap and coverage target: the usage, the window and
  // the active commitments are read once for all of them.
  const inputs: PlanInputs = {};
  for (const s of settings) {
    const o = { ...input.overrides, ...s };
    const config: TemplateConfiguration = {
      ...t.configuration,
      contract_specs: o.contract_specs ?? t.configuration.contract_specs,
      max_upfront_cost: o.max_upfront_cost ?? t.configuration.max_upfront_cost,
    };
    const coverageTarget = o.coverage_target ?? null;
    const plan = await generatePlan(db, orgId, segment, config, now, coverageTarget === null ? {} : { coverageTarget: coverageTarget / 100 }, inputs);
    window ??= plan;
    out.push(settingView({ coverageTarget, config }, plan));
  }
  return {
    template_id: t.id,
    provider: t.provider,
    currency: CATALOG_CURRENCY,
    usage_window: { from: window!.usageFrom.toISOString(), to: window!.usageTo.toISOString(), lookback_days: t.configuration.lookback_days },
    settings: out,
  };
}
export type PlanPreviewView = Awaited<ReturnType<typeof previewPlans>>;

/**
 * Recommendations and planning: plans generated live from the templates (lib/templates +
 * lib/planning, never stored, never bought) and cost estimates priced live (lib/estimates).
 */
import * as z from "zod";
import { getEstimate, listEstimates } from "../../estimates/service.ts";
import { generatePlan, type GeneratedPlan } from "../../planning/generate.ts";
import { getSegment } from "../../segments/service.ts";
import { getTemplate, listTemplates, type TemplateView } from "../../templates/service.ts";
import { queryRows } from "../../billing/sql.ts";
import { shownItemMoneyOf } from "../../planning/plans.ts";
import { explainPlan, NO_PURCHASE_REASONS } from "../../planning/reasons.ts";
import { planTotals, rate6 } from "../../pricing/display.ts";
import { cents, defineTool, providerEnum, ratio, type ToolContext } from "./common.ts";
import { CATALOG_CURRENCY } from "../../catalog/model.ts";
import { freshnessOf, freshnessSentence } from "../../catalog/freshness.ts";

const planItem = z.object({
  group_key: z.string(),
  region: z.string().nullable(),
  instance_type: z.string().nullable(),
  commitment_type: z.string(),
  contract_term: z.string(),
  payment_option: z.string(),
  amount: z.number(),
  upfront_cost: z.number(),
  monthly_cost: z.number(),
  monthly_net_savings: z.number(),
  expected_coverage: z.number().nullable(),
  expected_utilization: z.number().nullable(),
});

const reasonEnum = z.enum(NO_PURCHASE_REASONS as [string, ...string[]]);

const planOut = z.object({
  template: z.object({ id: z.string(), name: z.string(), is_system_generated: z.boolean(), provider: z.string(), segment_id: z.string() }),
  usage_window: z.object({ from: z.string(), to: z.string(), lookback_days: z.number().int() }),
  currency: z.string(),
  usage_groups: z.number().int(),
  groups_analyzed: z.number().int(),
  totals: z.object({ upfront_cost: z.number(), monthly_cost: z.number(), monthly_net_savings: z.number() }),
  items: z.array(planItem),
  no_purchase_reasons: z.array(z.object({ reason: reasonEnum, group_count: z.number().int(), message: z.string() })),
  groups_without_purchase: z.array(
    z.object({ group_key: z.string(), region: z.string(), instance_family: z.string(), instance_type: z.string().nullable(), reason: reasonEnum, message: z.string() }),
  ),
});

/** A generated plan as shown: items rounded (money to cents, amounts and ratios to 6 decimals), totals summed from the shown items. */
function planView(t: TemplateView, p: GeneratedPlan) {
  const items = p.sizing.items.map((i) => ({
    group_key: i.groupKey,
    region: i.region,
    instance_type: i.instanceType,
    commitment_type: i.quote.commitmentType,
    contract_term: i.quote.contractTerm,
    payment_option: i.quote.paymentOption,
    amount: rate6(i.amount),
    upfront_cost: cents(i.upfrontCost),
    monthly_cost: cents(i.monthlyCost),
    monthly_net_savings: cents(i.monthlyNetSavings),
    expected_coverage: ratio(Math.min(1, i.expectedCoverage)),
    expected_utilization: ratio(Math.min(1, i.expectedUtilization)),
  }));
  const totals = planTotals(items);
  const why = explainPlan(p, t.configuration, { shownMonthlyNetSavings: totals.monthly_net_savings, autoPurchase: t.auto_purchase });
  return {
    template: { id: t.id, name: t.name, is_system_generated: t.is_system_generated, provider: t.provider, segment_id: t.segment_id },
    usage_window: { from: p.usageFrom.toISOString(), to: p.usageTo.toISOString(), lookback_days: t.configuration.lookback_days },
    // Plans are priced from the catalog, which holds USD prices only (lib/catalog/importers.ts).
    currency: CATALOG_CURRENCY,
    usage_groups: p.usageGroupCount,
    groups_analyzed: p.groupCount,
    totals: { upfront_cost: totals.total_upfront_cost, monthly_cost: totals.monthly_cost, monthly_net_savings: totals.monthly_net_savings },
    items,
    ...why,
  };
}


/** "Recommended: 2 purchase(s), …" or, with none, why not. */
function planSummary(p: ReturnType<typeof planView>): string {
  const head = `${p.template.name} (${p.template.provider}): ${p.items.length} purchase(s), ${p.currency} ${p.totals.monthly_net_savings}/month net savings, ${p.currency} ${p.totals.upfront_cost} upfront`;
  const why = p.no_purchase_reasons.map((r) => (r.group_count ? `${r.reason} (${r.group_count} group(s))` : r.reason)).join(", ");
  return why ? `${head}; ${p.items.length ? "not everything bought" : "buys nothing"} because: ${why}` : head;
}

async function planFor(ctx: ToolContext, t: TemplateView) {
  const segment = await getSegment(ctx.s.db, ctx.orgId, t.segment_id);
  return planView(t, await generatePlan(ctx.s.db, ctx.orgId, segment, t.configuration, ctx.now));
}

export const recommendationsTool = defineTool({
  name: "get_recommendations",
  title: "Commitment purchase recommendations",
  description:
    "The three built-in commitment plans for a provider, generated now from the recent usage: Recommended (insured, 30-day lock-in, no upfront: lowest risk), Balanced (1-year, no upfront) and High Savings (3-year, upfront). Each lists what to buy per commitment group (region × instance family) with its upfront cost, monthly cost, monthly net savings and expected coverage/utilization. When a plan buys nothing, or nothing for some usage groups, `no_purchase_reasons` says why (codes: no_eligible_usage, no_catalog_offer, no_offer_for_contract_specs, no_discount, covered_by_active_commitments, usage_below_one_unit, usage_too_intermittent, upfront_budget_exhausted, below_min_monthly_savings; each with a sentence) and `groups_without_purchase` gives the reason per group. Money is in USD rounded to cents, amounts/ratios to 6 decimals; a plan's totals are the sums of its items as shown. Nothing is stored or purchased.",
  scopes: ["templates:read"],
  input: {
    provider: providerEnum.describe("Cloud provider to plan for."),
    segment_id: z.string().uuid().optional().describe("Segment to plan for (default: all of the provider's resources)."),
  },
  output: { provider: z.string(), plans: z.array(planOut) },
  async run(ctx, a) {
    const templates = (await listTemplates(ctx.s.db, ctx.orgId, a.provider, a.segment_id, ctx.now)).filter((t) => t.is_system_generated);
    const plans = [];
    for (const t of templates) plans.push(await planFor(ctx, t));
    return {
      structured: { provider: a.provider, plans },
      summary: plans.length ? plans.map(planSummary).join(" | ") + ". Nothing was purchased." : "No built-in templates for this provider.",
    };
  },
});

export const generatePlanTool = defineTool({
  name: "generate_commitment_plan",
  title: "Generate a plan from a template",
  description:
    "Generates a commitment plan from one plan template (built-in or custom) against the current usage and inventory, without storing or purchasing anything: what to buy, upfront cost, monthly cost and net savings (USD, cents; totals summed from the shown items). When it buys nothing, or nothing for some usage groups, `no_purchase_reasons` and `groups_without_purchase` say why (no usage in the lookback, covered by active commitments, no catalog offer for the family/region or for the template's contract specs, no discount, usage too intermittent or below one unit, upfront budget used up, below the auto-purchase minimum savings). Find template ids with list_plan_templates.",
  scopes: ["templates:read"],
  input: { template_id: z.string().uuid().describe("The commitment plan template's id.") },
  output: planOut.shape,
  async run(ctx, a) {
    const t = await getTemplate(ctx.s.db, ctx.orgId, a.template_id.toLowerCase(), ctx.now);
    const plan = await planFor(ctx, t);
    return {
      structured: plan,
      summary: `${planSummary(plan)}. Nothing was purchased.`,
    };
  },
});

export const listTemplatesTool = defineTool({
  name: "list_plan_templates",
  title: "Commitment plan templates",
  description: "The commitment plan templates of a provider's segment (the three built-in ones first), with their configuration and auto-purchase schedule.",
  scopes: ["templates:read"],
  input: {
    provider: providerEnum.describe("Cloud provider."),
    segment_id: z.string().uuid().optional().describe("Segment (default: all of the provider's resources)."),
  },
  output: {
    templates: z.array(
      z.looseObject({ id: z.string(), name: z.string(), description: z.string().nullable(), is_system_generated: z.boolean(), configuration: z.looseObject({}), auto_purchase: z.looseObject({}).nullable() }),
    ),
  },
  async run(ctx, a) {
    const templates = await listTemplates(ctx.s.db, ctx.orgId, a.provider, a.segment_id, ctx.now);
    return {
      structured: { templates: templates as any },
      summary: `${templates.length} template(s): ${templates.map((t) => `${t.name}${t.auto_purchase ? ` (${t.auto_purchase.schedule} auto-purchase${t.auto_purchase.enabled ? "" : ", disabled"})` : ""}`).join(", ")}.`,
    };
  },
});

export const listEstimatesTool = defineTool({
  name: "list_cost_estimates",
  title: "Cost estimates",
  description: "The organization's saved cost estimates (baskets of catalog SKUs) for a provider, most recently updated first.",
  scopes: ["estimates:read"],
  input: { provider: providerEnum.describe("Cloud provider.") },
  output: {
    estimates: z.array(z.looseObject({ id: z.string(), provider: z.string(), name: z.string(), description: z.string().nullable(), line_count: z.number().int(), created_at: z.string(), updated_at: z.string() })),
  },
  async run(ctx, a) {
    const estimates = await listEstimates(ctx.s.db, ctx.orgId, a.provider);
    return { structured: { estimates: estimates.map((e) => ({ ...e })) }, summary: `${estimates.length} ${a.provider} cost estimate(s).` };
  },
});

export const priceEstimateTool = defineTool({
  name: "price_cost_estimate",
  title: "Price a cost estimate",
  description:
    "Prices a saved cost estimate live against the current catalog and offers and returns the same document as REST GET /cost-estimates/{id} (with pricing), plus its currency (USD, the catalog's): the lines, per line the on-demand monthly cost and the selected commitment option, and totals (on-demand, estimated monthly cost, monthly net savings, upfront). With include_options the per-line grid of every commitment option is included. Money is rounded to cents and rates to 6 decimals exactly as REST shows them; every total is the sum of the rounded values shown. pricing.prices_as_of is the oldest day the prices were confirmed current (per line too) and pricing.stale says it is more than PRICE_STALE_DAYS days old (the catalog needs a refresh). For SKUs not in a saved estimate use price_sku.",
  scopes: ["estimates:read"],
  input: {
    estimate_id: z.string().uuid().describe("The cost estimate's id."),
    include_options: z.boolean().default(false).describe("Include every line's commitment options grid."),
    only_most_flexible_commitment_type: z.boolean().default(false).describe("Limit each SKU's options to its most flexible commitment type."),
  },
  output: {
    id: z.string(),
    provider: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    source_draft_id: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    currency: z.string(),
    line_items: z.array(z.looseObject({ id: z.string(), quantity: z.number(), quantity_basis: z.string(), is_enabled: z.boolean() })),
    pricing: z.object({
      line_items: z.array(
        z.looseObject({
          line_item_id: z.string(),
          status: z.string(),
          detail: z.string(),
          prices_as_of: z.string().nullable(),
          ondemand_monthly_cost: z.number(),
          estimated_monthly_cost: z.number(),
          monthly_net_savings: z.number(),
          matched_commitment_option: z.looseObject({}).nullable(),
        }),
      ),
      totals: z.object({ ondemand_monthly_cost: z.number(), estimated_monthly_cost: z.number(), monthly_net_savings: z.number(), commitment_upfront_cost: z.number() }),
      prices_as_of: z.string().nullable(),
      stale: z.boolean(),
    }),
  },
  async run(ctx, a) {
    // The service REST GET /cost-estimates/{id} calls, with the same options: the document is
    // already shown (money in cents, rates to 6 decimals, totals from the shown lines).
    const freshness = freshnessOf(ctx.s);
    const doc = await getEstimate(ctx.s.db, ctx.orgId, a.estimate_id.toLowerCase(), {
      includePricing: true,
      includeOptions: a.include_options,
      onlyMostFlexibleCommitmentType: a.only_most_flexible_commitment_type,
      freshness,
    });
    const pricing = doc.pricing!;
    const totals = pricing.totals;
    const asOf = freshnessSentence(pricing.prices_as_of, pricing.stale, freshness.staleDays);
    return {
      structured: { ...doc, currency: CATALOG_CURRENCY, pricing } as any,
      summary: `${doc.name}: on-demand ${CATALOG_CURRENCY} ${totals.ondemand_monthly_cost}/month, estimated ${CATALOG_CURRENCY} ${totals.estimated_monthly_cost}/month, net savings ${CATALOG_CURRENCY} ${totals.monthly_net_savings}/month, upfront ${CATALOG_CURRENCY} ${totals.commitment_upfront_cost}.${asOf ? ` ${asOf}` : ""}`,
    };
  },
});

/**
 * Stored plans (scheduled runs, `plans generate`): the latest per template. lib/planning's read
 * service pages every plan, not the latest per template, so this one query lives here; it only
 * reads, scoped to the org. The totals come from the items (lib/planning/plans.ts
 * `shownItemMoneyOf` + `planTotals`), as REST /commitment-plans shows them.
 */
async function latestStoredPlans(ctx: ToolContext, provider: string | undefined, systemOnly: boolean) {
  const params: unknown[] = [ctx.orgId];
  const where = ["p.org_id = $1::uuid", "p.template_id IS NOT NULL"];
  if (provider) where.push(`p.provider = $${params.push(provider)}`);
  if (systemOnly) where.push("t.is_system_generated");
  return queryRows<any>(
    ctx.s.db,
    `SELECT DISTINCT ON (p.template_id) p.id, p.provider, p.template_id, t.name AS template_name, t.is_system_generated, p.execution_date::text AS execution_date, p.status, p.status_reason,
       p.created_at
     FROM commitment_plans p JOIN commitment_plan_templates t ON t.id = p.template_id AND t.org_id = p.org_id
     WHERE ${where.join(" AND ")}
     ORDER BY p.template_id, p.created_at DESC, p.id`,
    params,
  );
}

export const storedPlansTool = defineTool({
  name: "list_latest_plans",
  title: "Latest stored plans per template",
  description:
    "The most recent stored plan of each template (by default only the built-in Recommended, Balanced and High Savings), as generated by an auto-purchase schedule or on request: status (generated, purchased, not_purchased) and why, execution date, upfront, monthly cost and net savings (in cents: the sums of the plan's items as shown, the same numbers as GET /commitment-plans). Use get_recommendations for plans computed now.",
  scopes: ["templates:read"],
  input: {
    provider: providerEnum.optional().describe("Only this cloud provider."),
    system_templates_only: z.boolean().default(true).describe("Only the three built-in templates (default true)."),
  },
  output: {
    plans: z.array(
      z.object({
        plan_id: z.string(),
        provider: z.string(),
        template_id: z.string(),
        template_name: z.string(),
        is_system_generated: z.boolean(),
        execution_date: z.string().nullable(),
        status: z.string(),
        status_reason: z.string().nullable(),
        total_upfront_cost: z.number(),
        monthly_cost: z.number(),
        monthly_net_savings: z.number(),
        item_count: z.number().int(),
        created_at: z.string(),
      }),
    ),
  },
  async run(ctx, a) {
    const rows = await latestStoredPlans(ctx, a.provider, a.system_templates_only);
    // Totals as REST /commitment-plans shows them: the sums of the items' shown cents.
    const money = await shownItemMoneyOf(ctx.s.db, ctx.orgId, rows.map((r) => r.id));
    const plans = rows
      .map((r) => ({ r, items: money.get(r.id) ?? [] }))
      .map(({ r, items }) => ({
        plan_id: r.id,
        provider: r.provider,
        template_id: r.template_id,
        template_name: r.template_name,
        is_system_generated: Boolean(r.is_system_generated),
        execution_date: r.execution_date ?? null,
        status: r.status,
        status_reason: r.status_reason,
        ...planTotals(items),
        item_count: items.length,
        created_at: new Date(r.created_at).toISOString(),
      }))
      .sort((x, y) => y.created_at.localeCompare(x.created_at));
    return {
      structured: { plans },
      summary: plans.length ? plans.map((p) => `${p.template_name} (${p.provider}): ${p.status} on ${p.created_at.slice(0, 10)}, ${p.monthly_net_savings}/month net savings`).join("; ") + "." : "No stored plans yet.",
    };
  },
});


export const planningTools = [recommendationsTool, generatePlanTool, storedPlansTool, listTemplatesTool, listEstimatesTool, priceEstimateTool];

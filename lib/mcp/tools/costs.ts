/**
 * Cost exploration over the FOCUS billing data (lib/billing/costQuery.ts): a flexible grouped
 * and filtered cost query, the values of a dimension (tags included), and "why did it change?"
 * between two periods.
 */
import * as z from "zod";
import {
  COMPARE_METRICS,
  comparePeriods,
  COST_DIMENSIONS,
  lastCompleteMonth,
  MAX_FILTER_VALUES,
  MAX_FILTERS,
  MAX_GROUP_BY,
  MAX_LIMIT,
  precedingPeriod,
  TAG_KEY_MAX,
  type CostWindow,
  type DimensionDrivers,
  type DriverRow,
} from "../../billing/costQuery.ts";
import { COST_METRICS, exploreCosts, exploreDimensionValues } from "../../billing/costExplorer.ts";
import { ValidationError } from "../../errors.ts";
import { defineTool, isoDate, moneyText, providerEnum, ratio, resolveWindow, windowInput, windowOutput, ymd } from "./common.ts";

const DIMENSIONS_TEXT = `${COST_DIMENSIONS.join(", ")} or tag:<key> (a FOCUS tag, e.g. tag:team; key up to ${TAG_KEY_MAX} characters)`;
const DIMENSION_HELP =
  "provider (aws, azure, gcp); billing_account (payer account / enrollment / billing account id); account (linked account: AWS account, Azure subscription, GCP project; the billing account when the row has none); service (FOCUS ServiceName); service_category (FOCUS ServiceCategory: Compute, Storage, Databases…); region (FOCUS RegionId); resource (FOCUS ResourceId); charge_category (Usage, Purchase, Tax, Credit, Adjustment); commitment (FOCUS CommitmentDiscountId); month (YYYY-MM) and day (YYYY-MM-DD) of the charge (UTC)";

const dimensionName = z.string().min(1).max(TAG_KEY_MAX + 4);
const filterValue = z.union([z.string().max(1024), z.null()]);
const filtersInput = z
  .record(dimensionName, z.union([filterValue, z.array(filterValue).min(1).max(MAX_FILTER_VALUES)]))
  .optional()
  .describe(
    `Only rows matching every filter: an object of dimension → value or list of values (up to ${MAX_FILTER_VALUES}; null matches rows where the dimension is not set, e.g. untagged), at most ${MAX_FILTERS} dimensions, from ${DIMENSIONS_TEXT}. Example: {"tag:team": ["data", "ml"], "provider": "aws"}. Values are exact (case-sensitive); find them with list_dimension_values.`,
  );

const moneyFields = {
  effective_cost: z.number(),
  billed_cost: z.number().optional(),
  list_cost: z.number().optional(),
  ondemand_cost: z.number().optional(),
  commitment_cost: z.number().optional(),
  other_cost: z.number().optional(),
};

export const queryCostsTool = defineTool({
  name: "query_costs",
  title: "Cost query (group, filter)",
  description: `Cloud costs of a window of days grouped by up to ${MAX_GROUP_BY} dimensions and filtered: the assistant's cost explorer for questions like "what did team X spend last month", "top 5 services in May", "cost per region of account Y", "untagged spend". Dimensions: ${DIMENSION_HELP}; and tag:<key> for any FOCUS tag (null = rows without the tag). Each row carries its currency (FOCUS BillingCurrency): rows are also split by currency and amounts in different currencies are never added; totals are per currency. Money: effective_cost = amortized cost (what the usage really cost, upfront fees spread), billed_cost = as invoiced, list_cost = at list prices (0 for charges without one), and the split of effective cost into ondemand_cost (usage not covered by a commitment), commitment_cost (covered usage, unused commitment and commitment fees) and other_cost (tax, credits, adjustments); choose with metric. Rows are sorted by effective cost, largest first, at most limit of them; total_rows counts them all and totals are over all rows (also those left out), per currency. Amounts are in cents, rounded like the allocation reports: per invoice (provider, currency, billing account, month) the cents add up to the invoice's exact amount, each row is the sum of its shown cents, and a filter never changes the cents of the rows it keeps. The window is by charge date (UTC). Use list_dimension_values to find dimension values and tag keys; compare_periods to explain a change between two periods.`,
  scopes: [],
  input: {
    ...windowInput,
    group_by: z.array(dimensionName).max(MAX_GROUP_BY).default([]).describe(`Dimensions of the rows (0 to ${MAX_GROUP_BY}, in this order): ${DIMENSIONS_TEXT}. Empty: one row per currency.`),
    filters: filtersInput,
    metric: z.enum(COST_METRICS).default("all").describe("Money columns: all (default); effective_cost only; billed_cost or list_cost beside effective_cost; split = effective_cost with its on-demand / commitment / other split."),
    limit: z.number().int().min(1).max(MAX_LIMIT).default(100).describe(`Rows returned, largest effective cost first (1-${MAX_LIMIT}).`),
  },
  output: {
    window: windowOutput,
    group_by: z.array(z.string()),
    metric: z.string(),
    rows: z.array(z.object({ currency: z.string(), keys: z.record(z.string(), z.string().nullable()), ...moneyFields })),
    total_rows: z.number().int(),
    truncated: z.boolean(),
    totals: z.array(z.object({ currency: z.string(), rows: z.number().int(), ...moneyFields })),
  },
  async run(ctx, a) {
    const r = await exploreCosts(ctx.s.db, ctx.orgId, ctx.now, a);
    const { window: w, rows, totals } = r;
    const first = rows[0];
    const lead = first && r.group_by.length ? `; largest: ${r.group_by.map((g) => first.keys[g] ?? "(not set)").join(" / ")} ${first.currency} ${first.effective_cost}` : "";
    return {
      structured: r,
      summary: r.total_rows
        ? `Effective (amortized) cost ${moneyText(totals, "effective_cost")} between ${w.start_date} and ${w.end_date}: ${r.total_rows} row(s)${r.group_by.length ? ` by ${r.group_by.join(", ")}` : ""}${r.truncated ? `, ${rows.length} shown` : ""}${lead}.`
        : `No cost between ${w.start_date} and ${w.end_date} matches.`,
    };
  },
});

export const dimensionValuesTool = defineTool({
  name: "list_dimension_values",
  title: "Values of a cost dimension",
  description: `The distinct values of one cost dimension in a window of days, each with its effective (amortized) cost per currency, most costly first: which services, regions, accounts, resources or commitments have cost, which values a tag takes (tag:<key>, e.g. tag:env; null = rows without the tag), or which tag keys exist (dimension tag_keys). Dimensions: ${DIMENSION_HELP}. Use it to find the exact values to filter or group on in query_costs. Amounts are in cents per currency, never added across currencies, rounded as query_costs rounds them (totals = the sums of all values' cents); for tag_keys a row counts toward every key it carries, so no totals are given.`,
  scopes: [],
  input: {
    dimension: dimensionName.describe(`${DIMENSIONS_TEXT}, or tag_keys to list the tag keys.`),
    ...windowInput,
    prefix: z.string().min(1).max(256).optional().describe("Only values starting with this text (case-insensitive)."),
    filters: filtersInput,
    limit: z.number().int().min(1).max(MAX_LIMIT).default(100).describe(`Values returned, most costly first (1-${MAX_LIMIT}).`),
  },
  output: {
    window: windowOutput,
    dimension: z.string(),
    values: z.array(z.object({ value: z.string().nullable(), costs: z.array(z.object({ currency: z.string(), effective_cost: z.number() })) })),
    total_values: z.number().int(),
    truncated: z.boolean(),
    totals: z.array(z.object({ currency: z.string(), effective_cost: z.number() })),
  },
  async run(ctx, a) {
    const r = await exploreDimensionValues(ctx.s.db, ctx.orgId, ctx.now, a);
    const w = r.window;
    const shown = r.values.slice(0, 10).map((v) => v.value ?? "(not set)");
    return {
      structured: r,
      summary: r.total_values
        ? `${r.total_values} value(s) of ${a.dimension} between ${w.start_date} and ${w.end_date}${r.totals.length ? ` (effective cost ${moneyText(r.totals, "effective_cost")})` : ""}: ${shown.join(", ")}${r.total_values > shown.length ? ", …" : ""}.`
        : `No value of ${a.dimension} between ${w.start_date} and ${w.end_date}.`,
    };
  },
});

const driverRow = z.object({
  currency: z.string(),
  provider: z.string(),
  key: z.string().nullable(),
  name: z.string().nullable(),
  baseline: z.number(),
  current: z.number(),
  change: z.number(),
  share_of_change: z.number().nullable(),
});
const dimensionDrivers = z.object({
  top: z.array(driverRow),
  by_currency: z.array(
    z.object({ currency: z.string(), keys: z.number().int(), change: z.number(), top_change: z.number(), rest_change: z.number(), explained_share: z.number().nullable() }),
  ),
});
const commitmentEvent = z.object({
  provider: z.string(),
  commitment_id: z.string(),
  name: z.string().nullable(),
  commitment_type: z.string(),
  starts_at: z.string().nullable(),
  ends_at: z.string().nullable(),
  changes: z.array(z.object({ currency: z.string(), baseline: z.number(), current: z.number(), change: z.number() })),
});

function explicitWindow(now: Date, start: string | undefined, end: string | undefined, what: string): ReturnType<typeof resolveWindow> | null {
  if (!start && !end) return null;
  if (!start || !end) throw new ValidationError(`Give both ${what}_start_date and ${what}_end_date (or neither).`, {});
  return resolveWindow(now, { start_date: start, end_date: end });
}
const asWindow = (w: CostWindow) => ({ ...w, start_date: ymd(w.from), end_date: ymd(w.to) });

export const comparePeriodsTool = defineTool({
  name: "compare_periods",
  title: "Why did cost change? (compare two periods)",
  description:
    "Compares the cloud cost of two periods and explains the change: the totals of each period per currency with the difference, and the drivers, i.e. for each of accounts, services, resources and commitments the keys whose cost changed most (largest absolute change first, per currency) with their share of the total change, plus per currency how much of the change the top keys explain (explained_share) and the rest. A dimension's changes over all its keys add up to the total change to the cent (key null = charges without an account/service/resource, or cost not tied to a commitment for commitments). Also lists the commitments that started or expired between the start of the earlier period and the end of the later one, with the change of their cost. Default: the last complete month (current) against the month before (baseline); give both dates of a period to choose it (a current period alone is compared with the period of the same length, or the same number of whole months, just before it). Windows are by charge date (UTC), end date exclusive. Money in cents in the billing currency, never added across currencies, rounded as query_costs.",
  scopes: [],
  input: {
    current_start_date: isoDate.optional().describe("First day of the current (later) period, YYYY-MM-DD. Default: the first day of last month."),
    current_end_date: isoDate.optional().describe("Day after the current period (exclusive), YYYY-MM-DD. Default: the first day of this month."),
    baseline_start_date: isoDate.optional().describe("First day of the baseline period compared with, YYYY-MM-DD. Default: the period just before the current one."),
    baseline_end_date: isoDate.optional().describe("Day after the baseline period (exclusive), YYYY-MM-DD."),
    metric: z.enum(COMPARE_METRICS).default("effective_cost").describe("effective_cost (amortized, default), billed_cost (as invoiced) or list_cost."),
    top: z.number().int().min(1).max(50).default(10).describe("Drivers listed per dimension and currency (1-50)."),
    provider: providerEnum.optional().describe("Only this cloud provider."),
  },
  output: {
    metric: z.string(),
    baseline: windowOutput,
    current: windowOutput,
    totals: z.array(z.object({ currency: z.string(), baseline: z.number(), current: z.number(), change: z.number(), change_ratio: z.number().nullable() })),
    drivers: z.object({ accounts: dimensionDrivers, services: dimensionDrivers, resources: dimensionDrivers, commitments: dimensionDrivers }),
    commitments_started: z.array(commitmentEvent),
    commitments_expired: z.array(commitmentEvent),
  },
  async run(ctx, a) {
    const current = explicitWindow(ctx.now, a.current_start_date, a.current_end_date, "current") ?? asWindow(lastCompleteMonth(ctx.now));
    const baseline = explicitWindow(ctx.now, a.baseline_start_date, a.baseline_end_date, "baseline") ?? asWindow(precedingPeriod(current));
    const r = await comparePeriods(ctx.s.db, ctx.orgId, { baseline, current, top: a.top, metric: a.metric, provider: a.provider });
    const changeOf = new Map(r.totals.map((t) => [t.currency, t.change]));
    const share = (currency: string, change: number) => {
      const total = changeOf.get(currency) ?? 0;
      return total === 0 ? null : ratio(change / total);
    };
    const dim = (d: DimensionDrivers) => ({
      top: d.top.map((x: DriverRow) => ({ ...x, share_of_change: share(x.currency, x.change) })),
      by_currency: d.by_currency.map((c) => ({ currency: c.currency, keys: c.keys, change: c.change, top_change: c.top_change, rest_change: c.rest_change, explained_share: share(c.currency, c.top_change) })),
    });
    const of = (name: string) => dim(r.drivers.find((d) => d.dimension === name)!);
    const event = (e: (typeof r.commitments_started)[number]) => ({
      provider: e.commitment.provider,
      commitment_id: e.commitment.provider_commitment_id,
      name: e.commitment.name,
      commitment_type: e.commitment.commitment_type,
      starts_at: e.commitment.starts_at,
      ends_at: e.commitment.ends_at,
      changes: e.changes,
    });
    const totals = r.totals.map((t) => ({ ...t, change_ratio: t.baseline === 0 ? null : ratio(t.change / t.baseline) }));
    const drivers = { accounts: of("account"), services: of("service"), resources: of("resource"), commitments: of("commitment") };
    const topService = drivers.services.top[0];
    return {
      structured: {
        metric: r.metric,
        baseline: { start_date: baseline.start_date, end_date: baseline.end_date },
        current: { start_date: current.start_date, end_date: current.end_date },
        totals,
        drivers,
        commitments_started: r.commitments_started.map(event),
        commitments_expired: r.commitments_expired.map(event),
      },
      summary: totals.length
        ? `${r.metric} ${baseline.start_date}..${baseline.end_date} → ${current.start_date}..${current.end_date}: ${totals.map((t) => `${t.currency} ${t.baseline} → ${t.current} (${t.change >= 0 ? "+" : ""}${t.change})`).join(", ")}${topService ? `; largest service change: ${topService.key ?? "(none)"} ${topService.currency} ${topService.change >= 0 ? "+" : ""}${topService.change}` : ""}${r.commitments_started.length || r.commitments_expired.length ? `; ${r.commitments_started.length} commitment(s) started, ${r.commitments_expired.length} expired` : ""}.`
        : "No cost in either period.",
    };
  },
});

export const costTools = [queryCostsTool, dimensionValuesTool, comparePeriodsTool];

/**
 * Coverage and utilization of commitments, read from the allocation reports' own queries (one
 * home for the allocation rule): per month, the commitment side from commitment_cost_by_account
 * / commitment_cost_by_service (Used cost plus the pro-rata share of Unused cost, covered
 * on-demand cost, savings) and the uncovered side from the cloud bill reports' ondemand_cost
 * (every service, also those no commitment touches). The commitment grain, which no report has,
 * reads lib/billing/queries.ts `coverageAndUtilization`. The figures come from
 * lib/reports/coverage.ts (shared with the REST `/commitment-summary`); this tool adds the limit.
 */
import * as z from "zod";
import { centsByCurrency, coverageReport, coverageShown, MONTH_RE, MONTH_STATUSES, naturalOrder, resolveMonths, type CoverageAcc } from "../../reports/coverage.ts";
import { defineTool, moneyText, providerEnum } from "./common.ts";

const figures = {
  commitment_used_cost: z.number(),
  commitment_unused_allocated_cost: z.number(),
  commitment_cost: z.number(),
  covered_ondemand_cost: z.number(),
  ondemand_cost: z.number(),
  savings: z.number(),
  coverage: z.number().nullable(),
  utilization: z.number().nullable(),
};

const coverageRow = z.object({
  month: z.string(),
  provider: z.string(),
  currency: z.string(),
  key: z.string().nullable(),
  account_name: z.string().nullable(),
  ...figures,
});
type CoverageRow = z.infer<typeof coverageRow>;

const bySize = (r: CoverageAcc) => r.cents.commitment_cost + r.cents.ondemand_cost + r.cents.covered_ondemand_cost;

export const coverageUtilizationTool = defineTool({
  name: "get_coverage_and_utilization",
  title: "Commitment coverage and utilization",
  description: [
    "Commitment coverage and utilization per month (the months of the window, YYYY-MM; default the current month and the two before it), grouped by linked account, service, month (`period`) or commitment, each row in one billing currency (amounts in different currencies are never added; totals are per currency).",
    "Figures, as the allocation reports show them (money in cents): commitment_used_cost (EffectiveCost of the commitment-covered usage), commitment_unused_allocated_cost (the commitments' Unused cost spread over the accounts/services that used each commitment, pro rata to their used cost, as the reports do; kept on the holding account only when nobody used the commitment), commitment_cost = used + unused allocated, covered_ondemand_cost (on-demand equivalent, list price, of the covered usage), savings = covered_ondemand_cost − commitment_used_cost, and ondemand_cost = the cloud bill reports' ondemand_cost column: EffectiveCost of every Usage charge without a commitment (ChargeCategory Usage, no CommitmentDiscountId), of ALL services and pricing categories, including services no commitment covers (e.g. RDS on demand when only EC2 is reserved) and spot; purchases, tax, credits and support are not in it.",
    "coverage = covered_ondemand_cost ÷ (covered_ondemand_cost + ondemand_cost) and utilization = commitment_used_cost ÷ (commitment_used_cost + commitment_unused_allocated_cost), 0-1 to 6 decimals, from the cents shown (null when the denominator is 0).",
    "Sources (billing periods, i.e. invoice months): group_by=account reads commitment_cost_by_account + cloud_bill_by_account (its commitment columns equal that report per account and month, to the cent); service reads commitment_cost_by_service + cloud_bill_by_service; period sums the account rows per month, provider and currency; commitment has no report (per commitment id, by charge period month, its own Unused cost, no on-demand and no coverage). A month not closed yet reads cloud_bill_by_account's query live (the report itself shows it only once the month is closed).",
    "Totals: per currency, the sums of all shown rows (also those past the limit), ratios derived from the summed cents.",
  ].join(" "),
  scopes: [],
  input: {
    group_by: z.enum(["period", "account", "service", "commitment"]).default("period").describe("period = calendar month (key YYYY-MM); account = linked account (key account_id); service = FOCUS ServiceName; commitment = provider commitment id."),
    provider: providerEnum.optional().describe("Only this cloud provider."),
    start_month: z.string().regex(MONTH_RE, "a month YYYY-MM").optional().describe("First month (YYYY-MM, inclusive). Default: two months before end_month."),
    end_month: z.string().regex(MONTH_RE, "a month YYYY-MM").optional().describe("Last month (YYYY-MM, inclusive; not after the current month). Default: the current month."),
    limit: z.number().int().min(1).max(1000).default(200).describe("Maximum rows returned (1-1000): over it, the rows with the largest commitment + on-demand cost are kept; totals still cover every row."),
  },
  output: {
    window: z.object({ start_month: z.string(), end_month: z.string() }),
    group_by: z.string(),
    months: z.array(z.object({ month: z.string(), status: z.enum(MONTH_STATUSES) })),
    totals: z.array(z.object({ currency: z.string(), ...figures })),
    total_rows: z.number().int(),
    truncated: z.boolean(),
    rows: z.array(coverageRow),
  },
  async run(ctx, a) {
    const months = resolveMonths(ctx.now, { start: a.start_month, end: a.end_month }, { startField: "start_month", endField: "end_month", defaultMonths: 3 });
    const { months: statuses, rows: all } = await coverageReport(ctx.s, ctx.orgId, ctx.now, { groupBy: a.group_by, provider: a.provider, months });
    const coverageApplies = a.group_by !== "commitment";
    const view = (r: CoverageAcc): CoverageRow => ({ month: r.month, provider: r.provider, currency: r.currency, key: r.key, account_name: r.account_name, ...coverageShown(r.cents, coverageApplies) });
    const totals = centsByCurrency(all).map((t) => ({ currency: t.currency, ...coverageShown(t.cents, coverageApplies) }));
    const kept =
      all.length <= a.limit
        ? all
        : a.group_by === "period"
          ? all.slice(-a.limit)
          : [...all].sort((x, y) => bySize(y) - bySize(x) || naturalOrder(x, y)).slice(0, a.limit).sort(naturalOrder);
    const pct = (v: number | null) => (v === null ? "n/a" : `${(v * 100).toFixed(1)}%`);
    return {
      structured: {
        window: { start_month: months[0]!, end_month: months[months.length - 1]! },
        group_by: a.group_by,
        months: statuses,
        totals,
        total_rows: all.length,
        truncated: kept.length < all.length,
        rows: kept.map(view),
      },
      summary: totals.length
        ? `${months[0]} to ${months[months.length - 1]}: ${totals.map((t) => `${t.currency}: coverage ${pct(t.coverage)}, utilization ${pct(t.utilization)}, commitment cost ${t.commitment_cost}, on-demand ${t.ondemand_cost}`).join("; ")}; savings ${moneyText(totals, "savings")}.`
        : `No commitment or on-demand usage from ${months[0]} to ${months[months.length - 1]}.`,
    };
  },
});

export const coverageTools = [coverageUtilizationTool];

/** Coverage and utilization of commitments, from the FOCUS billing data (lib/billing). */
import * as z from "zod";
import { coverageAndUtilization, type CoverageUtilizationRow } from "../../billing/queries.ts";
import { cents, defineTool, providerEnum, ratio, resolveWindow, windowInput, windowOutput } from "./common.ts";

const coverageRow = z.object({
  key: z.string().nullable(),
  provider: z.string(),
  used_cost: z.number(),
  unused_cost: z.number(),
  utilization: z.number().nullable(),
  covered_ondemand_cost: z.number(),
  uncovered_ondemand_cost: z.number(),
  coverage: z.number().nullable(),
  savings: z.number(),
});

function totalsOf(rows: CoverageUtilizationRow[]) {
  const used = rows.reduce((a, r) => a + r.used_cost, 0);
  const unused = rows.reduce((a, r) => a + r.unused_cost, 0);
  const covered = rows.reduce((a, r) => a + r.covered_ondemand_cost, 0);
  const uncovered = rows.reduce((a, r) => a + r.uncovered_ondemand_cost, 0);
  return {
    used_cost: cents(used),
    unused_cost: cents(unused),
    utilization: ratio(used + unused !== 0 ? used / (used + unused) : null),
    covered_ondemand_cost: cents(covered),
    uncovered_ondemand_cost: cents(uncovered),
    coverage: ratio(covered + uncovered !== 0 ? covered / (covered + uncovered) : null),
    savings: cents(rows.reduce((a, r) => a + r.savings, 0)),
  };
}

export const coverageUtilizationTool = defineTool({
  name: "get_coverage_and_utilization",
  title: "Commitment coverage and utilization",
  description:
    "Commitment coverage (share of eligible on-demand-equivalent usage covered by commitments) and utilization (used ÷ (used + unused) commitment cost), with savings, for a window of days, grouped by month (`period`), linked account, service or commitment. Ratios are 0-1; money is in the billing currency. Eligible usage = on-demand usage of services that commitments covered in the window.",
  scopes: [],
  input: {
    group_by: z.enum(["period", "account", "service", "commitment"]).default("period").describe("period = calendar month (YYYY-MM); account; service; commitment (provider commitment id)."),
    provider: providerEnum.optional().describe("Only this cloud provider."),
    ...windowInput,
  },
  output: {
    window: windowOutput,
    group_by: z.string(),
    totals: coverageRow.omit({ key: true, provider: true }),
    rows: z.array(coverageRow),
  },
  async run(ctx, a) {
    const w = resolveWindow(ctx.now, a);
    const rows = await coverageAndUtilization(ctx.s.db, ctx.orgId, { provider: a.provider, from: w.from, to: w.to, groupBy: a.group_by });
    // Totals always come from the month grouping: every usage row counts there exactly once
    // (the commitment grouping leaves out uncovered usage).
    const totalRows = a.group_by === "period" ? rows : await coverageAndUtilization(ctx.s.db, ctx.orgId, { provider: a.provider, from: w.from, to: w.to, groupBy: "period" });
    const totals = totalsOf(totalRows);
    return {
      structured: {
        window: { start_date: w.start_date, end_date: w.end_date },
        group_by: a.group_by,
        totals,
        rows: rows.map((r) => ({
          key: r.key,
          provider: r.provider,
          used_cost: cents(r.used_cost),
          unused_cost: cents(r.unused_cost),
          utilization: ratio(r.utilization),
          covered_ondemand_cost: cents(r.covered_ondemand_cost),
          uncovered_ondemand_cost: cents(r.uncovered_ondemand_cost),
          coverage: ratio(r.coverage),
          savings: cents(r.savings),
        })),
      },
      summary:
        totalRows.length === 0
          ? `No commitment usage between ${w.start_date} and ${w.end_date}.`
          : `Coverage ${totals.coverage === null ? "n/a" : `${(totals.coverage * 100).toFixed(1)}%`}, utilization ${totals.utilization === null ? "n/a" : `${(totals.utilization * 100).toFixed(1)}%`}, savings ${totals.savings} between ${w.start_date} and ${w.end_date}.`,
    };
  },
});

export const coverageTools = [coverageUtilizationTool];

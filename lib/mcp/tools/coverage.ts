/** Coverage and utilization of commitments, from the FOCUS billing data (lib/billing). */
import * as z from "zod";
import { coverageAndUtilization, type CoverageUtilizationRow } from "../../billing/queries.ts";
import { fromCents, toCents } from "../../pricing/display.ts";
import { defineTool, providerEnum, ratio, resolveWindow, windowInput, windowOutput } from "./common.ts";

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

/**
 * Money as shown (cents) and the ratios derived from those shown parts: utilization = used ÷
 * (used + unused), coverage = covered ÷ (covered + uncovered), null when the denominator shows 0.
 */
function shownFigures(c: { used: number; unused: number; covered: number; uncovered: number; savings: number }) {
  return {
    used_cost: fromCents(c.used),
    unused_cost: fromCents(c.unused),
    utilization: c.used + c.unused !== 0 ? ratio(c.used / (c.used + c.unused)) : null,
    covered_ondemand_cost: fromCents(c.covered),
    uncovered_ondemand_cost: fromCents(c.uncovered),
    coverage: c.covered + c.uncovered !== 0 ? ratio(c.covered / (c.covered + c.uncovered)) : null,
    savings: fromCents(c.savings),
  };
}

const centsOf = (r: CoverageUtilizationRow) => ({
  used: toCents(r.used_cost),
  unused: toCents(r.unused_cost),
  covered: toCents(r.covered_ondemand_cost),
  uncovered: toCents(r.uncovered_ondemand_cost),
  savings: toCents(r.savings),
});

/** One row as shown. */
const rowView = (r: CoverageUtilizationRow) => ({ key: r.key, provider: r.provider, ...shownFigures(centsOf(r)) });

/** Totals: the sums of the rows as shown (in integer cents), ratios derived from those sums. */
function totalsOf(rows: CoverageUtilizationRow[]) {
  const t = { used: 0, unused: 0, covered: 0, uncovered: 0, savings: 0 };
  for (const r of rows) {
    const c = centsOf(r);
    t.used += c.used;
    t.unused += c.unused;
    t.covered += c.covered;
    t.uncovered += c.uncovered;
    t.savings += c.savings;
  }
  return shownFigures(t);
}

export const coverageUtilizationTool = defineTool({
  name: "get_coverage_and_utilization",
  title: "Commitment coverage and utilization",
  description:
    "Commitment coverage (share of eligible on-demand-equivalent usage covered by commitments) and utilization (used ÷ (used + unused) commitment cost), with savings, for a window of days, grouped by month (`period`), linked account, service or commitment. Ratios are 0-1 (6 decimals), derived from the money shown beside them; money is in the billing currency, rounded to cents. The totals cover all of the window's usage, whatever the grouping: they are the sums of its monthly rows as group_by=period shows them (grouped by commitment, the rows leave out uncovered usage; the totals do not). Eligible usage = on-demand usage of services that commitments covered in the window.",
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
        rows: rows.map(rowView),
      },
      summary:
        totalRows.length === 0
          ? `No commitment usage between ${w.start_date} and ${w.end_date}.`
          : `Coverage ${totals.coverage === null ? "n/a" : `${(totals.coverage * 100).toFixed(1)}%`}, utilization ${totals.utilization === null ? "n/a" : `${(totals.utilization * 100).toFixed(1)}%`}, savings ${totals.savings} between ${w.start_date} and ${w.end_date}.`,
    };
  },
});

export const coverageTools = [coverageUtilizationTool];

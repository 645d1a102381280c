/**
 * Allocation reports (lib/reports) through the assistant: the catalog, a report's periods and
 * one month's rows, with the same code, sources (frozen snapshot once finalized, live rows
 * before), filters and errors as the REST API `/beta/v1/org/{org_id}/allocation-reports…`.
 */
import * as z from "zod";
import { REPORTS } from "../../reports/catalog.ts";
import { DownloadsBusyError, downloadLimits, downloadSlots } from "../../reports/downloads.ts";
import { listReportDescriptors, openReport, parseReportQuery, reportPeriods, resolveReport, type ReportRow } from "../../reports/service.ts";
import { defineTool, moneyText, providerEnum, totalsByCurrency } from "./common.ts";

const REPORT_TYPES = REPORTS.map((r) => r.report_type);
/** What a report's descriptor lists besides its filters (the fetch's own params). */
const PERIOD_PARAMS = new Set(["year", "month", "format"]);

const reportTypeInput = z
  .string()
  .min(1)
  .max(100)
  .describe(`The report (list_allocation_reports): ${REPORT_TYPES.join(", ")}. Chargeback of insured-commitment premiums by child organization: premiums_and_rebates_by_child_org.`);

const field = z.object({ name: z.string(), type: z.string(), description: z.string() });

export const listReportsTool = defineTool({
  name: "list_allocation_reports",
  title: "Allocation report catalog",
  description:
    "The allocation reports this organization can read (the REST catalog GET /allocation-reports): for each its report_type, name, description, category (premiums_and_rebates, commitment, cloud_bill), row grain (monthly or daily rows), update cadence (daily: refreshed daily while the month is open; on_period_close: produced only once the month's invoice is closed and frozen; static), the filters it accepts and its output fields (the columns of its rows, money columns in the row's billing_currency). Use it to pick the report that answers a question, then list_report_periods and get_allocation_report. Commitment cost per linked account (chargeback of commitments, unused share included) = commitment_cost_by_account; per service = commitment_cost_by_service; the invoice per account/service/day/resource = cloud_bill_*; chargeback of insured-commitment premiums and rebates to child organizations = premiums_and_rebates_by_child_org (per account: premiums_and_rebates_by_account).",
  scopes: ["reports:read"],
  input: {},
  output: {
    count: z.number().int(),
    reports: z.array(
      z.object({
        report_type: z.string(),
        name: z.string(),
        description: z.string(),
        category: z.string(),
        row_grain: z.string(),
        update_cadence: z.string(),
        filters: z.array(z.object({ name: z.string(), description: z.string() })),
        output_fields: z.array(field),
        money_fields: z.array(z.string()),
      }),
    ),
  },
  async run(ctx) {
    const descriptors = await listReportDescriptors(ctx.s.db, ctx.orgId);
    const reports = descriptors.map((d) => ({
      report_type: d.report_type,
      name: d.name,
      description: d.description,
      category: d.category,
      row_grain: d.row_grain,
      update_cadence: d.update_cadence,
      filters: d.params.filter((p) => !PERIOD_PARAMS.has(p.name)).map((p) => ({ name: p.name, description: p.description })),
      output_fields: d.output_fields.map((f) => ({ ...f })),
      money_fields: REPORTS.find((r) => r.report_type === d.report_type)!.money,
    }));
    return { structured: { count: reports.length, reports }, summary: `${reports.length} allocation report(s): ${reports.map((r) => r.report_type).join(", ")}.` };
  },
});

export const listReportPeriodsTool = defineTool({
  name: "list_report_periods",
  title: "Periods of an allocation report",
  description:
    "The months a report can be fetched for (REST GET /allocation-reports/{type}/periods), most recent first, each `finalized` (the month's invoice is closed and its rows frozen: they will not change) or `in_progress` (rows still change as billing data arrives). on_period_close reports (cloud_bill_by_account, premiums_and_rebates_*) list finalized months only. With provider, only that provider's billing periods count.",
  scopes: ["reports:read"],
  input: {
    report_type: reportTypeInput,
    provider: providerEnum.optional().describe("Only this cloud provider's billing periods."),
  },
  output: {
    report_type: z.string(),
    provider: z.string().nullable(),
    periods: z.array(z.object({ month: z.string(), status: z.enum(["finalized", "in_progress"]) })),
  },
  async run(ctx, a) {
    const def = await resolveReport(ctx.s.db, ctx.orgId, a.report_type);
    const q = parseReportQuery(def, a.provider ? { provider: a.provider } : {}, false);
    const periods = (await reportPeriods(ctx.s.db, ctx.orgId, def, q, ctx.now)).map((p) => ({ month: `${p.year}-${String(p.month).padStart(2, "0")}`, status: p.status }));
    const finalized = periods.filter((p) => p.status === "finalized").map((p) => p.month);
    return {
      structured: { report_type: def.report_type, provider: a.provider ?? null, periods },
      summary: periods.length
        ? `${def.report_type}: ${periods.length} period(s); finalized: ${finalized.length ? finalized.join(", ") : "none"}; in progress: ${periods.filter((p) => p.status === "in_progress").map((p) => p.month).join(", ") || "none"}.`
        : `${def.report_type} has no periods yet.`,
    };
  },
});

const filterText = z.string().min(1).max(512);

/** A row's money columns (null counts as 0) and its currency, for totalsByCurrency. */
const moneyOf = (r: ReportRow, money: string[]) => ({ currency: String(r.billing_currency ?? "USD"), ...Object.fromEntries(money.map((m) => [m, Number(r[m] ?? 0)])) }) as { currency: string } & Record<string, number>;

const cell = z.union([z.string(), z.number(), z.boolean(), z.null()]);

export const getReportTool = defineTool({
  name: "get_allocation_report",
  title: "Allocation report month",
  description:
    "One month of an allocation report: its rows exactly as the REST API returns them (GET /allocation-reports/{type}?year=&month=; money in each row's billing_currency, rounded to cents, rows in the report's order), one page at a time (limit/offset), with total_rows, truncated, period_status (finalized, in_progress, or null with no rows for an on_period_close report whose month has not closed yet), totals per currency of the report's money columns (sums of the shown cents of ALL rows under the filters, not only the returned page; currencies are never added together; empty for reports without billing_currency) and csv_url, the REST CSV download of the same month and filters (needs the caller's API credentials). Use list_allocation_reports for the types and list_report_periods for the months. Examples: each linked account's commitment cost with its share of unused commitments = commitment_cost_by_account; chargeback of insured-commitment premiums to child organizations = premiums_and_rebates_by_child_org; the AWS bill per service = cloud_bill_by_service with provider=aws. A filter the report does not have, an unknown report or a month not available is an error (as in REST).",
  scopes: ["reports:read"],
  input: {
    report_type: reportTypeInput,
    month: z.string().regex(/^\d{4}-\d{2}$/, "a month YYYY-MM").describe("The month, YYYY-MM (e.g. 2026-05)."),
    provider: providerEnum.optional().describe("Only this cloud provider."),
    account_id: filterText.optional().describe("Only this linked account (reports with account_id)."),
    billing_account_id: filterText.optional().describe("Only accounts of this billing (payer) account (commitment_cost_by_account, cloud_bill_by_account)."),
    service_name: filterText.optional().describe("Only this service, FOCUS ServiceName (reports with service_name)."),
    child_org_id: filterText.optional().describe("Only this child organization, UUID (premiums_and_rebates_by_child_org)."),
    limit: z.number().int().min(1).max(1000).default(200).describe("Rows returned (1-1000)."),
    offset: z.number().int().min(0).max(10_000_000).default(0).describe("Rows skipped first (paging)."),
  },
  output: {
    report_type: z.string(),
    month: z.string(),
    period_status: z.enum(["finalized", "in_progress"]).nullable(),
    filters: z.record(z.string(), z.string()),
    total_rows: z.number().int(),
    returned_rows: z.number().int(),
    offset: z.number().int(),
    truncated: z.boolean(),
    money_fields: z.array(z.string()),
    totals: z.array(z.looseObject({ currency: z.string() })),
    csv_url: z.string(),
    note: z.string().nullable(),
    rows: z.array(z.record(z.string(), cell)),
  },
  async run(ctx, a) {
    const [year, month] = a.month.split("-");
    const filters: Record<string, string> = {};
    for (const k of ["provider", "account_id", "billing_account_id", "service_name", "child_org_id"] as const) if (a[k] !== undefined) filters[k] = a[k]!;
    const query = { year: String(Number(year)), month: String(Number(month)), ...filters };
    // The fetch the REST API serves (its 400/404 before any row is read), then one of its download slots.
    const opened = await openReport(ctx.s.handle, ctx.orgId, a.report_type, query, ctx.now, { reader: ctx.s.reportReader, queryTimeoutMs: ctx.s.config.reportQueryTimeoutSeconds * 1000 });
    const limits = downloadLimits(ctx.s.config, ctx.s.handle);
    const release = await downloadSlots(ctx.s.handle).acquire(limits.concurrency, limits.queueTimeoutMs);
    if (!release) throw new DownloadsBusyError(5);
    const def = opened.def;
    const withCurrency = def.output_fields.some((f) => f.name === "billing_currency");
    const page: ReportRow[] = [];
    const batchTotals: ({ currency: string } & Record<string, number>)[] = [];
    let total = 0;
    try {
      await opened.forEachBatch((rows) => {
        for (const r of rows) {
          if (total >= a.offset && page.length < a.limit) page.push(r);
          total++;
        }
        // Totals of every row per currency in cents: each batch's, then the sum of the batches' (exact: they are cents).
        if (withCurrency && def.money.length) batchTotals.push(...totalsByCurrency(rows.map((r) => moneyOf(r, def.money)), def.money));
      });
    } finally {
      release();
    }
    const totals = batchTotals.length ? totalsByCurrency(batchTotals, def.money) : [];
    const monthText = `${opened.year}-${String(opened.month).padStart(2, "0")}`;
    const params = new URLSearchParams({ year: String(opened.year), month: String(opened.month), format: "csv", ...filters });
    const csvUrl = `${ctx.s.config.publicUrl}/beta/v1/org/${ctx.orgId}/allocation-reports/${def.report_type}?${params}`;
    const note =
      opened.periodStatus === null
        ? `${def.report_type} is produced only once the month's invoice has closed and been frozen (update cadence on_period_close): ${monthText} has no rows yet.`
        : null;
    const mainMoney = def.money.find((m) => ["commitment_cost", "total_cost", "premiums"].includes(m)) ?? def.money[0];
    return {
      structured: {
        report_type: def.report_type,
        month: monthText,
        period_status: opened.periodStatus,
        filters,
        total_rows: total,
        returned_rows: page.length,
        offset: a.offset,
        truncated: a.offset + page.length < total,
        money_fields: def.money,
        totals,
        csv_url: csvUrl,
        note,
        rows: page,
      },
      summary:
        note ??
        `${def.report_type} ${monthText} (${opened.periodStatus}): ${total} row(s), ${page.length} returned from offset ${a.offset}${mainMoney && totals.length ? `; ${mainMoney} ${moneyText(totals, mainMoney)}` : ""}.`,
    };
  },
});

export const reportTools = [listReportsTool, listReportPeriodsTool, getReportTool];

/**
 * Report months as MCP resources: `commitops://reports/{report_type}/{YYYY-MM}` is the month's
 * rows as the REST API answers them in JSON (the same `reportRows` over the same sources:
 * frozen snapshot once finalized, live rows before). Listed: the most recent periods of each
 * report the organization sees. Needs `reports:read`, like the REST reports.
 */
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import type { Principal } from "../auth/principal.ts";
import { AppError } from "../errors.ts";
import { findReport } from "../reports/catalog.ts";
import { DownloadsBusyError, downloadLimits, downloadSlots } from "../reports/downloads.ts";
import { listReportDescriptors, openReport, reportPeriods, type ReportRow } from "../reports/service.ts";
import type { ToolContext } from "./tools/common.ts";

export const REPORT_URI_PREFIX = "commitops://reports/";
/** Periods listed per report in resources/list (older months stay readable through the template). */
const LISTED_PERIODS_PER_REPORT = 3;
/**
 * Rows one resource read returns at most: a resource is read whole into one JSON-RPC answer, so a
 * month past this is cut (`truncated`, `total_rows`) and the rest is for get_allocation_report's
 * paging or the CSV download (`csv_url`).
 */
export const RESOURCE_MAX_ROWS = 5000;
/** MCP's "resource not found" code (specification, server/resources: error handling). */
const RESOURCE_NOT_FOUND = -32002;

export const REPORT_RESOURCE_TEMPLATE = {
  uriTemplate: `${REPORT_URI_PREFIX}{report_type}/{month}`,
  name: "allocation-report-month",
  title: "Allocation report month",
  description: `One month (YYYY-MM) of an allocation report as JSON {report_type, year, month, period_status, rows}: the rows the REST API returns, money in each row's billing currency, rounded to cents. report_type is one of list_allocation_reports' types. At most ${RESOURCE_MAX_ROWS} rows: a longer month says truncated, total_rows and csv_url (the whole month as CSV).`,
  mimeType: "application/json",
};

export function reportResourcesAllowed(principal: Principal): boolean {
  return principal.scopes.includes("reports:read");
}

const uriOf = (type: string, year: number, month: number) => `${REPORT_URI_PREFIX}${type}/${year}-${String(month).padStart(2, "0")}`;

export async function listReportResources(ctx: ToolContext) {
  const out = [];
  for (const d of await listReportDescriptors(ctx.s.db, ctx.orgId)) {
    const def = findReport(d.report_type)!;
    const periods = (await reportPeriods(ctx.s.db, ctx.orgId, def, { filters: {} }, ctx.now)).slice(0, LISTED_PERIODS_PER_REPORT);
    for (const p of periods) {
      const month = `${p.year}-${String(p.month).padStart(2, "0")}`;
      out.push({
        uri: uriOf(d.report_type, p.year, p.month),
        name: `${d.report_type}-${month}`,
        title: `${d.name}, ${month} (${p.status === "finalized" ? "finalized" : "in progress"})`,
        description: d.description,
        mimeType: "application/json",
      });
    }
  }
  return out;
}

export async function readReportResource(ctx: ToolContext, uri: string) {
  const m = /^commitops:\/\/reports\/([a-z0-9_]{1,64})\/(\d{4})-(\d{2})$/.exec(uri);
  if (!m) throw new McpError(ErrorCode.InvalidParams, `Unknown resource ${uri.slice(0, 200)}: report months are ${REPORT_RESOURCE_TEMPLATE.uriTemplate} with month YYYY-MM.`);
  const [, type, year, month] = m;
  try {
    // As the REST fetch and get_allocation_report: its 400/404 first, then one of the download slots.
    const opened = await openReport(ctx.s.handle, ctx.orgId, type!, { year, month }, ctx.now, {
      reader: ctx.s.reportReader,
      queryTimeoutMs: ctx.s.config.reportQueryTimeoutSeconds * 1000,
    });
    const limits = downloadLimits(ctx.s.config, ctx.s.handle);
    const release = await downloadSlots(ctx.s.handle).acquire(limits.concurrency, limits.queueTimeoutMs);
    if (!release) throw new DownloadsBusyError(5);
    const rows: ReportRow[] = [];
    let total = 0;
    try {
      await opened.forEachBatch((batch) => {
        for (const r of batch) if (total++ < RESOURCE_MAX_ROWS) rows.push(r);
      });
    } finally {
      release();
    }
    const doc: Record<string, unknown> = { report_type: type, year: opened.year, month: opened.month, period_status: opened.periodStatus, rows };
    if (total > rows.length) {
      const q = new URLSearchParams({ year: String(opened.year), month: String(opened.month), format: "csv" });
      Object.assign(doc, { truncated: true, total_rows: total, csv_url: `${ctx.s.config.publicUrl}/beta/v1/org/${ctx.orgId}/allocation-reports/${type}?${q}` });
    }
    return { contents: [{ uri: uriOf(type!, opened.year, opened.month), mimeType: "application/json", text: JSON.stringify(doc) }] };
  } catch (e) {
    // Unknown report, hidden report or a month without data: "not found" with the service's own words.
    if (e instanceof AppError && (e.status === 404 || e.status === 400)) throw new McpError(e.status === 404 ? RESOURCE_NOT_FOUND : ErrorCode.InvalidParams, e.message, { uri });
    throw e;
  }
}

import { t } from "elysia";
import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { pageOfArray, pageQueryOf, pagedList, PageQueryFields } from "../../../../../../lib/http/paging.ts";
import { listReportDescriptors, openReport, parseReportQuery, reportDownload, reportPeriods, resolveReport } from "../../../../../../lib/reports/service.ts";
import { servedAlsoAs } from "../../../../../../lib/http/openapiComponents.ts";
import { ALLOCATION_REPORT_CSV, AllocationReport, AllocationReportDescriptor, PeriodsQuery, ReportPeriod, ReportQuery } from "./model.ts";

const tags = ["Allocation reports"];
const TypeParams = t.Object({ org_id: t.String(), report_type: t.String() });

/**
 * Allocation reports (SPEC "Allocation reports"). Query params depend on the report, so they
 * are validated by lib/reports against the report's descriptor (400 naming the param).
 */
export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix)
    .get(
      "",
      async (ctx) => pagedList(ctx, s.config.publicUrl, async (p) => pageOfArray(await listReportDescriptors(s.db, ctx.principal.orgId), p)),
      { scope: "reports:read", query: t.Object(PageQueryFields), response: { 200: t.Array(AllocationReportDescriptor) }, detail: { tags, summary: "The allocation reports available to this organization" } },
    )
    .get(
      "/:report_type",
      async ({ principal, params, query, request }) => {
        const opened = await openReport(s.handle, principal.orgId, params.report_type, query as Record<string, unknown>, s.now(), {
          reader: s.reportReader,
          queryTimeoutMs: s.config.reportQueryTimeoutSeconds * 1000,
          signal: request.signal,
        });
        return reportDownload(s, principal.orgId, opened);
      },
      {
        scope: "reports:read",
        params: TypeParams,
        query: ReportQuery,
        response: { 200: servedAlsoAs(AllocationReport, ALLOCATION_REPORT_CSV) },
        detail: { tags, summary: "Rows of one report month: JSON {report_type, year, month, period_status, rows} or CSV (format=csv)" },
      },
    )
    .get(
      "/:report_type/periods",
      async ({ principal, params, query, request, set }) => {
        const def = await resolveReport(s.db, principal.orgId, params.report_type);
        const { page, page_size, ...filters } = query as Record<string, unknown>;
        const q = parseReportQuery(def, filters, false);
        const paging = pageQueryOf({ page, page_size });
        return pagedList({ request, set, query: paging }, s.config.publicUrl, async (p) => pageOfArray(await reportPeriods(s.db, principal.orgId, def, q, s.now()), p));
      },
      { scope: "reports:read", params: TypeParams, query: PeriodsQuery, response: { 200: t.Array(ReportPeriod) }, detail: { tags, summary: "Available periods of a report, most recent first ({year, month, status})" } },
    ),
);

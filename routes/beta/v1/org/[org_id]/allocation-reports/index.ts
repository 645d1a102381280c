import { t } from "elysia";
import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { requireScope } from "../../../../../../lib/auth/guard.ts";
import { listReportDescriptors, openReport, parseReportQuery, reportPeriods, reportResponse, resolveReport } from "../../../../../../lib/reports/service.ts";

const tags = ["Allocation reports"];
const security = [{ bearer: [] }];
const TypeParams = t.Object({ org_id: t.String(), report_type: t.String() });
/** For the OpenAPI document only: lib/reports validates every param against the report (400). */
const ReportQuery = t.Object(
  {
    year: t.Optional(t.String({ description: "Calendar year, e.g. 2026 (required)" })),
    month: t.Optional(t.String({ description: "Calendar month 1–12 (required)" })),
    format: t.Optional(t.String({ description: "json (default) or csv" })),
    provider: t.Optional(t.String({ description: "aws, azure or gcp" })),
  },
  { additionalProperties: true, description: "Plus the report's own params from its descriptor (account_id, service_name, …)" },
);

/**
 * Allocation reports (SPEC "Allocation reports"). Query params depend on the report, so they
 * are validated by lib/reports against the report's descriptor (400 naming the param).
 */
export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix)
    .get(
      "",
      async ({ principal }) => {
        requireScope(principal, "reports:read");
        return listReportDescriptors(s.db, principal.orgId);
      },
      { detail: { tags, security, summary: "The allocation reports available to this organization" } },
    )
    .get(
      "/:report_type",
      async ({ principal, params, query }) => {
        requireScope(principal, "reports:read");
        const opened = await openReport(s.handle, principal.orgId, params.report_type, query as Record<string, unknown>, s.now());
        return reportResponse(opened, {}, (e) =>
          s.log.error("report stream failed", { report_type: params.report_type, org_id: principal.orgId, error: e instanceof Error ? e.message : String(e) }),
        );
      },
      {
        params: TypeParams,
        query: ReportQuery,
        detail: { tags, security, summary: "Rows of one report month: JSON {report_type, year, month, period_status, rows} or CSV (format=csv)" },
      },
    )
    .get(
      "/:report_type/periods",
      async ({ principal, params, query }) => {
        requireScope(principal, "reports:read");
        const def = await resolveReport(s.db, principal.orgId, params.report_type);
        const q = parseReportQuery(def, query as Record<string, unknown>, false);
        return reportPeriods(s.db, principal.orgId, def, q.provider, s.now());
      },
      { params: TypeParams, detail: { tags, security, summary: "Available periods of a report, most recent first ({year, month, status})" } },
    ),
);

import { t } from "elysia";
import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { listReportDescriptors, openReport, parseReportQuery, reportDownload, reportPeriods, resolveReport } from "../../../../../../lib/reports/service.ts";

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
        return listReportDescriptors(s.db, principal.orgId);
      },
      { scope: "reports:read", detail: { tags, security, summary: "The allocation reports available to this organization" } },
    )
    .get(
      "/:report_type",
      async ({ principal, params, query }) => {
        const opened = await openReport(s.handle, principal.orgId, params.report_type, query as Record<string, unknown>, s.now(), {
          reader: s.reportReader,
          queryTimeoutMs: s.config.reportQueryTimeoutSeconds * 1000,
        });
        return reportDownload(s, principal.orgId, opened);
      },
      {
        scope: "reports:read",
        params: TypeParams,
        query: ReportQuery,
        detail: { tags, security, summary: "Rows of one report month: JSON {report_type, year, month, period_status, rows} or CSV (format=csv)" },
      },
    )
    .get(
      "/:report_type/periods",
      async ({ principal, params, query }) => {
        const def = await resolveReport(s.db, principal.orgId, params.report_type);
        const q = parseReportQuery(def, query as Record<string, unknown>, false);
        return reportPeriods(s.db, principal.orgId, def, q.provider, s.now());
      },
      { scope: "reports:read", params: TypeParams, detail: { tags, security, summary: "Available periods of a report, most recent first ({year, month, status})" } },
    ),
);

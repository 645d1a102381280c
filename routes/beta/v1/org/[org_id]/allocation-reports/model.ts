import { t } from "elysia";
import { Kind, Type, TypeRegistry, type TOptional, type TUnsafe } from "@sinclair/typebox";
import { component, requiredParam } from "../../../../../../lib/http/openapiComponents.ts";
import { NullableTextEnum, TextEnum } from "../../../../../../lib/http/text.ts";
import { PROVIDERS } from "../../../../../../lib/providers.ts";
import { REPORTS } from "../../../../../../lib/reports/catalog.ts";
import { DEFAULT_PAGE_SIZE, MAX_PAGE, MAX_PAGE_SIZE } from "../../../../../../lib/http/paging.ts";

/**
 * A query param published with its real type but checked by lib/reports against the report's
 * descriptor (a 400 naming the param): Elysia would coerce `year=2026.0` to an integer and
 * answer its own message, and a report's params differ from report to report.
 */
const CHECKED_BY_REPORT = "ReportQueryParam";
if (!TypeRegistry.Has(CHECKED_BY_REPORT)) TypeRegistry.Set(CHECKED_BY_REPORT, () => true);
const reportParam = <T>(schema: Record<string, unknown>) => Type.Unsafe<T>({ ...schema, [Kind]: CHECKED_BY_REPORT });

/**
 * The report filters beyond `provider` (account_id, service_name, …): every param of the
 * catalog's reports, each naming the reports that take it (another report answers 400).
 */
const REPORT_FILTERS = (() => {
  const out: Record<string, TOptional<TUnsafe<string>>> = {};
  const names = [...new Set(REPORTS.flatMap((r) => r.params.map((p) => p.name)))].filter((n) => n !== "provider");
  for (const name of names) {
    const takers = REPORTS.filter((r) => r.params.some((p) => p.name === name));
    const p = takers[0]!.params.find((x) => x.name === name)!;
    const description = `${p.description} Only for ${takers.map((r) => r.report_type).join(", ")}.`;
    out[name] = t.Optional(reportParam<string>({ type: "string", minLength: 1, maxLength: 512, ...(p.format ? { format: p.format } : {}), ...(p.enum ? { enum: [...p.enum] } : {}), description }));
  }
  return out;
})();

const PROVIDER_PARAM = () => t.Optional(reportParam<string>({ type: "string", enum: [...PROVIDERS], description: "Only this provider" }));

export const ReportQuery = t.Object(
  {
    year: t.Optional(reportParam<number>(requiredParam({ type: "integer", minimum: 1970, maximum: 9999, description: "Calendar year, e.g. 2026" }))),
    month: t.Optional(reportParam<number>(requiredParam({ type: "integer", minimum: 1, maximum: 12, description: "Calendar month 1–12" }))),
    format: t.Optional(reportParam<"json" | "csv">({ type: "string", enum: ["json", "csv"], default: "json", description: "`csv` for a CSV download (text/csv)" })),
    provider: PROVIDER_PARAM(),
    ...REPORT_FILTERS,
  },
  { additionalProperties: true, description: "The report's params as its descriptor lists them; another one answers 400" },
);

/**
 * The query of a report's periods: its filters (no year, month or format: 400) and the paging
 * of every list, all checked by the route (`pageQueryOf`, then the report's descriptor).
 */
export const PeriodsQuery = t.Object(
  {
    page: t.Optional(reportParam<number>({ type: "integer", minimum: 1, maximum: MAX_PAGE, default: 1, description: "Page number, from 1" })),
    page_size: t.Optional(reportParam<number>({ type: "integer", minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE, description: `Rows per page (1–${MAX_PAGE_SIZE})` })),
    provider: PROVIDER_PARAM(),
    ...REPORT_FILTERS,
  },
  { additionalProperties: true, description: "The report's filters as its descriptor lists them (year, month and format answer 400 here), and the page" },
);

// Responses (DESIGN §12).
const VALUE_TYPES = ["integer", "number", "string", "boolean"] as readonly string[];

export const ReportParamDescriptor = component(
  "ReportParamDescriptor",
  t.Object({ name: t.String(), type: TextEnum(VALUE_TYPES), required: t.Boolean(), description: t.String() }),
);

export const ReportFieldDescriptor = component(
  "ReportFieldDescriptor",
  t.Object({ name: t.String({ description: "snake_case column name: a key of every row" }), type: TextEnum(VALUE_TYPES, { description: "JSON type of the value" }), description: t.String() }),
);

export const AllocationReportDescriptor = component(
  "AllocationReportDescriptor",
  t.Object({
    report_type: t.String({ description: "The path segment of the report fetch" }),
    name: t.String(),
    description: t.String(),
    category: TextEnum(["premiums_and_rebates", "commitment", "cloud_bill"] as const),
    row_grain: TextEnum(["monthly", "daily"] as const),
    update_cadence: TextEnum(["daily", "on_period_close", "static"] as const),
    params: t.Array(ReportParamDescriptor, { description: "Query parameters the report accepts" }),
    output_fields: t.Array(ReportFieldDescriptor, { description: "Columns of each row" }),
  }),
);

const PeriodStatus = () => TextEnum(["finalized", "in_progress"] as const);

export const ReportPeriod = component(
  "ReportPeriod",
  t.Object({
    year: t.Integer(),
    month: t.Integer({ minimum: 1, maximum: 12 }),
    status: PeriodStatus(),
  }),
);

export const ReportRow = component(
  "ReportRow",
  t.Object(
    {},
    {
      additionalProperties: t.Union([t.String(), t.Number(), t.Boolean(), t.Null()]),
      description: "One row: its keys are the names of the descriptor's output_fields, in that order",
    },
  ),
);

export const AllocationReport = component(
  "AllocationReport",
  t.Object({
    report_type: t.String(),
    year: t.Integer(),
    month: t.Integer({ minimum: 1, maximum: 12 }),
    period_status: NullableTextEnum(["finalized", "in_progress"] as const, {
      description: "The month's status as its periods list it; null (with no rows) for an on_period_close report's month whose invoice has not closed yet",
    }),
    rows: t.Array(ReportRow),
  }),
);

/** The same month as `format=csv` serves it. */
export const ALLOCATION_REPORT_CSV = {
  "text/csv": {
    schema: { type: "string", description: "RFC 4180 CSV: a header of the descriptor's output_fields names, then one line per row" },
  },
};

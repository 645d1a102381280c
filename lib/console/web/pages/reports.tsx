/**
 * Allocation reports: a report, a month (finalized or in progress, as the API labels it), the
 * report's own filters, the rows a page at a time, and the CSV of exactly the same query.
 *
 * URL (other pages link here, e.g. the overview):
 *   /app/reports?report=<report_type>&year=YYYY&month=M&page=N
 * plus one param per filter the report's descriptor lists (provider, account_id, child_org_id,
 * billing_account_id, service_name), with the API's names and values. Without year/month the
 * most recent period of the report is shown. Chargeback by child organization is the report
 * `premiums_and_rebates_by_child_org` (DESIGN §8), optionally with child_org_id.
 *
 * The API answers a report month in one response (no paging of rows): the table shows it 50
 * rows a page; the CSV link asks the API for the same report, month and filters with format=csv.
 */
import { useState } from "preact/hooks";
import { apiUrl, get, type ApiGet } from "../api.ts";
import { can } from "../session.ts";
import { Badge, Card, Empty, ErrorNote, Field, Loaded, Loading, Page, Select, Table, useAsync } from "../components.tsx";
import { money, month as monthName, number } from "../format.ts";
import { Link, setQuery, useLocation } from "../router.tsx";
import { PROVIDERS } from "../../../providers.ts";

type Descriptor = ApiGet<"/beta/v1/org/{org_id}/allocation-reports">[number];
type Report = ApiGet<"/beta/v1/org/{org_id}/allocation-reports/{report_type}">;
type Period = ApiGet<"/beta/v1/org/{org_id}/allocation-reports/{report_type}/periods">[number];
type Row = Report["rows"][number];
type ChildOrg = { id: string; name: string };

const PAGE_ROWS = 50;
/** The report with one row per child organization (and currency): chargeback. */
const CHARGEBACK = "premiums_and_rebates_by_child_org";
/** Query params that are not filters. */
const NOT_FILTERS = new Set(["year", "month", "format"]);

function label(name: string): string {
  return name.replace(/_/g, " ");
}

/**
 * A cell as the API gives it: the money of a row with a billing currency (every number column of
 * those reports is money, rounded to cents by the API) with that currency; other numbers as they are.
 */
function cellText(field: Descriptor["output_fields"][number], row: Row): string {
  const value = row[field.name];
  if (value === null || value === undefined) return field.name.startsWith("child_org_") ? "Not assigned" : "—";
  const currency = typeof row.billing_currency === "string" ? row.billing_currency : null;
  if (field.type === "number" && currency) return money(value as number, currency);
  if (field.type === "number" || field.type === "integer") return number(value as number, 6);
  if (field.type === "boolean") return value ? "yes" : "no";
  return String(value);
}

function filtersOf(descriptor: Descriptor, q: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of descriptor.params) {
    if (NOT_FILTERS.has(p.name)) continue;
    const v = q.get(p.name);
    if (v) out[p.name] = v;
  }
  return out;
}

function Filters(props: { descriptor: Descriptor; values: Record<string, string>; childOrgs: ChildOrg[] }) {
  const params = props.descriptor.params.filter((p) => !NOT_FILTERS.has(p.name));
  const [draft, setDraft] = useState<Record<string, string>>({});
  if (params.length === 0) return null;
  const names = params.map((p) => p.name);
  return (
    <form
      class="toolbar report-filters"
      aria-label="Report filters"
      onSubmit={(e) => {
        e.preventDefault();
        setQuery({ ...draft, page: null });
      }}
    >
      {params.map((p) => {
        const id = `filter-${p.name}`;
        const value = draft[p.name] ?? props.values[p.name] ?? "";
        const set = (v: string) => setDraft({ ...draft, [p.name]: v });
        if (p.name === "provider")
          return <Select key={p.name} id={id} label="Provider" value={value} options={[{ value: "", label: "All providers" }, ...PROVIDERS.map((x) => ({ value: x, label: x }))]} onChange={set} />;
        if (p.name === "child_org_id")
          return (
            <Select
              key={p.name}
              id={id}
              label="Child organization"
              value={value}
              options={[{ value: "", label: "All" }, ...props.childOrgs.map((c) => ({ value: c.id, label: c.name })), ...(value && !props.childOrgs.some((c) => c.id === value) ? [{ value, label: value }] : [])]}
              onChange={set}
            />
          );
        return (
          <Field key={p.name} label={label(p.name).replace(/^./, (c) => c.toUpperCase()).replace(/\bid$/, "ID")} id={id} hint={p.description}>
            <input id={id} value={value} maxLength={200} aria-describedby={`${id}-hint`} onInput={(e) => set((e.currentTarget as HTMLInputElement).value)} />
          </Field>
        );
      })}
      <div class="report-filter-actions">
        <button type="submit">Apply filters</button>
        {names.some((n) => props.values[n]) && (
          <button
            type="button"
            class="secondary"
            onClick={() => {
              setDraft({});
              setQuery({ ...Object.fromEntries(names.map((n) => [n, null])), page: null });
            }}
          >
            Clear filters
          </button>
        )}
      </div>
    </form>
  );
}

function StatusBadge(props: { status: Report["period_status"] }) {
  if (props.status === "finalized") return <Badge tone="ok">Finalized: these figures no longer change</Badge>;
  if (props.status === "in_progress") return <Badge tone="warn">In progress: figures grow as billing data arrives</Badge>;
  return <Badge tone="info">Not closed yet: this report is computed when the month's invoice closes</Badge>;
}

function ReportTable(props: { descriptor: Descriptor; year: number; month: number; filters: Record<string, string>; page: number; onlyPeriod: boolean }) {
  const { descriptor, year, month, filters } = props;
  const path = { report_type: descriptor.report_type };
  const state = useAsync(() => get("/beta/v1/org/{org_id}/allocation-reports/{report_type}", { path, query: { year, month, ...filters } as never }), [descriptor.report_type, year, month, JSON.stringify(filters)]);
  const csv = apiUrl("/beta/v1/org/{org_id}/allocation-reports/{report_type}", path, { year, month, ...filters, format: "csv" });
  const filtered = Object.keys(filters).length > 0;
  return (
    <Loaded state={state} label="Loading the report…">
      {(r) => {
        const report = r.data;
        const shownMonth = monthName(report.year, report.month);
        if (report.rows.length === 0 && !filtered && props.onlyPeriod && descriptor.category === "cloud_bill") return <NoBillingData />;
        const pages = Math.max(1, Math.ceil(report.rows.length / PAGE_ROWS));
        const page = Math.min(Math.max(1, props.page), pages);
        const shown = report.rows.slice((page - 1) * PAGE_ROWS, page * PAGE_ROWS);
        return (
          <>
            <h3 class="report-heading">
              {descriptor.name}, {shownMonth}
            </h3>
            <div class="toolbar report-status">
              <span id="period-status">
                <StatusBadge status={report.period_status} />
              </span>
              <a class="button secondary" id="report-csv" href={csv} download>
                Download CSV<span class="visually-hidden"> of this report</span> ({report.rows.length} {report.rows.length === 1 ? "row" : "rows"})
              </a>
            </div>
            {report.rows.length === 0 ? (
              <Empty>{report.period_status === null ? "This month's rows appear once its invoice closes. Choose a finalized month to see them." : filtered ? "No rows for this month and these filters: clear a filter or choose another month." : "No rows for this month: choose another month or report."}</Empty>
            ) : (
              <>
                <Table
                  id="report-table"
                  caption={`${descriptor.name}, ${shownMonth}${pages > 1 ? `, page ${page} of ${pages}` : ""}`}
                  columns={descriptor.output_fields.map((f) => ({
                    key: f.name,
                    label: label(f.name),
                    numeric: f.type === "number" || f.type === "integer",
                    render: (row: Row) => cellText(f, row),
                  }))}
                  rows={shown}
                />
                {pages > 1 && (
                  <nav class="pager" aria-label="Report pages">
                    <button type="button" class="secondary" disabled={page <= 1} onClick={() => setQuery({ page: page - 1 })}>
                      Previous
                    </button>
                    <span id="report-page">
                      Page {page} of {pages} ({report.rows.length} rows)
                    </span>
                    <button type="button" class="secondary" disabled={page >= pages} onClick={() => setQuery({ page: page + 1 })}>
                      Next
                    </button>
                  </nav>
                )}
              </>
            )}
          </>
        );
      }}
    </Loaded>
  );
}

function NoBillingData() {
  return (
    <Empty>
      <span id="no-billing-data">
        No billing data yet: {can("connections:read") ? <Link href="/app/connections">add a connection</Link> : "add a connection"} or import a FOCUS file
      </span>{" "}
      (<code>npx commitops billing import</code>).
      {!can("connections:read") && " An administrator of the organization can do either."}
    </Empty>
  );
}

function periodLabel(p: Pick<Period, "year" | "month" | "status">): string {
  return `${monthName(p.year, p.month)} (${p.status === "finalized" ? "finalized" : "in progress"})`;
}

function ReportView(props: { descriptors: Descriptor[]; childOrgs: ChildOrg[] }) {
  const q = useLocation().query;
  const descriptor = props.descriptors.find((d) => d.report_type === q.get("report")) ?? props.descriptors[0]!;
  const filters = filtersOf(descriptor, q);
  const periods = useAsync(
    () => get("/beta/v1/org/{org_id}/allocation-reports/{report_type}/periods", { path: { report_type: descriptor.report_type }, query: { page_size: 500, ...filters } as never }),
    [descriptor.report_type, JSON.stringify(filters)],
  );
  const list = periods.data?.data ?? [];
  const asked = q.get("year") && q.get("month") ? { year: Number(q.get("year")), month: Number(q.get("month")) } : null;
  const chosen = asked && Number.isInteger(asked.year) && Number.isInteger(asked.month) ? asked : list[0] ? { year: list[0].year, month: list[0].month } : null;
  const listed = chosen && list.some((p) => p.year === chosen.year && p.month === chosen.month);
  const hasChargeback = props.descriptors.some((d) => d.report_type === CHARGEBACK);
  const monthQuery = chosen ? `&year=${chosen.year}&month=${chosen.month}` : "";
  return (
    <>
      <div class="toolbar">
        <Select
          id="report-type"
          label="Report"
          value={descriptor.report_type}
          options={props.descriptors.map((d) => ({ value: d.report_type, label: d.name }))}
          onChange={(v) => setQuery({ report: v, page: null })}
        />
        {periods.data && chosen && (
          <Select
            id="report-month"
            label="Month"
            value={`${chosen.year}-${chosen.month}`}
            options={[
              ...(listed ? [] : [{ value: `${chosen.year}-${chosen.month}`, label: `${monthName(chosen.year, chosen.month)} (not available)` }]),
              ...list.map((p) => ({ value: `${p.year}-${p.month}`, label: periodLabel(p) })),
            ]}
            onChange={(v) => {
              const [y, m] = v.split("-");
              setQuery({ year: y, month: m, page: null });
            }}
          />
        )}
        {periods.loading && !periods.data && <Loading label="Loading months…" />}
      </div>
      <p class="hint">{descriptor.description}</p>
      {hasChargeback && (
        <p class="report-chargeback">
          {descriptor.report_type === CHARGEBACK ? (
            <>Chargeback: premiums, rebates and savings per child organization{props.childOrgs.length === 0 ? " (this organization has no child organizations: every account is unassigned)" : ""}.</>
          ) : (
            <Link href={`/app/reports?report=${CHARGEBACK}${monthQuery}`}>Chargeback by child organization</Link>
          )}
        </p>
      )}
      <Filters key={descriptor.report_type} descriptor={descriptor} values={filters} childOrgs={props.childOrgs} />
      {periods.error && <ErrorNote error={periods.error} retry={periods.reload} />}
      {periods.data &&
        (list.length === 0 && Object.keys(filters).length === 0 ? (
          <NoBillingData />
        ) : !chosen ? (
          <Empty>No month has rows for these filters: clear a filter to see the report.</Empty>
        ) : (
          <ReportTable
            key={`${descriptor.report_type} ${chosen.year}-${chosen.month} ${JSON.stringify(filters)}`}
            descriptor={descriptor}
            year={chosen.year}
            month={chosen.month}
            filters={filters}
            page={Number(q.get("page") ?? 1) || 1}
            onlyPeriod={list.length <= 1}
          />
        ))}
    </>
  );
}

export default function Reports() {
  const catalog = useAsync(() => get("/beta/v1/org/{org_id}/allocation-reports", { query: { page_size: 500 } as never }), []);
  const org = useAsync(() => get("/beta/v1/org/{org_id}"), []);
  const childOrgs: ChildOrg[] = org.data?.data.child_orgs ?? [];
  return (
    <Page title="Allocation reports" intro="Cost and savings allocated account by account, month by month. The CSV holds every row of the same query.">
      <Card title="Report" id="report">
        <Loaded state={catalog} label="Loading the reports…">
          {(r) => (r.data.length === 0 ? <Empty>No report is available to this organization.</Empty> : <ReportView descriptors={r.data} childOrgs={childOrgs} />)}
        </Loaded>
      </Card>
    </Page>
  );
}

/**
 * Allocation reports: a report, a month (finalized or in progress, as the API labels it), the
 * report's own filters, the rows a page at a time, and the CSV of exactly the same query.
 *
 * URL (other pages link here): /app/reports?report=<report_type>&year=YYYY&month=M&page=N and one
 * param per report filter (provider, account_id, child_org_id, billing_account_id, service_name).
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

const PAGE_ROWS = 50;
const CHARGEBACK = "premiums_and_rebates_by_child_org";

function isMoney(field: string): boolean {
  return /cost|savings|premium|rebate|amount|charge|spend|fee/.test(field) && !/_id$|rate$|_count$|percent/.test(field);
}

function cellText(field: Descriptor["output_fields"][number], value: unknown, currency: string | null): string {
  if (value === null || value === undefined) return "—";
  if (field.type === "number" && isMoney(field.name) && currency) return money(value as number, currency);
  if (field.type === "number" || field.type === "integer") return number(value as number, 6);
  if (field.type === "boolean") return value ? "yes" : "no";
  return String(value);
}

function Filters(props: { descriptor: Descriptor; values: URLSearchParams; childOrgs: { id: string; name: string }[] }) {
  const params = props.descriptor.params.filter((p) => !["year", "month", "format"].includes(p.name));
  const [draft, setDraft] = useState<Record<string, string>>({});
  if (params.length === 0) return null;
  return (
    <form
      class="toolbar"
      aria-label="Report filters"
      onSubmit={(e) => {
        e.preventDefault();
        setQuery({ ...draft, page: null });
      }}
    >
      {params.map((p) => {
        const id = `filter-${p.name}`;
        const value = draft[p.name] ?? props.values.get(p.name) ?? "";
        const set = (v: string) => setDraft({ ...draft, [p.name]: v });
        if (p.name === "provider")
          return <Select key={p.name} id={id} label="Provider" value={value} options={[{ value: "", label: "All providers" }, ...PROVIDERS.map((x) => ({ value: x, label: x }))]} onChange={set} />;
        if (p.name === "child_org_id")
          return (
            <Select key={p.name} id={id} label="Child organization" value={value} options={[{ value: "", label: "All" }, ...props.childOrgs.map((c) => ({ value: c.id, label: c.name }))]} onChange={set} />
          );
        return (
          <Field key={p.name} label={p.name.replace(/_/g, " ")} id={id} hint={p.description}>
            <input id={id} value={value} maxLength={200} aria-describedby={`${id}-hint`} onInput={(e) => set((e.currentTarget as HTMLInputElement).value)} />
          </Field>
        );
      })}
      <button type="submit">Apply filters</button>
    </form>
  );
}

function ReportTable(props: { descriptor: Descriptor; year: number; month: number; filters: Record<string, string>; page: number }) {
  const { descriptor, year, month, filters } = props;
  const state = useAsync(
    () => get("/beta/v1/org/{org_id}/allocation-reports/{report_type}", { path: { report_type: descriptor.report_type }, query: { year, month, ...filters } as never }),
    [descriptor.report_type, year, month, JSON.stringify(filters)],
  );
  const csv = apiUrl("/beta/v1/org/{org_id}/allocation-reports/{report_type}", { report_type: descriptor.report_type }, { year, month, ...filters, format: "csv" });
  return (
    <Loaded state={state} label="Loading the report…">
      {(r) => {
        const report = r.data as Report;
        const pages = Math.max(1, Math.ceil(report.rows.length / PAGE_ROWS));
        const page = Math.min(Math.max(1, props.page), pages);
        const shown = report.rows.slice((page - 1) * PAGE_ROWS, page * PAGE_ROWS);
        return (
          <>
            <div class="toolbar">
              <span id="period-status">
                {report.period_status === "finalized" ? (
                  <Badge tone="ok">Finalized: these figures no longer change</Badge>
                ) : report.period_status === "in_progress" ? (
                  <Badge tone="warn">In progress: figures grow as billing data arrives</Badge>
                ) : (
                  <Badge tone="info">Not closed yet</Badge>
                )}
              </span>
              <a class="button secondary" id="report-csv" href={csv} download>
                Download CSV ({report.rows.length} rows)
              </a>
            </div>
            {report.rows.length === 0 ? (
              <Empty>No rows for this month and these filters.</Empty>
            ) : (
              <>
                <Table
                  id="report-table"
                  caption={`${descriptor.name}, ${monthName(year, month)}`}
                  columns={descriptor.output_fields.map((f) => ({
                    key: f.name,
                    label: f.name.replace(/_/g, " "),
                    numeric: f.type === "number" || f.type === "integer",
                    render: (row: Report["rows"][number]) => cellText(f, row[f.name], (row.billing_currency as string | undefined) ?? (row.currency as string | undefined) ?? null),
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

function ReportView(props: { descriptors: Descriptor[]; childOrgs: { id: string; name: string }[] }) {
  const loc = useLocation();
  const q = loc.query;
  const descriptor = props.descriptors.find((d) => d.report_type === q.get("report")) ?? props.descriptors[0]!;
  const periods = useAsync(() => get("/beta/v1/org/{org_id}/allocation-reports/{report_type}/periods", { path: { report_type: descriptor.report_type }, query: { page_size: 500 } as never }), [descriptor.report_type]);
  const filterNames = descriptor.params.map((p) => p.name).filter((n) => !["year", "month", "format"].includes(n));
  const filters: Record<string, string> = {};
  for (const n of filterNames) {
    const v = q.get(n);
    if (v) filters[n] = v;
  }
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
        {periods.error ? null : periods.data ? (
          periods.data.data.length > 0 && (
            <Select
              id="report-month"
              label="Month"
              value={`${q.get("year") ?? periods.data.data[0]!.year}-${q.get("month") ?? periods.data.data[0]!.month}`}
              options={periods.data.data.map((p) => ({ value: `${p.year}-${p.month}`, label: `${monthName(p.year, p.month)} (${p.status === "finalized" ? "finalized" : "in progress"})` }))}
              onChange={(v) => {
                const [y, m] = v.split("-");
                setQuery({ year: y, month: m, page: null });
              }}
            />
          )
        ) : (
          <Loading label="Loading months…" />
        )}
        {descriptor.report_type !== CHARGEBACK && props.descriptors.some((d) => d.report_type === CHARGEBACK) && props.childOrgs.length > 0 && (
          <Link href={`/app/reports?report=${CHARGEBACK}`}>Chargeback by child organization</Link>
        )}
      </div>
      <p class="hint">{descriptor.description}</p>
      <Filters key={descriptor.report_type} descriptor={descriptor} values={q} childOrgs={props.childOrgs} />
      {periods.error && <ErrorNote error={periods.error} retry={periods.reload} />}
      {periods.data &&
        (periods.data.data.length === 0 ? (
          <Empty>
            No billing data yet: {can("connections:read") ? <Link href="/app/connections">add a connection</Link> : "an administrator can add a connection"} or import a FOCUS file (
            <code>npx commitops billing import</code>).
          </Empty>
        ) : (
          <ReportTable
            descriptor={descriptor}
            year={Number(q.get("year") ?? periods.data.data[0]!.year)}
            month={Number(q.get("month") ?? periods.data.data[0]!.month)}
            filters={filters}
            page={Number(q.get("page") ?? 1) || 1}
          />
        ))}
    </>
  );
}

export default function Reports() {
  const catalog = useAsync(() => get("/beta/v1/org/{org_id}/allocation-reports"), []);
  const org = useAsync(() => get("/beta/v1/org/{org_id}"), []);
  const childOrgs = ((org.data?.data as { child_orgs?: { id: string; name: string }[] } | undefined)?.child_orgs ?? []) as { id: string; name: string }[];
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

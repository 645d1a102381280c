/**
 * Cost explorer: GET /costs grouped by up to two dimensions (provider, account, service, region,
 * tag:KEY, month, day…), filtered, over a window of days, with a metric's money columns — the
 * assistant's query_costs. Filter values and tag keys come from GET /costs/dimensions/{dimension}.
 * The page's URL is the API's query (group_by, start_date, end_date, metric, limit and one param
 * per filter, repeated), so a reload or a shared link shows the same view, and the CSV link is the
 * same query with format=csv. Every figure shown is the API's; totals are the API's totals.
 */
import { useState } from "preact/hooks";
import { apiUrl, get, type ApiGet } from "../api.ts";
import { BarChart, type Series } from "../chart.tsx";
import { Card, Empty, ErrorNote, Field, Loading, Page, Select, Table, useAsync, type Column } from "../components.tsx";
import { date, money, month as monthName } from "../format.ts";
import { Link, navigate, useLocation } from "../router.tsx";
import { can } from "../session.ts";

type Costs = ApiGet<"/beta/v1/org/{org_id}/costs">;
type CostRow = Costs["rows"][number];
type CostTotal = Costs["totals"][number];
type Dimension = ApiGet<"/beta/v1/org/{org_id}/costs/dimensions/{dimension}">;

const COSTS = "/beta/v1/org/{org_id}/costs" as const;
const DIMENSIONS = "/beta/v1/org/{org_id}/costs/dimensions/{dimension}" as const;

const DIMENSION_LABELS: Record<string, string> = {
  provider: "Provider",
  billing_account: "Billing account",
  account: "Account",
  service: "Service",
  service_category: "Service category",
  region: "Region",
  resource: "Resource",
  charge_category: "Charge category",
  commitment: "Commitment",
  month: "Month",
  day: "Day",
};
const BASE_DIMENSIONS = Object.keys(DIMENSION_LABELS);
const FILTER_DIMENSIONS = BASE_DIMENSIONS.filter((d) => d !== "month" && d !== "day");
const TIME = new Set(["month", "day"]);
const TAG = "tag:";

const METRICS: { value: Costs["metric"]; label: string }[] = [
  { value: "effective_cost", label: "Effective cost" },
  { value: "billed_cost", label: "Effective and billed cost" },
  { value: "list_cost", label: "Effective and list cost" },
  { value: "split", label: "Effective cost split (on-demand, commitment, other)" },
  { value: "all", label: "All money columns" },
];
const MONEY_COLUMNS: { key: "effective_cost" | "billed_cost" | "list_cost" | "ondemand_cost" | "commitment_cost" | "other_cost"; label: string }[] = [
  { key: "effective_cost", label: "Effective cost" },
  { key: "billed_cost", label: "Billed cost" },
  { key: "list_cost", label: "List cost" },
  { key: "ondemand_cost", label: "On-demand" },
  { key: "commitment_cost", label: "Commitment" },
  { key: "other_cost", label: "Other" },
];
const LIMITS = ["10", "25", "100", "500", "1000"];
const DEFAULT_GROUP_BY = ["service", "month"];
const DEFAULT_METRIC = "effective_cost";
const DEFAULT_LIMIT = "100";
const MAX_SERIES = 10;
const MAX_BARS = 20;
const RESERVED = new Set(["group_by", "start_date", "end_date", "metric", "limit", "format"]);

const dimensionLabel = (d: string) => (d.startsWith(TAG) ? `Tag ${d.slice(TAG.length)}` : (DIMENSION_LABELS[d] ?? d));

/** A dimension's value as shown: months and days in the user's locale, "(not set)" for null. */
function keyLabel(dim: string, v: string | null | undefined): string {
  if (v === null || v === undefined || v === "") return "(not set)";
  if (dim === "month" && /^\d{4}-\d{2}$/.test(v)) return monthName(Number(v.slice(0, 4)), Number(v.slice(5, 7)));
  if (dim === "day" && /^\d{4}-\d{2}-\d{2}$/.test(v)) return date(v);
  return v;
}

interface Filter {
  /** The API's param name: a base dimension or tag:KEY. */
  dim: string;
  /** null = rows where the dimension is not set (the API's empty value). */
  value: string | null;
}

interface View {
  groupBy: string[];
  start?: string;
  end?: string;
  metric: string;
  limit: string;
  filters: Filter[];
}

function viewOf(q: URLSearchParams): View {
  const given = q
    .getAll("group_by")
    .flatMap((g) => g.split(","))
    .map((g) => g.trim())
    .filter(Boolean);
  const filters: Filter[] = [];
  for (const [k, v] of q) if (!RESERVED.has(k) && (BASE_DIMENSIONS.includes(k) || k.startsWith(TAG))) filters.push({ dim: k, value: v === "" ? null : v });
  return {
    groupBy: q.has("group_by") ? given : DEFAULT_GROUP_BY,
    start: q.get("start_date") || undefined,
    end: q.get("end_date") || undefined,
    metric: q.get("metric") || DEFAULT_METRIC,
    limit: q.get("limit") || DEFAULT_LIMIT,
    filters,
  };
}

/** The API's query for a view (also the page's own query string). */
function queryOf(v: View, window?: { start_date: string; end_date: string }): Record<string, string | string[]> {
  const q: Record<string, string | string[]> = { group_by: v.groupBy.join(",") };
  const start = v.start ?? window?.start_date;
  const end = v.end ?? window?.end_date;
  if (start) q.start_date = start;
  if (end) q.end_date = end;
  q.metric = v.metric;
  q.limit = v.limit;
  for (const f of v.filters) ((q[f.dim] ??= []) as string[]).push(f.value ?? "");
  return q;
}

function searchOf(q: Record<string, string | string[]>): string {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) for (const x of Array.isArray(v) ? v : [v]) s.append(k, x);
  return s.toString();
}

function show(v: View): void {
  navigate(`${location.pathname}?${searchOf(queryOf(v))}`, { replace: true });
}

const windowQuery = (v: View) => ({ ...(v.start ? { start_date: v.start } : {}), ...(v.end ? { end_date: v.end } : {}) });

function useDimension(dimension: string | null, v: View) {
  const w = windowQuery(v);
  return useAsync(() => (dimension ? get(DIMENSIONS, { path: { dimension }, query: { ...w, limit: 200 } }).then((r) => r.data) : Promise.resolve(null as Dimension | null)), [dimension, w.start_date, w.end_date]);
}

// ---- Controls ----

/** A group-by select (a tag is chosen with its key in a second select fed by tag_keys). */
function GroupBy(props: { id: string; label: string; value: string | null; optional: boolean; exclude: string | null; tagKeys: string[]; onChange: (dim: string | null) => void }) {
  const base = props.value === null ? "" : props.value.startsWith(TAG) ? "tag" : props.value;
  const key = props.value?.startsWith(TAG) ? props.value.slice(TAG.length) : "";
  const keys = key && !props.tagKeys.includes(key) ? [key, ...props.tagKeys] : props.tagKeys;
  const options = [
    ...(props.optional ? [{ value: "", label: "None" }] : []),
    ...BASE_DIMENSIONS.filter((d) => d !== props.exclude || d === base).map((d) => ({ value: d, label: DIMENSION_LABELS[d]! })),
    ...(keys.length ? [{ value: "tag", label: "Tag…" }] : []),
  ];
  return (
    <>
      <Select id={props.id} label={props.label} value={base} options={options} onChange={(d) => props.onChange(d === "" ? null : d === "tag" ? `${TAG}${keys.find((k) => `${TAG}${k}` !== props.exclude) ?? keys[0]}` : d)} />
      {base === "tag" && <Select id={`${props.id}-tag`} label={`${props.label}: tag key`} value={key} options={keys.map((k) => ({ value: k, label: k }))} onChange={(k) => props.onChange(`${TAG}${k}`)} />}
    </>
  );
}

interface FilterRow {
  id: number;
  /** A base dimension or "tag". */
  base: string;
  tagKey: string;
  /** undefined = not chosen yet. */
  value: string | null | undefined;
}

const CHOOSE = "__choose__";
const NOT_SET = "__not_set__";

function FilterEditor(props: { row: FilterRow; index: number; view: View; tagKeys: string[]; onChange: (r: FilterRow) => void; onRemove: () => void }) {
  const { row } = props;
  const dimension = row.base === "tag" ? (row.tagKey ? `${TAG}${row.tagKey}` : null) : row.base;
  const values = useDimension(dimension, props.view);
  const n = props.index + 1;
  const listed = values.data?.values.map((x) => x.value) ?? [];
  const all = row.value !== undefined && !listed.includes(row.value) ? [row.value, ...listed] : listed;
  const keys = row.tagKey && !props.tagKeys.includes(row.tagKey) ? [row.tagKey, ...props.tagKeys] : props.tagKeys;
  return (
    <fieldset class="plain explorer-filter" id={`filter-${n}`}>
      <legend class="visually-hidden">Filter {n}</legend>
      <Select
        id={`filter-${n}-dimension`}
        label={`Filter ${n}: dimension`}
        value={row.base}
        options={[...FILTER_DIMENSIONS.map((d) => ({ value: d, label: DIMENSION_LABELS[d]! })), ...(keys.length ? [{ value: "tag", label: "Tag…" }] : [])]}
        onChange={(base) => props.onChange({ ...row, base, tagKey: base === "tag" ? (keys[0] ?? "") : "", value: undefined })}
      />
      {row.base === "tag" && <Select id={`filter-${n}-tag`} label={`Filter ${n}: tag key`} value={row.tagKey} options={keys.map((k) => ({ value: k, label: k }))} onChange={(tagKey) => props.onChange({ ...row, tagKey, value: undefined })} />}
      <Field label={`Filter ${n}: value`} id={`filter-${n}-value`}>
        <select
          id={`filter-${n}-value`}
          value={row.value === undefined ? CHOOSE : row.value === null ? NOT_SET : `=${row.value}`}
          disabled={!values.data && !values.error}
          onChange={(e) => {
            const v = (e.currentTarget as HTMLSelectElement).value;
            props.onChange({ ...row, value: v === CHOOSE ? undefined : v === NOT_SET ? null : v.slice(1) });
          }}
        >
          <option value={CHOOSE}>{values.data ? "Choose a value…" : values.error ? "Values could not be loaded" : "Loading values…"}</option>
          {all.map((v) => (
            <option key={v ?? NOT_SET} value={v === null ? NOT_SET : `=${v}`}>
              {keyLabel(row.base, v)}
            </option>
          ))}
        </select>
      </Field>
      <button type="button" class="secondary" onClick={props.onRemove}>
        Remove<span class="visually-hidden"> filter {n}</span>
      </button>
    </fieldset>
  );
}

// ---- Results ----

function CostChart(props: { costs: Costs; currency: string; rows: CostRow[] }) {
  const { costs, currency, rows } = props;
  const g = costs.group_by;
  const time = g.find((d) => TIME.has(d));
  const other = g.find((d) => d !== time);
  const by = (r: CostRow, d: string) => r.keys[d] ?? null;
  if (time && other) {
    const periods = [...new Set(rows.map((r) => by(r, time) ?? ""))].sort();
    const all = [...new Set(rows.map((r) => by(r, other)))];
    const shown = all.slice(0, MAX_SERIES);
    const series: Series[] = shown.map((s) => ({ label: keyLabel(other, s), values: periods.map((p) => rows.find((r) => (by(r, time) ?? "") === p && by(r, other) === s)?.effective_cost ?? null) }));
    const more = all.length > shown.length ? `; only the ${shown.length} largest of ${all.length} ${dimensionLabel(other).toLowerCase()} values are drawn` : "";
    return (
      <BarChart
        id={`explorer-chart-${currency}`}
        label={`Effective cost in ${currency} by ${dimensionLabel(time).toLowerCase()}, stacked by ${dimensionLabel(other).toLowerCase()}${more}; the same figures are in the table`}
        categories={periods.map((p) => keyLabel(time, p))}
        series={series}
        stacked
        money={currency}
      />
    );
  }
  const bars = time ? [...rows].sort((a, b) => String(by(a, time)).localeCompare(String(by(b, time)))) : rows.slice(0, MAX_BARS);
  const label = (r: CostRow) => g.map((d) => keyLabel(d, by(r, d))).join(" · ");
  return (
    <BarChart
      id={`explorer-chart-${currency}`}
      label={`Effective cost in ${currency} by ${g.map((d) => dimensionLabel(d).toLowerCase()).join(" and ")}${time ? "" : `, the ${bars.length} largest rows`}; the same figures are in the table`}
      categories={bars.map(label)}
      series={[{ label: "Effective cost", values: bars.map((r) => r.effective_cost) }]}
      money={currency}
    />
  );
}

function CostTable(props: { costs: Costs }) {
  const { costs } = props;
  const multi = costs.totals.length > 1;
  const money_ = MONEY_COLUMNS.filter((c) => costs.rows.some((r) => r[c.key] !== undefined) || costs.totals.some((t) => t[c.key] !== undefined));
  const columns: Column<CostRow>[] = [
    ...costs.group_by.map((d) => ({ key: `k:${d}`, label: dimensionLabel(d), render: (r: CostRow) => keyLabel(d, r.keys[d]) })),
    ...(multi ? [{ key: "currency", label: "Currency" }] : []),
    ...money_.map((c) => ({ key: c.key, label: c.label, numeric: true, render: (r: CostRow) => money(r[c.key], r.currency) })),
  ];
  const lead = costs.group_by.length + (multi ? 1 : 0);
  const footer = costs.totals.map((t: CostTotal) => (
    <tr key={t.currency}>
      <th scope="row" colSpan={lead}>
        Total{multi ? ` ${t.currency}` : ""} ({t.rows} row{t.rows === 1 ? "" : "s"})
      </th>
      {money_.map((c) => (
        <td key={c.key} class="num">
          {money(t[c.key], t.currency)}
        </td>
      ))}
    </tr>
  ));
  return (
    <Table
      id="explorer-table"
      caption={`Costs by ${costs.group_by.map((d) => dimensionLabel(d).toLowerCase()).join(" and ")}, ${costs.window.start_date} to ${costs.window.end_date} (end exclusive), largest effective cost first`}
      columns={columns}
      rows={costs.rows}
      rowKey={(r, i) => `${i}`}
      footer={footer}
    />
  );
}

/** Whether the organization has any billing data (the last three years), asked only when a view is empty. */
function useAnyData(ask: boolean) {
  return useAsync(() => {
    if (!ask) return Promise.resolve(null);
    const now = new Date();
    const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
    const start = new Date(Date.UTC(end.getUTCFullYear() - 3, end.getUTCMonth(), 1));
    return get(COSTS, { query: { start_date: start.toISOString().slice(0, 10), end_date: end.toISOString().slice(0, 10), metric: "effective_cost", limit: 1 } }).then((r) => r.data.rows.length > 0);
  }, [ask]);
}

function Results(props: { costs: Costs; csv: string }) {
  const { costs } = props;
  const anyData = useAnyData(costs.rows.length === 0);
  if (costs.rows.length === 0) {
    if (anyData.error) return <ErrorNote error={anyData.error} retry={anyData.reload} />;
    if (anyData.data === undefined || anyData.data === null) return <Loading />;
    return anyData.data ? (
      <Empty>
        <span id="explorer-empty">No costs in this window: widen the dates or remove a filter.</span>
      </Empty>
    ) : (
      <Empty>
        <span id="explorer-no-data">
          No billing data yet: {can("connections:read") ? <Link href="/app/connections">add a connection</Link> : "ask an administrator to add a connection"} or import a FOCUS file (
          <code>npx commitops billing import</code>).
        </span>
      </Empty>
    );
  }
  const currencies = costs.totals.map((t) => t.currency);
  return (
    <>
      {costs.truncated && (
        <p class="notice" id="explorer-truncated" role="status">
          Showing the largest {costs.rows.length} of {costs.total_rows} rows. Raise the row limit, narrow the window or add a filter to see the rest.
        </p>
      )}
      {currencies.map((c) => (
        <CostChart key={c} costs={costs} currency={c} rows={costs.rows.filter((r) => r.currency === c)} />
      ))}
      <p class="explorer-download">
        <a class="button secondary" id="explorer-csv" href={props.csv} download>
          Download CSV<span class="visually-hidden"> of this table</span>
        </a>
      </p>
      <CostTable costs={costs} />
    </>
  );
}

/** The window's two dates, applied together (a half-changed window may be no window at all). */
function Dates(props: { shown: { start: string; end: string } | undefined; onApply: (start: string, end: string) => void }) {
  const [edit, setEdit] = useState<{ start: string; end: string } | null>(null);
  const value = edit ?? props.shown ?? { start: "", end: "" };
  const changed = edit !== null && (edit.start !== props.shown?.start || edit.end !== props.shown?.end);
  const input = (which: "start" | "end") => (e: Event) => setEdit({ ...value, [which]: (e.currentTarget as HTMLInputElement).value });
  return (
    <form
      class="explorer-dates"
      aria-label="Window of days"
      onSubmit={(e) => {
        e.preventDefault();
        if (value.start && value.end) props.onApply(value.start, value.end);
        setEdit(null);
      }}
    >
      <Field label="Start date" id="start-date">
        <input id="start-date" type="date" required value={value.start} onInput={input("start")} />
      </Field>
      <Field label="End date (exclusive)" id="end-date" hint="The day after the last day counted">
        <input id="end-date" type="date" required aria-describedby="end-date-hint" value={value.end} onInput={input("end")} />
      </Field>
      <button type="submit" id="apply-dates" class={changed ? undefined : "secondary"} disabled={!value.start || !value.end}>
        Apply dates
      </button>
    </form>
  );
}

let rowSeq = 0;
const rowsOf = (filters: Filter[]): FilterRow[] =>
  filters.map((f) => ({ id: ++rowSeq, base: f.dim.startsWith(TAG) ? "tag" : f.dim, tagKey: f.dim.startsWith(TAG) ? f.dim.slice(TAG.length) : "", value: f.value }));

export default function Explorer() {
  const loc = useLocation();
  const view = viewOf(loc.query);
  const apiQuery = queryOf(view);
  const key = searchOf(apiQuery);
  const costs = useAsync(() => get(COSTS, { query: apiQuery as never }).then((r) => ({ key, data: r.data })), [key]);
  const tagKeysState = useDimension("tag_keys", view);
  const tagKeys = (tagKeysState.data?.values ?? []).map((v) => v.value).filter((v): v is string => v !== null);
  const [rows, setRows] = useState<FilterRow[]>(() => rowsOf(view.filters));

  const window = costs.data?.data.window;
  const update = (change: Partial<View>) => show({ ...view, ...change });
  const commitRows = (next: FilterRow[]) => {
    setRows(next);
    const filters = next.filter((r) => r.value !== undefined && (r.base !== "tag" || r.tagKey)).map((r) => ({ dim: r.base === "tag" ? `${TAG}${r.tagKey}` : r.base, value: r.value as string | null }));
    if (searchOf(queryOf({ ...view, filters })) !== key) update({ filters });
  };
  const setGroup = (i: 0 | 1, dim: string | null) => {
    const g = [...view.groupBy];
    if (dim === null) g.splice(i, 1);
    else g[i] = dim;
    update({ groupBy: g.filter(Boolean) });
  };
  const done = costs.data && !costs.loading && !costs.error && costs.data.key === key;
  const csv = costs.data ? apiUrl(COSTS, {}, { ...queryOf(view, costs.data.data.window), format: "csv" }) : "";

  return (
    <Page title="Cost explorer" intro="Costs of a window of days grouped by up to two dimensions and filtered; the same query as the assistant's cost tool. Amounts are the API's, to the cent.">
      <Card title="Query" id="explorer-query">
        <div class="form-grid">
          <GroupBy id="group-1" label="Group by" value={view.groupBy[0] ?? null} optional={false} exclude={view.groupBy[1] ?? null} tagKeys={tagKeys} onChange={(d) => setGroup(0, d)} />
          <GroupBy id="group-2" label="Then by (optional)" value={view.groupBy[1] ?? null} optional exclude={view.groupBy[0] ?? null} tagKeys={tagKeys} onChange={(d) => setGroup(1, d)} />
          <Select id="metric" label="Money columns" value={view.metric} options={METRICS} onChange={(metric) => update({ metric })} />
          <Select id="limit" label="Rows" value={view.limit} options={(LIMITS.includes(view.limit) ? LIMITS : [view.limit, ...LIMITS]).map((l) => ({ value: l, label: `Largest ${l}` }))} onChange={(limit) => update({ limit })} />
        </div>
        <Dates shown={window ? { start: view.start ?? window.start_date, end: view.end ?? window.end_date } : undefined} onApply={(start, end) => update({ start, end })} />
        <h3>Filters</h3>
        {rows.length === 0 && <p class="hint">No filter: every cost of the window is counted.</p>}
        {rows.map((r, i) => (
          <FilterEditor
            key={r.id}
            row={r}
            index={i}
            view={view}
            tagKeys={tagKeys}
            onChange={(next) => commitRows(rows.map((x) => (x.id === r.id ? next : x)))}
            onRemove={() => commitRows(rows.filter((x) => x.id !== r.id))}
          />
        ))}
        <button type="button" class="secondary" id="add-filter" onClick={() => setRows([...rows, { id: ++rowSeq, base: "provider", tagKey: "", value: undefined }])}>
          Add a filter
        </button>
      </Card>
      <Card title="Costs" id="explorer-results">
        {costs.error ? (
          <ErrorNote error={costs.error} retry={costs.reload} />
        ) : !costs.data ? (
          <Loading label="Loading costs…" />
        ) : (
          <>
            {costs.loading && <Loading label="Updating…" />}
            <Results costs={costs.data.data} csv={csv} />
          </>
        )}
        {done && <span id="explorer-ready" data-query={key} hidden />}
      </Card>
    </Page>
  );
}

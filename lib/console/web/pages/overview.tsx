/**
 * Overview: spend by month and provider, coverage and utilization over time, savings realized,
 * the Effective Savings Rate, commitment lock-in, commitments expiring in 90 days, purchases
 * waiting for approval and billing data freshness. Every figure is the API's (GET /costs,
 * /commitment-summary, /commitments, /purchases, /billing-data-freshness); each links to the
 * report rows behind it.
 */
import { get, type ApiGet, type ApiResponse } from "../api.ts";
import { can } from "../session.ts";
import { BarChart, LineChart } from "../chart.tsx";
import { Badge, Card, Empty, ErrorNote, Figure, Loading, Table, useAsync, type Async } from "../components.tsx";
import { date, money, month as monthName, percent } from "../format.ts";
import { Link } from "../router.tsx";

type Summary = ApiGet<"/beta/v1/org/{org_id}/commitment-summary">;
type Costs = ApiGet<"/beta/v1/org/{org_id}/costs">;

const EXPIRY_DAYS = 90;

function monthLabel(ym: string): string {
  const [y, m] = ym.split("-").map(Number);
  return monthName(y!, m!);
}

/** The allocation report rows behind a figure (the Reports page reads these query names). */
function reportHref(report: string, ym: string | undefined): string {
  if (!ym) return `/app/reports?report=${report}`;
  const [y, m] = ym.split("-");
  return `/app/reports?report=${report}&year=${Number(y)}&month=${Number(m)}`;
}

function windowOf12Months(): { start: string; end: string } {
  const now = new Date();
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 11, 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { start: start.toISOString().slice(0, 10), end: end.toISOString().slice(0, 10) };
}

function SpendByMonth(props: { costs: Costs }) {
  const rows = props.costs.rows;
  const currencies = [...new Set(rows.map((r) => r.currency))];
  if (rows.length === 0) return null;
  return (
    <>
      {currencies.map((currency) => {
        const mine = rows.filter((r) => r.currency === currency);
        const months = [...new Set(mine.map((r) => r.keys.month ?? ""))].sort();
        const providers = [...new Set(mine.map((r) => r.keys.provider ?? "unknown"))].sort();
        const cell = (m: string, p: string) => mine.find((r) => (r.keys.month ?? "") === m && (r.keys.provider ?? "unknown") === p)?.effective_cost ?? null;
        return (
          <div key={currency}>
            <BarChart
              id={`spend-chart-${currency}`}
              label={`Spend by month and provider in ${currency}, stacked bars; the same figures are in the table below`}
              categories={months.map(monthLabel)}
              series={providers.map((p) => ({ label: p, values: months.map((m) => cell(m, p)) }))}
              stacked
              money={currency}
            />
            <Table
              id={`spend-table-${currency}`}
              caption={`Spend by month and provider (${currency}, effective cost)`}
              columns={[
                { key: "month", label: "Month", render: (m: string) => <Link href={reportHref("cloud_bill_by_account", m)}>{monthLabel(m)}</Link> },
                ...providers.map((p) => ({ key: p, label: p, numeric: true, render: (m: string) => money(cell(m, p), currency) })),
              ]}
              rows={months}
              rowKey={(m) => m}
            />
          </div>
        );
      })}
    </>
  );
}

function Headline(props: { summary: Summary }) {
  const { summary } = props;
  const latest = [...summary.rows].reverse();
  if (summary.totals.length === 0) return null;
  return (
    <>
      {summary.totals.map((t) => {
        const last = latest.find((r) => r.currency === t.currency);
        return (
          <div class="figures" key={t.currency} aria-label={`Headline figures (${t.currency})`} role="group">
            <Figure
              id={`esr-${t.currency}`}
              label={`Effective Savings Rate, ${monthLabel(summary.from)}–${monthLabel(summary.to)}`}
              value={percent(t.effective_savings_rate)}
              note="Savings realized ÷ on-demand-equivalent cost"
              href={reportHref("commitment_cost_by_account", last?.month)}
            />
            <Figure id={`savings-${t.currency}`} label="Savings realized" value={money(t.realized_savings, t.currency)} note={`On-demand equivalent ${money(t.ondemand_equivalent_cost, t.currency)}`} href={reportHref("commitment_cost_by_account", last?.month)} />
            <Figure id={`coverage-${t.currency}`} label={last ? `Coverage, ${monthLabel(last.month)}` : "Coverage"} value={percent(last?.coverage)} href={reportHref("commitment_cost_by_account", last?.month)} />
            <Figure id={`utilization-${t.currency}`} label={last ? `Utilization, ${monthLabel(last.month)}` : "Utilization"} value={percent(last?.utilization)} href={reportHref("commitment_cost_by_account", last?.month)} />
          </div>
        );
      })}
      <div class="figures" role="group" aria-label="Commitment lock-in">
        <Figure
          id="lock-in"
          label="Commitment lock-in"
          value={summary.lock_in.weighted_remaining_months === null ? "—" : `${summary.lock_in.weighted_remaining_months} months`}
          note={`Remaining term weighted by committed cost, ${summary.lock_in.commitment_count} active commitment${summary.lock_in.commitment_count === 1 ? "" : "s"}`}
          href="#expiring"
        />
      </div>
    </>
  );
}

function CoverageOverTime(props: { summary: Summary }) {
  const rows = props.summary.rows;
  if (rows.length === 0) return <Empty>No commitment figures for these months yet.</Empty>;
  const multi = new Set(rows.map((r) => r.currency)).size > 1;
  const label = (r: Summary["rows"][number]) => (multi ? `${monthLabel(r.month)} (${r.currency})` : monthLabel(r.month));
  return (
    <>
      <LineChart
        id="coverage-chart"
        label="Commitment coverage and utilization by month, as percentages; the same figures are in the table below"
        categories={rows.map(label)}
        series={[
          { label: "Coverage", values: rows.map((r) => r.coverage) },
          { label: "Utilization", values: rows.map((r) => r.utilization) },
        ]}
        percent
      />
      <Table
        id="coverage-table"
        caption="Coverage, utilization, savings and Effective Savings Rate by month"
        columns={[
          { key: "month", label: "Month", render: (r) => <Link href={reportHref("commitment_cost_by_account", r.month)}>{label(r)}</Link> },
          { key: "status", label: "Status", render: (r) => <Badge tone={r.status === "finalized" ? "ok" : "warn"}>{r.status === "finalized" ? "Finalized" : r.status === "in_progress" ? "In progress" : r.status.replace("_", " ")}</Badge> },
          { key: "coverage", label: "Coverage", numeric: true, render: (r) => percent(r.coverage) },
          { key: "utilization", label: "Utilization", numeric: true, render: (r) => percent(r.utilization) },
          { key: "realized_savings", label: "Savings realized", numeric: true, render: (r) => money(r.realized_savings, r.currency) },
          { key: "esr", label: "ESR", numeric: true, render: (r) => percent(r.effective_savings_rate) },
        ]}
        rows={rows}
        rowKey={(r) => `${r.month}-${r.currency}`}
      />
    </>
  );
}

function Expiring(props: { state: Async<ApiResponse<ApiGet<"/beta/v1/org/{org_id}/commitments">>> }) {
  const { state } = props;
  if (state.error) return <ErrorNote error={state.error} retry={state.reload} />;
  if (!state.data) return <Loading label="Loading expiring commitments…" />;
  const rows = state.data.data;
  if (rows.length === 0) return <Empty>No commitment ends in the next {EXPIRY_DAYS} days.</Empty>;
  return (
    <Table
      id="expiring-table"
      caption={`Commitments ending in the next ${EXPIRY_DAYS} days, soonest first`}
      columns={[
        { key: "name", label: "Commitment", render: (c) => c.name ?? c.provider_commitment_id },
        { key: "provider", label: "Provider" },
        { key: "type", label: "Type", render: (c) => c.commitment_type.replace(/_/g, " ") },
        { key: "ends", label: "Ends", render: (c) => date(c.ends_at) },
        { key: "days", label: "Days left", numeric: true, render: (c) => String(c.days_until_expiry ?? "—") },
      ]}
      rows={rows}
      rowKey={(c) => c.id}
    />
  );
}

function WaitingPurchases(props: { state: Async<ApiResponse<ApiGet<"/beta/v1/org/{org_id}/purchases">>> }) {
  const { state } = props;
  if (state.error) return <ErrorNote error={state.error} retry={state.reload} />;
  if (!state.data) return <Loading label="Loading purchases…" />;
  const rows = state.data.data;
  if (rows.length === 0) return <Empty>No purchase is waiting for approval.</Empty>;
  return (
    <ul class="plain-list" id="waiting-purchases">
      {rows.map((p) => (
        <li key={p.id}>
          <Link href={`/app/purchases/${p.id}`}>{`Purchase ${p.id.slice(0, 8)}`}</Link> <Badge tone="warn">Waiting for approval</Badge>
        </li>
      ))}
    </ul>
  );
}

function Freshness(props: { state: Async<ApiResponse<ApiGet<"/beta/v1/org/{org_id}/billing-data-freshness">>> }) {
  const { state } = props;
  if (state.error) return <ErrorNote error={state.error} retry={state.reload} />;
  if (!state.data) return <Loading label="Loading billing data freshness…" />;
  const rows = state.data.data;
  if (rows.length === 0)
    return (
      <Empty>
        No billing connection yet. {can("connections:read") ? <Link href="/app/connections">Add a connection</Link> : "An administrator can add one"} or import a FOCUS file with{" "}
        <code>npx commitops billing import</code>.
      </Empty>
    );
  return (
    <Table
      id="freshness-table"
      caption="Billing data freshness per connection"
      columns={[
        { key: "name", label: "Connection" },
        { key: "provider", label: "Provider" },
        { key: "status", label: "Status", render: (c) => <Badge tone={c.last_error_cause ? "bad" : c.status === "ok" ? "ok" : "info"}>{c.last_error_cause ? `Failing: ${c.last_error_cause}` : c.status}</Badge> },
        { key: "newest", label: "Newest month", render: (c) => (c.newest_month ? monthLabel(c.newest_month) : "—") },
        { key: "synced", label: "Last synced", render: (c) => date(c.last_synced_at) },
      ]}
      rows={rows}
      rowKey={(c) => c.id}
    />
  );
}

export default function Overview() {
  const window = windowOf12Months();
  const summary = useAsync(() => get("/beta/v1/org/{org_id}/commitment-summary"), []);
  const costs = useAsync(() => get("/beta/v1/org/{org_id}/costs", { query: { group_by: ["month", "provider"], start_date: window.start, end_date: window.end, metric: "effective_cost", limit: 1000 } }), []);
  const expiring = useAsync(() => get("/beta/v1/org/{org_id}/commitments", { query: { expiring_within_days: EXPIRY_DAYS, page_size: 50 } }), []);
  const waiting = useAsync(() => (can("purchases:read") ? get("/beta/v1/org/{org_id}/purchases", { query: { status: "pending_approval", page_size: 20 } }) : Promise.resolve(null)), []);
  const freshness = useAsync(() => get("/beta/v1/org/{org_id}/billing-data-freshness"), []);
  const noData = costs.data && costs.data.data.rows.length === 0;
  // One paint when every answer is in (they come together on a healthy server): content that
  // arrives piecemeal pushes what is below it down while the user reads it.
  const settled = [summary, costs, expiring, waiting, freshness].every((a) => a.data !== undefined || a.error !== undefined);
  if (!settled)
    return (
      <section class="page" aria-labelledby="page-title">
        <h1 id="page-title" tabIndex={-1}>
          Overview
        </h1>
        <Loading label="Loading the overview…" />
      </section>
    );
  return (
    <section class="page" aria-labelledby="page-title">
      <header class="page-head">
        <h1 id="page-title" tabIndex={-1}>
          Overview
        </h1>
      </header>
      <p class="intro">The last 12 months of spend and commitments. Figures are the API's, to the cent; each links to the report rows behind it.</p>
      {noData && (
        <Empty>
          <strong>No billing data yet.</strong> {can("connections:read") ? <Link href="/app/connections">Add a connection</Link> : "Ask an administrator to add a connection"} or import a FOCUS
          file (<code>npx commitops billing import</code>) and the overview fills in.
        </Empty>
      )}
      {summary.error ? <ErrorNote error={summary.error} retry={summary.reload} /> : !summary.data ? <Loading label="Loading savings and coverage…" /> : <Headline summary={summary.data.data} />}
      <Card title="Spend by month and provider" id="spend">
        {costs.error ? <ErrorNote error={costs.error} retry={costs.reload} /> : !costs.data ? <Loading label="Loading spend…" /> : noData ? <Empty>No spend in the last 12 months.</Empty> : <SpendByMonth costs={costs.data.data} />}
      </Card>
      <Card title="Coverage and utilization over time" id="coverage">
        {summary.error ? <ErrorNote error={summary.error} /> : !summary.data ? <Loading /> : <CoverageOverTime summary={summary.data.data} />}
      </Card>
      <div class="cards">
        <Card title={`Commitments expiring in the next ${EXPIRY_DAYS} days`} id="expiring">
          <Expiring state={expiring} />
        </Card>
        {can("purchases:read") && (
          <Card title="Purchases waiting for approval" id="waiting">
            <WaitingPurchases state={waiting as never} />
          </Card>
        )}
      </div>
      <Card title="Billing data freshness" id="freshness">
        <Freshness state={freshness} />
      </Card>
      {summary.data && costs.data && <span id="overview-ready" hidden />}
    </section>
  );
}

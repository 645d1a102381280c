/**
 * Budgets: each budget's month-to-date actual and month-end forecast against its amount (a bar
 * with the thresholds, and which of them this month crossed), a budget's months (chart and the
 * same figures in a table), and for admins (budgets:write) the form to create or change one and
 * a confirmed delete. Every figure is the API's (GET /budgets, /budgets/{id}, /history); the
 * form's checks are the API's too: its 422 field errors are shown at the fields.
 *
 * URLs: /app/budgets?page=N, /app/budgets/new, /app/budgets/{id}?page=N, /app/budgets/{id}/edit.
 */
import { useState } from "preact/hooks";
import { ApiError, get, newIdempotencyKey, send, type ApiGet } from "../api.ts";
import { can } from "../session.ts";
import { BarChart } from "../chart.tsx";
import { Badge, Card, Empty, ErrorNote, Figure, Loaded, Page, Pager, Table, paginationOf, useAsync } from "../components.tsx";
import { date, money, month as monthName, percent } from "../format.ts";
import { Link, navigate, setQuery, useLocation } from "../router.tsx";
import { PROVIDERS } from "../../../providers.ts";

type Budget = ApiGet<"/beta/v1/org/{org_id}/budgets/{budget_id}">;
type BudgetMonth = ApiGet<"/beta/v1/org/{org_id}/budgets/{budget_id}/history">[number];
type Threshold = Budget["thresholds"][number];
type Basis = Threshold["basis"];
type Filter = Budget["filter"];

const BASES: Basis[] = ["actual", "forecast"];
const BASIS_LABELS: Record<Basis, string> = { actual: "actual", forecast: "forecast" };
const PROVIDER_LABELS: Record<string, string> = { aws: "AWS", azure: "Azure", gcp: "Google Cloud" };
/** The API's limit (MAX_THRESHOLDS): the form offers no more rows; the API checks it anyway. */
const MAX_THRESHOLD_ROWS = 10;

/** percent_used etc. are percentages (45.5 = 45.5 %); format.percent takes fractions. */
const pct = (v: number | null | undefined) => (v === null || v === undefined ? "—" : percent(v / 100, 1));
const monthLabel = (ym: string) => monthName(Number(ym.slice(0, 4)), Number(ym.slice(5, 7)));
/** The day a threshold was crossed (the time is in the event log). */
const day = (iso: string) => date(iso.slice(0, 10));
const thresholdLabel = (t: Threshold) => `${t.percent} % of ${BASIS_LABELS[t.basis]}`;

function filterSummary(f: Filter): string {
  const parts: string[] = [];
  if (f.provider) parts.push(`provider ${PROVIDER_LABELS[f.provider] ?? f.provider}`);
  if (f.billing_account_id) parts.push(`billing account ${f.billing_account_id}`);
  if (f.account_id) parts.push(`account ${f.account_id}`);
  if (f.service) parts.push(`service ${f.service}`);
  if (f.tag) parts.push(`tag ${f.tag.key} = ${f.tag.value}`);
  return parts.length ? parts.join(", ") : "The whole organization";
}

/** The cost explorer on a month, by day, with the budget's filter (GET /costs's params, as the budget counts them). */
function explorerHref(f: Filter, ym: string): string {
  const next = new Date(Date.UTC(Number(ym.slice(0, 4)), Number(ym.slice(5, 7)), 1)).toISOString().slice(0, 10);
  const q = new URLSearchParams({ start_date: `${ym}-01`, end_date: next, group_by: "day", metric: "effective_cost" });
  if (f.provider) q.append("provider", f.provider);
  if (f.billing_account_id) q.append("billing_account", f.billing_account_id);
  if (f.account_id) q.append("account", f.account_id);
  if (f.service) q.append("service", f.service);
  if (f.tag) q.append(`tag:${f.tag.key}`, f.tag.value);
  return `/app/explorer?${q}`;
}

// ---- Figures ----

/**
 * The month against the amount as a bar: actual (solid), forecast (light), the amount (a thick
 * mark at 100 %) and each threshold (a tick). An SVG with presentation attributes only (the CSP
 * forbids inline styles); its label says the same in words.
 */
function BudgetBar(props: { budget: Budget; id?: string }) {
  const b = props.budget;
  const s = b.status;
  const used = s?.percent_used ?? 0;
  const forecast = s?.forecast_percent_used ?? null;
  const scale = Math.max(100, used, forecast ?? 0, ...b.thresholds.map((t) => t.percent)) * 1.04;
  const x = (p: number) => Math.max(0, Math.min(100, (p / scale) * 100));
  const over = used >= 100;
  const label =
    s === null
      ? `${b.name}: not evaluated this month yet`
      : `${b.name}: actual ${pct(used)} of ${money(b.amount, b.currency)}${forecast === null ? ", no forecast" : `, forecast ${pct(forecast)}`}; thresholds at ${b.thresholds.map(thresholdLabel).join(", ")}`;
  return (
    <svg class="budget-bar" id={props.id} viewBox="0 0 100 12" preserveAspectRatio="none" role="img" aria-label={label}>
      <rect x="0" y="2" width="100" height="8" fill="#e4e8ee" />
      {forecast !== null && <rect x="0" y="2" width={x(forecast)} height="8" fill="#a9c1e8" />}
      <rect x="0" y="2" width={x(used)} height="8" fill={over ? "#a4262c" : "#1f5fbf"} />
      {b.thresholds.map((t) => (
        <line key={`${t.basis}${t.percent}`} x1={x(t.percent)} x2={x(t.percent)} y1="0" y2="12" stroke={t.basis === "actual" ? "#8a5300" : "#4f5963"} stroke-width="1.5" stroke-dasharray={t.basis === "forecast" ? "2 1" : undefined} vector-effect="non-scaling-stroke" />
      ))}
      <line x1={x(100)} x2={x(100)} y1="0" y2="12" stroke="#1b1f24" stroke-width="3" vector-effect="non-scaling-stroke" />
    </svg>
  );
}

function ThresholdBadges(props: { budget: Budget }) {
  const s = props.budget.status;
  const list = s?.thresholds ?? props.budget.thresholds.map((t) => ({ ...t, threshold_amount: null, crossed_at: null }));
  return (
    <ul class="threshold-list" aria-label="Thresholds this month">
      {list.map((t) => (
        <li key={`${t.basis}${t.percent}`} data-threshold={`${t.basis}:${t.percent}`}>
          <Badge tone={t.crossed_at ? (t.basis === "actual" ? "bad" : "warn") : "ok"}>
            {thresholdLabel(t)}: {t.crossed_at ? `crossed ${day(t.crossed_at)}` : "not reached"}
          </Badge>
        </li>
      ))}
    </ul>
  );
}

/** The current month's figures; `data-figure` names the API field each shows (the tests compare them). */
function StatusFigures(props: { budget: Budget }) {
  const b = props.budget;
  const s = b.status;
  if (!s) return <p class="hint">Not evaluated this month yet: the figures appear after the next billing import or the daily evaluation.</p>;
  return (
    <dl class="budget-figures">
      <div>
        <dt>Actual, month to date</dt>
        <dd data-figure="actual">{money(s.actual, b.currency)}</dd>
      </div>
      <div>
        <dt>Forecast, month end</dt>
        <dd data-figure="forecast">{s.forecast === null ? "No forecast yet" : money(s.forecast, b.currency)}</dd>
      </div>
      <div>
        <dt>Amount</dt>
        <dd data-figure="amount">{money(b.amount, b.currency)}</dd>
      </div>
      <div>
        <dt>Used</dt>
        <dd data-figure="percent_used">{pct(s.percent_used)}</dd>
      </div>
    </dl>
  );
}

// ---- List ----

function BudgetCard(props: { budget: Budget }) {
  const b = props.budget;
  return (
    <li class="card budget-card" data-budget={b.id}>
      <h2 class="budget-name">
        <Link href={`/app/budgets/${b.id}`}>{b.name}</Link>
      </h2>
      <p class="hint budget-filter">
        {filterSummary(b.filter)} · {b.currency} · {b.status ? monthLabel(b.status.month) : "this month"}
      </p>
      <StatusFigures budget={b} />
      <BudgetBar budget={b} />
      <ThresholdBadges budget={b} />
    </li>
  );
}

function BudgetList() {
  const loc = useLocation();
  const page = Number(loc.query.get("page") ?? 1) || 1;
  const list = useAsync(() => get("/beta/v1/org/{org_id}/budgets", { query: { page, page_size: 24 } }), [page]);
  const writable = can("budgets:write");
  return (
    <Page
      title="Budgets"
      intro="Each budget's month-to-date actual and month-end forecast against its monthly amount. Each threshold tells the organization once a month (see Notifications) when the actual or forecast reaches it."
      actions={
        writable ? (
          <Link href="/app/budgets/new" class="button">
            New budget
          </Link>
        ) : undefined
      }
    >
      <Loaded state={list} label="Loading budgets…">
        {(r) =>
          r.data.length === 0 ? (
            <Empty>No budget yet.{writable ? " Create one with “New budget”: a monthly amount for the whole organization or a provider, account, service or tag." : " An administrator creates them."}</Empty>
          ) : (
            <>
              <ul class="budget-grid" id="budget-list">
                {r.data.map((b) => (
                  <BudgetCard key={b.id} budget={b} />
                ))}
              </ul>
              <p class="hint">
                The bar: actual (solid), forecast (light), the amount (thick mark) and each threshold (ticks; dashed for forecast thresholds).
              </p>
              <Pager pagination={paginationOf(r.headers)} onPage={(p) => setQuery({ page: p })} label="Budgets" />
            </>
          )
        }
      </Loaded>
    </Page>
  );
}

// ---- One budget ----

function History(props: { budget: Budget }) {
  const b = props.budget;
  const loc = useLocation();
  const page = Number(loc.query.get("page") ?? 1) || 1;
  const history = useAsync(() => get("/beta/v1/org/{org_id}/budgets/{budget_id}/history", { path: { budget_id: b.id }, query: { page, page_size: 12 } }), [b.id, page]);
  return (
    <Card title="History" id="history">
      <Loaded state={history} label="Loading the budget's months…">
        {(r) => {
          const months = r.data as BudgetMonth[];
          if (!months.length) return <Empty>No month evaluated yet.</Empty>;
          const oldestFirst = [...months].reverse();
          return (
            <>
              <BarChart
                id="history-chart"
                label={`${b.name}: actual and forecast by month against the amount, in ${b.currency}; the same figures are in the table below`}
                categories={oldestFirst.map((m) => monthLabel(m.month))}
                series={[
                  { label: "Actual", values: oldestFirst.map((m) => m.actual) },
                  { label: "Forecast", values: oldestFirst.map((m) => m.forecast) },
                  { label: "Amount", values: oldestFirst.map((m) => m.amount) },
                ]}
                money={b.currency}
              />
              <Table
                id="history-table"
                caption={`${b.name}: each month's figures, newest first`}
                columns={[
                  { key: "month", label: "Month", render: (m: BudgetMonth) => <Link href={explorerHref(b.filter, m.month)}>{monthLabel(m.month)}</Link> },
                  { key: "amount", label: "Amount", numeric: true, render: (m) => money(m.amount, m.currency) },
                  { key: "actual", label: "Actual", numeric: true, render: (m) => money(m.actual, m.currency) },
                  { key: "forecast", label: "Forecast", numeric: true, render: (m) => (m.forecast === null ? "—" : money(m.forecast, m.currency)) },
                  { key: "used", label: "Used", numeric: true, render: (m) => pct(m.percent_used) },
                  {
                    key: "crossed",
                    label: "Thresholds crossed",
                    render: (m) => (m.crossed.length ? m.crossed.map((c) => `${c.percent} % of ${BASIS_LABELS[c.basis]} (${day(c.crossed_at)})`).join("; ") : "None"),
                  },
                ]}
                rows={months}
                rowKey={(m) => m.month}
              />
              <Pager pagination={paginationOf(r.headers)} onPage={(p) => setQuery({ page: p })} label="History" />
            </>
          );
        }}
      </Loaded>
    </Card>
  );
}

function DeleteBudget(props: { budget: Budget }) {
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const remove = async () => {
    setBusy(true);
    setError(null);
    try {
      await send("delete", "/beta/v1/org/{org_id}/budgets/{budget_id}", { path: { budget_id: props.budget.id } });
      navigate("/app/budgets");
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };
  return (
    <div class="budget-delete">
      {!confirming ? (
        <button type="button" class="secondary" id="delete-budget" onClick={() => setConfirming(true)}>
          Delete…
        </button>
      ) : (
        <div class="confirm" role="group" aria-labelledby="delete-budget-text">
          <p id="delete-budget-text">Delete the budget “{props.budget.name}” and its history? The events it fired stay in the event log.</p>
          <button type="button" class="danger" id="confirm-delete-budget" disabled={busy} onClick={remove}>
            {busy ? "Deleting…" : "Delete the budget"}
          </button>{" "}
          <button type="button" class="secondary" disabled={busy} onClick={() => setConfirming(false)}>
            Cancel
          </button>
        </div>
      )}
      {error !== null && <ErrorNote error={error} />}
    </div>
  );
}

function BudgetDetail(props: { id: string }) {
  const state = useAsync(() => get("/beta/v1/org/{org_id}/budgets/{budget_id}", { path: { budget_id: props.id } }), [props.id]);
  const writable = can("budgets:write");
  return (
    <Loaded state={state} label="Loading the budget…">
      {(r) => {
        const b = r.data as Budget;
        const s = b.status;
        return (
          <Page
            title={b.name}
            actions={
              <div class="budget-actions">
                <Link href="/app/budgets">All budgets</Link>
                {writable && (
                  <Link href={`/app/budgets/${b.id}/edit`} class="button secondary">
                    Edit
                  </Link>
                )}
              </div>
            }
          >
            <dl class="facts" id="budget-facts">
              <dt>Counts</dt>
              <dd>{filterSummary(b.filter)}</dd>
              <dt>Monthly amount</dt>
              <dd>{money(b.amount, b.currency)}</dd>
              <dt>Thresholds</dt>
              <dd>{b.thresholds.map(thresholdLabel).join(", ")}</dd>
              <dt>Evaluated</dt>
              <dd>{s ? `${date(s.evaluated_at)}${s.last_complete_date ? `, on billing data complete to ${date(s.last_complete_date)}` : ""}` : "Not this month yet"}</dd>
            </dl>
            {s && (
              <div class="figures" id="budget-status">
                <Figure id="figure-actual" label={`Actual, ${monthLabel(s.month)} to date`} value={money(s.actual, b.currency)} note={`${pct(s.percent_used)} of the amount`} />
                <Figure id="figure-forecast" label="Forecast, month end" value={s.forecast === null ? "No forecast yet" : money(s.forecast, b.currency)} note={s.forecast_percent_used === null ? "Needs a complete day of data" : `${pct(s.forecast_percent_used)} of the amount`} />
                <Figure id="figure-remaining" label="Remaining" value={money(s.remaining, b.currency)} note={s.remaining < 0 ? "Over budget" : undefined} />
              </div>
            )}
            <Card title="This month" id="this-month">
              <BudgetBar budget={b} id="budget-bar" />
              {s ? (
                <Table
                  id="thresholds-table"
                  caption="Thresholds and whether this month reached them"
                  columns={[
                    { key: "threshold", label: "Threshold", render: (t) => `${t.percent} %` },
                    { key: "basis", label: "On", render: (t) => BASIS_LABELS[t.basis] },
                    { key: "amount", label: "At", numeric: true, render: (t) => money(t.threshold_amount, b.currency) },
                    { key: "crossed", label: "This month", render: (t) => (t.crossed_at ? <Badge tone={t.basis === "actual" ? "bad" : "warn"}>Crossed {day(t.crossed_at)}</Badge> : <Badge tone="ok">Not reached</Badge>) },
                  ]}
                  rows={s.thresholds}
                  rowKey={(t) => `${t.basis}${t.percent}`}
                />
              ) : (
                <ThresholdBadges budget={b} />
              )}
              <p>
                <Link href={explorerHref(b.filter, s?.month ?? new Date().toISOString().slice(0, 7))}>See this month's cost by day in the cost explorer</Link>
              </p>
            </Card>
            <History budget={b} />
            {writable && <DeleteBudget budget={b} />}
          </Page>
        );
      }}
    </Loaded>
  );
}

// ---- Create and edit ----

interface ThresholdRow {
  percent: string;
  basis: Basis;
}

interface FormState {
  name: string;
  amount: string;
  currency: string;
  provider: string;
  billing_account_id: string;
  account_id: string;
  service: string;
  tag_key: string;
  tag_value: string;
  thresholds: ThresholdRow[];
}

function formOf(b: Budget | null): FormState {
  if (!b)
    return {
      name: "",
      amount: "",
      currency: "USD",
      provider: "",
      billing_account_id: "",
      account_id: "",
      service: "",
      tag_key: "",
      tag_value: "",
      thresholds: [
        { percent: "80", basis: "actual" },
        { percent: "100", basis: "forecast" },
      ],
    };
  return {
    name: b.name,
    amount: String(b.amount),
    currency: b.currency,
    provider: b.filter.provider ?? "",
    billing_account_id: b.filter.billing_account_id ?? "",
    account_id: b.filter.account_id ?? "",
    service: b.filter.service ?? "",
    tag_key: b.filter.tag?.key ?? "",
    tag_value: b.filter.tag?.value ?? "",
    thresholds: b.thresholds.map((t) => ({ percent: String(t.percent), basis: t.basis })),
  };
}

/** A number as typed, or the text itself: the API, not the page, says what is wrong with it (422 at the field). */
const numberOrText = (s: string): number | string | undefined => (s.trim() === "" ? undefined : /^-?\d+(\.\d+)?$/.test(s.trim()) ? Number(s.trim()) : s.trim());

function bodyOf(f: FormState): Record<string, unknown> {
  const filter: Record<string, unknown> = {};
  if (f.provider) filter.provider = f.provider;
  if (f.billing_account_id.trim()) filter.billing_account_id = f.billing_account_id.trim();
  if (f.account_id.trim()) filter.account_id = f.account_id.trim();
  if (f.service.trim()) filter.service = f.service.trim();
  if (f.tag_key.trim() || f.tag_value.trim()) filter.tag = { key: f.tag_key.trim(), value: f.tag_value.trim() };
  return {
    name: f.name.trim(),
    amount: numberOrText(f.amount),
    currency: f.currency.trim(),
    filter: Object.keys(filter).length ? filter : null,
    thresholds: f.thresholds.map((t) => ({ percent: numberOrText(t.percent), basis: t.basis })),
  };
}

/** The API's field errors (422 `errors`), shown at the fields; those no field shows are listed with the message. */
function useFieldErrors() {
  const [error, setError] = useState<unknown>(null);
  const fields = error instanceof ApiError ? (error.body.errors ?? {}) : {};
  const shown = new Set<string>();
  const at = (key: string) => {
    shown.add(key);
    return fields[key];
  };
  return { error, setError, fields, at, shown };
}

function FieldMessage(props: { id: string; messages: string[] | undefined }) {
  if (!props.messages?.length) return null;
  return (
    <p class="field-error" id={`${props.id}-error`}>
      {props.messages.join("; ")}
    </p>
  );
}

function TextField(props: {
  id: string;
  label: string;
  value: string;
  onInput: (v: string) => void;
  errors: string[] | undefined;
  hint?: string;
  required?: boolean;
  inputMode?: "decimal" | "numeric" | "text";
  maxLength?: number;
  autoCapitalize?: "characters";
}) {
  const described = [props.hint ? `${props.id}-hint` : "", props.errors?.length ? `${props.id}-error` : ""].filter(Boolean).join(" ") || undefined;
  return (
    <div class="field">
      <label for={props.id}>
        {props.label}
        {props.required ? "" : " (optional)"}
      </label>
      <input
        id={props.id}
        value={props.value}
        inputMode={props.inputMode}
        maxLength={props.maxLength}
        autocapitalize={props.autoCapitalize}
        aria-invalid={props.errors?.length ? "true" : undefined}
        aria-describedby={described}
        aria-required={props.required ? "true" : undefined}
        onInput={(e) => props.onInput((e.currentTarget as HTMLInputElement).value)}
      />
      {props.hint && (
        <small id={`${props.id}-hint`} class="hint">
          {props.hint}
        </small>
      )}
      <FieldMessage id={props.id} messages={props.errors} />
    </div>
  );
}

function BudgetForm(props: { budget: Budget | null }) {
  const editing = props.budget;
  const [f, setF] = useState<FormState>(() => formOf(editing));
  const [busy, setBusy] = useState(false);
  const [key, setKey] = useState(newIdempotencyKey);
  const errs = useFieldErrors();
  const set = (patch: Partial<FormState>) => setF((x) => ({ ...x, ...patch }));
  const setThreshold = (i: number, patch: Partial<ThresholdRow>) => setF((x) => ({ ...x, thresholds: x.thresholds.map((t, j) => (j === i ? { ...t, ...patch } : t)) }));
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    errs.setError(null);
    try {
      const body = bodyOf(f);
      if (editing) {
        await send("patch", "/beta/v1/org/{org_id}/budgets/{budget_id}", { path: { budget_id: editing.id }, body: body as never });
        navigate(`/app/budgets/${editing.id}`);
      } else {
        if (body.filter === null) delete body.filter;
        const r = await send("post", "/beta/v1/org/{org_id}/budgets", { body: body as never, idempotencyKey: key });
        navigate(`/app/budgets/${(r.data as Budget).id}`);
      }
    } catch (err) {
      errs.setError(err);
      setKey(newIdempotencyKey());
      setBusy(false);
    }
  };
  const at = errs.at;
  const fieldErrors = {
    name: at("name"),
    amount: at("amount"),
    currency: at("currency"),
    provider: at("filter.provider"),
    billing: at("filter.billing_account_id"),
    account: at("filter.account_id"),
    service: at("filter.service"),
    tagKey: [...(at("filter.tag") ?? []), ...(at("filter.tag.key") ?? [])],
    tagValue: at("filter.tag.value"),
    filter: at("filter"),
    thresholds: at("thresholds"),
  };
  const rowErrors = f.thresholds.map((_, i) => ({ row: at(`thresholds.${i}`), percent: at(`thresholds.${i}.percent`), basis: at(`thresholds.${i}.basis`) }));
  const unshown = Object.entries(errs.fields).filter(([k]) => !errs.shown.has(k));
  const title = editing ? `Edit ${editing.name}` : "New budget";
  return (
    <Page title={title} actions={<Link href={editing ? `/app/budgets/${editing.id}` : "/app/budgets"}>{editing ? "Back to the budget" : "All budgets"}</Link>}>
      <form id="budget-form" class="budget-form" onSubmit={submit} noValidate aria-labelledby="page-title">
        <fieldset class="plain" disabled={busy}>
          <div class="form-grid">
            <TextField id="budget-name" label="Name" required value={f.name} onInput={(v) => set({ name: v })} errors={fieldErrors.name} hint="Unique in the organization" maxLength={200} />
            <TextField id="budget-amount" label="Monthly amount" required inputMode="decimal" value={f.amount} onInput={(v) => set({ amount: v })} errors={fieldErrors.amount} hint="In the currency below, at most two decimals" />
            <TextField
              id="budget-currency"
              label="Currency"
              required
              value={f.currency}
              onInput={(v) => set({ currency: v.toUpperCase() })}
              errors={fieldErrors.currency}
              hint="ISO code, e.g. USD: only cost billed in it counts"
              maxLength={3}
              autoCapitalize="characters"
            />
          </div>
          <fieldset class="budget-fieldset">
            <legend>What it counts (every field given must match; none: the whole organization)</legend>
            <FieldMessage id="budget-filter" messages={fieldErrors.filter} />
            <div class="form-grid">
              <div class="field">
                <label for="budget-provider">Provider (optional)</label>
                <select
                  id="budget-provider"
                  value={f.provider}
                  aria-invalid={fieldErrors.provider?.length ? "true" : undefined}
                  aria-describedby={fieldErrors.provider?.length ? "budget-provider-error" : undefined}
                  onChange={(e) => set({ provider: (e.currentTarget as HTMLSelectElement).value })}
                >
                  <option value="">Any provider</option>
                  {PROVIDERS.map((p) => (
                    <option key={p} value={p}>
                      {PROVIDER_LABELS[p] ?? p}
                    </option>
                  ))}
                </select>
                <FieldMessage id="budget-provider" messages={fieldErrors.provider} />
              </div>
              <TextField id="budget-billing-account" label="Billing account" value={f.billing_account_id} onInput={(v) => set({ billing_account_id: v })} errors={fieldErrors.billing} maxLength={256} />
              <TextField id="budget-account" label="Account" value={f.account_id} onInput={(v) => set({ account_id: v })} errors={fieldErrors.account} hint="The linked account, else the billing account" maxLength={256} />
              <TextField id="budget-service" label="Service" value={f.service} onInput={(v) => set({ service: v })} errors={fieldErrors.service} hint="Exact service name, e.g. Amazon Elastic Compute Cloud" maxLength={256} />
              <TextField id="budget-tag-key" label="Tag key" value={f.tag_key} onInput={(v) => set({ tag_key: v })} errors={fieldErrors.tagKey.length ? fieldErrors.tagKey : undefined} maxLength={128} />
              <TextField id="budget-tag-value" label="Tag value" value={f.tag_value} onInput={(v) => set({ tag_value: v })} errors={fieldErrors.tagValue} maxLength={256} />
            </div>
          </fieldset>
          <fieldset class="budget-fieldset" aria-describedby={fieldErrors.thresholds?.length ? "budget-thresholds-error" : undefined}>
            <legend>Thresholds: each tells the organization once a month when the actual or forecast reaches it</legend>
            <FieldMessage id="budget-thresholds" messages={fieldErrors.thresholds} />
            <ol class="threshold-rows">
              {f.thresholds.map((t, i) => (
                <li key={i} class="threshold-row" data-threshold-row={i}>
                  <div class="field">
                    <label for={`threshold-${i}-percent`}>Percent of the amount</label>
                    <input
                      id={`threshold-${i}-percent`}
                      inputMode="numeric"
                      value={t.percent}
                      aria-invalid={rowErrors[i]!.percent?.length ? "true" : undefined}
                      aria-describedby={rowErrors[i]!.percent?.length ? `threshold-${i}-percent-error` : undefined}
                      onInput={(e) => setThreshold(i, { percent: (e.currentTarget as HTMLInputElement).value })}
                    />
                    <FieldMessage id={`threshold-${i}-percent`} messages={rowErrors[i]!.percent} />
                  </div>
                  <div class="field">
                    <label for={`threshold-${i}-basis`}>Reached by</label>
                    <select id={`threshold-${i}-basis`} value={t.basis} onChange={(e) => setThreshold(i, { basis: (e.currentTarget as HTMLSelectElement).value as Basis })}>
                      {BASES.map((x) => (
                        <option key={x} value={x}>
                          {x === "actual" ? "the actual (month to date)" : "the forecast (month end)"}
                        </option>
                      ))}
                    </select>
                    <FieldMessage id={`threshold-${i}-basis`} messages={rowErrors[i]!.basis} />
                  </div>
                  <button
                    type="button"
                    class="secondary"
                    disabled={f.thresholds.length <= 1}
                    onClick={() => setF((x) => ({ ...x, thresholds: x.thresholds.filter((_, j) => j !== i) }))}
                  >
                    Remove<span class="visually-hidden"> threshold {i + 1}</span>
                  </button>
                  <FieldMessage id={`threshold-${i}`} messages={rowErrors[i]!.row} />
                </li>
              ))}
            </ol>
            <button
              type="button"
              class="secondary"
              id="add-threshold"
              disabled={f.thresholds.length >= MAX_THRESHOLD_ROWS}
              onClick={() => setF((x) => ({ ...x, thresholds: [...x.thresholds, { percent: "", basis: "actual" }] }))}
            >
              Add a threshold
            </button>
          </fieldset>
          <div class="toolbar actions">
            <button type="submit" id="budget-submit">
              {busy ? "Saving…" : editing ? "Save the budget" : "Create the budget"}
            </button>
          </div>
        </fieldset>
        {errs.error !== null && (
          <div class="error" role="alert" id="budget-form-error">
            <p>{errs.error instanceof ApiError ? errs.error.body.message : errs.error instanceof Error ? errs.error.message : String(errs.error)}</p>
            {unshown.length > 0 && (
              <ul>
                {unshown.map(([k, v]) => (
                  <li key={k}>
                    <strong>{k}</strong>: {v.join("; ")}
                  </li>
                ))}
              </ul>
            )}
          </div>
        )}
      </form>
    </Page>
  );
}

function EditBudget(props: { id: string }) {
  const state = useAsync(() => get("/beta/v1/org/{org_id}/budgets/{budget_id}", { path: { budget_id: props.id } }), [props.id]);
  if (!can("budgets:write"))
    return (
      <Page title="Edit a budget">
        <p>Only administrators change budgets.</p>
      </Page>
    );
  return <Loaded state={state} label="Loading the budget…">{(r) => <BudgetForm budget={r.data as Budget} />}</Loaded>;
}

export default function Budgets() {
  const loc = useLocation();
  if (loc.path === "/app/budgets/new")
    return can("budgets:write") ? (
      <BudgetForm budget={null} />
    ) : (
      <Page title="New budget">
        <p>Only administrators create budgets.</p>
      </Page>
    );
  const edit = /^\/app\/budgets\/([^/]+)\/edit$/.exec(loc.path);
  if (edit) return <EditBudget id={decodeURIComponent(edit[1]!)} />;
  const one = /^\/app\/budgets\/([^/]+)$/.exec(loc.path);
  if (one) return <BudgetDetail key={one[1]} id={decodeURIComponent(one[1]!)} />;
  return <BudgetList />;
}

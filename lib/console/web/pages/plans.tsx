/**
 * Plans: commitment plan templates (system and custom), editing one with its ETag (two editors
 * never overwrite each other: the second save gets 412 and is told to reload), generating a plan
 * and reading its items, and the what-if panel: the planner sizes the template under several
 * coverage targets for a chosen term/payment mix (POST /commitment-plans/preview; nothing saved).
 *
 * URLs: /app/plans (templates and recent plans), /app/plans/templates/{template_id} (editor,
 * what-if, generate), /app/plans/{plan_id} (one plan and its items).
 */
import { useState } from "preact/hooks";
import { ApiError, get, newIdempotencyKey, send, type ApiGet } from "../api.ts";
import { can } from "../session.ts";
import { BarChart } from "../chart.tsx";
import { Badge, Card, Empty, ErrorNote, Field, Loaded, Loading, Page, Select, Table, useAsync } from "../components.tsx";
import { date, money, number, percent } from "../format.ts";
import { Link, navigate, setQuery, useLocation } from "../router.tsx";
import { PROVIDERS } from "../../../providers.ts";
import { COMMITMENT_TYPES, CONTRACT_TERMS, PAYMENT_OPTIONS, SCHEDULES } from "../../../templates/enums.ts";

type Template = ApiGet<"/beta/v1/org/{org_id}/commitment-plan-templates/{template_id}">;
type Plan = ApiGet<"/beta/v1/org/{org_id}/commitment-plans/{plan_id}">;
type ContractSpec = Template["configuration"]["contract_specs"][number];
type Provider = keyof typeof COMMITMENT_TYPES;

const label = (v: string | null | undefined) => (v ? v.replace(/_/g, " ") : "—");
const WHAT_IF_TARGETS = [50, 60, 70, 80, 90, 100];

function TemplatesAndPlans() {
  const loc = useLocation();
  const provider = (PROVIDERS as readonly string[]).includes(loc.query.get("provider") ?? "") ? (loc.query.get("provider") as Provider) : "aws";
  const templates = useAsync(() => get("/beta/v1/org/{org_id}/commitment-plan-templates", { query: { provider, page_size: 100 } }), [provider]);
  const plans = useAsync(() => get("/beta/v1/org/{org_id}/commitment-plans", { query: { provider, page_size: 20 } }), [provider]);
  return (
    <Page title="Plans" intro="Templates describe what to buy; a plan is what the planner would buy now from your usage.">
      <div class="toolbar">
        <Select id="plans-provider" label="Provider" value={provider} options={PROVIDERS.map((p) => ({ value: p, label: p }))} onChange={(v) => setQuery({ provider: v })} />
      </div>
      <Card title="Templates" id="templates">
        <Loaded state={templates} label="Loading templates…">
          {(r) =>
            r.data.length === 0 ? (
              <Empty>No templates yet. The three system templates appear once the organization has a segment.</Empty>
            ) : (
              <Table
                id="templates-table"
                caption="Commitment plan templates"
                columns={[
                  { key: "name", label: "Template", render: (t) => <Link href={`/app/plans/templates/${t.id}`}>{t.name}</Link> },
                  { key: "origin", label: "Origin", render: (t) => (t.is_system_generated ? <Badge>System</Badge> : <Badge tone="ok">Custom</Badge>) },
                  { key: "lookback", label: "Lookback", numeric: true, render: (t) => `${t.configuration.lookback_days} days` },
                  { key: "upfront", label: "Upfront limit", numeric: true, render: (t) => money(t.configuration.max_upfront_cost, "USD") },
                  { key: "auto", label: "Auto-purchase", render: (t) => (t.auto_purchase?.enabled ? `${t.auto_purchase.schedule}, next ${date(t.auto_purchase.next_execution_date)}` : "Off") },
                ]}
                rows={r.data}
                rowKey={(t) => t.id}
              />
            )
          }
        </Loaded>
      </Card>
      <Card title="Recent plans" id="plans">
        <Loaded state={plans} label="Loading plans…">
          {(r) =>
            r.data.length === 0 ? (
              <Empty>No plan generated yet. Open a template and choose “Generate a plan”.</Empty>
            ) : (
              <Table
                id="plans-table"
                caption="Recent commitment plans, newest first"
                columns={[
                  { key: "created", label: "Generated", render: (p) => <Link href={`/app/plans/${p.id}`}>{date(p.created_at)}</Link> },
                  { key: "provider", label: "Provider" },
                  { key: "status", label: "Status", render: (p) => <Badge tone={p.status === "purchased" ? "ok" : "info"}>{label(p.status)}</Badge> },
                  { key: "items", label: "Items", numeric: true, render: (p) => String(p.item_count) },
                  { key: "savings", label: "Monthly net savings", numeric: true, render: (p) => money(p.monthly_net_savings, "USD") },
                  { key: "upfront", label: "Upfront", numeric: true, render: (p) => money(p.total_upfront_cost, "USD") },
                ]}
                rows={r.data}
                rowKey={(p) => p.id}
              />
            )
          }
        </Loaded>
      </Card>
    </Page>
  );
}

function ContractSpecsEditor(props: { provider: Provider; specs: ContractSpec[]; onChange: (s: ContractSpec[]) => void; disabled: boolean; idPrefix: string }) {
  const { specs, onChange } = props;
  const set = (i: number, patch: Partial<ContractSpec>) => onChange(specs.map((s, j) => (i === j ? { ...s, ...patch } : s)));
  return (
    <fieldset class="specs" disabled={props.disabled}>
      <legend>Term and payment mix</legend>
      {specs.map((s, i) => (
        <div class="toolbar" key={i} role="group" aria-label={`Contract ${i + 1}`}>
          <Field label={`Commitment type ${i + 1}`} id={`${props.idPrefix}-type-${i}`}>
            <select id={`${props.idPrefix}-type-${i}`} value={s.commitment_type} onChange={(e) => set(i, { commitment_type: (e.currentTarget as HTMLSelectElement).value as ContractSpec["commitment_type"] })}>
              {COMMITMENT_TYPES[props.provider].map((t) => (
                <option key={t} value={t}>
                  {label(t)}
                </option>
              ))}
            </select>
          </Field>
          <Field label={`Term ${i + 1}`} id={`${props.idPrefix}-term-${i}`}>
            <select id={`${props.idPrefix}-term-${i}`} value={s.contract_term} onChange={(e) => set(i, { contract_term: (e.currentTarget as HTMLSelectElement).value as ContractSpec["contract_term"] })}>
              {CONTRACT_TERMS.map((t) => (
                <option key={t} value={t}>
                  {label(t)}
                </option>
              ))}
            </select>
          </Field>
          <Field label={`Payment ${i + 1}`} id={`${props.idPrefix}-payment-${i}`}>
            <select id={`${props.idPrefix}-payment-${i}`} value={s.payment_option} onChange={(e) => set(i, { payment_option: (e.currentTarget as HTMLSelectElement).value as ContractSpec["payment_option"] })}>
              {PAYMENT_OPTIONS.map((t) => (
                <option key={t} value={t}>
                  {label(t)}
                </option>
              ))}
            </select>
          </Field>
          {specs.length > 1 && (
            <button type="button" class="secondary" onClick={() => onChange(specs.filter((_, j) => j !== i))}>
              Remove contract {i + 1}
            </button>
          )}
        </div>
      ))}
      <button type="button" class="secondary" onClick={() => onChange([...specs, { ...specs[specs.length - 1]! }])}>
        Add a contract
      </button>
    </fieldset>
  );
}

function providerOf(t: Template): Provider {
  const type = t.configuration.contract_specs[0]?.commitment_type;
  return ((Object.keys(COMMITMENT_TYPES) as Provider[]).find((p) => COMMITMENT_TYPES[p].includes(type as never)) ?? "aws") as Provider;
}

function TemplateEditor(props: { template: Template; etag: string; onSaved: (t: Template, etag: string) => void }) {
  const t = props.template;
  const writable = can("templates:write");
  const system = t.is_system_generated;
  const [name, setName] = useState(t.name);
  const [description, setDescription] = useState(t.description ?? "");
  const [upfront, setUpfront] = useState(String(t.configuration.max_upfront_cost));
  const [lookback, setLookback] = useState(String(t.configuration.lookback_days));
  const [specs, setSpecs] = useState<ContractSpec[]>(t.configuration.contract_specs);
  const [auto, setAuto] = useState(t.auto_purchase?.enabled ?? false);
  const [schedule, setSchedule] = useState<string>(t.auto_purchase?.schedule ?? "monthly");
  const [minSavings, setMinSavings] = useState(String(t.auto_purchase?.min_monthly_savings ?? 0));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [conflict, setConflict] = useState(false);
  const [saved, setSaved] = useState(false);

  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setSaved(false);
    const autoPurchase = auto
      ? { schedule, min_monthly_savings: Number(minSavings), enabled: true, start_date: t.auto_purchase?.start_date ?? new Date().toISOString().slice(0, 10), ...(t.auto_purchase?.end_date ? { end_date: t.auto_purchase.end_date } : {}) }
      : null;
    const body = system
      ? { auto_purchase: autoPurchase }
      : { name, description: description || null, configuration: { ...t.configuration, max_upfront_cost: Number(upfront), lookback_days: Number(lookback), contract_specs: specs }, auto_purchase: autoPurchase };
    try {
      const r = await send("put", "/beta/v1/org/{org_id}/commitment-plan-templates/{template_id}", { path: { template_id: t.id }, body: body as never, ifMatch: props.etag });
      props.onSaved(r.data as Template, r.headers.get("etag") ?? "");
      setSaved(true);
    } catch (err) {
      if (err instanceof ApiError && err.status === 412) setConflict(true);
      else setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form onSubmit={save} aria-labelledby="template-edit-title" id="template-form">
      <h3 id="template-edit-title">{system ? "Auto-purchase schedule" : "Edit the template"}</h3>
      {system && <p class="hint">System templates are fixed; only their auto-purchase schedule can change.</p>}
      {!system && (
        <>
          <div class="toolbar">
            <Field label="Name" id="tpl-name">
              <input id="tpl-name" value={name} maxLength={200} required disabled={!writable} onInput={(e) => setName((e.currentTarget as HTMLInputElement).value)} />
            </Field>
            <Field label="Upfront limit (USD)" id="tpl-upfront">
              <input id="tpl-upfront" type="number" min="0" step="0.01" value={upfront} disabled={!writable} onInput={(e) => setUpfront((e.currentTarget as HTMLInputElement).value)} />
            </Field>
            <Field label="Lookback (days)" id="tpl-lookback">
              <input id="tpl-lookback" type="number" min="1" step="1" value={lookback} disabled={!writable} onInput={(e) => setLookback((e.currentTarget as HTMLInputElement).value)} />
            </Field>
          </div>
          <Field label="Description" id="tpl-description">
            <textarea id="tpl-description" value={description} maxLength={2000} disabled={!writable} onInput={(e) => setDescription((e.currentTarget as HTMLTextAreaElement).value)} />
          </Field>
          <ContractSpecsEditor provider={providerOf(t)} specs={specs} onChange={setSpecs} disabled={!writable} idPrefix="tpl" />
        </>
      )}
      <div class="toolbar">
        <div class="field">
          <label for="tpl-auto">
            <input id="tpl-auto" type="checkbox" checked={auto} disabled={!writable} onChange={(e) => setAuto((e.currentTarget as HTMLInputElement).checked)} /> Buy on a schedule
          </label>
        </div>
        <Field label="Schedule" id="tpl-schedule">
          <select id="tpl-schedule" value={schedule} disabled={!writable || !auto} onChange={(e) => setSchedule((e.currentTarget as HTMLSelectElement).value)}>
            {SCHEDULES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Minimum monthly savings (USD)" id="tpl-min">
          <input id="tpl-min" type="number" min="0" step="0.01" value={minSavings} disabled={!writable || !auto} onInput={(e) => setMinSavings((e.currentTarget as HTMLInputElement).value)} />
        </Field>
      </div>
      {conflict && (
        <div class="error" role="alert" id="template-conflict">
          <p>Someone else saved this template after you opened it. Your changes were not saved, so theirs are not lost. Reload to see the current template, then make your change again.</p>
          <button type="button" class="secondary" onClick={() => location.reload()}>
            Reload the template
          </button>
        </div>
      )}
      {error !== null && <ErrorNote error={error} />}
      {saved && (
        <p class="notice" role="status">
          Saved.
        </p>
      )}
      {writable && (
        <button type="submit" id="template-save" disabled={busy}>
          {busy ? "Saving…" : "Save"}
        </button>
      )}
    </form>
  );
}

function WhatIf(props: { template: Template }) {
  const t = props.template;
  const [specs, setSpecs] = useState<ContractSpec[]>(t.configuration.contract_specs);
  const [preview, setPreview] = useState<{ settings: { coverage_target: number | null; monthly_net_savings: number; term_net_savings: number; total_upfront_cost: number; lock_in_days: number; coverage_reached: number; item_count: number }[]; currency: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = async () => {
    setBusy(true);
    setError(null);
    try {
      const r = await send("post", "/beta/v1/org/{org_id}/commitment-plans/preview", {
        body: { template_id: t.id, overrides: { contract_specs: specs }, settings: WHAT_IF_TARGETS.map((coverage_target) => ({ coverage_target })) } as never,
      });
      setPreview(r.data as never);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const rows = preview?.settings ?? [];
  const currency = preview?.currency ?? "USD";
  return (
    <Card title="What if" id="what-if">
      <p class="hint">The planner sizes this template at each coverage target with the term and payment mix below. Nothing is saved.</p>
      <ContractSpecsEditor provider={providerOf(t)} specs={specs} onChange={setSpecs} disabled={busy} idPrefix="whatif" />
      <p>
        <button type="button" id="what-if-run" onClick={run} disabled={busy}>
          {busy ? "Sizing…" : "Show the trade-off"}
        </button>
      </p>
      {error !== null && <ErrorNote error={error} />}
      {busy && <Loading label="The planner is sizing each setting…" />}
      {preview && (
        <>
          <BarChart
            id="what-if-chart"
            label="Monthly net savings and upfront payment at each coverage target; the same figures are in the table below"
            categories={rows.map((r) => `${r.coverage_target}%`)}
            series={[
              { label: "Monthly net savings", values: rows.map((r) => r.monthly_net_savings) },
              { label: "Upfront payment", values: rows.map((r) => r.total_upfront_cost) },
            ]}
            money={currency}
          />
          <Table
            id="what-if-table"
            caption="What-if results per coverage target"
            columns={[
              { key: "target", label: "Coverage target", numeric: true, render: (r) => `${r.coverage_target}%` },
              { key: "reached", label: "Coverage reached", numeric: true, render: (r) => percent(r.coverage_reached / 100) },
              { key: "items", label: "Items", numeric: true, render: (r) => String(r.item_count) },
              { key: "monthly", label: "Monthly net savings", numeric: true, render: (r) => money(r.monthly_net_savings, currency) },
              { key: "term", label: "Savings over the term", numeric: true, render: (r) => money(r.term_net_savings, currency) },
              { key: "upfront", label: "Upfront", numeric: true, render: (r) => money(r.total_upfront_cost, currency) },
              { key: "lockin", label: "Lock-in", numeric: true, render: (r) => `${number(r.lock_in_days, 0)} days` },
            ]}
            rows={rows}
            rowKey={(r) => String(r.coverage_target)}
          />
        </>
      )}
    </Card>
  );
}

function GeneratePlan(props: { template: Template }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [key] = useState(newIdempotencyKey);
  if (!can("templates:write")) return null;
  const generate = async () => {
    setBusy(true);
    setError(null);
    try {
      const r = await send("post", "/beta/v1/org/{org_id}/commitment-plans", { body: { template_id: props.template.id }, idempotencyKey: key });
      navigate(`/app/plans/${(r.data as Plan).id}`);
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };
  return (
    <Card title="Generate a plan" id="generate">
      <p class="hint">The planner sizes purchases from the template and your usage now and saves the plan; nothing is bought.</p>
      <button type="button" id="generate-plan" onClick={generate} disabled={busy}>
        {busy ? "Generating…" : "Generate a plan"}
      </button>
      {error !== null && <ErrorNote error={error} />}
    </Card>
  );
}

/** A custom template starts as a copy of another (system ones are fixed): the API's POST with the same settings. */
function CopyTemplate(props: { template: Template }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [key] = useState(newIdempotencyKey);
  if (!can("templates:write")) return null;
  const t = props.template;
  const copy = async () => {
    setBusy(true);
    setError(null);
    try {
      const { renewal_commitment_ids, resource_ids, ...configuration } = t.configuration;
      const body = { provider: providerOf(t), name: `Copy of ${t.name}`.slice(0, 200), description: t.description, segment_id: t.segment_id, configuration: { ...configuration, ...(resource_ids?.length ? { resource_ids } : {}), ...(renewal_commitment_ids?.length ? { renewal_commitment_ids } : {}) } };
      const r = await send("post", "/beta/v1/org/{org_id}/commitment-plan-templates", { body: body as never, idempotencyKey: key });
      navigate(`/app/plans/templates/${(r.data as Template).id}`);
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" class="secondary" id="copy-template" onClick={copy} disabled={busy}>
        {busy ? "Copying…" : "Copy as a custom template"}
      </button>
      {error !== null && <ErrorNote error={error} />}
    </>
  );
}

function TemplatePage(props: { id: string }) {
  const state = useAsync(() => get("/beta/v1/org/{org_id}/commitment-plan-templates/{template_id}", { path: { template_id: props.id } }), [props.id]);
  const [override, setOverride] = useState<{ template: Template; etag: string } | null>(null);
  return (
    <Loaded state={state} label="Loading the template…">
      {(r) => {
        const template = override?.template ?? (r.data as Template);
        const etag = override?.etag ?? r.headers.get("etag") ?? "";
        return (
          <Page
            title={template.name}
            intro={template.description ?? undefined}
            actions={
              <>
                <CopyTemplate template={template} /> <Link href="/app/plans">All templates</Link>
              </>
            }
          >
            <Card title="Template" id="template">
              <TemplateEditor
                key={template.id}
                template={template}
                etag={etag}
                onSaved={(t, e) => setOverride({ template: t, etag: e })}
              />
            </Card>
            <GeneratePlan template={template} />
            <WhatIf template={template} />
          </Page>
        );
      }}
    </Loaded>
  );
}

function PlanPage(props: { id: string }) {
  const state = useAsync(() => get("/beta/v1/org/{org_id}/commitment-plans/{plan_id}", { path: { plan_id: props.id } }), [props.id]);
  return (
    <Loaded state={state} label="Loading the plan…">
      {(r) => {
        const p = r.data as Plan;
        return (
          <Page title={`Plan of ${date(p.created_at)}`} actions={<Link href="/app/plans">All plans</Link>}>
            <dl class="facts" id="plan-facts">
              <dt>Provider</dt>
              <dd>{p.provider}</dd>
              <dt>Status</dt>
              <dd>
                <Badge tone={p.status === "purchased" ? "ok" : "info"}>{label(p.status)}</Badge> {p.status_reason ? `(${label(p.status_reason)})` : ""}
              </dd>
              <dt>Monthly net savings</dt>
              <dd id="plan-savings">{money(p.monthly_net_savings, "USD")}</dd>
              <dt>Upfront</dt>
              <dd>{money(p.total_upfront_cost, "USD")}</dd>
              <dt>Usage analysed</dt>
              <dd>{p.lookback_days} days</dd>
              {p.template_id && (
                <>
                  <dt>Template</dt>
                  <dd>
                    <Link href={`/app/plans/templates/${p.template_id}`}>Open the template</Link>
                  </dd>
                </>
              )}
              {p.purchase_id && (
                <>
                  <dt>Purchase</dt>
                  <dd>
                    <Link href={`/app/purchases/${p.purchase_id}`}>Open the purchase</Link>
                  </dd>
                </>
              )}
            </dl>
            <h2>Items</h2>
            {p.items.length === 0 ? (
              <Empty>This plan buys nothing{p.status_reason ? `: ${label(p.status_reason)}` : ""}. Your usage is covered, or nothing on offer saves money for it.</Empty>
            ) : (
              <Table
                id="plan-items"
                caption="Plan items with why each is bought: the usage it covers, how much of it would be used and what it saves"
                columns={[
                  { key: "what", label: "Commitment", render: (i) => `${label(i.commitment_type)} · ${label(i.contract_term)} · ${label(i.payment_option)}` },
                  { key: "where", label: "Covers", render: (i) => `${i.instance_type ?? i.group_key}${i.region ? ` in ${i.region}` : ""}` },
                  { key: "amount", label: "Amount", numeric: true, render: (i) => number(i.amount, 6) },
                  { key: "coverage", label: "Covers of its usage", numeric: true, render: (i) => percent(i.expected_coverage) },
                  { key: "utilization", label: "Expected use", numeric: true, render: (i) => percent(i.expected_utilization) },
                  { key: "upfront", label: "Upfront", numeric: true, render: (i) => money(i.upfront_cost, "USD") },
                  { key: "monthly", label: "Monthly cost", numeric: true, render: (i) => money(i.monthly_cost, "USD") },
                  { key: "savings", label: "Monthly net savings", numeric: true, render: (i) => money(i.monthly_net_savings, "USD") },
                ]}
                rows={p.items}
                rowKey={(i) => i.id}
              />
            )}
          </Page>
        );
      }}
    </Loaded>
  );
}

export default function Plans() {
  const loc = useLocation();
  const template = /^\/app\/plans\/templates\/([^/]+)$/.exec(loc.path);
  if (template) return <TemplatePage id={decodeURIComponent(template[1]!)} />;
  const plan = /^\/app\/plans\/([^/]+)$/.exec(loc.path);
  if (plan) return <PlanPage id={decodeURIComponent(plan[1]!)} />;
  return <TemplatesAndPlans />;
}

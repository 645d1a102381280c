/**
 * Estimates: saved baskets of catalog SKUs priced live by the API under every commitment option.
 * Search the catalog (GET /catalog-skus), build a basket (POST /cost-estimates, POST …/line-items,
 * PATCH/DELETE a line), read the pricing the API returns with the prices' as-of date and the stale
 * flag (GET /cost-estimates/{id}?include_options=true), and compare two options of a line side by
 * side. Every figure is the API's; nothing is priced in the browser.
 *
 * URLs: /app/estimates?provider=… (list, new estimate), /app/estimates/{estimate_id} (one basket).
 */
import { useState } from "preact/hooks";
import { get, newIdempotencyKey, send, type ApiGet } from "../api.ts";
import { can } from "../session.ts";
import { Badge, Card, Empty, ErrorNote, Field, Figure, Loaded, Page, Pager, Select, Table, paginationOf, useAsync } from "../components.tsx";
import { date, money, month, number, percent } from "../format.ts";
import { Link, navigate, setQuery, useLocation } from "../router.tsx";
import { PROVIDERS } from "../../../providers.ts";
import { ReportProblemLink } from "./support.tsx";

type Estimate = ApiGet<"/beta/v1/org/{org_id}/cost-estimates/{estimate_id}">;
type LineItem = Estimate["line_items"][number];
type PricingLine = NonNullable<Estimate["pricing"]>["line_items"][number];
type CommitmentOption = NonNullable<PricingLine["commitment_options"]>[number];
type CatalogSku = ApiGet<"/beta/v1/org/{org_id}/catalog-skus">[number];
type Provider = (typeof PROVIDERS)[number];

/** The API's prices are in US dollars (DESIGN §7). */
const CUR = "USD";
const label = (v: string | null | undefined) => (v ? v.replace(/_/g, " ") : "—");
const optionLabel = (o: CommitmentOption) =>
  [label(o.commitment_type), label(o.contract_term), label(o.payment_option), o.offer.offering_class ? label(o.offer.offering_class) : null].filter(Boolean).join(" · ");
const skuLabel = (s: { display_name: string }) => s.display_name;
/** A catalog price's as_of: a day, or a month for month-dated sources. */
const asOf = (v: string) => {
  const m = /^(\d{4})-(\d{2})$/.exec(v);
  return m ? month(Number(m[1]), Number(m[2])) : date(v);
};

function providerOf(q: URLSearchParams): Provider {
  const p = q.get("provider") ?? "";
  return (PROVIDERS as readonly string[]).includes(p) ? (p as Provider) : "aws";
}

/** A mutating action: busy while it runs, the server's message on failure. */
function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = async (fn: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await fn();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run };
}

// ---------------------------------------------------------------- list

function NewEstimate(props: { provider: Provider }) {
  const [name, setName] = useState("");
  const action = useAction();
  const create = (e: Event) => {
    e.preventDefault();
    const key = newIdempotencyKey();
    void action.run(async () => {
      const r = await send("post", "/beta/v1/org/{org_id}/cost-estimates", { body: { provider: props.provider, ...(name.trim() ? { name: name.trim() } : {}) }, idempotencyKey: key });
      navigate(`/app/estimates/${r.data.id}`);
    });
  };
  return (
    <Card title="New estimate" id="new-estimate">
      <form class="toolbar" onSubmit={create}>
        <Field label="Name" id="estimate-name" hint="Optional; “Untitled estimate” when left empty.">
          <input id="estimate-name" type="text" maxLength={255} value={name} onInput={(e) => setName((e.currentTarget as HTMLInputElement).value)} aria-describedby="estimate-name-hint" />
        </Field>
        <button type="submit" id="create-estimate" disabled={action.busy}>
          {action.busy ? "Creating…" : `Create an ${props.provider} estimate`}
        </button>
      </form>
      {action.error !== null && <ErrorNote error={action.error} />}
    </Card>
  );
}

function EstimateList() {
  const loc = useLocation();
  const provider = providerOf(loc.query);
  const page = Number(loc.query.get("page") ?? "1") || 1;
  const list = useAsync(() => get("/beta/v1/org/{org_id}/cost-estimates", { query: { provider, page, page_size: 25 } }), [provider, page]);
  const writer = can("estimates:write");
  return (
    <Page title="Estimates" intro="Baskets of catalog SKUs, priced live under every commitment option the catalog offers.">
      <div class="toolbar">
        <Select id="estimates-provider" label="Provider" value={provider} options={PROVIDERS.map((p) => ({ value: p, label: p }))} onChange={(v) => setQuery({ provider: v, page: null })} />
      </div>
      {writer && <NewEstimate provider={provider} />}
      <Card title="Saved estimates" id="estimates">
        <Loaded state={list} label="Loading estimates…">
          {(r) =>
            r.data.length === 0 ? (
              <Empty>{writer ? `No ${provider} estimate yet. Create one above, then search the catalog to fill its basket.` : `No ${provider} estimate yet. A member of the organization can create one.`}</Empty>
            ) : (
              <>
                <Table
                  id="estimates-table"
                  caption={`Cost estimates (${provider}), most recently updated first`}
                  columns={[
                    { key: "name", label: "Estimate", render: (x) => <Link href={`/app/estimates/${x.id}`}>{x.name}</Link> },
                    { key: "lines", label: "Lines", numeric: true, render: (x) => String(x.line_count) },
                    { key: "updated", label: "Updated", render: (x) => date(x.updated_at) },
                    { key: "created", label: "Created", render: (x) => date(x.created_at) },
                  ]}
                  rows={r.data}
                  rowKey={(x) => x.id}
                />
                <Pager pagination={paginationOf(r.headers)} onPage={(p) => setQuery({ page: p })} label="Estimates" />
              </>
            )
          }
        </Loaded>
      </Card>
    </Page>
  );
}

// ---------------------------------------------------------------- catalog search

function CatalogSearch(props: { estimate: Estimate; onChanged: () => void }) {
  const [form, setForm] = useState({ q: "", region: "" });
  const [search, setSearch] = useState<{ q: string; region: string; page: number } | null>(null);
  const results = useAsync(
    () => (search ? get("/beta/v1/org/{org_id}/catalog-skus", { query: { provider: props.estimate.provider, q: search.q || undefined, region: search.region || undefined, page: search.page, page_size: 10 } }) : Promise.resolve(null)),
    [search, props.estimate.provider],
  );
  const [quantity, setQuantity] = useState("1");
  const action = useAction();
  const [added, setAdded] = useState<string | null>(null);
  const add = (sku: CatalogSku) => {
    const key = newIdempotencyKey();
    setAdded(null);
    void action.run(async () => {
      await send("post", "/beta/v1/org/{org_id}/cost-estimates/{estimate_id}/line-items", {
        path: { estimate_id: props.estimate.id },
        body: { line_items: [{ catalog_sku_id: sku.catalog_sku_id, catalog_sku_org_id: sku.catalog_sku_org_id, quantity: Number(quantity) }] },
        idempotencyKey: key,
      });
      setAdded(skuLabel(sku));
      props.onChanged();
    });
  };
  return (
    <Card title="Add from the catalog" id="catalog">
      <form
        class="toolbar"
        role="search"
        aria-label="Catalog"
        onSubmit={(e) => {
          e.preventDefault();
          setSearch({ q: form.q.trim(), region: form.region.trim(), page: 1 });
        }}
      >
        <Field label="Search SKUs" id="catalog-q" hint="Words of the name, instance type, region or service">
          <input id="catalog-q" type="search" maxLength={200} value={form.q} onInput={(e) => setForm({ ...form, q: (e.currentTarget as HTMLInputElement).value })} aria-describedby="catalog-q-hint" />
        </Field>
        <Field label="Region" id="catalog-region">
          <input id="catalog-region" type="text" maxLength={100} placeholder="e.g. us-east-1" value={form.region} onInput={(e) => setForm({ ...form, region: (e.currentTarget as HTMLInputElement).value })} />
        </Field>
        <Field label="Quantity to add" id="catalog-quantity">
          <input id="catalog-quantity" type="number" min={0} step="any" value={quantity} onInput={(e) => setQuantity((e.currentTarget as HTMLInputElement).value)} />
        </Field>
        <button type="submit" id="catalog-search">
          Search
        </button>
      </form>
      {action.error !== null && <ErrorNote error={action.error} />}
      {added && (
        <p class="notice" role="status">
          Added {added} to the basket.
        </p>
      )}
      {search && (
        <Loaded state={results} label="Searching the catalog…">
          {(r) =>
            !r || r.data.length === 0 ? (
              <Empty>No SKU matches. Try fewer words, or another region.</Empty>
            ) : (
              <>
                <Table
                  id="catalog-results"
                  caption="Catalog SKUs matching the search"
                  columns={[
                    { key: "name", label: "SKU", render: (s) => s.display_name },
                    { key: "region", label: "Region", render: (s) => s.region_code },
                    { key: "service", label: "Service", render: (s) => s.service },
                    { key: "as_of", label: "Price as of", render: (s) => asOf(s.as_of) },
                    {
                      key: "add",
                      label: "Action",
                      render: (s) =>
                        s.is_available ? (
                          <button type="button" class="secondary" disabled={action.busy} onClick={() => add(s)} data-sku={s.provider_sku_id}>
                            Add<span class="visually-hidden"> {skuLabel(s)}</span>
                          </button>
                        ) : (
                          <Badge tone="warn">Withdrawn</Badge>
                        ),
                    },
                  ]}
                  rows={r.data}
                  rowKey={(s) => `${s.catalog_sku_org_id}:${s.catalog_sku_id}`}
                />
                <Pager pagination={paginationOf(r.headers)} onPage={(p) => setSearch({ ...search, page: p })} label="Catalog results" />
              </>
            )
          }
        </Loaded>
      )}
    </Card>
  );
}

// ---------------------------------------------------------------- basket

function QuantityEditor(props: { estimateId: string; line: LineItem; onChanged: () => void }) {
  const [value, setValue] = useState(String(props.line.quantity));
  const action = useAction();
  const id = `qty-${props.line.id}`;
  const save = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      await send("patch", "/beta/v1/org/{org_id}/cost-estimates/{estimate_id}/line-items/{line_item_id}", { path: { estimate_id: props.estimateId, line_item_id: props.line.id }, body: { quantity: Number(value) } });
      props.onChanged();
    });
  };
  return (
    <form class="qty" onSubmit={save}>
      <label class="visually-hidden" for={id}>
        Quantity of {skuLabel(props.line.catalog_sku)}
      </label>
      <input id={id} type="number" min={0} step="any" value={value} onInput={(e) => setValue((e.currentTarget as HTMLInputElement).value)} />
      <button type="submit" class="secondary" disabled={action.busy || value === String(props.line.quantity)}>
        {action.busy ? "Saving…" : "Update"}
        <span class="visually-hidden"> quantity of {skuLabel(props.line.catalog_sku)}</span>
      </button>
      {action.error !== null && <ErrorNote error={action.error} />}
    </form>
  );
}

function RemoveLine(props: { estimateId: string; line: LineItem; onChanged: () => void }) {
  const action = useAction();
  return (
    <>
      <button
        type="button"
        class="secondary"
        disabled={action.busy}
        onClick={() =>
          void action.run(async () => {
            await send("delete", "/beta/v1/org/{org_id}/cost-estimates/{estimate_id}/line-items/{line_item_id}", { path: { estimate_id: props.estimateId, line_item_id: props.line.id } });
            props.onChanged();
          })
        }
      >
        {action.busy ? "Removing…" : "Remove"}
        <span class="visually-hidden"> {skuLabel(props.line.catalog_sku)}</span>
      </button>
      {action.error !== null && <ErrorNote error={action.error} />}
    </>
  );
}

function statusBadge(p: PricingLine | undefined) {
  if (!p) return "—";
  return p.status === "ok" ? <Badge tone="ok">priced</Badge> : <Badge tone="warn">{label(p.status)}</Badge>;
}

function Basket(props: { estimate: Estimate; onChanged: () => void }) {
  const e = props.estimate;
  const writer = can("estimates:write");
  const priced = new Map((e.pricing?.line_items ?? []).map((p) => [p.line_item_id, p]));
  const totals = e.pricing?.totals;
  if (e.line_items.length === 0) {
    return (
      <Card title="Basket" id="basket">
        <Empty>{writer ? "The basket is empty. Search the catalog below and add the SKUs you plan to run." : "The basket is empty. A member of the organization can add SKUs to it."}</Empty>
      </Card>
    );
  }
  return (
    <Card title="Basket" id="basket">
      <Table
        id="basket-table"
        caption="Lines of the estimate with their monthly pricing"
        columns={[
          {
            key: "sku",
            label: "SKU",
            render: (l) => (
              <>
                {skuLabel(l.catalog_sku)}
                <br />
                <small class="hint">{label(l.quantity_basis)}</small> {l.is_enabled ? statusBadge(priced.get(l.id)) : <Badge>excluded from totals</Badge>}
              </>
            ),
          },
          { key: "qty", label: "Quantity", numeric: true, render: (l) => (writer ? <QuantityEditor key={`${l.id}:${l.quantity}`} estimateId={e.id} line={l} onChanged={props.onChanged} /> : number(l.quantity, 6)) },
          { key: "option", label: "Priced under", render: (l) => (priced.get(l.id)?.matched_commitment_option ? optionLabel(priced.get(l.id)!.matched_commitment_option!) : "On-demand") },
          { key: "ondemand", label: "On-demand / mo", numeric: true, render: (l) => money(priced.get(l.id)?.ondemand_monthly_cost, CUR) },
          { key: "estimated", label: "Estimated / mo", numeric: true, render: (l) => money(priced.get(l.id)?.estimated_monthly_cost, CUR) },
          { key: "savings", label: "Net savings / mo", numeric: true, render: (l) => money(priced.get(l.id)?.monthly_net_savings, CUR) },
          { key: "asof", label: "Prices as of", render: (l) => date(priced.get(l.id)?.prices_as_of) },
          ...(writer ? [{ key: "remove", label: "Action", render: (l: LineItem) => <RemoveLine estimateId={e.id} line={l} onChanged={props.onChanged} /> }] : []),
        ]}
        rows={e.line_items}
        rowKey={(l) => l.id}
      />
      {totals && (
        <div class="figures" id="estimate-totals">
          <Figure id="total-ondemand" label="On-demand / month" value={money(totals.ondemand_monthly_cost, CUR)} />
          <Figure id="total-estimated" label="Estimated / month" value={money(totals.estimated_monthly_cost, CUR)} />
          <Figure id="total-savings" label="Net savings / month" value={money(totals.monthly_net_savings, CUR)} />
          <Figure id="total-upfront" label="Upfront (one-time)" value={money(totals.commitment_upfront_cost, CUR)} />
        </div>
      )}
      <p class="hint">Totals are the API's, over the enabled lines.</p>
    </Card>
  );
}

function UseOption(props: { estimateId: string; line: LineItem; option: CommitmentOption | null; selected: boolean; onChanged: () => void }) {
  const action = useAction();
  const o = props.option;
  if (props.selected) return <Badge tone="ok">selected</Badge>;
  const body = {
    selected_commitment_option: o
      ? { commitment_type: o.commitment_type, contract_term: o.contract_term, payment_option: o.payment_option, lease_menu_item_id: o.lease_menu_item_id, offer_id: o.offer_id, offer_org_id: o.offer_org_id }
      : null,
  };
  return (
    <>
      <button
        type="button"
        class="secondary"
        disabled={action.busy}
        onClick={() =>
          void action.run(async () => {
            await send("patch", "/beta/v1/org/{org_id}/cost-estimates/{estimate_id}/line-items/{line_item_id}", { path: { estimate_id: props.estimateId, line_item_id: props.line.id }, body });
            props.onChanged();
          })
        }
      >
        {action.busy ? "Saving…" : o ? "Use" : "Use on-demand"}
        {o && <span class="visually-hidden"> {optionLabel(o)}</span>}
      </button>
      {action.error !== null && <ErrorNote error={action.error} />}
    </>
  );
}

const sameOption = (a: CommitmentOption | null | undefined, b: CommitmentOption) =>
  !!a && a.offer_id === b.offer_id && a.lease_menu_item_id === b.lease_menu_item_id && a.commitment_type === b.commitment_type && a.contract_term === b.contract_term && a.payment_option === b.payment_option;

function LineOptions(props: { estimate: Estimate; line: LineItem; pricing: PricingLine | undefined; index: number; onChanged: () => void }) {
  const { line, pricing } = props;
  const options = pricing?.commitment_options ?? [];
  const writer = can("estimates:write");
  const matched = pricing?.matched_commitment_option;
  return (
    <section class="line-options" aria-labelledby={`opts-${line.id}`}>
      <h3 id={`opts-${line.id}`}>
        {skuLabel(line.catalog_sku)} × {number(line.quantity, 6)}
      </h3>
      {pricing?.detail && pricing.status !== "ok" && <p class="hint">{pricing.detail}</p>}
      {options.length === 0 ? (
        <Empty>No commitment option for this SKU: it is priced on-demand only.</Empty>
      ) : (
        <Table
          id={`options-${props.index}`}
          caption={`Commitment options for ${skuLabel(line.catalog_sku)}`}
          columns={[
            { key: "type", label: "Commitment", render: (o) => label(o.commitment_type) },
            { key: "term", label: "Term", render: (o) => label(o.contract_term) },
            { key: "payment", label: "Payment", render: (o) => label(o.payment_option) + (o.offer.offering_class ? ` (${o.offer.offering_class})` : "") },
            { key: "cost", label: "Cost / mo", numeric: true, render: (o) => money(o.commitment_financials_monthly_rate.commitment_cost.total, CUR) },
            { key: "net", label: "Net savings / mo", numeric: true, render: (o) => money(o.commitment_financials_monthly_rate.commitment_savings.net, CUR) },
            { key: "rate", label: "Discount", numeric: true, render: (o) => percent(o.discount_rate) },
            { key: "upfront", label: "Upfront", numeric: true, render: (o) => money(o.commitment_upfront_cost, CUR) },
            { key: "breakeven", label: "Break-even", numeric: true, render: (o) => `${number(o.breakeven_days, 0)} days` },
            ...(writer
              ? [{ key: "use", label: "Action", render: (o: CommitmentOption) => <UseOption estimateId={props.estimate.id} line={line} option={o} selected={sameOption(matched, o)} onChanged={props.onChanged} /> }]
              : [{ key: "use", label: "Selected", render: (o: CommitmentOption) => (sameOption(matched, o) ? <Badge tone="ok">selected</Badge> : "") }]),
          ]}
          rows={options}
          rowKey={(o, i) => `${o.offer_id}:${o.lease_menu_item_id}:${i}`}
        />
      )}
      {writer && matched && (
        <p>
          <UseOption estimateId={props.estimate.id} line={line} option={null} selected={false} onChanged={props.onChanged} />
        </p>
      )}
    </section>
  );
}

/** Two commitment options of one line, side by side: the API's figures, nothing derived. */
function Compare(props: { estimate: Estimate }) {
  const e = props.estimate;
  const priced = new Map((e.pricing?.line_items ?? []).map((p) => [p.line_item_id, p]));
  const lines = e.line_items.filter((l) => (priced.get(l.id)?.commitment_options ?? []).length > 0);
  const [lineId, setLineId] = useState<string>("");
  const [picked, setPicked] = useState<[string, string]>(["0", "1"]);
  if (lines.length === 0) return <Empty>Add a SKU with commitment options to compare two of them.</Empty>;
  const line = lines.find((l) => l.id === lineId) ?? lines[0]!;
  const options = priced.get(line.id)!.commitment_options!;
  const a = options[Number(picked[0])] ?? options[0]!;
  const b = options[Number(picked[1])] ?? options[Math.min(1, options.length - 1)]!;
  const optionChoices = options.map((o, i) => ({ value: String(i), label: `${i + 1}. ${optionLabel(o)}` }));
  const f = (o: CommitmentOption) => o.commitment_financials_monthly_rate;
  const rows: { label: string; a: string; b: string; text?: boolean }[] = [
    { text: true, label: "Commitment type", a: label(a.commitment_type), b: label(b.commitment_type) },
    { text: true, label: "Term", a: label(a.contract_term), b: label(b.contract_term) },
    { text: true, label: "Payment", a: label(a.payment_option), b: label(b.payment_option) },
    { text: true, label: "Offer", a: a.offer.display_name, b: b.offer.display_name },
    { label: "Amount committed", a: number(a.selected_amount, 6), b: number(b.selected_amount, 6) },
    { label: "Commitment cost / month", a: money(f(a).commitment_cost.total, CUR), b: money(f(b).commitment_cost.total, CUR) },
    { label: "of which recurring", a: money(f(a).commitment_cost.breakdown.cloud_provider_cost.breakdown.recurring, CUR), b: money(f(b).commitment_cost.breakdown.cloud_provider_cost.breakdown.recurring, CUR) },
    { label: "of which amortized upfront", a: money(f(a).commitment_cost.breakdown.cloud_provider_cost.breakdown.amortized_upfront, CUR), b: money(f(b).commitment_cost.breakdown.cloud_provider_cost.breakdown.amortized_upfront, CUR) },
    { label: "of which service premium", a: money(f(a).commitment_cost.breakdown.service_premium, CUR), b: money(f(b).commitment_cost.breakdown.service_premium, CUR) },
    { label: "Covered on-demand / month", a: money(f(a).covered_ondemand_cost, CUR), b: money(f(b).covered_ondemand_cost, CUR) },
    { label: "Gross savings / month", a: money(f(a).commitment_savings.gross, CUR), b: money(f(b).commitment_savings.gross, CUR) },
    { label: "Net savings / month", a: money(f(a).commitment_savings.net, CUR), b: money(f(b).commitment_savings.net, CUR) },
    { label: "Discount", a: percent(a.discount_rate), b: percent(b.discount_rate) },
    { label: "Upfront (one-time)", a: money(a.commitment_upfront_cost, CUR), b: money(b.commitment_upfront_cost, CUR) },
    { label: "Break-even", a: `${number(a.breakeven_days, 0)} days`, b: `${number(b.breakeven_days, 0)} days` },
  ];
  return (
    <>
      <div class="toolbar">
        {lines.length > 1 && (
          <Select
            id="compare-line"
            label="Line"
            value={line.id}
            options={lines.map((l) => ({ value: l.id, label: skuLabel(l.catalog_sku) }))}
            onChange={(v) => {
              setLineId(v);
              setPicked(["0", "1"]);
            }}
          />
        )}
        <Select id="compare-a" label="Option A" value={String(options.indexOf(a))} options={optionChoices} onChange={(v) => setPicked([v, picked[1]])} />
        <Select id="compare-b" label="Option B" value={String(options.indexOf(b))} options={optionChoices} onChange={(v) => setPicked([picked[0], v])} />
      </div>
      <div class="table-wrap" role="region" aria-label="Comparison of two commitment options" tabIndex={0}>
        <table id="compare-table">
          <caption class="visually-hidden">
            Option A and option B for {skuLabel(line.catalog_sku)}, monthly figures of the API
          </caption>
          <thead>
            <tr>
              <th scope="col">Figure</th>
              <th scope="col">Option A</th>
              <th scope="col">Option B</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.label}>
                <th scope="row">{r.label}</th>
                <td class={r.text ? undefined : "num"}>{r.a}</td>
                <td class={r.text ? undefined : "num"}>{r.b}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

function EstimateView(props: { id: string }) {
  const estimate = useAsync(() => get("/beta/v1/org/{org_id}/cost-estimates/{estimate_id}", { path: { estimate_id: props.id }, query: { include_options: true } }), [props.id]);
  const writer = can("estimates:write");
  const title = estimate.data?.data.name ?? "Estimate";
  return (
    <Page
      title={title}
      actions={
        <>
          <Link href={`/app/estimates?provider=${estimate.data?.data.provider ?? "aws"}`}>All estimates</Link>
          <ReportProblemLink />
        </>
      }
    >
      <Loaded state={estimate} label="Pricing the estimate…">
        {(r) => {
          const e = r.data;
          const pricing = e.pricing;
          const priced = new Map((pricing?.line_items ?? []).map((p) => [p.line_item_id, p]));
          return (
            <>
              <dl class="facts" id="estimate-facts">
                <dt>Provider</dt>
                <dd>{e.provider}</dd>
                {e.description && (
                  <>
                    <dt>Description</dt>
                    <dd>{e.description}</dd>
                  </>
                )}
                <dt>Prices as of</dt>
                <dd>
                  <span id="prices-as-of">{pricing?.prices_as_of ? date(pricing.prices_as_of) : "no priced line yet"}</span>{" "}
                  {pricing &&
                    pricing.prices_as_of &&
                    (pricing.stale ? (
                      <Badge tone="warn">
                        <span id="prices-stale">Stale</span>: the catalog needs a refresh
                      </Badge>
                    ) : (
                      <Badge tone="ok">
                        <span id="prices-stale">Current</span>
                      </Badge>
                    ))}
                </dd>
                <dt>Updated</dt>
                <dd>{date(e.updated_at)}</dd>
              </dl>
              {!writer && <p class="hint">You can read this estimate; your role cannot change it.</p>}
              <Basket estimate={e} onChanged={estimate.reload} />
              {e.line_items.length > 0 && (
                <Card title="Every commitment option" id="options">
                  <p class="hint">Each line priced under each option the catalog offers for its SKU (monthly rates; upfront is one-time).</p>
                  {e.line_items.map((l, i) => (
                    <LineOptions key={l.id} estimate={e} line={l} pricing={priced.get(l.id)} index={i} onChanged={estimate.reload} />
                  ))}
                </Card>
              )}
              {e.line_items.length > 0 && (
                <Card title="Compare two options" id="compare">
                  <Compare estimate={e} />
                </Card>
              )}
              {writer && <CatalogSearch estimate={e} onChanged={estimate.reload} />}
            </>
          );
        }}
      </Loaded>
    </Page>
  );
}

export default function Estimates() {
  const loc = useLocation();
  const id = /^\/app\/estimates\/([^/]+)$/.exec(loc.path)?.[1];
  return id ? <EstimateView key={id} id={decodeURIComponent(id)} /> : <EstimateList />;
}

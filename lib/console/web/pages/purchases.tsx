/**
 * Purchases: those waiting for approval first, then every purchase and the purchase runs;
 * approve or reject (purchases:write, with a confirmation: it spends money), and each order's
 * story: its items with the provider's ids, failures and dry-run results, and its events.
 *
 * URLs: /app/purchases?status=…&page=N, /app/purchases/{purchase_id}.
 */
import { useState } from "preact/hooks";
import { get, newIdempotencyKey, send, type ApiGet } from "../api.ts";
import { can } from "../session.ts";
import { Badge, Card, Empty, ErrorNote, Loaded, Page, Pager, Select, Table, paginationOf, useAsync } from "../components.tsx";
import { date, money, number } from "../format.ts";
import { Link, setQuery, useLocation } from "../router.tsx";
import { PURCHASE_STATUSES } from "../../../purchasing/orders.ts";

type Purchase = ApiGet<"/beta/v1/org/{org_id}/purchases/{purchase_id}">;
type Summary = ApiGet<"/beta/v1/org/{org_id}/purchases">[number];

const label = (v: string | null | undefined) => (v ? v.replace(/_/g, " ") : "—");

function statusTone(status: string): "ok" | "warn" | "bad" | "info" {
  if (status === "confirmed") return "ok";
  if (status === "pending_approval" || status === "approved" || status === "partially_failed") return "warn";
  if (status === "failed" || status === "rejected" || status === "expired") return "bad";
  return "info";
}

function StatusBadge(props: { status: string }) {
  return <Badge tone={statusTone(props.status)}>{props.status === "pending_approval" ? "Waiting for approval" : label(props.status)}</Badge>;
}

const summaryColumns = [
  { key: "created", label: "Created", render: (p: Summary) => <Link href={`/app/purchases/${p.id}`}>{date(p.created_at)}</Link> },
  { key: "provider", label: "Provider" },
  { key: "status", label: "Status", render: (p: Summary) => <StatusBadge status={p.status} /> },
  { key: "mode", label: "Mode", render: (p: Summary) => (p.dry_run ? "Dry run" : p.purchaser === "ledger" ? "Recorded only" : "Live") },
  { key: "items", label: "Items", numeric: true, render: (p: Summary) => String(p.item_count) },
  { key: "upfront", label: "Upfront", numeric: true, render: (p: Summary) => money(p.total_upfront_cost, "USD") },
  { key: "savings", label: "Monthly net savings", numeric: true, render: (p: Summary) => money(p.monthly_net_savings, "USD") },
];

function PurchaseList() {
  const loc = useLocation();
  const status = (PURCHASE_STATUSES as readonly string[]).includes(loc.query.get("status") ?? "") ? loc.query.get("status")! : "";
  const page = Number(loc.query.get("page") ?? 1) || 1;
  const waiting = useAsync(() => get("/beta/v1/org/{org_id}/purchases", { query: { status: "pending_approval", page_size: 50 } }), []);
  const all = useAsync(() => get("/beta/v1/org/{org_id}/purchases", { query: { ...(status ? { status: status as Summary["status"] } : {}), page, page_size: 25 } }), [status, page]);
  const runs = useAsync(() => get("/beta/v1/org/{org_id}/purchase-runs", { query: { page_size: 10 } }), []);
  return (
    <Page title="Purchases" intro="What the plans bought, or would buy: approve or reject those waiting, and read each order's story.">
      <Card title="Waiting for approval" id="waiting">
        <Loaded state={waiting} label="Loading purchases waiting for approval…">
          {(r) =>
            r.data.length === 0 ? (
              <Empty>No purchases are waiting for approval.</Empty>
            ) : (
              <Table id="waiting-table" caption="Purchases waiting for approval" columns={[...summaryColumns, { key: "expires", label: "Approval expires", render: (p: Summary) => date(p.approval_expires_at) }]} rows={r.data} rowKey={(p) => p.id} />
            )
          }
        </Loaded>
      </Card>
      <Card title="All purchases" id="all">
        <div class="toolbar">
          <Select
            id="purchase-status"
            label="Status"
            value={status}
            options={[{ value: "", label: "Every status" }, ...PURCHASE_STATUSES.map((s) => ({ value: s, label: s === "pending_approval" ? "waiting for approval" : label(s) }))]}
            onChange={(v) => setQuery({ status: v, page: null })}
          />
        </div>
        <Loaded state={all} label="Loading purchases…">
          {(r) =>
            r.data.length === 0 ? (
              <Empty>No purchase{status ? ` with this status` : " yet"}. Purchases come from templates with an auto-purchase schedule (see Plans).</Empty>
            ) : (
              <>
                <Table id="purchases-table" caption="Purchases, newest first" columns={summaryColumns} rows={r.data} rowKey={(p) => p.id} />
                <Pager pagination={paginationOf(r.headers)} onPage={(p) => setQuery({ page: p })} label="Purchases" />
              </>
            )
          }
        </Loaded>
      </Card>
      <Card title="Recent purchase runs" id="runs">
        <Loaded state={runs} label="Loading runs…">
          {(r) =>
            r.data.length === 0 ? (
              <Empty>No scheduled run yet.</Empty>
            ) : (
              <Table
                id="runs-table"
                caption="Recent scheduled purchase runs"
                columns={[
                  { key: "date", label: "Schedule slot", render: (x) => date(x.execution_date) },
                  { key: "status", label: "Status", render: (x) => <Badge tone={x.last_attempt_failed ? "bad" : "info"}>{label(x.status)}</Badge> },
                  { key: "outcome", label: "Outcome", render: (x) => label(x.outcome) },
                  { key: "purchase", label: "Purchase", render: (x) => (x.purchase_id ? <Link href={`/app/purchases/${x.purchase_id}`}>Open</Link> : "—") },
                  { key: "completed", label: "Completed", render: (x) => date(x.completed_at) },
                ]}
                rows={r.data}
                rowKey={(x) => x.id}
              />
            )
          }
        </Loaded>
      </Card>
    </Page>
  );
}

function Decision(props: { purchase: Purchase; onDone: () => void }) {
  const p = props.purchase;
  const [pending, setPending] = useState<"approve" | "reject" | null>(null);
  const [note, setNote] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [key, setKey] = useState(newIdempotencyKey);
  if (p.status !== "pending_approval" || !can("purchases:write")) return null;
  const decide = async () => {
    if (!pending) return;
    setBusy(true);
    setError(null);
    try {
      await send("post", pending === "approve" ? "/beta/v1/org/{org_id}/purchases/{purchase_id}/approve" : "/beta/v1/org/{org_id}/purchases/{purchase_id}/reject", {
        path: { purchase_id: p.id },
        body: note ? { note } : {},
        idempotencyKey: key,
      });
      setPending(null);
      props.onDone();
    } catch (e) {
      setError(e);
      setKey(newIdempotencyKey());
    } finally {
      setBusy(false);
    }
  };
  return (
    <Card title="Decision" id="decision">
      {!pending ? (
        <div class="toolbar">
          <button type="button" id="approve" onClick={() => setPending("approve")}>
            Approve…
          </button>
          <button type="button" class="secondary" id="reject" onClick={() => setPending("reject")}>
            Reject…
          </button>
        </div>
      ) : (
        <div role="group" aria-labelledby="confirm-text">
          <p id="confirm-text">
            {pending === "approve"
              ? `Approving buys ${p.item_count} commitment${p.item_count === 1 ? "" : "s"} for ${money(p.total_upfront_cost, "USD")} upfront${p.dry_run ? " (a dry run: the provider checks the order, nothing is bought)" : ""}.`
              : "Rejecting ends this purchase: nothing is bought."}
          </p>
          <div class="field">
            <label for="decision-note">Note (kept in the purchase's story)</label>
            <textarea id="decision-note" maxLength={1000} value={note} onInput={(e) => setNote((e.currentTarget as HTMLTextAreaElement).value)} />
          </div>
          <div class="toolbar">
            <button type="button" id="confirm-decision" class={pending === "reject" ? "danger" : undefined} disabled={busy} onClick={decide}>
              {busy ? "Sending…" : pending === "approve" ? "Confirm approval" : "Confirm rejection"}
            </button>
            <button type="button" class="secondary" disabled={busy} onClick={() => setPending(null)}>
              Cancel
            </button>
          </div>
        </div>
      )}
      {error !== null && <ErrorNote error={error} />}
    </Card>
  );
}

function PurchaseStory(props: { id: string }) {
  const state = useAsync(() => get("/beta/v1/org/{org_id}/purchases/{purchase_id}", { path: { purchase_id: props.id } }), [props.id]);
  // After an approval the order is bought in the background: read it again until it settles.
  const refreshUntilSettled = () => {
    state.reload();
    let tries = 0;
    const tick = () => {
      tries++;
      get("/beta/v1/org/{org_id}/purchases/{purchase_id}", { path: { purchase_id: props.id } }).then((r) => {
        if ((r.data as Purchase).status === "approved" && tries < 60) setTimeout(tick, 500);
        else state.reload();
      }, state.reload);
    };
    setTimeout(tick, 300);
  };
  return (
    <Loaded state={state} label="Loading the purchase…">
      {(r) => {
        const p = r.data as Purchase;
        return (
          <Page title={`Purchase of ${date(p.created_at)}`} actions={<Link href="/app/purchases">All purchases</Link>}>
            <dl class="facts" id="purchase-facts">
              <dt>Status</dt>
              <dd id="purchase-status-value">
                <StatusBadge status={p.status} />
              </dd>
              <dt>Provider</dt>
              <dd>{p.provider}</dd>
              <dt>Mode</dt>
              <dd>{p.dry_run ? "Dry run (nothing is bought)" : p.purchaser === "ledger" ? "Recorded only (no purchasing connection)" : `Live, through ${label(p.purchaser)}`}</dd>
              <dt>Upfront</dt>
              <dd>{money(p.total_upfront_cost, "USD")}</dd>
              <dt>Monthly net savings</dt>
              <dd>{money(p.monthly_net_savings, "USD")}</dd>
              {p.decided_at && (
                <>
                  <dt>Decided</dt>
                  <dd>
                    {date(p.decided_at)}
                    {p.decided_by ? ` by ${p.decided_by}` : ""}
                    {p.decision_note ? `: “${p.decision_note}”` : ""}
                  </dd>
                </>
              )}
              <dt>Plan</dt>
              <dd>
                <Link href={`/app/plans/${p.plan_id}`}>Open the plan</Link>
              </dd>
            </dl>
            <Decision purchase={p} onDone={refreshUntilSettled} />
            <h2>Items</h2>
            <Table
              id="purchase-items"
              caption="Items of the purchase with the provider's answer"
              columns={[
                { key: "what", label: "Commitment", render: (i) => `${label(i.commitment_type)} · ${label(i.contract_term)} · ${label(i.payment_option)}` },
                { key: "where", label: "Covers", render: (i) => `${i.instance_type ?? i.instance_family ?? "—"}${i.region ? ` in ${i.region}` : ""}` },
                { key: "amount", label: "Amount", numeric: true, render: (i) => number(i.amount, 6) },
                { key: "status", label: "Status", render: (i) => <Badge tone={i.failure_cause ? "bad" : i.provider_purchase_id ? "ok" : "info"}>{label(i.status)}</Badge> },
                { key: "provider_id", label: "Provider id", render: (i) => i.provider_purchase_id ?? "—" },
                { key: "outcome", label: "Result", render: (i) => (i.failure_cause ? `${label(i.failure_cause)}: ${i.failure_message ?? ""}` : i.dry_run_summary ?? i.provider_state ?? "—") },
                { key: "upfront", label: "Upfront", numeric: true, render: (i) => money(i.actual_upfront_cost ?? i.planned_upfront_cost, i.currency ?? "USD") },
              ]}
              rows={p.items}
              rowKey={(i) => i.id}
            />
            <h2>Story</h2>
            {p.events.length === 0 ? (
              <Empty>Nothing has happened to this purchase yet.</Empty>
            ) : (
              <ol class="timeline" id="purchase-events">
                {p.events.map((e, n) => (
                  <li key={n}>
                    <time dateTime={e.at}>{date(e.at)}</time> <strong>{label(e.event)}</strong>: {e.message}
                  </li>
                ))}
              </ol>
            )}
          </Page>
        );
      }}
    </Loaded>
  );
}

export default function Purchases() {
  const loc = useLocation();
  const one = /^\/app\/purchases\/([^/]+)$/.exec(loc.path);
  if (one) return <PurchaseStory id={decodeURIComponent(one[1]!)} />;
  return <PurchaseList />;
}

/**
 * Notifications: the organization's recent events (GET /events, by type, each with a link to the
 * console page it is about), the signed-in person's email choices (GET/PUT
 * /notification-preferences), and for admins (webhooks:write) the webhook and Slack endpoints:
 * their state (enabled, disabled and why, failing since), add one (its signing secret is shown
 * once, in this page's memory only), enable/disable, rotate the secret (shown once), a test
 * message, delete (confirmed), and each endpoint's delivery log with "Redeliver".
 *
 * URLs: /app/notifications?type=…&page=N, /app/notifications/endpoints/{id}?status=…&page=N.
 */
import { useState } from "preact/hooks";
import { get, newIdempotencyKey, send, type ApiGet } from "../api.ts";
import { can } from "../session.ts";
import { Badge, Card, Empty, ErrorNote, Field, Loaded, Page, Pager, SecretShownOnce, Select, Table, paginationOf, useAsync } from "../components.tsx";
import { date, number } from "../format.ts";
import { Link, navigate, setQuery, useLocation } from "../router.tsx";
import { summarizeEvent } from "../../../notifications/summary.ts";

type EventItem = ApiGet<"/beta/v1/org/{org_id}/events">[number];
type EventType = EventItem["type"];
type Prefs = ApiGet<"/beta/v1/org/{org_id}/notification-preferences">;
type Endpoint = ApiGet<"/beta/v1/org/{org_id}/webhook-endpoints/{endpoint_id}">;
type Delivery = ApiGet<"/beta/v1/org/{org_id}/webhook-endpoints/{endpoint_id}/deliveries">[number];
type EndpointWithSecret = Endpoint & { secret?: string };

/**
 * Every event type with its name in the console. A Record over the API's own union (from
 * api.gen.ts): a type the API adds without a label here fails the type check.
 */
const EVENT_LABELS: Record<EventType, string> = {
  "anomaly.detected": "Spend anomaly detected",
  "billing_sync.failed": "Billing sync failed",
  "billing_sync.stale": "No new billing data",
  "billing_sync.succeeded": "Billing data imported",
  "budget.threshold_crossed": "Budget threshold crossed",
  "catalog.refresh_failed": "Price catalog refresh failed",
  "commitment.expiring": "Commitment expiring",
  "period.finalized": "Billing period finalized",
  "purchase.approved": "Purchase approved",
  "purchase.confirmed": "Purchase bought",
  "purchase.dry_run": "Purchase dry run",
  "purchase.failed": "Purchase failed",
  "purchase.pending_approval": "Purchase waiting for approval",
  "purchase.rejected": "Purchase rejected or expired",
  "support.ticket_created": "Support ticket filed",
  "webhook_endpoint.disabled": "Webhook endpoint disabled",
};
const EVENT_TYPES = (Object.keys(EVENT_LABELS) as EventType[]).sort();
const DOMAIN_LABELS: Record<string, string> = {
  anomaly: "Anomalies",
  billing_sync: "Billing syncs",
  budget: "Budgets",
  catalog: "Price catalog",
  commitment: "Commitments",
  period: "Billing periods",
  purchase: "Purchases",
  support: "Support",
  webhook_endpoint: "Webhook endpoints",
};
const DOMAINS = [...new Set(EVENT_TYPES.map((x) => x.slice(0, x.indexOf("."))))];
const ALL_EVENTS = "*";
const typeLabel = (type: string) => (type === ALL_EVENTS ? "Every event type" : (EVENT_LABELS[type as EventType] ?? type));

/** What an event's console link opens, by the page it names (the page decides, not the event type). */
const PAGE_LABELS: [RegExp, string][] = [
  [/^\/app\/explorer/, "Open in the cost explorer"],
  [/^\/app\/purchases\/./, "Open the purchase"],
  [/^\/app\/purchases/, "Open purchases"],
  [/^\/app\/budgets\/./, "Open the budget"],
  [/^\/app\/connections/, "Open the connection"],
  [/^\/app\/reports/, "Open the report"],
  [/^\/app\/estimates/, "Open estimates"],
  [/^\/app\/support/, "Open support"],
  [/^\/app\/notifications\/endpoints\/./, "Open the endpoint"],
  [/^\/app\/?$/, "Open the overview"],
];

/** An event's console link: a page of this console opens in place; anything else is a plain link. */
function ConsoleLink(props: { href: string | null; fallback: string }) {
  if (!props.href) return <>—</>;
  let url: URL;
  try {
    url = new URL(props.href, location.origin);
  } catch {
    return <>—</>;
  }
  const label = PAGE_LABELS.find(([re]) => re.test(url.pathname))?.[1] ?? props.fallback;
  if (url.origin === location.origin && url.pathname.startsWith("/app")) return <Link href={`${url.pathname}${url.search}${url.hash}`}>{label}</Link>;
  return <a href={url.href}>{label}</a>;
}

// ---- Recent events ----

function RecentEvents() {
  const loc = useLocation();
  const raw = loc.query.get("type") ?? "";
  const type = (EVENT_TYPES as string[]).includes(raw) || DOMAINS.some((d) => raw === `${d}.*`) ? raw : "";
  const page = Number(loc.query.get("page") ?? 1) || 1;
  const events = useAsync(() => get("/beta/v1/org/{org_id}/events", { query: { ...(type ? { type: [type] } : {}), page, page_size: 20 } }), [type, page]);
  return (
    <Card title="Recent events" id="events">
      <div class="toolbar">
        <Select
          id="event-type"
          label="Type"
          value={type}
          options={[
            { value: "", label: "Every type" },
            ...DOMAINS.map((d) => ({ value: `${d}.*`, label: `${DOMAIN_LABELS[d] ?? d}: every type` })),
            ...EVENT_TYPES.map((x) => ({ value: x, label: EVENT_LABELS[x] })),
          ]}
          onChange={(v) => setQuery({ type: v, page: null })}
        />
      </div>
      <Loaded state={events} label="Loading events…">
        {(r) =>
          r.data.length === 0 ? (
            <Empty>No event{type ? " of this type" : " yet"}. Events are written when something happens: a purchase waits for approval, a billing sync fails, a budget crosses a threshold…</Empty>
          ) : (
            <>
              <Table
                id="events-table"
                caption="Events of the organization, newest first"
                columns={[
                  { key: "when", label: "When", render: (e: EventItem) => <time dateTime={e.timestamp}>{date(e.timestamp)}</time> },
                  { key: "type", label: "Event", render: (e) => <span title={e.type}>{EVENT_LABELS[e.type] ?? e.type}</span> },
                  { key: "what", label: "What", render: (e) => summarizeEvent(e).headline },
                  { key: "link", label: "Page", render: (e) => <ConsoleLink href={e.links.console} fallback={summarizeEvent(e).action} /> },
                ]}
                rows={r.data as EventItem[]}
                rowKey={(e) => e.id}
              />
              <Pager pagination={paginationOf(r.headers)} onPage={(p) => setQuery({ page: p })} label="Events" />
            </>
          )
        }
      </Loaded>
    </Card>
  );
}

// ---- Email choices ----

function EmailChoices() {
  const prefs = useAsync(() => get("/beta/v1/org/{org_id}/notification-preferences").then((r) => r.data as Prefs), []);
  return (
    <Card title="Email me about" id="email-prefs">
      <Loaded state={prefs} label="Loading your email choices…">
        {(p) => <EmailForm prefs={p} />}
      </Loaded>
    </Card>
  );
}

function EmailForm(props: { prefs: Prefs }) {
  // After a save the form shows the API's answer (what it kept), not what was sent.
  const [p, setPrefs] = useState<Prefs>(props.prefs);
  const [chosen, setChosen] = useState<string[]>(props.prefs.email_event_types);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [saved, setSaved] = useState(false);
  const always = new Set<string>(p.always_emailed);
  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setSaved(false);
    try {
      const r = await send("put", "/beta/v1/org/{org_id}/notification-preferences", { body: { email_event_types: chosen as EventType[] } });
      const kept = r.data as Prefs;
      setPrefs(kept);
      setChosen(kept.email_event_types);
      setSaved(true);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form id="email-prefs-form" onSubmit={save}>
      <p class="hint">
        Emails go to your account's address, one per event, for this organization only. Everyone chooses their own.
        {p.is_default ? " You have not chosen yet: these are your role's defaults." : p.updated_at ? ` Last changed ${date(p.updated_at)}.` : ""}
      </p>
      {!p.email_enabled && (
        <p class="notice" id="email-disabled">
          This server has no mail server configured (SMTP_URL), so no email is sent; your choice is kept for when one is.
        </p>
      )}
      <fieldset class="checks email-checks" disabled={busy}>
        <legend>Event types</legend>
        {EVENT_TYPES.map((x) => (
          <label key={x}>
            <input
              type="checkbox"
              name="email_event_types"
              value={x}
              id={`email-${x.replace(/[._]/g, "-")}`}
              checked={always.has(x) || chosen.includes(x)}
              disabled={always.has(x)}
              onChange={(e) => setChosen((e.currentTarget as HTMLInputElement).checked ? [...chosen, x] : chosen.filter((c) => c !== x))}
            />
            {EVENT_LABELS[x]}
            {always.has(x) ? " (always, for admins)" : ""}
          </label>
        ))}
      </fieldset>
      <div class="toolbar">
        <button type="submit" id="email-prefs-save" disabled={busy}>
          {busy ? "Saving…" : "Save my choices"}
        </button>
        <button type="button" class="secondary" disabled={busy} onClick={() => setChosen([])}>
          Clear all
        </button>
      </div>
      <div role="status" id="email-prefs-status">
        {saved && (
          <p class="notice">
            Saved: {p.email_event_types.length === 0 ? "no event type you chose emails you" : `${p.email_event_types.length} event type${p.email_event_types.length === 1 ? "" : "s"} email you`}.
          </p>
        )}
      </div>
      {error !== null && <ErrorNote error={error} />}
    </form>
  );
}

// ---- Endpoints ----

function EndpointStatus(props: { e: Endpoint }) {
  const e = props.e;
  if (!e.enabled)
    return (
      <>
        <Badge tone="bad">Disabled</Badge>
        <span class="status-note">
          {e.disabled_reason ?? "No reason recorded."}
          {e.disabled_at ? ` (${date(e.disabled_at)})` : ""}
        </span>
      </>
    );
  if (e.failing_since)
    return (
      <>
        <Badge tone="warn">Failing</Badge>
        <span class="status-note">
          Since {date(e.failing_since)}, {e.consecutive_failures} failed attempt{e.consecutive_failures === 1 ? "" : "s"}
          {e.next_attempt_at ? `; next attempt ${date(e.next_attempt_at)}` : ""}
        </span>
      </>
    );
  return <Badge tone="ok">Enabled</Badge>;
}

function EventTypeChoice(props: { idPrefix: string; value: string[]; onChange: (v: string[]) => void }) {
  const all = props.value.includes(ALL_EVENTS);
  return (
    <fieldset class="checks endpoint-types">
      <legend>Event types it receives</legend>
      <label>
        <input type="checkbox" id={`${props.idPrefix}-all`} checked={all} onChange={(e) => props.onChange((e.currentTarget as HTMLInputElement).checked ? [ALL_EVENTS] : [])} />
        Every type, present and future
      </label>
      {EVENT_TYPES.map((x) => (
        <label key={x}>
          <input
            type="checkbox"
            id={`${props.idPrefix}-${x.replace(/[._]/g, "-")}`}
            checked={all || props.value.includes(x)}
            disabled={all}
            onChange={(e) => props.onChange((e.currentTarget as HTMLInputElement).checked ? [...props.value, x] : props.value.filter((v) => v !== x))}
          />
          {EVENT_LABELS[x]}
        </label>
      ))}
    </fieldset>
  );
}

const SIGNING_SECRET_NOTICE = (
  <>
    <strong>This is the only time the signing secret is shown.</strong> Give it to the receiver (any Standard Webhooks library verifies with it); once you leave this page it cannot be shown again — rotate it if it is
    lost.
  </>
);

function AddEndpoint(props: { onCreated: (e: EndpointWithSecret) => void }) {
  const [url, setUrl] = useState("");
  const [kind, setKind] = useState<"webhook" | "slack">("webhook");
  const [description, setDescription] = useState("");
  const [types, setTypes] = useState<string[]>([ALL_EVENTS]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [key, setKey] = useState(newIdempotencyKey);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const body = { url: url.trim(), kind, event_types: types, ...(description.trim() ? { description: description.trim() } : {}) };
      const r = await send("post", "/beta/v1/org/{org_id}/webhook-endpoints", { body: body as never, idempotencyKey: key });
      setUrl("");
      setDescription("");
      setTypes([ALL_EVENTS]);
      setKey(newIdempotencyKey());
      props.onCreated(r.data as EndpointWithSecret);
    } catch (err) {
      setError(err);
      setKey(newIdempotencyKey());
    } finally {
      setBusy(false);
    }
  };
  return (
    <form id="add-endpoint-form" onSubmit={submit} aria-labelledby="add-endpoint-title">
      <h3 id="add-endpoint-title">Add an endpoint</h3>
      <fieldset class="plain" disabled={busy}>
        <div class="form-grid">
          <Field label="URL" id="endpoint-url" hint={kind === "slack" ? "The Slack incoming-webhook URL (kept sealed, shown redacted)" : "An https URL at a public address; events are POSTed to it, signed"}>
            <input id="endpoint-url" type="url" value={url} required maxLength={2048} aria-describedby="endpoint-url-hint" onInput={(e) => setUrl((e.currentTarget as HTMLInputElement).value)} />
          </Field>
          <Select
            id="endpoint-kind"
            label="Kind"
            value={kind}
            options={[
              { value: "webhook", label: "Webhook (signed JSON)" },
              { value: "slack", label: "Slack (incoming webhook)" },
            ]}
            onChange={(v) => setKind(v as "webhook" | "slack")}
          />
          <Field label="Description (optional)" id="endpoint-description">
            <input id="endpoint-description" value={description} maxLength={1000} onInput={(e) => setDescription((e.currentTarget as HTMLInputElement).value)} />
          </Field>
        </div>
        <EventTypeChoice idPrefix="endpoint-type" value={types} onChange={setTypes} />
        <button type="submit" id="add-endpoint-submit">
          {busy ? "Adding…" : "Add the endpoint"}
        </button>
      </fieldset>
      {error !== null && <ErrorNote error={error} />}
    </form>
  );
}

function Endpoints() {
  const endpoints = useAsync(() => get("/beta/v1/org/{org_id}/webhook-endpoints", { query: { page_size: 100 } }), []);
  const [created, setCreated] = useState<EndpointWithSecret | null>(null);
  return (
    <Card title="Webhook and Slack endpoints" id="endpoints">
      <p class="hint">
        Where the organization's events go: your own receivers (signed per Standard Webhooks, retried for 3 days with the same webhook-id) and Slack channels. An endpoint failing for 3 days is disabled and
        admins are emailed.
      </p>
      <Loaded state={endpoints} label="Loading endpoints…">
        {(r) =>
          r.data.length === 0 ? (
            <Empty>No endpoint yet. Add one below to receive events in your systems or in Slack.</Empty>
          ) : (
            <Table
              id="endpoints-table"
              caption="Webhook and Slack endpoints of the organization"
              columns={[
                { key: "url", label: "URL", render: (e: Endpoint) => <Link href={`/app/notifications/endpoints/${e.id}`}>{e.url}</Link> },
                { key: "kind", label: "Kind", render: (e) => (e.kind === "slack" ? "Slack" : "Webhook") },
                { key: "description", label: "Description", render: (e) => e.description ?? "—" },
                { key: "types", label: "Event types", render: (e) => e.event_types.map(typeLabel).join(", ") },
                { key: "status", label: "Status", render: (e) => <EndpointStatus e={e} /> },
              ]}
              rows={r.data as Endpoint[]}
              rowKey={(e) => e.id}
            />
          )
        }
      </Loaded>
      {created?.secret && <SecretShownOnce id="endpoint-secret" title={`Copy the signing secret of ${created.url} now`} notice={SIGNING_SECRET_NOTICE} value={created.secret} noun="signing secret" onDone={() => setCreated(null)} />}
      {created && !created.secret && (
        <p class="notice" role="status" id="endpoint-added">
          The endpoint was added.
        </p>
      )}
      <AddEndpoint
        onCreated={(e) => {
          setCreated(e);
          endpoints.reload();
        }}
      />
    </Card>
  );
}

// ---- One endpoint ----

/** The receiver's answer (up to 1 KB): its start, and the rest on demand (nothing on the page scrolls by itself). */
const EXCERPT_SHOWN = 160;
function Excerpt(props: { text: string | null }) {
  const t = props.text;
  if (!t) return <>—</>;
  if (t.length <= EXCERPT_SHOWN) return <code class="excerpt">{t}</code>;
  return (
    <details class="excerpt">
      <summary>
        <code>{t.slice(0, EXCERPT_SHOWN)}…</code>
      </summary>
      <code>{t.slice(EXCERPT_SHOWN)}</code>
    </details>
  );
}

function deliveryTone(status: string): "ok" | "warn" | "bad" | "info" {
  return status === "succeeded" ? "ok" : status === "failed" ? "bad" : "warn";
}

function DeliveryLog(props: { endpoint: Endpoint }) {
  const loc = useLocation();
  const status = ["pending", "succeeded", "failed"].includes(loc.query.get("status") ?? "") ? loc.query.get("status")! : "";
  const page = Number(loc.query.get("page") ?? 1) || 1;
  const deliveries = useAsync(
    () => get("/beta/v1/org/{org_id}/webhook-endpoints/{endpoint_id}/deliveries", { path: { endpoint_id: props.endpoint.id }, query: { ...(status ? { status: status as Delivery["status"] } : {}), page, page_size: 25 } }),
    [props.endpoint.id, status, page],
  );
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState<string | null>(null);
  const redeliver = async (d: Delivery) => {
    setBusy(d.id);
    setError(null);
    setDone(null);
    try {
      await send("post", "/beta/v1/org/{org_id}/webhook-endpoints/{endpoint_id}/deliveries/{delivery_id}/redeliver", { path: { endpoint_id: props.endpoint.id, delivery_id: d.id } });
      setDone(`${typeLabel(d.event_type)} of ${date(d.event_occurred_at)} will be sent again, with the same webhook-id.`);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(null);
      deliveries.reload();
    }
  };
  return (
    <Card title="Delivery log" id="deliveries">
      <div class="toolbar">
        <Select
          id="delivery-status"
          label="Status"
          value={status}
          options={[
            { value: "", label: "Every status" },
            { value: "pending", label: "Pending (to be sent or retried)" },
            { value: "succeeded", label: "Succeeded" },
            { value: "failed", label: "Failed (given up)" },
          ]}
          onChange={(v) => setQuery({ status: v, page: null })}
        />
        <button type="button" class="secondary" onClick={deliveries.reload}>
          Refresh
        </button>
      </div>
      <div id="deliveries-result">
        {done && (
          <p class="notice" role="status">
            {done}
          </p>
        )}
        {error !== null && <ErrorNote error={error} />}
      </div>
      <Loaded state={deliveries} label="Loading deliveries…">
        {(r) =>
          r.data.length === 0 ? (
            <Empty>No delivery{status ? " with this status" : " yet"}: an event of the types it receives is delivered within seconds.</Empty>
          ) : (
            <>
              <Table
                id="deliveries-table"
                caption="Deliveries to this endpoint, newest event first"
                columns={[
                  {
                    key: "event",
                    label: "Event",
                    render: (d: Delivery) => (
                      <>
                        {typeLabel(d.event_type)}
                        <br />
                        <small class="hint">
                          <time dateTime={d.event_occurred_at}>{date(d.event_occurred_at)}</time> · <code>{d.event_id}</code>
                        </small>
                      </>
                    ),
                  },
                  {
                    key: "status",
                    label: "Status",
                    render: (d) => (
                      <>
                        <Badge tone={deliveryTone(d.status)}>{d.status}</Badge>
                        {d.last_attempt_at && <span class="status-note">Last attempt {date(d.last_attempt_at)}</span>}
                        {d.redelivery_requested && <span class="status-note">Redelivery queued</span>}
                      </>
                    ),
                  },
                  { key: "attempts", label: "Attempts", numeric: true, render: (d) => String(d.attempts) },
                  { key: "code", label: "Last status code", numeric: true, render: (d) => (d.last_status_code === null ? (d.attempts ? "No answer" : "—") : String(d.last_status_code)) },
                  { key: "latency", label: "Latency", numeric: true, render: (d) => (d.last_latency_ms === null ? "—" : `${number(d.last_latency_ms, 0)} ms`) },
                  {
                    key: "response",
                    label: "Response",
                    render: (d) => <Excerpt text={d.last_error ?? d.last_response_excerpt} />,
                  },
                  {
                    key: "actions",
                    label: "Actions",
                    render: (d) => (
                      <button type="button" class="secondary" data-redeliver={d.id} aria-label={`Redeliver ${typeLabel(d.event_type)} of ${date(d.event_occurred_at)}`} disabled={busy !== null || d.redelivery_requested} onClick={() => redeliver(d)}>
                        Redeliver
                      </button>
                    ),
                  },
                ]}
                rows={r.data as Delivery[]}
                rowKey={(d) => d.id}
              />
              <Pager pagination={paginationOf(r.headers)} onPage={(p) => setQuery({ page: p })} label="Deliveries" />
            </>
          )
        }
      </Loaded>
    </Card>
  );
}

type Confirming = "rotate" | "delete" | null;

function EndpointActions(props: { endpoint: Endpoint; onChanged: () => void }) {
  const e = props.endpoint;
  const [confirming, setConfirming] = useState<Confirming>(null);
  const [overlap, setOverlap] = useState("24");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const act = async (what: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    setNotice(null);
    try {
      await what();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const toggle = () =>
    act(async () => {
      await send("patch", "/beta/v1/org/{org_id}/webhook-endpoints/{endpoint_id}", { path: { endpoint_id: e.id }, body: { enabled: !e.enabled } });
      setNotice(e.enabled ? "The endpoint is disabled: it gets no new deliveries." : "The endpoint is enabled again; its failure state was reset.");
      props.onChanged();
    });
  const test = () =>
    act(async () => {
      const r = await send("post", "/beta/v1/org/{org_id}/webhook-endpoints/{endpoint_id}/test", { path: { endpoint_id: e.id } });
      const t = r.data as { ok: boolean; status_code: number | null; latency_ms: number; error: string | null };
      setNotice(t.ok ? `The test message was accepted (HTTP ${t.status_code}, ${t.latency_ms} ms).` : `The receiver did not accept the test message: ${t.error ?? `HTTP ${t.status_code}`} (${t.latency_ms} ms).`);
    });
  const rotate = () =>
    act(async () => {
      const hours = Number(overlap);
      const r = await send("post", "/beta/v1/org/{org_id}/webhook-endpoints/{endpoint_id}/rotate-secret", { path: { endpoint_id: e.id }, body: { overlap_hours: Number.isInteger(hours) ? hours : (overlap as never) } });
      setConfirming(null);
      setSecret((r.data as EndpointWithSecret).secret ?? null);
      props.onChanged();
    });
  const remove = () =>
    act(async () => {
      await send("delete", "/beta/v1/org/{org_id}/webhook-endpoints/{endpoint_id}", { path: { endpoint_id: e.id } });
      navigate("/app/notifications");
    });
  return (
    <Card title="Actions" id="endpoint-actions">
      <div class="toolbar">
        <button type="button" id="endpoint-toggle" class={e.enabled ? "secondary" : undefined} disabled={busy} onClick={toggle}>
          {e.enabled ? "Disable" : "Enable"}
        </button>
        <button type="button" class="secondary" id="endpoint-test" disabled={busy} onClick={test}>
          Send a test message
        </button>
        {e.signed && (
          <button type="button" class="secondary" id="endpoint-rotate" disabled={busy} onClick={() => setConfirming("rotate")}>
            Rotate the secret…
          </button>
        )}
        <button type="button" class="secondary" id="endpoint-delete" disabled={busy} onClick={() => setConfirming("delete")}>
          Delete…
        </button>
      </div>
      {confirming === "rotate" && (
        <div class="confirm" role="group" aria-labelledby="rotate-text">
          <p id="rotate-text">Replace the signing secret? Messages carry both signatures during the overlap, then only the new secret's: give the receiver the new secret before it ends.</p>
          <div class="form-grid">
            <Field label="Overlap (hours, 0–168)" id="rotate-overlap">
              <input id="rotate-overlap" inputMode="numeric" value={overlap} onInput={(ev) => setOverlap((ev.currentTarget as HTMLInputElement).value)} />
            </Field>
          </div>
          <button type="button" class="danger" id="confirm-rotate" disabled={busy} onClick={rotate}>
            {busy ? "Rotating…" : "Rotate the secret"}
          </button>{" "}
          <button type="button" class="secondary" disabled={busy} onClick={() => setConfirming(null)}>
            Cancel
          </button>
        </div>
      )}
      {confirming === "delete" && (
        <div class="confirm" role="group" aria-labelledby="delete-endpoint-text">
          <p id="delete-endpoint-text">Delete the endpoint {e.url} and its delivery log? Events stop going there at once.</p>
          <button type="button" class="danger" id="confirm-delete-endpoint" disabled={busy} onClick={remove}>
            {busy ? "Deleting…" : "Delete the endpoint"}
          </button>{" "}
          <button type="button" class="secondary" disabled={busy} onClick={() => setConfirming(null)}>
            Cancel
          </button>
        </div>
      )}
      {secret && <SecretShownOnce id="endpoint-secret" title="Copy the new signing secret now" notice={SIGNING_SECRET_NOTICE} value={secret} noun="signing secret" onDone={() => setSecret(null)} />}
      <div id="endpoint-actions-result">
        {notice && (
          <p class="notice" role="status">
            {notice}
          </p>
        )}
        {error !== null && <ErrorNote error={error} />}
      </div>
    </Card>
  );
}

function EndpointDetail(props: { id: string }) {
  const state = useAsync(() => get("/beta/v1/org/{org_id}/webhook-endpoints/{endpoint_id}", { path: { endpoint_id: props.id } }), [props.id]);
  return (
    <Loaded state={state} label="Loading the endpoint…">
      {(r) => {
        const e = r.data as Endpoint;
        return (
          <Page title={e.kind === "slack" ? "Slack endpoint" : "Webhook endpoint"} actions={<Link href="/app/notifications">Notifications</Link>}>
            <dl class="facts" id="endpoint-facts">
              <dt>URL</dt>
              <dd class="wrap">{e.url}</dd>
              <dt>Description</dt>
              <dd>{e.description ?? "—"}</dd>
              <dt>Event types</dt>
              <dd>{e.event_types.map(typeLabel).join(", ")}</dd>
              <dt>Status</dt>
              <dd id="endpoint-status">
                <EndpointStatus e={e} />
              </dd>
              <dt>Signed</dt>
              <dd>
                {e.signed ? "Yes: webhook-id, webhook-timestamp, webhook-signature (Standard Webhooks)" : "No (Slack messages are not signed)"}
                {e.previous_secret_expires_at ? `; the previous secret also signs until ${date(e.previous_secret_expires_at)}` : ""}
              </dd>
              <dt>Added</dt>
              <dd>{date(e.created_at)}</dd>
            </dl>
            <EndpointActions endpoint={e} onChanged={state.reload} />
            <DeliveryLog endpoint={e} />
          </Page>
        );
      }}
    </Loaded>
  );
}

export default function Notifications() {
  const loc = useLocation();
  const one = /^\/app\/notifications\/endpoints\/([^/]+)$/.exec(loc.path);
  if (one)
    return can("webhooks:write") ? (
      <EndpointDetail key={one[1]} id={decodeURIComponent(one[1]!)} />
    ) : (
      <Page title="Webhook endpoint">
        <p>Only administrators manage webhook endpoints.</p>
      </Page>
    );
  return (
    <Page title="Notifications" intro="What happened in the organization, what you are emailed about, and where events are sent.">
      <RecentEvents />
      <EmailChoices />
      {can("webhooks:write") && <Endpoints />}
    </Page>
  );
}

/**
 * Support: file a bug report or a feature request for the service team (POST
 * /support/bug-reports, /support/feature-requests) and list the organization's tickets (GET
 * /support/tickets). A bug report carries `app_url`: the console page the user came from, passed
 * as `?from=/app/…` by ReportProblemLink, else this page.
 *
 * URL: /app/support?from=/app/…
 */
import { useState } from "preact/hooks";
import type { ComponentChildren } from "preact";
import { get, newIdempotencyKey, send, type ApiGet } from "../api.ts";
import { Badge, Card, Empty, ErrorNote, Field, Loaded, Page, Pager, Select, Table, paginationOf, useAsync } from "../components.tsx";
import { date } from "../format.ts";
import { Link, useLocation } from "../router.tsx";
import { PROVIDERS } from "../../../providers.ts";

type Result = ApiGet<"/beta/v1/org/{org_id}/support/tickets/{ticket_key}">;
type Kind = "bug" | "feature";

/** SPEC "Support": field limits. */
const LIMITS = { summary: 200, user_verbatim: 2000, long: 4000, app_url: 500 } as const;

/** A link to this page that carries the page the user is on (for the bug report's app_url). */
export function ReportProblemLink(props: { children?: ComponentChildren; class?: string }) {
  const loc = useLocation();
  const from = `${loc.path}${loc.query.toString() ? `?${loc.query.toString()}` : ""}`;
  return (
    <Link href={`/app/support?from=${encodeURIComponent(from)}`} class={props.class ?? "report-problem"}>
      {props.children ?? "Report a problem"}
    </Link>
  );
}

/** The console page the report is about: `?from=` when it is a console path, else this page. */
function appUrlOf(from: string | null): string {
  const path = from && /^\/app(\/|$|\?)/.test(from) ? from : `${location.pathname}${location.search}`;
  return `${location.origin}${path}`.slice(0, LIMITS.app_url);
}

function TextArea(props: { id: string; label: string; value: string; max: number; hint?: string; onInput: (v: string) => void }) {
  return (
    <Field label={props.label} id={props.id} hint={props.hint ?? `Up to ${props.max} characters.`}>
      <textarea id={props.id} required maxLength={props.max} value={props.value} aria-describedby={`${props.id}-hint`} onInput={(e) => props.onInput((e.currentTarget as HTMLTextAreaElement).value)} />
    </Field>
  );
}

type SubmitResult = { status: string; ticket_key?: string; reason?: string };

function Outcome(props: { result: SubmitResult }) {
  const r = props.result;
  if (r.status === "created")
    return (
      <p class="notice" role="status" id="support-result">
        Filed as <strong id="ticket-key">{r.ticket_key}</strong>. The service team will follow up; the ticket is listed below.
      </p>
    );
  if (r.status === "rate_limited")
    return (
      <div class="error" role="alert" id="support-result">
        <p>Not filed: the organization reached its daily limit of tickets. Try again tomorrow.</p>
      </div>
    );
  return (
    <div class="error" role="alert" id="support-result">
      <p>Not filed: {r.reason ?? "ticket filing is turned off here."}</p>
    </div>
  );
}

function emptyBug(appUrl: string) {
  return { summary: "", user_verbatim: "", what_happened: "", steps_to_reproduce: "", expected_behavior: "", app_url: appUrl, provider: "" };
}
function emptyFeature() {
  return { summary: "", user_verbatim: "", problem: "", desired_behavior: "", business_value: "" };
}

function TicketForm(props: { appUrl: string; onFiled: () => void }) {
  const [kind, setKind] = useState<Kind>("bug");
  const [bug, setBug] = useState(() => emptyBug(props.appUrl));
  const [feature, setFeature] = useState(emptyFeature);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [result, setResult] = useState<SubmitResult | null>(null);
  const [key, setKey] = useState(newIdempotencyKey);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setResult(null);
    try {
      const r =
        kind === "bug"
          ? await send("post", "/beta/v1/org/{org_id}/support/bug-reports", {
              body: { ...bug, app_url: bug.app_url.trim() || null, provider: (bug.provider || null) as "aws" | "azure" | "gcp" | null },
              idempotencyKey: key,
            })
          : await send("post", "/beta/v1/org/{org_id}/support/feature-requests", { body: feature, idempotencyKey: key });
      setResult(r.data as SubmitResult);
      if ((r.data as SubmitResult).status === "created") {
        if (kind === "bug") setBug(emptyBug(props.appUrl));
        else setFeature(emptyFeature());
      }
      // The next submission is a new action.
      setKey(newIdempotencyKey());
      props.onFiled();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <Card title="File a ticket" id="file-ticket">
      <form onSubmit={submit} class="support-form">
        <Select
          id="ticket-kind"
          label="Kind"
          value={kind}
          options={[
            { value: "bug", label: "Bug report: something does not work" },
            { value: "feature", label: "Feature request: something is missing" },
          ]}
          onChange={(v) => {
            setKind(v as Kind);
            setResult(null);
            setError(null);
            setKey(newIdempotencyKey());
          }}
        />
        {kind === "bug" ? (
          <>
            <Field label="Summary" id="bug-summary" hint={`One line, up to ${LIMITS.summary} characters.`}>
              <input id="bug-summary" type="text" required maxLength={LIMITS.summary} value={bug.summary} aria-describedby="bug-summary-hint" onInput={(e) => setBug({ ...bug, summary: (e.currentTarget as HTMLInputElement).value })} />
            </Field>
            <TextArea id="bug-verbatim" label="In your own words" max={LIMITS.user_verbatim} value={bug.user_verbatim} onInput={(v) => setBug({ ...bug, user_verbatim: v })} />
            <TextArea id="bug-what" label="What happened" max={LIMITS.long} value={bug.what_happened} onInput={(v) => setBug({ ...bug, what_happened: v })} />
            <TextArea id="bug-steps" label="Steps to reproduce" max={LIMITS.long} value={bug.steps_to_reproduce} onInput={(v) => setBug({ ...bug, steps_to_reproduce: v })} />
            <TextArea id="bug-expected" label="What you expected" max={LIMITS.long} value={bug.expected_behavior} onInput={(v) => setBug({ ...bug, expected_behavior: v })} />
            <div class="toolbar">
              <Field label="Page the problem is on" id="bug-app-url" hint="Filled from the page you came from; edit it if the problem is elsewhere.">
                <input id="bug-app-url" type="text" maxLength={LIMITS.app_url} value={bug.app_url} aria-describedby="bug-app-url-hint" onInput={(e) => setBug({ ...bug, app_url: (e.currentTarget as HTMLInputElement).value })} />
              </Field>
              <Select id="bug-provider" label="Cloud provider concerned" value={bug.provider} options={[{ value: "", label: "None in particular" }, ...PROVIDERS.map((p) => ({ value: p, label: p }))]} onChange={(v) => setBug({ ...bug, provider: v })} />
            </div>
          </>
        ) : (
          <>
            <Field label="Summary" id="feature-summary" hint={`One line, up to ${LIMITS.summary} characters.`}>
              <input id="feature-summary" type="text" required maxLength={LIMITS.summary} value={feature.summary} aria-describedby="feature-summary-hint" onInput={(e) => setFeature({ ...feature, summary: (e.currentTarget as HTMLInputElement).value })} />
            </Field>
            <TextArea id="feature-verbatim" label="In your own words" max={LIMITS.user_verbatim} value={feature.user_verbatim} onInput={(v) => setFeature({ ...feature, user_verbatim: v })} />
            <TextArea id="feature-problem" label="The problem it would solve" max={LIMITS.long} value={feature.problem} onInput={(v) => setFeature({ ...feature, problem: v })} />
            <TextArea id="feature-desired" label="What commitops should do" max={LIMITS.long} value={feature.desired_behavior} onInput={(v) => setFeature({ ...feature, desired_behavior: v })} />
            <TextArea id="feature-value" label="Why it matters to the business" max={LIMITS.long} value={feature.business_value} onInput={(v) => setFeature({ ...feature, business_value: v })} />
          </>
        )}
        <div>
          <button type="submit" id="ticket-submit" disabled={busy}>
            {busy ? "Filing…" : kind === "bug" ? "File the bug report" : "File the feature request"}
          </button>
        </div>
      </form>
      {error !== null && <ErrorNote error={error} />}
      {result && <Outcome result={result} />}
    </Card>
  );
}

function Tickets(props: { version: number }) {
  const [page, setPage] = useState(1);
  const [kind, setKind] = useState("");
  const tickets = useAsync(() => get("/beta/v1/org/{org_id}/support/tickets", { query: { page, page_size: 20, kind: (kind || undefined) as Kind | undefined } }), [page, kind, props.version]);
  return (
    <Card title="Your organization's tickets" id="tickets">
      <div class="toolbar">
        <Select
          id="tickets-kind"
          label="Show"
          value={kind}
          options={[
            { value: "", label: "All tickets" },
            { value: "bug", label: "Bug reports" },
            { value: "feature", label: "Feature requests" },
          ]}
          onChange={(v) => {
            setKind(v);
            setPage(1);
          }}
        />
      </div>
      <Loaded state={tickets} label="Loading tickets…">
        {(r) =>
          r.data.length === 0 ? (
            <Empty>No ticket filed yet. Use the form above to report a problem or ask for a capability.</Empty>
          ) : (
            <>
              <Table<Result>
                id="tickets-table"
                caption="Tickets filed by this organization, newest first"
                columns={[
                  { key: "key", label: "Ticket", render: (x) => x.ticket_key },
                  { key: "kind", label: "Kind", render: (x) => (x.kind === "bug" ? <Badge tone="warn">bug</Badge> : <Badge>feature</Badge>) },
                  { key: "summary", label: "Summary", render: (x) => x.summary },
                  { key: "page", label: "Page", render: (x) => (x.app_url ? <span class="support-url">{x.app_url}</span> : "—") },
                  { key: "filed", label: "Filed", render: (x) => date(x.created_at) },
                ]}
                rows={r.data}
                rowKey={(x) => x.ticket_key}
              />
              <Pager pagination={paginationOf(r.headers)} onPage={setPage} label="Tickets" />
            </>
          )
        }
      </Loaded>
    </Card>
  );
}

export default function Support() {
  const loc = useLocation();
  const from = loc.query.get("from");
  const [version, setVersion] = useState(0);
  const appUrl = appUrlOf(from);
  return (
    <Page title="Support" intro="Tell the commitops team about a problem or a capability you need. Tickets go to the service team with the page you were on.">
      <TicketForm key={appUrl} appUrl={appUrl} onFiled={() => setVersion((v) => v + 1)} />
      <Tickets version={version} />
    </Page>
  );
}

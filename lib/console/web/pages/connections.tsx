/**
 * Connections (admins): billing connections (the providers' FOCUS exports: status, last runs and
 * their errors, test, sync now) and purchasing connections (status, test, dry run on/off), and a
 * form to add either. Secrets are write-only, as on the API: password inputs, never prefilled,
 * cleared once sent; the page only shows which secret fields are set (`secrets_set`).
 *
 * URLs: /app/connections (both lists, the add forms), /app/connections/billing/{id} (one billing
 * connection and its runs), /app/connections/purchasing/{id} (one purchasing connection).
 */
import { Fragment } from "preact";
import { useEffect, useState } from "preact/hooks";
import { get, newIdempotencyKey, send, type ApiGet } from "../api.ts";
import { can } from "../session.ts";
import { Badge, Card, Empty, ErrorNote, Field, Loaded, Page, Select, Table, useAsync } from "../components.tsx";
import { date, number } from "../format.ts";
import { Link, navigate, useLocation } from "../router.tsx";

type BillingConnection = ApiGet<"/beta/v1/org/{org_id}/billing-connections/{connection_id}">;
type PurchasingConnection = ApiGet<"/beta/v1/org/{org_id}/purchasing-connections/{connection_id}">;
type Run = ApiGet<"/beta/v1/org/{org_id}/billing-connections/{connection_id}/runs">[number];
type BillingTest = { ok: boolean; cause: string | null; message: string; periods: { month: string; files: number; bytes: number }[]; columns: string[] };
type PurchasingTest = { ok: boolean; cause: string | null; message: string };

/**
 * The form's fields per kind, as the API documents them (CreateConnectionBody's config/secrets
 * descriptions; the API checks them and answers each field's error, shown under the form).
 */
interface KindForm {
  label: string;
  config: { name: string; label: string; required?: boolean; hint?: string }[];
  secrets: { name: string; label: string }[];
}

const ENDPOINT = { name: "endpoint_url", label: "Endpoint URL", hint: "Only for an S3/Blob/BigQuery-compatible endpoint other than the provider's" };

const BILLING_KINDS: Record<string, KindForm> = {
  aws_data_exports: {
    label: "AWS Data Exports (S3)",
    config: [
      { name: "bucket", label: "S3 bucket", required: true },
      { name: "prefix", label: "Prefix" },
      { name: "export_name", label: "Export name", required: true },
      { name: "region", label: "Region", required: true, hint: "e.g. us-east-1" },
      { name: "role_arn", label: "IAM role ARN" },
      { name: "external_id", label: "External id" },
      { name: "access_key_id", label: "Access key id" },
      ENDPOINT,
    ],
    secrets: [{ name: "secret_access_key", label: "Secret access key" }],
  },
  azure_cost_exports: {
    label: "Azure cost exports (Blob storage)",
    config: [
      { name: "storage_account_url", label: "Storage account URL", required: true },
      { name: "container", label: "Container", required: true },
      { name: "directory", label: "Directory" },
      { name: "tenant_id", label: "Tenant id" },
      { name: "client_id", label: "Client id" },
      ENDPOINT,
    ],
    secrets: [
      { name: "client_secret", label: "Client secret" },
      { name: "account_key", label: "Account key" },
      { name: "sas_token", label: "SAS token" },
    ],
  },
  gcp_bigquery_focus: {
    label: "Google Cloud BigQuery FOCUS view",
    config: [
      { name: "project_id", label: "Project id", required: true },
      { name: "dataset", label: "Dataset", required: true },
      { name: "table", label: "Table or view", required: true },
      { name: "location", label: "Location", hint: "e.g. US or europe-west1" },
      ENDPOINT,
    ],
    secrets: [{ name: "service_account_key", label: "Service account key (JSON)" }],
  },
};

const PURCHASING_KINDS: Record<string, KindForm> = {
  aws_purchasing: {
    label: "AWS",
    config: [
      { name: "region", label: "Region", required: true, hint: "e.g. us-east-1" },
      { name: "role_arn", label: "IAM role ARN" },
      { name: "external_id", label: "External id" },
      { name: "access_key_id", label: "Access key id" },
      { name: "endpoint_url", label: "Endpoint URL" },
    ],
    secrets: [{ name: "secret_access_key", label: "Secret access key" }],
  },
  azure_purchasing: {
    label: "Azure",
    config: [
      { name: "tenant_id", label: "Tenant id", required: true },
      { name: "client_id", label: "Client id", required: true },
      { name: "billing_scope_id", label: "Billing scope", required: true, hint: "/subscriptions/{id} or /providers/Microsoft.Billing/billingAccounts/{id}" },
      { name: "applied_scope_subscription_id", label: "Applied scope subscription id" },
      { name: "endpoint_url", label: "Endpoint URL" },
      { name: "authority_host", label: "Authority host" },
    ],
    secrets: [{ name: "client_secret", label: "Client secret" }],
  },
  gcp_purchasing: {
    label: "Google Cloud",
    config: [
      { name: "project_id", label: "Project id", required: true },
      { name: "endpoint_url", label: "Endpoint URL" },
    ],
    secrets: [{ name: "service_account_key", label: "Service account key (JSON)" }],
  },
};

const kindLabel = (kind: string) => BILLING_KINDS[kind]?.label ?? PURCHASING_KINDS[kind]?.label ?? kind;

function StatusBadge(props: { status: string; syncing?: boolean }) {
  if (props.syncing) return <Badge tone="info">Syncing</Badge>;
  const tone = props.status === "ok" ? "ok" : props.status === "error" ? "bad" : props.status === "failed" ? "bad" : props.status === "succeeded" ? "ok" : "info";
  const text: Record<string, string> = { ok: "OK", error: "Error", pending: "Pending", queued: "Queued", running: "Running", succeeded: "Succeeded", failed: "Failed" };
  return <Badge tone={tone}>{text[props.status] ?? props.status}</Badge>;
}

function DryRunBadge(props: { dryRun: boolean }) {
  return props.dryRun ? <Badge tone="info">Dry run</Badge> : <Badge tone="warn">Live purchases</Badge>;
}

/** Which secrets are set: names only, never a value. */
function SecretsSet(props: { names: string[]; kind: KindForm | undefined }) {
  const all = props.kind?.secrets ?? props.names.map((n) => ({ name: n, label: n }));
  if (!all.length) return <>None</>;
  return (
    <ul class="plain-list">
      {all.map((s) => (
        <li key={s.name}>
          {s.label}: {props.names.includes(s.name) ? <Badge tone="ok">Set</Badge> : <Badge>Not set</Badge>}
        </li>
      ))}
    </ul>
  );
}

function Config(props: { config: Record<string, string>; kind: KindForm | undefined }) {
  const labels = Object.fromEntries((props.kind?.config ?? []).map((f) => [f.name, f.label]));
  const entries = Object.entries(props.config);
  if (!entries.length) return <>None</>;
  return (
    <dl class="facts">
      {entries.map(([k, v]) => (
        <Fragment key={k}>
          <dt>{labels[k] ?? k}</dt>
          <dd class="wrap">{v}</dd>
        </Fragment>
      ))}
    </dl>
  );
}

// ——— The add forms ———

function AddConnection(props: { which: "billing" | "purchasing"; onCreated: (id: string) => void }) {
  const kinds = props.which === "billing" ? BILLING_KINDS : PURCHASING_KINDS;
  const prefix = `new-${props.which}`;
  const [kind, setKind] = useState(Object.keys(kinds)[0]!);
  const [name, setName] = useState("");
  const [config, setConfig] = useState<Record<string, string>>({});
  const [secrets, setSecrets] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [key, setKey] = useState(newIdempotencyKey);
  const form = kinds[kind]!;

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const pick = (names: string[], values: Record<string, string>) => Object.fromEntries(names.filter((n) => values[n]?.trim()).map((n) => [n, values[n]!.trim()]));
    const body = { name: name.trim(), kind, config: pick(form.config.map((f) => f.name), config), secrets: pick(form.secrets.map((f) => f.name), secrets) };
    try {
      const r =
        props.which === "billing"
          ? await send("post", "/beta/v1/org/{org_id}/billing-connections", { body: body as never, idempotencyKey: key })
          : await send("post", "/beta/v1/org/{org_id}/purchasing-connections", { body: body as never, idempotencyKey: key });
      // The secrets leave the page's memory with the form.
      setSecrets({});
      setConfig({});
      setName("");
      setKey(newIdempotencyKey());
      props.onCreated((r.data as { id: string }).id);
    } catch (err) {
      setError(err);
      // Secrets are never kept for a retry: the user types them again.
      setSecrets({});
      setKey(newIdempotencyKey());
    } finally {
      setBusy(false);
    }
  };

  return (
    <form id={`${prefix}-form`} onSubmit={submit} aria-labelledby={`${prefix}-title`}>
      <h3 id={`${prefix}-title`}>{props.which === "billing" ? "Add a billing connection" : "Add a purchasing connection"}</h3>
      {props.which === "purchasing" && <p class="hint">A new purchasing connection starts in dry run: the provider's price check is made and recorded, nothing is bought.</p>}
      <fieldset disabled={busy} class="plain">
        <div class="form-grid">
          <Field label="Name" id={`${prefix}-name`}>
            <input id={`${prefix}-name`} value={name} required maxLength={100} onInput={(e) => setName((e.currentTarget as HTMLInputElement).value)} />
          </Field>
          <Select
            id={`${prefix}-kind`}
            label={props.which === "billing" ? "Export" : "Provider"}
            value={kind}
            options={Object.entries(kinds).map(([k, f]) => ({ value: k, label: f.label }))}
            onChange={(k) => {
              setKind(k);
              setConfig({});
              setSecrets({});
            }}
          />
        </div>
        <div class="form-grid">
          {form.config.map((f) => (
            <Field key={`${kind}-${f.name}`} label={f.required ? `${f.label} (required)` : f.label} id={`${prefix}-config-${f.name}`} hint={f.hint}>
              <input
                id={`${prefix}-config-${f.name}`}
                name={f.name}
                value={config[f.name] ?? ""}
                autocomplete="off"
                aria-describedby={f.hint ? `${prefix}-config-${f.name}-hint` : undefined}
                onInput={(e) => setConfig({ ...config, [f.name]: (e.currentTarget as HTMLInputElement).value })}
              />
            </Field>
          ))}
        </div>
        <div class="form-grid">
          {form.secrets.map((f) => (
            <Field key={`${kind}-${f.name}`} label={f.label} id={`${prefix}-secret-${f.name}`} hint="Write-only: stored encrypted, never shown again">
              <input
                id={`${prefix}-secret-${f.name}`}
                type="password"
                autocomplete="new-password"
                value={secrets[f.name] ?? ""}
                aria-describedby={`${prefix}-secret-${f.name}-hint`}
                onInput={(e) => setSecrets({ ...secrets, [f.name]: (e.currentTarget as HTMLInputElement).value })}
              />
            </Field>
          ))}
        </div>
        <button type="submit" id={`${prefix}-submit`}>
          {busy ? "Adding…" : "Add the connection"}
        </button>
      </fieldset>
      {error !== null && <ErrorNote error={error} />}
    </form>
  );
}

// ——— The lists ———

function ConnectionsHome() {
  const writable = can("connections:write");
  const billing = useAsync(() => get("/beta/v1/org/{org_id}/billing-connections", { query: { page_size: 100 } }), []);
  const purchasing = useAsync(() => get("/beta/v1/org/{org_id}/purchasing-connections", { query: { page_size: 100 } }), []);
  return (
    <Page title="Connections" intro="Billing connections bring the providers' FOCUS exports in; purchasing connections buy the commitments you approve.">
      <Card title="Billing connections" id="billing-connections">
        <Loaded state={billing} label="Loading billing connections…">
          {(r) =>
            r.data.length === 0 ? (
              <Empty>No billing connection yet. {writable ? "Add one below to import a provider's FOCUS export, or import a FOCUS file with the CLI." : "An administrator can add one."}</Empty>
            ) : (
              <Table
                id="billing-table"
                caption="Billing connections"
                columns={[
                  { key: "name", label: "Name", render: (c) => <Link href={`/app/connections/billing/${c.id}`}>{c.name}</Link> },
                  { key: "kind", label: "Export", render: (c) => kindLabel(c.kind) },
                  { key: "status", label: "Status", render: (c) => <StatusBadge status={c.status} syncing={c.syncing} /> },
                  { key: "last", label: "Last synced", render: (c) => date(c.last_synced_at) },
                  { key: "next", label: "Next sync", render: (c) => (c.enabled ? date(c.next_sync_at) : "Off (manual only)") },
                  { key: "error", label: "Last error", render: (c) => c.last_error ?? "—" },
                ]}
                rows={r.data}
                rowKey={(c) => c.id}
              />
            )
          }
        </Loaded>
        {writable && <AddConnection which="billing" onCreated={(id) => navigate(`/app/connections/billing/${id}`)} />}
      </Card>
      <Card title="Purchasing connections" id="purchasing-connections">
        <Loaded state={purchasing} label="Loading purchasing connections…">
          {(r) =>
            r.data.length === 0 ? (
              <Empty>No purchasing connection yet. {writable ? "Add one below (one per provider) so approved purchases can be placed." : "An administrator can add one."}</Empty>
            ) : (
              <Table
                id="purchasing-table"
                caption="Purchasing connections"
                columns={[
                  { key: "name", label: "Name", render: (c) => <Link href={`/app/connections/purchasing/${c.id}`}>{c.name}</Link> },
                  { key: "provider", label: "Provider", render: (c) => kindLabel(c.kind) },
                  { key: "mode", label: "Mode", render: (c) => <DryRunBadge dryRun={c.dry_run} /> },
                  { key: "status", label: "Status", render: (c) => <StatusBadge status={c.status} /> },
                  { key: "inventory", label: "Last inventory", render: (c) => date(c.last_inventory_at) },
                  { key: "error", label: "Last error", render: (c) => c.last_error ?? "—" },
                ]}
                rows={r.data}
                rowKey={(c) => c.id}
              />
            )
          }
        </Loaded>
        {writable && <AddConnection which="purchasing" onCreated={(id) => navigate(`/app/connections/purchasing/${id}`)} />}
      </Card>
    </Page>
  );
}

// ——— One billing connection ———

function BillingTestResult(props: { result: BillingTest }) {
  const r = props.result;
  return (
    <div class={r.ok ? "notice" : "error"} role="status" id="test-result">
      <p>
        <strong>{r.ok ? "Test passed." : `Test failed${r.cause ? ` (${r.cause.replace(/_/g, " ")})` : ""}.`}</strong> {r.message}
      </p>
      {r.periods.length > 0 && (
        <Table
          caption="Billing periods found in the export"
          columns={[
            { key: "month", label: "Period" },
            { key: "files", label: "Files", numeric: true, render: (p) => number(p.files, 0) },
            { key: "bytes", label: "Bytes", numeric: true, render: (p) => number(p.bytes, 0) },
          ]}
          rows={r.periods}
          rowKey={(p) => p.month}
        />
      )}
    </div>
  );
}

function Runs(props: { runs: Run[] }) {
  if (!props.runs.length) return <Empty>No sync yet. {can("connections:write") ? "Choose “Sync now” to import the export's periods." : "The next scheduled sync will appear here."}</Empty>;
  return (
    <Table
      id="runs-table"
      caption="Syncs of this connection, newest first"
      columns={[
        { key: "created", label: "Requested", render: (r) => date(r.created_at) },
        { key: "trigger", label: "Trigger", render: (r) => (r.trigger === "manual" ? "Manual" : "Schedule") },
        { key: "status", label: "Status", render: (r) => <StatusBadge status={r.status} /> },
        { key: "seen", label: "Periods seen", numeric: true, render: (r) => number(r.periods_seen, 0) },
        { key: "imported", label: "Imported", numeric: true, render: (r) => number(r.periods_imported, 0) },
        { key: "unchanged", label: "Unchanged", numeric: true, render: (r) => number(r.periods_unchanged, 0) },
        { key: "rows", label: "Rows", numeric: true, render: (r) => number(r.rows_imported, 0) },
        { key: "bytes", label: "Bytes read", numeric: true, render: (r) => number(r.bytes_read, 0) },
        { key: "duration", label: "Duration", numeric: true, render: (r) => (r.duration_ms === null ? "—" : `${number(r.duration_ms / 1000, 1)} s`) },
        { key: "error", label: "Error", render: (r) => (r.error ? `${r.error_cause ? `${r.error_cause.replace(/_/g, " ")}: ` : ""}${r.error}` : "—") },
      ]}
      rows={props.runs}
      rowKey={(r) => r.id}
    />
  );
}

function BillingDetail(props: { id: string }) {
  const writable = can("connections:write");
  const conn = useAsync(() => get("/beta/v1/org/{org_id}/billing-connections/{connection_id}", { path: { connection_id: props.id } }), [props.id]);
  const runs = useAsync(() => get("/beta/v1/org/{org_id}/billing-connections/{connection_id}/runs", { path: { connection_id: props.id }, query: { page_size: 20 } }), [props.id]);
  const [busy, setBusy] = useState<"test" | "sync" | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [test, setTest] = useState<BillingTest | null>(null);
  const [synced, setSynced] = useState(false);

  // While a run is queued or running, its status is asked again every second.
  const active = runs.data?.data.some((r) => r.status === "queued" || r.status === "running") ?? false;
  useEffect(() => {
    if (!active) return;
    const t = setTimeout(() => {
      runs.reload();
      conn.reload();
    }, 1000);
    return () => clearTimeout(t);
  }, [active, runs.data]);

  const runTest = async () => {
    setBusy("test");
    setError(null);
    setTest(null);
    try {
      setTest((await send("post", "/beta/v1/org/{org_id}/billing-connections/{connection_id}/test", { path: { connection_id: props.id } })).data as BillingTest);
      conn.reload();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(null);
    }
  };
  const syncNow = async () => {
    setBusy("sync");
    setError(null);
    setSynced(false);
    try {
      await send("post", "/beta/v1/org/{org_id}/billing-connections/{connection_id}/sync", { path: { connection_id: props.id } });
      setSynced(true);
      runs.reload();
      conn.reload();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(null);
    }
  };

  return (
    <Page title={conn.data?.data.name ?? "Billing connection"} intro={<Link href="/app/connections">All connections</Link>}>
      <Loaded state={conn} label="Loading the connection…">
        {(r) => {
          const c: BillingConnection = r.data;
          return (
            <>
              <Card title="Status" id="connection-status">
                <dl class="facts" id="connection-facts">
                  <dt>Export</dt>
                  <dd>{kindLabel(c.kind)}</dd>
                  <dt>Status</dt>
                  <dd id="connection-status-value">
                    <StatusBadge status={c.status} syncing={c.syncing} />
                  </dd>
                  <dt>Last synced</dt>
                  <dd>{date(c.last_synced_at)}</dd>
                  <dt>Next sync</dt>
                  <dd>{c.enabled ? date(c.next_sync_at) : "Scheduled syncs are off (sync now still works)"}</dd>
                  <dt>Failures in a row</dt>
                  <dd>{number(c.consecutive_failures, 0)}</dd>
                  <dt>Last error</dt>
                  <dd class="wrap">{c.last_error ? `${c.last_error_cause ? `${c.last_error_cause.replace(/_/g, " ")}: ` : ""}${c.last_error}` : "None"}</dd>
                </dl>
                {writable && (
                  <div class="toolbar actions">
                    <button type="button" id="connection-test" class="secondary" disabled={busy !== null} onClick={runTest}>
                      {busy === "test" ? "Testing…" : "Test the connection"}
                    </button>
                    <button type="button" id="connection-sync" disabled={busy !== null || c.syncing} onClick={syncNow}>
                      {busy === "sync" ? "Requesting…" : "Sync now"}
                    </button>
                  </div>
                )}
                {synced && (
                  <p class="notice" role="status">
                    Sync requested: the run below shows its progress.
                  </p>
                )}
                {test && <BillingTestResult result={test} />}
                {error !== null && <ErrorNote error={error} />}
              </Card>
              <Card title="Settings" id="connection-settings">
                <h3>Configuration</h3>
                <Config config={c.config} kind={BILLING_KINDS[c.kind]} />
                <h3>Secrets</h3>
                <p class="hint">Secrets are write-only: only whether each one is set is shown.</p>
                <SecretsSet names={c.secrets_set} kind={BILLING_KINDS[c.kind]} />
              </Card>
            </>
          );
        }}
      </Loaded>
      <Card title="Recent syncs" id="connection-runs">
        <Loaded state={runs} label="Loading syncs…">
          {(r) => <Runs runs={r.data} />}
        </Loaded>
      </Card>
    </Page>
  );
}

// ——— One purchasing connection ———

function PurchasingDetail(props: { id: string }) {
  const writable = can("connections:write");
  const conn = useAsync(() => get("/beta/v1/org/{org_id}/purchasing-connections/{connection_id}", { path: { connection_id: props.id } }), [props.id]);
  const [busy, setBusy] = useState<"test" | "mode" | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [test, setTest] = useState<PurchasingTest | null>(null);
  const [confirmLive, setConfirmLive] = useState(false);

  const runTest = async () => {
    setBusy("test");
    setError(null);
    setTest(null);
    try {
      setTest((await send("post", "/beta/v1/org/{org_id}/purchasing-connections/{connection_id}/test", { path: { connection_id: props.id } })).data as PurchasingTest);
      conn.reload();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(null);
    }
  };
  const setDryRun = async (dryRun: boolean) => {
    setBusy("mode");
    setError(null);
    try {
      await send("patch", "/beta/v1/org/{org_id}/purchasing-connections/{connection_id}", { path: { connection_id: props.id }, body: { dry_run: dryRun } });
      setConfirmLive(false);
      conn.reload();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(null);
    }
  };

  return (
    <Page title={conn.data?.data.name ?? "Purchasing connection"} intro={<Link href="/app/connections">All connections</Link>}>
      <Loaded state={conn} label="Loading the connection…">
        {(r) => {
          const c: PurchasingConnection = r.data;
          return (
            <>
              <Card title="Status" id="connection-status">
                <dl class="facts" id="connection-facts">
                  <dt>Provider</dt>
                  <dd>{kindLabel(c.kind)}</dd>
                  <dt>Mode</dt>
                  <dd id="dry-run-value">
                    <DryRunBadge dryRun={c.dry_run} /> {c.dry_run ? "The provider's price check is made and recorded; nothing is bought." : "Approved purchases are really made at the provider."}
                  </dd>
                  <dt>Status</dt>
                  <dd>
                    <StatusBadge status={c.status} />
                  </dd>
                  <dt>Last inventory</dt>
                  <dd>{date(c.last_inventory_at)}</dd>
                  <dt>Next inventory</dt>
                  <dd>{date(c.next_inventory_at)}</dd>
                  <dt>Last error</dt>
                  <dd class="wrap">{c.last_error ? `${c.last_error_cause ? `${c.last_error_cause.replace(/_/g, " ")}: ` : ""}${c.last_error}` : "None"}</dd>
                </dl>
                {writable && (
                  <div class="toolbar actions">
                    <button type="button" id="connection-test" class="secondary" disabled={busy !== null} onClick={runTest}>
                      {busy === "test" ? "Testing…" : "Test the connection"}
                    </button>
                    {c.dry_run ? (
                      !confirmLive && (
                        <button type="button" id="dry-run-off" class="secondary" disabled={busy !== null} onClick={() => setConfirmLive(true)}>
                          Turn dry run off…
                        </button>
                      )
                    ) : (
                      <button type="button" id="dry-run-on" disabled={busy !== null} onClick={() => setDryRun(true)}>
                        {busy === "mode" ? "Saving…" : "Turn dry run on"}
                      </button>
                    )}
                  </div>
                )}
                {writable && c.dry_run && confirmLive && (
                  <div class="confirm" role="group" aria-labelledby="confirm-live-text">
                    <p id="confirm-live-text">
                      <strong>Purchases become real.</strong> Approved purchases through this connection will be bought at {c.provider.toUpperCase()} and billed to your account.
                    </p>
                    <div class="toolbar">
                      <button type="button" id="dry-run-off-confirm" class="danger" disabled={busy !== null} onClick={() => setDryRun(false)}>
                        {busy === "mode" ? "Saving…" : "Turn dry run off"}
                      </button>
                      <button type="button" class="secondary" disabled={busy !== null} onClick={() => setConfirmLive(false)}>
                        Cancel
                      </button>
                    </div>
                  </div>
                )}
                {test && (
                  <div class={test.ok ? "notice" : "error"} role="status" id="test-result">
                    <p>
                      <strong>{test.ok ? "Test passed." : `Test failed${test.cause ? ` (${test.cause.replace(/_/g, " ")})` : ""}.`}</strong> {test.message}
                    </p>
                  </div>
                )}
                {error !== null && <ErrorNote error={error} />}
              </Card>
              <Card title="Settings" id="connection-settings">
                <h3>Configuration</h3>
                <Config config={c.config} kind={PURCHASING_KINDS[c.kind]} />
                <h3>Secrets</h3>
                <p class="hint">Secrets are write-only: only whether each one is set is shown.</p>
                <SecretsSet names={c.secrets_set} kind={PURCHASING_KINDS[c.kind]} />
              </Card>
            </>
          );
        }}
      </Loaded>
    </Page>
  );
}

export default function Connections() {
  const loc = useLocation();
  const m = /^\/app\/connections\/(billing|purchasing)\/([^/]+)$/.exec(loc.path);
  if (m?.[1] === "billing") return <BillingDetail id={decodeURIComponent(m[2]!)} />;
  if (m?.[1] === "purchasing") return <PurchasingDetail id={decodeURIComponent(m[2]!)} />;
  return <ConnectionsHome />;
}

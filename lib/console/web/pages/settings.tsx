/**
 * Settings (admins): the organization's API keys — create (the secret is shown once, in a marked
 * box with a copy button, and kept only in this page's memory: leaving the page forgets it),
 * list, revoke with a confirmation — and its members and their roles (add by email, change a
 * role, remove; the server's refusals, e.g. the last admin, are shown as it words them).
 *
 * URL: /app/settings.
 */
import { useState } from "preact/hooks";
import { get, newIdempotencyKey, send, type ApiGet } from "../api.ts";
import { Badge, Card, Empty, ErrorNote, Field, Loaded, Page, SecretShownOnce, Table, useAsync } from "../components.tsx";
import { date } from "../format.ts";
import { SCOPES } from "../../../auth/scopes.ts";

type ApiKey = ApiGet<"/beta/v1/org/{org_id}/api-keys">[number];
type Member = ApiGet<"/beta/v1/org/{org_id}/members">[number];
const ROLES = ["viewer", "member", "admin"] as const;
const ROLE_LABELS: Record<string, string> = { viewer: "Viewer", member: "Member", admin: "Admin" };
interface CreatedKey {
  id: string;
  name: string;
  prefix: string;
  scopes: string[];
  api_key: string;
}

function CreateKey(props: { onCreated: (k: CreatedKey) => void }) {
  const [name, setName] = useState("");
  const [scopes, setScopes] = useState<string[]>([...SCOPES]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      // No Idempotency-Key here: a replayed answer would have to be stored, and it holds the secret.
      const body = { name: name.trim(), ...(scopes.length === SCOPES.length ? {} : { scopes }) };
      const r = await send("post", "/beta/v1/org/{org_id}/api-keys", { body: body as never });
      setName("");
      setScopes([...SCOPES]);
      props.onCreated(r.data as CreatedKey);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form id="new-key-form" onSubmit={submit} aria-labelledby="new-key-form-title">
      <h3 id="new-key-form-title">Create an API key</h3>
      <fieldset class="plain" disabled={busy}>
        <div class="form-grid">
          <Field label="Name" id="new-key-name" hint="What the key is for, e.g. “CI export job”">
            <input id="new-key-name" value={name} required maxLength={100} aria-describedby="new-key-name-hint" onInput={(e) => setName((e.currentTarget as HTMLInputElement).value)} />
          </Field>
        </div>
        <fieldset class="checks">
          <legend>Scopes</legend>
          {SCOPES.map((s) => (
            <label key={s}>
              <input
                type="checkbox"
                id={`new-key-scope-${s.replace(":", "-")}`}
                checked={scopes.includes(s)}
                onChange={(e) => setScopes((e.currentTarget as HTMLInputElement).checked ? [...scopes, s] : scopes.filter((x) => x !== s))}
              />
              {s}
            </label>
          ))}
        </fieldset>
        <button type="submit" id="new-key-submit">
          {busy ? "Creating…" : "Create the key"}
        </button>
      </fieldset>
      {error !== null && <ErrorNote error={error} />}
    </form>
  );
}

function RevokeCell(props: { k: ApiKey; onRevoked: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  if (props.k.revoked_at) return <>—</>;
  const revoke = async () => {
    setBusy(true);
    setError(null);
    try {
      await send("delete", "/beta/v1/org/{org_id}/api-keys/{key_id}", { path: { key_id: props.k.id } });
      setConfirming(false);
      props.onRevoked();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="row-actions">
      {!confirming ? (
        <button type="button" class="secondary" data-revoke={props.k.id} aria-label={`Revoke ${props.k.name}`} onClick={() => setConfirming(true)}>
          Revoke
        </button>
      ) : (
        <div role="group" aria-label={`Confirm revoking ${props.k.name}`}>
          <p class="confirm-text">Revoke “{props.k.name}”? Anything using it stops working at once.</p>
          <button type="button" class="danger" data-revoke-confirm={props.k.id} disabled={busy} onClick={revoke}>
            {busy ? "Revoking…" : "Revoke the key"}
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

function ApiKeys() {
  const [showRevoked, setShowRevoked] = useState(false);
  const [created, setCreated] = useState<CreatedKey | null>(null);
  const keys = useAsync(() => get("/beta/v1/org/{org_id}/api-keys", { query: { include_revoked: showRevoked, page_size: 100 } }), [showRevoked]);
  return (
    <Card title="API keys" id="api-keys">
      <p class="hint">Keys let scripts and tools call the API as this organization. Each key has the scopes chosen when it was created.</p>
      <CreateKey
        onCreated={(k) => {
          setCreated(k);
          keys.reload();
        }}
      />
      {created && (
        <SecretShownOnce
          id="new-key"
          title={<>Copy the new key “{created.name}” now</>}
          notice={
            <>
              <strong>This is the only time the key is shown.</strong> Store it in a secret manager; once you leave this page it cannot be shown again (create a new key if it is lost).
            </>
          }
          value={created.api_key}
          noun="key"
          onDone={() => setCreated(null)}
        />
      )}
      <h3>Keys</h3>
      <div class="toolbar">
        <label class="inline-check">
          <input type="checkbox" id="show-revoked" checked={showRevoked} onChange={(e) => setShowRevoked((e.currentTarget as HTMLInputElement).checked)} />
          Show revoked keys
        </label>
      </div>
      <Loaded state={keys} label="Loading API keys…">
        {(r) =>
          r.data.length === 0 ? (
            <Empty>No API key yet. Create one above for a script, a CI job or a BI tool.</Empty>
          ) : (
            <Table
              id="keys-table"
              caption="API keys of the organization, newest first"
              columns={[
                { key: "name", label: "Name" },
                { key: "prefix", label: "Starts with", render: (k) => <code>{k.prefix}…</code> },
                { key: "scopes", label: "Scopes", render: (k) => (k.scopes.length === SCOPES.length ? "All scopes" : k.scopes.join(", ")) },
                { key: "created", label: "Created", render: (k) => date(k.created_at) },
                { key: "used", label: "Last used", render: (k) => date(k.last_used_at) },
                { key: "status", label: "Status", render: (k) => (k.revoked_at ? <Badge tone="bad">Revoked {date(k.revoked_at)}</Badge> : <Badge tone="ok">Active</Badge>) },
                { key: "actions", label: "Actions", render: (k) => <RevokeCell k={k} onRevoked={keys.reload} /> },
              ]}
              rows={r.data}
              rowKey={(k) => k.id}
            />
          )
        }
      </Loaded>
    </Card>
  );
}

function AddMember(props: { onAdded: () => void }) {
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<string>("member");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [key, setKey] = useState(newIdempotencyKey);
  const [added, setAdded] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setAdded(null);
    try {
      const r = await send("post", "/beta/v1/org/{org_id}/members", { body: { email: email.trim(), role: role as Member["role"] }, idempotencyKey: key });
      setAdded((r.data as Member).email);
      setEmail("");
      setKey(newIdempotencyKey());
      props.onAdded();
    } catch (err) {
      setError(err);
      setKey(newIdempotencyKey());
    } finally {
      setBusy(false);
    }
  };
  return (
    <form id="add-member-form" onSubmit={submit} aria-labelledby="add-member-title">
      <h3 id="add-member-title">Add a member</h3>
      <fieldset class="plain" disabled={busy}>
        <div class="form-grid">
          <Field label="Email" id="add-member-email" hint="Someone without an account signs in by single sign-on, or once an administrator sets a password">
            <input id="add-member-email" type="email" value={email} required maxLength={320} autocomplete="off" aria-describedby="add-member-email-hint" onInput={(e) => setEmail((e.currentTarget as HTMLInputElement).value)} />
          </Field>
          <Field label="Role" id="add-member-role">
            <select id="add-member-role" value={role} onChange={(e) => setRole((e.currentTarget as HTMLSelectElement).value)}>
              {ROLES.map((r) => (
                <option key={r} value={r}>
                  {ROLE_LABELS[r]}
                </option>
              ))}
            </select>
          </Field>
        </div>
        <button type="submit" id="add-member-submit">
          {busy ? "Adding…" : "Add the member"}
        </button>
      </fieldset>
      {added && (
        <p class="notice" role="status">
          {added} was added.
        </p>
      )}
      {error !== null && <ErrorNote error={error} />}
    </form>
  );
}

function MemberActions(props: { m: Member; busy: boolean; onRemove: () => Promise<void> }) {
  const [confirming, setConfirming] = useState(false);
  if (!confirming)
    return (
      <button type="button" class="secondary" data-remove={props.m.user_id} aria-label={`Remove ${props.m.email}`} disabled={props.busy} onClick={() => setConfirming(true)}>
        Remove
      </button>
    );
  return (
    <div role="group" aria-label={`Confirm removing ${props.m.email}`} class="row-actions">
      <p class="confirm-text">Remove {props.m.email}? Their sessions and API keys for this organization stop working at once.</p>
      <button type="button" class="danger" data-remove-confirm={props.m.user_id} disabled={props.busy} onClick={() => props.onRemove().finally(() => setConfirming(false))}>
        Remove the member
      </button>{" "}
      <button type="button" class="secondary" disabled={props.busy} onClick={() => setConfirming(false)}>
        Cancel
      </button>
    </div>
  );
}

function Members() {
  const members = useAsync(() => get("/beta/v1/org/{org_id}/members", { query: { page_size: 100 } }), []);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState<string | null>(null);
  const act = async (userId: string, what: () => Promise<unknown>, message: string) => {
    setBusy(userId);
    setError(null);
    setDone(null);
    try {
      await what();
      setDone(message);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(null);
      // The list shows the server's state either way (a refused change goes back to it).
      members.reload();
    }
  };
  return (
    <Card title="Members and roles" id="members">
      <p class="hint">Viewers read reports, plans and estimates; members also build estimates and see purchases; admins do everything, including connections, approvals and this page.</p>
      <Loaded state={members} label="Loading members…">
        {(r) =>
          r.data.length === 0 ? (
            <Empty>No member yet. Add one below.</Empty>
          ) : (
            <Table
              id="members-table"
              caption="Members of the organization and their roles"
              columns={[
                { key: "email", label: "Email", render: (m) => m.email },
                { key: "name", label: "Name", render: (m) => m.name ?? "—" },
                {
                  key: "role",
                  label: "Role",
                  render: (m) => (
                    <select
                      aria-label={`Role of ${m.email}`}
                      data-role={m.user_id}
                      key={`${m.user_id}-${m.role}`}
                      value={m.role}
                      disabled={busy !== null}
                      onChange={(e) => {
                        const role = (e.currentTarget as HTMLSelectElement).value as Member["role"];
                        void act(m.user_id, () => send("patch", "/beta/v1/org/{org_id}/members/{user_id}", { path: { user_id: m.user_id }, body: { role } }), `${m.email} is now ${role}.`);
                      }}
                    >
                      {ROLES.map((x) => (
                        <option key={x} value={x}>
                          {x}
                        </option>
                      ))}
                    </select>
                  ),
                },
                { key: "since", label: "Member since", render: (m) => date(m.created_at) },
                {
                  key: "actions",
                  label: "Actions",
                  render: (m) => (
                    <MemberActions m={m} busy={busy !== null} onRemove={() => act(m.user_id, () => send("delete", "/beta/v1/org/{org_id}/members/{user_id}", { path: { user_id: m.user_id } }), `${m.email} was removed.`)} />
                  ),
                },
              ]}
              rows={r.data}
              rowKey={(m) => m.user_id}
            />
          )
        }
      </Loaded>
      <div id="members-result">
        {done && (
          <p class="notice" role="status">
            {done}
          </p>
        )}
        {error !== null && <ErrorNote error={error} />}
      </div>
      <AddMember onAdded={members.reload} />
    </Card>
  );
}

export default function Settings() {
  return (
    <Page title="Settings" intro="API keys, members and roles of the organization.">
      <ApiKeys />
      <Members />
    </Page>
  );
}

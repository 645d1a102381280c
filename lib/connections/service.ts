/**
 * Billing connections of an org: create, read, change, delete, with their secrets sealed at rest
 * and never returned. Shared by the HTTP routes, the CLI and the MCP tools.
 */
import { and, desc, eq, sql } from "drizzle-orm";
import { billingConnectionRuns, billingConnections } from "../db/schema/index.ts";
import type { DbOrTx } from "../db/index.ts";
import { ConflictError, NotFoundError, ValidationError } from "../errors.ts";
import { pgErrorCode } from "../db/index.ts";
import type { SecretBox } from "../secrets/secretBox.ts";
import { openSecretColumns, sealedSecretColumns } from "../secrets/index.ts";
import { checkSettings, endpointErrors } from "./fields.ts";
import type { ConnectionSettings } from "./kinds.ts";
import type { Page } from "../http/paging.ts";
import type { ConnectionKind } from "./source.ts";

export type ConnectionRow = typeof billingConnections.$inferSelect;
export type RunRow = typeof billingConnectionRuns.$inferSelect;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** What the sealed secret is bound to: a ciphertext copied to another row or org does not open. */
export const secretContext = (c: { id: string; orgId: string }) => `billing_connection:${c.orgId}:${c.id}`;

export interface ConnectionInput {
  name: string;
  kind: ConnectionKind;
  config?: Record<string, unknown>;
  secrets?: Record<string, unknown>;
  enabled?: boolean;
}

export interface ConnectionPatch {
  name?: string;
  enabled?: boolean;
  config?: Record<string, unknown>;
  secrets?: Record<string, unknown>;
}

/** `now`: the service clock, against which the sync lease is taken. */
export function connectionView(c: ConnectionRow, now: Date) {
  return {
    id: c.id,
    name: c.name,
    kind: c.kind,
    config: c.config as Record<string, string>,
    /** Which secret fields are set (their values are never shown). */
    secrets_set: c.secretFields,
    enabled: c.enabled,
    status: c.status,
    last_error: c.lastError,
    last_error_cause: c.lastErrorCause,
    consecutive_failures: c.consecutiveFailures,
    last_synced_at: iso(c.lastSyncedAt),
    next_sync_at: iso(c.nextSyncAt),
    syncing: !!c.claimedUntil && c.claimedUntil.getTime() > now.getTime(),
    created_at: c.createdAt.toISOString(),
    updated_at: c.updatedAt.toISOString(),
  };
}
export type ConnectionView = ReturnType<typeof connectionView>;

export function runView(r: RunRow) {
  const duration = r.startedAt && r.finishedAt ? r.finishedAt.getTime() - r.startedAt.getTime() : null;
  return {
    id: r.id,
    connection_id: r.connectionId,
    trigger: r.trigger,
    status: r.status,
    periods_seen: r.periodsSeen,
    periods_imported: r.periodsImported,
    periods_unchanged: r.periodsUnchanged,
    rows_imported: r.rowsImported,
    bytes_read: r.bytesRead,
    duration_ms: duration,
    error_cause: r.errorCause,
    error: r.error,
    created_at: r.createdAt.toISOString(),
    started_at: iso(r.startedAt),
    finished_at: iso(r.finishedAt),
  };
}
export type RunView = ReturnType<typeof runView>;

/** The connection's settings with its secrets opened, for a reader. Never returned to a client. */
export function settingsOf(box: SecretBox, c: ConnectionRow): ConnectionSettings {
  return { kind: c.kind, config: c.config, secrets: openSecretColumns(box, c, secretContext(c)) } as ConnectionSettings;
}

const sealSecrets = (box: SecretBox, c: { id: string; orgId: string }, secrets: Record<string, string>) => sealedSecretColumns(box, secretContext(c), secrets);

const nameTaken = (e: unknown) => pgErrorCode(e) === "23505";
const nameTakenError = (name: string) => new ConflictError(`A billing connection named "${name}" already exists in this organization.`, "connection_name_taken");
const notFound = () => new NotFoundError("No billing connection with this id in this organization.", "connection_not_found");
const ofOrg = (orgId: string, id: string) => and(eq(billingConnections.orgId, orgId), eq(billingConnections.id, id));

export async function getConnectionRow(db: DbOrTx, orgId: string, id: string): Promise<ConnectionRow> {
  const [c] = await db.select().from(billingConnections).where(ofOrg(orgId, id));
  if (!c) throw notFound();
  return c;
}

export async function listConnections(db: DbOrTx, orgId: string, now: Date): Promise<ConnectionView[]> {
  const rows = await db.select().from(billingConnections).where(eq(billingConnections.orgId, orgId)).orderBy(billingConnections.createdAt, billingConnections.id);
  return rows.map((c) => connectionView(c, now));
}

export async function getConnection(db: DbOrTx, orgId: string, id: string, now: Date): Promise<ConnectionView> {
  return connectionView(await getConnectionRow(db, orgId, id), now);
}

export interface WriteOptions {
  now: Date;
  allowPrivateEndpoints: boolean;
}

export async function createConnection(db: DbOrTx, box: SecretBox, orgId: string, input: ConnectionInput, { now, allowPrivateEndpoints }: WriteOptions): Promise<ConnectionView> {
  const name = input.name.trim();
  if (!name) throw new ValidationError("The connection needs a name.", { name: ["must not be blank"] });
  const endpoints = await endpointErrors(input.config ?? {}, input.secrets ?? {}, allowPrivateEndpoints);
  const { config, secrets } = checkSettings(input.kind, input.config ?? {}, input.secrets ?? {}, { endpoints });
  const id = crypto.randomUUID();
  try {
    const [c] = await db
      .insert(billingConnections)
      .values({ id, orgId, name, kind: input.kind, config, enabled: input.enabled ?? true, nextSyncAt: now, createdAt: now, updatedAt: now, ...sealSecrets(box, { id, orgId }, secrets) })
      .returning();
    return connectionView(c!, now);
  } catch (e) {
    if (nameTaken(e)) throw nameTakenError(name);
    throw e;
  }
}

/** Fields given replace the stored ones, null removes one; secrets are merged the same way, sealed again. */
export async function updateConnection(db: DbOrTx, box: SecretBox, orgId: string, id: string, patch: ConnectionPatch, { now, allowPrivateEndpoints }: WriteOptions): Promise<ConnectionView> {
  // Hosts are resolved before the row is locked; only the ones the patch sets (stored ones were checked when set).
  const endpoints = await endpointErrors(patch.config ?? {}, patch.secrets ?? {}, allowPrivateEndpoints);
  return db.transaction(async (tx) => {
    const [c] = await tx.select().from(billingConnections).where(ofOrg(orgId, id)).for("update");
    if (!c) throw notFound();
    const config = { ...(c.config as object), ...(patch.config ?? {}) };
    // Without new secrets the stored ones stay sealed: only which are set matters to the checks.
    const { config: checked, secrets } = patch.secrets
      ? checkSettings(c.kind, config, { ...(settingsOf(box, c).secrets as Record<string, unknown>), ...patch.secrets }, { endpoints })
      : checkSettings(c.kind, config, Object.fromEntries(c.secretFields.map((f) => [f, "stored"])), { endpoints, storedSecrets: true });
    const name = patch.name?.trim();
    if (patch.name !== undefined && !name) throw new ValidationError("The connection needs a name.", { name: ["must not be blank"] });
    const settingsChanged = !!patch.config || !!patch.secrets;
    try {
      const [u] = await tx
        .update(billingConnections)
        .set({
          name: name ?? c.name,
          enabled: patch.enabled ?? c.enabled,
          config: checked,
          ...(patch.secrets ? sealSecrets(box, c, secrets) : {}),
          // New settings are worth trying at once, and an earlier failure says nothing about them.
          ...(settingsChanged ? { nextSyncAt: now, consecutiveFailures: 0, status: c.status === "error" ? ("pending" as const) : c.status } : {}),
          updatedAt: now,
        })
        .where(eq(billingConnections.id, id))
        .returning();
      return connectionView(u!, now);
    } catch (e) {
      if (nameTaken(e)) throw nameTakenError(name ?? c.name);
      throw e;
    }
  });
}

/** Deletes the connection and its run history; the billing data it imported stays. */
export async function deleteConnection(db: DbOrTx, orgId: string, id: string): Promise<void> {
  const gone = await db.delete(billingConnections).where(ofOrg(orgId, id)).returning({ id: billingConnections.id });
  if (!gone.length) throw notFound();
}

export async function listRuns(db: DbOrTx, orgId: string, id: string, page: { offset: number; limit: number } = { offset: 0, limit: 100 }): Promise<Page<RunView>> {
  await getConnectionRow(db, orgId, id);
  const ofConnection = and(eq(billingConnectionRuns.orgId, orgId), eq(billingConnectionRuns.connectionId, id));
  const rows = await db.select().from(billingConnectionRuns).where(ofConnection).orderBy(desc(billingConnectionRuns.createdAt), desc(billingConnectionRuns.id)).offset(page.offset).limit(page.limit);
  const [{ n }] = (await db.select({ n: sql<number>`count(*)::int` }).from(billingConnectionRuns).where(ofConnection)) as [{ n: number }];
  return { items: rows.map(runView), total: Number(n) };
}



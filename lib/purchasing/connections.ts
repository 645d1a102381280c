/**
 * Purchasing connections of an org (DESIGN §14): the credentials commitops buys with at a
 * provider, one per provider, separate from the billing connections. Secrets are sealed at rest
 * and never returned; a new connection is `dry_run` until an admin turns that off. Shared by
 * the HTTP routes, the jobs and the CLI.
 */
import { and, eq, inArray } from "drizzle-orm";
import type { DbOrTx } from "../db/index.ts";
import { pgConstraintName, pgErrorCode } from "../db/index.ts";
import { purchaseItems, purchasingConnections } from "../db/schema/index.ts";
import { ConflictError, NotFoundError, ValidationError } from "../errors.ts";
import type { SecretBox } from "../secrets/secretBox.ts";
import { openSecretColumns, sealedSecretColumns } from "../secrets/index.ts";
import { checkConnectionFields, endpointErrors, URL_FIELD, type CheckOptions, type FieldSpec } from "../connections/fields.ts";
import type { Provider } from "../providers.ts";
import type { PurchasingKind } from "./providers/types.ts";
import type { PurchasingSettings } from "./providers/settings.ts";

export type PurchasingConnectionRow = typeof purchasingConnections.$inferSelect;

export const KIND_OF_PROVIDER: Record<Provider, PurchasingKind> = { aws: "aws_purchasing", azure: "azure_purchasing", gcp: "gcp_purchasing" };
export const PROVIDER_OF_KIND: Record<PurchasingKind, Provider> = { aws_purchasing: "aws", azure_purchasing: "azure", gcp_purchasing: "gcp" };

const GUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export const PURCHASING_CONFIG_FIELDS: Record<PurchasingKind, Record<string, FieldSpec>> = {
  aws_purchasing: {
    region: { required: true, max: 32, pattern: /^[a-z]{2}(-[a-z]+)+-\d+$/, hint: "an AWS region such as us-east-1" },
    role_arn: { max: 2048, pattern: /^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]+$/, hint: "an IAM role ARN" },
    external_id: { max: 1224, pattern: /^[\w+=,.@:/-]{2,1224}$/, hint: "2–1224 characters of letters, digits and +=,.@:/-" },
    access_key_id: { max: 128, pattern: /^[A-Z0-9]{16,128}$/, hint: "an access key id" },
    endpoint_url: URL_FIELD,
  },
  azure_purchasing: {
    tenant_id: { required: true, max: 64, pattern: /^[0-9a-fA-F-]{36}$|^[a-z0-9.-]+$/, hint: "a tenant id" },
    client_id: { required: true, max: 64, pattern: GUID, hint: "an application (client) id" },
    billing_scope_id: { required: true, max: 512, pattern: /^\/(subscriptions\/[0-9a-fA-F-]{36}|providers\/Microsoft\.Billing\/billingAccounts\/[\w.:-]+(\/billingProfiles\/[\w.:-]+)?)$/, hint: "a billing scope: /subscriptions/{id} or /providers/Microsoft.Billing/billingAccounts/{id}[/billingProfiles/{id}]" },
    applied_scope_subscription_id: { max: 64, pattern: GUID, hint: "a subscription id" },
    endpoint_url: URL_FIELD,
    authority_host: URL_FIELD,
  },
  gcp_purchasing: {
    project_id: { required: true, max: 64, pattern: /^[a-z][a-z0-9-]{4,61}[a-z0-9]$|^[a-z0-9.:-]{1,64}$/, hint: "a project id" },
    endpoint_url: URL_FIELD,
  },
};

export const PURCHASING_SECRET_FIELDS: Record<PurchasingKind, Record<string, FieldSpec>> = {
  aws_purchasing: { secret_access_key: { max: 256 } },
  azure_purchasing: { client_secret: { max: 1024 } },
  gcp_purchasing: { service_account_key: { max: 16_384 } },
};

export const ALL_PURCHASING_CONFIG_FIELDS = [...new Set(Object.values(PURCHASING_CONFIG_FIELDS).flatMap((f) => Object.keys(f)))];
export const ALL_PURCHASING_SECRET_FIELDS = [...new Set(Object.values(PURCHASING_SECRET_FIELDS).flatMap((f) => Object.keys(f)))];

function checkPurchasingSettings(kind: PurchasingKind, config: Record<string, unknown>, secrets: Record<string, unknown>, opts: CheckOptions): { config: Record<string, string>; secrets: Record<string, string> } {
  const { config: c, secrets: s, errors } = checkConnectionFields(kind, { config: PURCHASING_CONFIG_FIELDS[kind], secrets: PURCHASING_SECRET_FIELDS[kind] }, config, secrets, opts);
  if (kind === "aws_purchasing" && !!c.access_key_id !== !!s.secret_access_key) errors["secrets.secret_access_key"] = ["goes with config.access_key_id: give both or neither"];
  if (Object.keys(errors).length) throw new ValidationError("The purchasing connection's settings are not valid.", errors);
  return { config: c, secrets: s };
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** What the sealed secret is bound to: a ciphertext copied to another row or org does not open. */
export const purchasingSecretContext = (c: { id: string; orgId: string }) => `purchasing_connection:${c.orgId}:${c.id}`;

export function purchasingConnectionView(c: PurchasingConnectionRow) {
  return {
    id: c.id,
    name: c.name,
    kind: c.kind,
    provider: c.provider,
    config: c.config as Record<string, string>,
    secrets_set: c.secretFields,
    dry_run: c.dryRun,
    enabled: c.enabled,
    status: c.status,
    last_error: c.lastError,
    last_error_cause: c.lastErrorCause,
    last_inventory_at: iso(c.lastInventoryAt),
    next_inventory_at: iso(c.nextInventoryAt),
    created_at: c.createdAt.toISOString(),
    updated_at: c.updatedAt.toISOString(),
  };
}
export type PurchasingConnectionView = ReturnType<typeof purchasingConnectionView>;

/** The connection's settings with its secrets opened, for a purchaser. Never returned to a client. */
export function purchasingSettingsOf(box: SecretBox, c: PurchasingConnectionRow): PurchasingSettings {
  return { kind: c.kind, config: c.config, secrets: openSecretColumns(box, c, purchasingSecretContext(c)) } as PurchasingSettings;
}

const sealSecrets = (box: SecretBox, c: { id: string; orgId: string }, secrets: Record<string, string>) => sealedSecretColumns(box, purchasingSecretContext(c), secrets);

const notFound = () => new NotFoundError("No purchasing connection with this id in this organization.", "purchasing_connection_not_found");
const ofOrg = (orgId: string, id: string) => and(eq(purchasingConnections.orgId, orgId), eq(purchasingConnections.id, id));

function conflictOf(e: unknown, name: string, provider: string): unknown {
  if (pgErrorCode(e) !== "23505") return e;
  if (pgConstraintName(e) === "purchasing_connections_org_provider_uq") return new ConflictError(`This organization already has a purchasing connection for ${provider}: change that one instead.`, "purchasing_connection_exists");
  return new ConflictError(`A purchasing connection named "${name}" already exists in this organization.`, "connection_name_taken");
}

export async function getPurchasingConnectionRow(db: DbOrTx, orgId: string, id: string): Promise<PurchasingConnectionRow> {
  const [c] = await db.select().from(purchasingConnections).where(ofOrg(orgId, id));
  if (!c) throw notFound();
  return c;
}

/** The org's purchasing connection for a provider (enabled or not), if it has one. */
export async function purchasingConnectionFor(db: DbOrTx, orgId: string, provider: Provider): Promise<PurchasingConnectionRow | null> {
  const [c] = await db.select().from(purchasingConnections).where(and(eq(purchasingConnections.orgId, orgId), eq(purchasingConnections.provider, provider)));
  return c ?? null;
}

export async function listPurchasingConnections(db: DbOrTx, orgId: string): Promise<PurchasingConnectionView[]> {
  const rows = await db.select().from(purchasingConnections).where(eq(purchasingConnections.orgId, orgId)).orderBy(purchasingConnections.createdAt, purchasingConnections.id);
  return rows.map(purchasingConnectionView);
}

export interface PurchasingConnectionInput {
  name: string;
  kind: PurchasingKind;
  config?: Record<string, unknown>;
  secrets?: Record<string, unknown>;
  enabled?: boolean;
  dry_run?: boolean;
}

export interface PurchasingConnectionPatch {
  name?: string;
  enabled?: boolean;
  dry_run?: boolean;
  config?: Record<string, unknown>;
  secrets?: Record<string, unknown>;
}

export interface WriteOptions {
  now: Date;
  allowPrivateEndpoints: boolean;
}

export async function createPurchasingConnection(db: DbOrTx, box: SecretBox, orgId: string, input: PurchasingConnectionInput, { now, allowPrivateEndpoints }: WriteOptions): Promise<PurchasingConnectionView> {
  const name = input.name.trim();
  if (!name) throw new ValidationError("The connection needs a name.", { name: ["must not be blank"] });
  const endpoints = await endpointErrors(input.config ?? {}, input.secrets ?? {}, allowPrivateEndpoints);
  const { config, secrets } = checkPurchasingSettings(input.kind, input.config ?? {}, input.secrets ?? {}, { endpoints });
  const id = crypto.randomUUID();
  const provider = PROVIDER_OF_KIND[input.kind];
  try {
    const [c] = await db
      .insert(purchasingConnections)
      .values({ id, orgId, name, kind: input.kind, provider, config, enabled: input.enabled ?? true, dryRun: input.dry_run ?? true, nextInventoryAt: now, createdAt: now, updatedAt: now, ...sealSecrets(box, { id, orgId }, secrets) })
      .returning();
    return purchasingConnectionView(c!);
  } catch (e) {
    throw conflictOf(e, name, provider);
  }
}

/** Fields given replace the stored ones, null removes one; secrets merge the same way, sealed again. */
export async function updatePurchasingConnection(db: DbOrTx, box: SecretBox, orgId: string, id: string, patch: PurchasingConnectionPatch, { now, allowPrivateEndpoints }: WriteOptions): Promise<PurchasingConnectionView> {
  // Hosts are resolved before the row is locked (lib/connections/fields.ts endpointErrors).
  const endpoints = await endpointErrors(patch.config ?? {}, patch.secrets ?? {}, allowPrivateEndpoints);
  return db.transaction(async (tx) => {
    const [c] = await tx.select().from(purchasingConnections).where(ofOrg(orgId, id)).for("update");
    if (!c) throw notFound();
    const config = { ...(c.config as object), ...(patch.config ?? {}) };
    const { config: checked, secrets } = patch.secrets
      ? checkPurchasingSettings(c.kind, config, { ...(purchasingSettingsOf(box, c).secrets as Record<string, unknown>), ...patch.secrets }, { endpoints })
      : checkPurchasingSettings(c.kind, config, Object.fromEntries(c.secretFields.map((f) => [f, "stored"])), { endpoints, storedSecrets: true });
    const name = patch.name?.trim();
    if (patch.name !== undefined && !name) throw new ValidationError("The connection needs a name.", { name: ["must not be blank"] });
    const settingsChanged = !!patch.config || !!patch.secrets;
    try {
      const [u] = await tx
        .update(purchasingConnections)
        .set({
          name: name ?? c.name,
          enabled: patch.enabled ?? c.enabled,
          dryRun: patch.dry_run ?? c.dryRun,
          config: checked,
          ...(patch.secrets ? sealSecrets(box, c, secrets) : {}),
          ...(settingsChanged ? { nextInventoryAt: now, status: c.status === "error" ? ("pending" as const) : c.status } : {}),
          updatedAt: now,
        })
        .where(eq(purchasingConnections.id, id))
        .returning();
      return purchasingConnectionView(u!);
    } catch (e) {
      throw conflictOf(e, name ?? c.name, c.provider);
    }
  });
}

/** Refused while one of its items is being bought: that purchase needs the credentials to finish. */
export async function deletePurchasingConnection(db: DbOrTx, orgId: string, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    const [c] = await tx.select({ id: purchasingConnections.id }).from(purchasingConnections).where(ofOrg(orgId, id)).for("update");
    if (!c) throw notFound();
    const [busy] = await tx
      .select({ id: purchaseItems.id })
      .from(purchaseItems)
      .where(and(eq(purchaseItems.connectionId, id), inArray(purchaseItems.status, ["approved", "submitting"])))
      .limit(1);
    if (busy) throw new ConflictError("This connection is buying approved purchase items now: reject them or let them finish before deleting it.", "purchasing_connection_busy");
    await tx.delete(purchasingConnections).where(eq(purchasingConnections.id, id));
  });
}

import { t } from "elysia";
import { NullableText, Text, TextEnum } from "../../../../../../lib/http/text.ts";
import { ALL_PURCHASING_CONFIG_FIELDS, ALL_PURCHASING_SECRET_FIELDS } from "../../../../../../lib/purchasing/connections.ts";
import { PURCHASE_FAILURE_CAUSES, PURCHASING_KINDS } from "../../../../../../lib/purchasing/providers/types.ts";
import { PROVIDERS } from "../../../../../../lib/providers.ts";
import { component } from "../../../../../../lib/http/openapiComponents.ts";

const fieldsOf = (names: string[], max: number, what: string) =>
  t.Object(Object.fromEntries(names.map((n) => [n, t.Optional(NullableText({ maxLength: max }))])), { additionalProperties: false, description: what });

const Config = fieldsOf(
  ALL_PURCHASING_CONFIG_FIELDS,
  2048,
  "The kind's fields (DESIGN §14): aws_purchasing region, role_arn, external_id, access_key_id; azure_purchasing tenant_id, client_id, billing_scope_id, applied_scope_subscription_id, authority_host; gcp_purchasing project_id; each kind endpoint_url. null removes a field.",
);
const Secrets = fieldsOf(ALL_PURCHASING_SECRET_FIELDS, 16_384, "Write-only credentials, encrypted at rest and never returned: secret_access_key (aws), client_secret (azure), service_account_key (gcp, the key file's JSON). null removes one.");

export const PurchasingConnectionParams = t.Object({ org_id: t.String(), connection_id: t.String({ format: "uuid" }) });

export const CreatePurchasingConnectionBody = t.Object(
  {
    name: Text({ minLength: 1, maxLength: 100 }),
    kind: TextEnum(PURCHASING_KINDS),
    config: Config,
    secrets: t.Optional(Secrets),
    enabled: t.Optional(t.Boolean({ default: true })),
    dry_run: t.Optional(t.Boolean({ default: true, description: "true (default for a new connection): the provider's dry-run / price calculation is made and recorded, nothing is bought" })),
  },
  { additionalProperties: false },
);

export const UpdatePurchasingConnectionBody = t.Object(
  {
    name: t.Optional(Text({ minLength: 1, maxLength: 100 })),
    enabled: t.Optional(t.Boolean()),
    dry_run: t.Optional(t.Boolean({ description: "false: purchases are really made at the provider" })),
    config: t.Optional(Config),
    secrets: t.Optional(Secrets),
  },
  { additionalProperties: false },
);

const Instant = t.Union([t.String({ format: "date-time" }), t.Null()]);

export const PurchasingConnectionView = component(
  "PurchasingConnection",
  t.Object(
    {
      id: t.String({ format: "uuid" }),
      name: t.String(),
      kind: t.String({ enum: [...PURCHASING_KINDS] }),
      provider: t.String({ enum: [...PROVIDERS] }),
      config: t.Record(t.String(), t.String()),
      secrets_set: t.Array(t.String(), { description: "Names of the secret fields that are set (values are never shown)" }),
      dry_run: t.Boolean(),
      enabled: t.Boolean(),
      status: t.String({ enum: ["pending", "ok", "error"], description: "Of the inventory listing: error when the last listing failed (see last_error)" }),
      last_error: t.Union([t.String(), t.Null()]),
      last_error_cause: t.Union([t.String(), t.Null()]),
      last_inventory_at: Instant,
      next_inventory_at: Instant,
      created_at: t.String({ format: "date-time" }),
      updated_at: t.String({ format: "date-time" }),
    },
  ),
);

export const PurchasingTestResult = component(
  "PurchasingConnectionTestResult",
  t.Object({
    ok: t.Boolean(),
    cause: t.Union([t.String({ enum: [...PURCHASE_FAILURE_CAUSES] }), t.Null()]),
    message: t.String(),
  }),
);

export const InventoryResult = component(
  "InventorySyncResult",
  t.Object({
    listed: t.Integer(),
    added: t.Integer(),
    updated: t.Integer(),
    retired: t.Integer(),
  }),
);

import { t } from "elysia";
import { NullableText, Text, TextEnum } from "../../../../../../lib/http/text.ts";
import { ALL_CONFIG_FIELDS, ALL_SECRET_FIELDS } from "../../../../../../lib/connections/fields.ts";
import { CONNECTION_KINDS } from "../../../../../../lib/connections/source.ts";
import { component } from "../../../../../../lib/http/openapiComponents.ts";

const fieldsOf = (names: string[], max: number, what: string) =>
  t.Object(Object.fromEntries(names.map((n) => [n, t.Optional(NullableText({ maxLength: max }))])), { additionalProperties: false, description: what });

const Config = fieldsOf(ALL_CONFIG_FIELDS, 2048, "The kind's fields (DESIGN §13): aws_data_exports bucket, prefix, export_name, region, role_arn, external_id, access_key_id; azure_cost_exports storage_account_url, container, directory, tenant_id, client_id; gcp_bigquery_focus project_id, dataset, table, location; each kind endpoint_url. null removes a field.");
const Secrets = fieldsOf(ALL_SECRET_FIELDS, 16_384, "Write-only credentials, encrypted at rest and never returned: secret_access_key (aws), client_secret / account_key / sas_token (azure), service_account_key (gcp, the key file's JSON). null removes one.");

export const ConnectionParams = t.Object({ org_id: t.String(), connection_id: t.String({ format: "uuid" }) });

export const CreateConnectionBody = t.Object(
  {
    name: Text({ minLength: 1, maxLength: 100 }),
    kind: TextEnum(CONNECTION_KINDS),
    config: Config,
    secrets: t.Optional(Secrets),
    enabled: t.Optional(t.Boolean({ default: true, description: "Synced on schedule (a manual sync works either way)" })),
  },
  { additionalProperties: false },
);

export const UpdateConnectionBody = t.Object(
  {
    name: t.Optional(Text({ minLength: 1, maxLength: 100 })),
    enabled: t.Optional(t.Boolean()),
    config: t.Optional(Config),
    secrets: t.Optional(Secrets),
  },
  { additionalProperties: false },
);

const Instant = t.Union([t.String({ format: "date-time" }), t.Null()]);

export const ConnectionView = component(
  "BillingConnection",
  t.Object({
    id: t.String({ format: "uuid" }),
    name: t.String(),
    kind: t.String({ enum: [...CONNECTION_KINDS] }),
    config: t.Record(t.String(), t.String()),
    secrets_set: t.Array(t.String(), { description: "Names of the secret fields that are set (values are never shown)" }),
    enabled: t.Boolean(),
    status: t.String({ enum: ["pending", "ok", "error"], description: "error: the last syncs failed repeatedly (see last_error)" }),
    last_error: t.Union([t.String(), t.Null()]),
    last_error_cause: t.Union([t.String(), t.Null()]),
    consecutive_failures: t.Integer(),
    last_synced_at: Instant,
    next_sync_at: Instant,
    syncing: t.Boolean(),
    created_at: t.String({ format: "date-time" }),
    updated_at: t.String({ format: "date-time" }),
  }),
);

export const RunView = component(
  "BillingSyncRun",
  t.Object({
    id: t.String({ format: "uuid" }),
    connection_id: t.String({ format: "uuid" }),
    trigger: t.String({ enum: ["manual", "schedule"] }),
    status: t.String({ enum: ["queued", "running", "succeeded", "failed"] }),
    periods_seen: t.Integer(),
    periods_imported: t.Integer(),
    periods_unchanged: t.Integer(),
    rows_imported: t.Integer(),
    bytes_read: t.Integer(),
    duration_ms: t.Union([t.Integer(), t.Null()]),
    error_cause: t.Union([t.String(), t.Null()]),
    error: t.Union([t.String(), t.Null()]),
    created_at: t.String({ format: "date-time" }),
    started_at: Instant,
    finished_at: Instant,
  }),
);

export const TestResultView = component(
  "BillingConnectionTestResult",
  t.Object({
    ok: t.Boolean(),
    cause: t.Union([t.String({ enum: ["credentials", "not_found", "permission", "no_export", "not_focus", "format", "unreachable", "internal"] }), t.Null()]),
    message: t.String(),
    periods: t.Array(t.Object({ month: t.String(), files: t.Integer(), bytes: t.Integer() })),
    columns: t.Array(t.String()),
  }),
);

import { t } from "elysia";
import { component } from "../../../../../../lib/http/openapiComponents.ts";
import { CONNECTION_KINDS } from "../../../../../../lib/connections/source.ts";
import { PROVIDERS } from "../../../../../../lib/providers.ts";

const Instant = (description: string) => t.Union([t.String({ format: "date-time" }), t.Null()], { description });

export const BillingDataFreshness = component(
  "BillingDataFreshness",
  t.Object(
    {
      id: t.String({ format: "uuid", description: "The billing connection" }),
      name: t.String(),
      provider: t.String({ enum: [...PROVIDERS] }),
      kind: t.String({ enum: [...CONNECTION_KINDS] }),
      status: t.String({ enum: ["pending", "ok", "error"], description: "`pending` (never synced), `ok` (the last sync succeeded) or `error` (it failed: see last_error_cause)" }),
      enabled: t.Boolean({ description: "Synced on schedule" }),
      last_synced_at: Instant("Last successful sync; null when never"),
      next_sync_at: Instant("Next scheduled sync"),
      newest_month: t.Union([t.String(), t.Null()], { description: "The newest billing month imported (YYYY-MM); null when none" }),
      newest_month_imported_at: Instant("When that month was last imported"),
      closed_months: t.Array(t.String(), { description: "Imported months whose invoice is closed (YYYY-MM), oldest first" }),
      last_error_cause: t.Union([t.String(), t.Null()], {
        description: "The cause of the last failed sync (credentials, not_found, permission, no_export, not_focus, format, unreachable); null when the last sync succeeded. The full message: `GET /billing-connections/{id}` (connections:read)",
      }),
    },
    { description: "How current one billing connection's data is (nothing of its settings or secrets), as the assistant's get_billing_data_freshness shows it" },
  ),
);

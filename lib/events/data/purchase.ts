import { t, type Static, type TSchema } from "elysia";
import type { EventTypeSpec } from "../catalog.ts";

const Instant = (description: string) => t.Union([t.String({ format: "date-time" }), t.Null()], { description });
const Id = (description: string) => t.Union([t.String({ format: "uuid" }), t.Null()], { description });

/**
 * The data of every purchase.* event (version 1): the order as it stood when the event was
 * written (lib/purchasing/events.ts), fixed then. `GET /purchases/{id}` (links.api) shows it now.
 */
export const PurchaseEventDataSchema = t.Object({
  purchase_id: t.String({ format: "uuid" }),
  status: t.Union(
    ["pending_approval", "approved", "rejected", "expired", "confirmed", "partially_failed", "failed", "dry_run"].map((s) => t.Literal(s)),
    {
      description:
        "The order's status this event reports: purchase.rejected carries `rejected` or `expired` (not approved in time, or superseded by a newer plan), purchase.failed `failed` or `partially_failed` (some items bought)",
    },
  ),
  message: t.String({ description: "What happened, in words (as in the purchase's story)" }),
  provider: t.String({ description: "aws, azure or gcp" }),
  purchaser: t.String({ description: "ledger, aws_purchasing, azure_purchasing or gcp_purchasing" }),
  dry_run: t.Boolean({ description: "Checked at the provider without buying" }),
  template_id: Id("The commitment plan template whose schedule placed the order"),
  plan_id: t.String({ format: "uuid", description: "The commitment plan bought from" }),
  run_id: Id("The auto-purchase run (GET /purchase-runs) that placed it"),
  execution_date: t.Union([t.String({ format: "date" }), t.Null()], { description: "The schedule's execution date (UTC)" }),
  item_count: t.Integer(),
  total_upfront_cost: t.Number({ description: "Planned upfront of all items, in `currency` (sum of the items' cents, as GET /purchases/{id} shows it)" }),
  monthly_net_savings: t.Number({ description: "Planned monthly net savings of all items, in `currency`" }),
  currency: t.String({ description: "ISO 4217 currency of the amounts" }),
  requires_approval: t.Boolean(),
  approval_expires_at: Instant("When a pending approval lapses"),
  decided_by: t.Union([t.String(), t.Null()], { description: "Who approved or rejected it (an API key or user, `auto` under auto_approve_max_upfront); null when no person decided" }),
  decided_at: Instant("When it was approved or rejected"),
});
export type PurchaseEventData = Static<typeof PurchaseEventDataSchema>;

/** support.ticket_created (version 1): the ticket as filed (GET /support/tickets/{key} has every field). */
export const SupportTicketCreatedDataSchema = t.Object({
  ticket_key: t.String({ description: "SUP-<n>" }),
  kind: t.Union([t.Literal("bug"), t.Literal("feature")]),
  summary: t.String(),
  provider: t.Union([t.String(), t.Null()], { description: "The provider a bug report is about, if any" }),
  filed_by: t.Object({
    user_id: t.Union([t.String({ format: "uuid" }), t.Null()]),
    credential_kind: t.Union([t.Literal("api_key"), t.Literal("oauth")]),
  }),
  ticket_url: t.String({ format: "uri", description: "Where the filer reads the ticket back" }),
});
export type SupportTicketCreatedData = Static<typeof SupportTicketCreatedDataSchema>;

/** webhook_endpoint.disabled (version 1): why the endpoint stopped receiving events (lib/webhooks/deliver.ts). */
export const WebhookEndpointDisabledDataSchema = t.Object({
  endpoint_id: t.String({ format: "uuid" }),
  kind: t.Union([t.Literal("webhook"), t.Literal("slack")]),
  url: t.String({ description: "Where the endpoint pointed: scheme and host only (a path or query may hold a token; admins see the whole URL on GET /webhook-endpoints/{id}), a Slack URL redacted" }),
  description: t.Union([t.String(), t.Null()]),
  reason: t.Union([t.Literal("failing"), t.Literal("gone")], { description: "`failing`: every delivery failed for 3 days; `gone`: the receiver answered 410 Gone" }),
  disabled_reason: t.String({ description: "The reason, in words (the endpoint's `disabled_reason`)" }),
  failing_since: t.String({ format: "date-time" }),
  consecutive_failures: t.Integer(),
  last_status_code: t.Union([t.Integer(), t.Null()], { description: "The receiver's last answer, null when it did not answer" }),
  last_error: t.Union([t.String(), t.Null()]),
  failed_deliveries: t.Integer({ description: "Pending deliveries given up (status `failed`; redeliver them once the endpoint is enabled again)" }),
});
export type WebhookEndpointDisabledData = Static<typeof WebhookEndpointDisabledDataSchema>;

const purchase = (description: string) => ({ version: 1, description, data: PurchaseEventDataSchema as TSchema });

/** Data documents of purchase.*, support.ticket_created and webhook_endpoint.disabled (version 1). */
export const purchaseEventTypes = {
  "purchase.pending_approval": purchase("A purchase waits for an admin's approval (links.console opens its approval page)."),
  "purchase.approved": purchase("A purchase was approved: by a person, automatically under auto_approve_max_upfront, or because its template requires no approval."),
  "purchase.rejected": purchase("A purchase was rejected, or its approval lapsed or was superseded (`status`: rejected or expired): nothing was bought."),
  "purchase.confirmed": purchase("Every item of a purchase was bought (at the provider, or recorded in the ledger after an approval)."),
  "purchase.failed": purchase("A purchase's items failed at the provider (`status` partially_failed when some were bought)."),
  "purchase.dry_run": purchase("A dry-run purchase was priced and checked at the provider; nothing was bought."),
  "support.ticket_created": { version: 1, description: "A support ticket was filed.", data: SupportTicketCreatedDataSchema as TSchema },
  "webhook_endpoint.disabled": {
    version: 1,
    description: "A webhook endpoint was disabled: every delivery failed for 3 days, or its receiver answered 410 Gone. Admins are always emailed.",
    data: WebhookEndpointDisabledDataSchema as TSchema,
  },
} satisfies Record<string, EventTypeSpec>;

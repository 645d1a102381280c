import { t } from "elysia";
import { component } from "../../../../../../lib/http/openapiComponents.ts";
import { PageQueryFields } from "../../../../../../lib/http/paging.ts";
import { Text, TextEnum } from "../../../../../../lib/http/text.ts";
import { ITEM_STATUSES, PURCHASE_STATUSES } from "../../../../../../lib/purchasing/orders.ts";
import { PROVIDERS } from "../../../../../../lib/providers.ts";

export const PurchaseParams = t.Object({ org_id: t.String(), purchase_id: t.String({ format: "uuid" }) });
export const ListPurchasesQuery = t.Object({
  status: t.Optional(TextEnum(PURCHASE_STATUSES)),
  ...PageQueryFields,
});
export const DecisionBody = t.Object({ note: t.Optional(Text({ maxLength: 1000, description: "Why (kept in the purchase's story)" })) }, { additionalProperties: false });

const Instant = t.Union([t.String({ format: "date-time" }), t.Null()]);
const Str = t.Union([t.String(), t.Null()]);
const Num = t.Union([t.Number(), t.Null()]);

const summaryFields = {
  id: t.String({ format: "uuid" }),
  provider: t.String({ enum: [...PROVIDERS] }),
  status: t.String({ enum: [...PURCHASE_STATUSES] }),
  purchaser: t.String({ description: "ledger (no purchasing connection: recorded only) or the connection kind that buys it" }),
  connection_id: t.Union([t.String({ format: "uuid" }), t.Null()]),
  dry_run: t.Boolean(),
  template_id: t.Union([t.String({ format: "uuid" }), t.Null()]),
  execution_date: Str,
  plan_id: t.String({ format: "uuid" }),
  item_count: t.Integer(),
  total_upfront_cost: t.Number(),
  monthly_net_savings: t.Number(),
  requires_approval: t.Boolean(),
  approval_expires_at: Instant,
  decided_by: Str,
  decided_at: Instant,
  decision_note: Str,
  created_at: t.String({ format: "date-time" }),
  updated_at: t.String({ format: "date-time" }),
};

export const PurchaseSummary = component("PurchaseSummary", t.Object(summaryFields));

export const PurchaseItem = component(
  "PurchaseItem",
  t.Object({
    id: t.String({ format: "uuid" }),
    position: t.Integer(),
    status: t.String({ enum: [...ITEM_STATUSES] }),
    dry_run: t.Boolean(),
    commitment_type: t.String(),
    contract_term: t.String(),
    payment_option: t.String(),
    region: Str,
    instance_type: Str,
    instance_family: Str,
    amount: t.Number(),
    planned_upfront_cost: t.Number(),
    planned_hourly_cost: t.Number(),
    monthly_net_savings: t.Number(),
    idempotency_token: t.String({ format: "uuid", description: "Handed to the provider (client token, request id, our order id or resource name)" }),
    offering_id: Str,
    quoted_upfront_cost: Num,
    quoted_hourly_cost: Num,
    provider_purchase_id: Str,
    provider_state: Str,
    actual_upfront_cost: Num,
    actual_hourly_cost: Num,
    currency: Str,
    starts_at: Instant,
    ends_at: Instant,
    commitment_id: t.Union([t.String({ format: "uuid" }), t.Null()]),
    dry_run_summary: Str,
    failure_cause: Str,
    failure_message: Str,
    attempts: t.Integer(),
    submitted_at: Instant,
    finished_at: Instant,
  }),
);

export const PurchaseEvent = component(
  "PurchaseEvent",
  t.Object({
    at: t.String({ format: "date-time" }),
    event: t.String(),
    item_id: t.Union([t.String({ format: "uuid" }), t.Null()]),
    message: t.String(),
    detail: t.Union([t.Record(t.String(), t.Unknown()), t.Null()]),
  }),
);

export const Purchase = component("Purchase", t.Object({ ...summaryFields, items: t.Array(PurchaseItem), events: t.Array(PurchaseEvent, { description: "The purchase's story, oldest first" }) }));

import { t } from "elysia";
import { component } from "../../../../../../lib/http/openapiComponents.ts";
import { PageQueryFields } from "../../../../../../lib/http/paging.ts";
import { NullableText, Text, TextEnum, TextEnumSet } from "../../../../../../lib/http/text.ts";
import { EVENT_TYPES } from "../../../../../../lib/events/catalog.ts";
import { ALL_EVENTS, ENDPOINT_KINDS, MAX_DESCRIPTION_LENGTH, MAX_OVERLAP_HOURS, DEFAULT_OVERLAP_HOURS } from "../../../../../../lib/webhooks/endpoints.ts";
import { MAX_URL_LENGTH } from "../../../../../../lib/webhooks/target.ts";
import { DELIVERY_STATUSES } from "../../../../../../lib/webhooks/deliveries.ts";

export const EndpointParams = t.Object({ org_id: t.String(), endpoint_id: t.String({ format: "uuid" }) });
export const DeliveryParams = t.Object({ org_id: t.String(), endpoint_id: t.String({ format: "uuid" }), delivery_id: t.String({ format: "uuid" }) });
export const ListEndpointsQuery = t.Object({ ...PageQueryFields }, { additionalProperties: false });
export const ListDeliveriesQuery = t.Object({ status: t.Optional(TextEnum(DELIVERY_STATUSES, { description: "Only deliveries in this status" })), ...PageQueryFields }, { additionalProperties: false });
export const ListAttemptsQuery = t.Object({ ...PageQueryFields }, { additionalProperties: false });

const UrlField = Text({
  minLength: 1,
  maxLength: MAX_URL_LENGTH,
  description:
    "Where events are POSTed: an https URL at a public address (http and private addresses only with CONNECTIONS_ALLOW_PRIVATE_ENDPOINTS). For `slack`, the Slack incoming-webhook URL (sealed at rest and shown redacted: it is the credential).",
});
const EventTypesField = TextEnumSet([ALL_EVENTS, ...EVENT_TYPES] as const, {
  minItems: 1,
  description: "The event types delivered (GET /events lists them with their data schemas), or `*` for every type, present and future",
});
const DescriptionField = NullableText({ maxLength: MAX_DESCRIPTION_LENGTH, description: "What the endpoint is for" });

export const CreateEndpointBody = t.Object(
  {
    url: UrlField,
    event_types: EventTypesField,
    description: t.Optional(DescriptionField),
    enabled: t.Optional(t.Boolean({ default: true, description: "Receives events (a disabled endpoint gets no new deliveries)" })),
    kind: t.Optional(
      TextEnum(ENDPOINT_KINDS, {
        default: "webhook",
        description: "`webhook`: the event as JSON, signed per Standard Webhooks; `slack`: a Block Kit message to a Slack incoming webhook (unsigned)",
      }),
    ),
  },
  { additionalProperties: false },
);

export const UpdateEndpointBody = t.Object(
  {
    url: t.Optional(UrlField),
    event_types: t.Optional(EventTypesField),
    description: t.Optional(DescriptionField),
    enabled: t.Optional(t.Boolean({ description: "true re-enables a disabled endpoint and resets its failure state; false stops deliveries (pending ones wait)" })),
  },
  { additionalProperties: false },
);

export const RotateSecretBody = t.Object(
  {
    overlap_hours: t.Optional(
      t.Integer({
        minimum: 0,
        maximum: MAX_OVERLAP_HOURS,
        default: DEFAULT_OVERLAP_HOURS,
        description: `How long the replaced secret keeps signing beside the new one (both signatures in webhook-signature), 0–${MAX_OVERLAP_HOURS}; 0 replaces it at once`,
      }),
    ),
  },
  { additionalProperties: false },
);

const Instant = (description?: string) => t.Union([t.String({ format: "date-time" }), t.Null()], description ? { description } : {});

const endpointFields = {
  id: t.String({ format: "uuid" }),
  kind: t.String({ enum: [...ENDPOINT_KINDS] }),
  url: t.String({ description: "The receiver's URL (a Slack URL redacted)" }),
  event_types: t.Array(t.String()),
  description: t.Union([t.String(), t.Null()]),
  enabled: t.Boolean(),
  disabled_reason: t.Union([t.String(), t.Null()], { description: "Why it is disabled: 3 days of failures, a 410 Gone, or an admin" }),
  disabled_at: Instant(),
  signed: t.Boolean({ description: "Its messages carry webhook-signature (every `webhook` endpoint)" }),
  previous_secret_expires_at: Instant("During a rotation's overlap: until when the replaced secret still signs"),
  consecutive_failures: t.Integer({ description: "Failed attempts since the last success (the endpoint waits out a backoff after each)" }),
  failing_since: Instant("First failure since the last success; 3 days of failures disable the endpoint"),
  next_attempt_at: Instant("While failing: when the next attempt is due"),
  created_at: t.String({ format: "date-time" }),
  updated_at: t.String({ format: "date-time" }),
};

export const WebhookEndpoint = component("WebhookEndpoint", t.Object(endpointFields));
export const WebhookEndpointWithSecret = component(
  "WebhookEndpointWithSecret",
  t.Object({
    ...endpointFields,
    secret: t.Optional(
      t.String({ description: "The signing secret (`whsec_…`, Standard Webhooks form), shown in this answer only; absent for `slack`. Verify with any Standard Webhooks library." }),
    ),
  }),
);

export const WebhookDelivery = component(
  "WebhookDelivery",
  t.Object({
    id: t.String({ format: "uuid" }),
    endpoint_id: t.String({ format: "uuid" }),
    event_id: t.String({ format: "uuid", description: "Also the message's webhook-id, the same on every attempt" }),
    event_type: t.String(),
    event_occurred_at: t.String({ format: "date-time" }),
    status: t.String({ enum: [...DELIVERY_STATUSES], description: "pending (to be sent or retried), succeeded (a 2xx), failed (given up: the endpoint was disabled)" }),
    attempts: t.Integer(),
    last_attempt_at: Instant(),
    last_status_code: t.Union([t.Integer(), t.Null()], { description: "The receiver's last status, null when it did not answer" }),
    last_latency_ms: t.Union([t.Integer(), t.Null()]),
    last_response_excerpt: t.Union([t.String(), t.Null()], { description: "The first 1 KB of the receiver's last answer" }),
    last_error: t.Union([t.String(), t.Null()]),
    delivered_at: Instant(),
    redelivery_requested: t.Boolean({ description: "A manual redelivery waits to be sent" }),
    created_at: t.String({ format: "date-time" }),
  }),
);

export const WebhookAttempt = component(
  "WebhookAttempt",
  t.Object({
    attempt: t.Integer(),
    at: t.String({ format: "date-time" }),
    status_code: t.Union([t.Integer(), t.Null()]),
    latency_ms: t.Integer(),
    response_excerpt: t.Union([t.String(), t.Null()]),
    error: t.Union([t.String(), t.Null()]),
    manual: t.Boolean({ description: "Sent by a manual redelivery" }),
  }),
);

export const WebhookTestResult = component(
  "WebhookTestResult",
  t.Object({
    ok: t.Boolean({ description: "The receiver answered 2xx" }),
    webhook_id: t.String({ description: "The test message's webhook-id (test_…)" }),
    status_code: t.Union([t.Integer(), t.Null()]),
    latency_ms: t.Integer(),
    response_excerpt: t.Union([t.String(), t.Null()]),
    error: t.Union([t.String(), t.Null()]),
  }),
);

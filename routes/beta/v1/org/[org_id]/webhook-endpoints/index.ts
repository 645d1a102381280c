import { t } from "elysia";
import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { pagedList } from "../../../../../../lib/http/paging.ts";
import { NO_CONTENT } from "../../../../../../lib/http/openapiComponents.ts";
import { createEndpoint, deleteEndpoint, getEndpoint, pageEndpoints, rotateEndpointSecret, updateEndpoint } from "../../../../../../lib/webhooks/endpoints.ts";
import { pageAttempts, pageDeliveries, redeliver } from "../../../../../../lib/webhooks/deliveries.ts";
import { sendTestMessage } from "../../../../../../lib/webhooks/ping.ts";
import {
  CreateEndpointBody,
  DeliveryParams,
  EndpointParams,
  ListAttemptsQuery,
  ListDeliveriesQuery,
  ListEndpointsQuery,
  RotateSecretBody,
  UpdateEndpointBody,
  WebhookAttempt,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
  WebhookTestResult,
} from "./model.ts";

const tags = ["Webhook endpoints"];
const scope = "webhooks:write" as const;

/**
 * Where the organization's events go (lib/webhooks): Standard Webhooks receivers and Slack
 * incoming webhooks, their delivery logs, secret rotation and redelivery. Admins only: the
 * `webhooks:write` scope belongs to the admin role alone (reads included: a delivery log shows
 * what receivers answered).
 */
export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix)
    .get("", async (ctx) => pagedList(ctx, s.config.publicUrl, (p) => pageEndpoints(s, ctx.principal.orgId, p)), {
      scope,
      query: ListEndpointsQuery,
      response: { 200: t.Array(WebhookEndpoint) },
      detail: { tags, summary: "List the organization's webhook and Slack endpoints, oldest first (never their secrets)" },
    })
    .post(
      "",
      async ({ principal, body, set }) => {
        const created = await createEndpoint(s, principal.orgId, body, principal.userId ?? null);
        set.status = 201;
        set.headers["location"] = `${prefix.replace(":org_id", principal.orgId)}/${created.id}`;
        return created;
      },
      {
        scope,
        body: CreateEndpointBody,
        response: { 201: WebhookEndpointWithSecret },
        detail: {
          tags,
          summary: "Add an endpoint: its signing secret is in this answer only",
          description:
            "Events of the chosen types are POSTed to `url`, each once per endpoint (retried until a 2xx, with the same `webhook-id`), in event order. `webhook` endpoints receive the event (`id`, `type`, `version`, `timestamp`, `org_id`, `data`, `links`) signed per Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`); `slack` endpoints a Block Kit message. The URL must be https at a public address (checked now and at every delivery). At most 50 endpoints per organization (409 `webhook_endpoint_limit_reached`). Failures back off exponentially (with jitter, up to 1 h); 3 days of failures, or a 410 Gone, disable the endpoint (`webhook_endpoint.disabled`, emailed to admins). Needs COMMITOPS_SECRET_KEY on the server (503 `secret_key_missing`). Honours `Idempotency-Key`.",
        },
      },
    )
    .get("/:endpoint_id", ({ principal, params }) => getEndpoint(s, principal.orgId, params.endpoint_id), {
      scope,
      params: EndpointParams,
      response: { 200: WebhookEndpoint },
      detail: { tags, summary: "One endpoint and its delivery state (never its secret)" },
    })
    .patch("/:endpoint_id", ({ principal, params, body }) => updateEndpoint(s, principal.orgId, params.endpoint_id, body), {
      scope,
      params: EndpointParams,
      body: UpdateEndpointBody,
      response: { 200: WebhookEndpoint },
      detail: {
        tags,
        summary: "Change an endpoint's URL, event types, description, or enable/disable it",
        description: "`enabled: true` on a disabled endpoint, or a new `url`, resets its failure state (due at once). Deliveries that failed when it was disabled stay failed: redeliver them.",
      },
    })
    .delete(
      "/:endpoint_id",
      async ({ principal, params, set }) => {
        await deleteEndpoint(s.db, principal.orgId, params.endpoint_id);
        set.status = 204;
      },
      { scope, params: EndpointParams, detail: { tags, responses: NO_CONTENT, summary: "Delete an endpoint and its delivery log" } },
    )
    .post("/:endpoint_id/rotate-secret", ({ principal, params, body }) => rotateEndpointSecret(s, principal.orgId, params.endpoint_id, body?.overlap_hours), {
      scope,
      params: EndpointParams,
      body: t.Optional(RotateSecretBody),
      response: { 200: WebhookEndpointWithSecret },
      detail: {
        tags,
        summary: "Replace the signing secret: the new one is in this answer only",
        description:
          "The replaced secret keeps signing beside the new one for `overlap_hours` (default 24, at most 168): `webhook-signature` carries both signatures, space-separated, so receivers verify with either while they switch. 409 `webhook_endpoint_unsigned` for a Slack endpoint.",
      },
    })
    .post("/:endpoint_id/test", ({ principal, params }) => sendTestMessage(s, principal.orgId, params.endpoint_id), {
      scope,
      params: EndpointParams,
      response: { 200: WebhookTestResult },
      detail: {
        tags,
        summary: "Send a signed test message now and report what the receiver answered",
        description: "Type `webhook_endpoint.test`, webhook-id `test_…`; not an event of the log and not recorded in the delivery log.",
      },
    })
    .get(
      "/:endpoint_id/deliveries",
      async (ctx) => pagedList(ctx, s.config.publicUrl, (p) => pageDeliveries(s.db, ctx.principal.orgId, ctx.params.endpoint_id, { status: ctx.query.status }, p)),
      {
        scope,
        params: EndpointParams,
        query: ListDeliveriesQuery,
        response: { 200: t.Array(WebhookDelivery) },
        detail: { tags, summary: "The endpoint's delivery log, newest event first: status, attempts, last status code, latency, response excerpt" },
      },
    )
    .get(
      "/:endpoint_id/deliveries/:delivery_id/attempts",
      async (ctx) => pagedList(ctx, s.config.publicUrl, (p) => pageAttempts(s.db, ctx.principal.orgId, ctx.params.endpoint_id, ctx.params.delivery_id, p)),
      {
        scope,
        params: DeliveryParams,
        query: ListAttemptsQuery,
        response: { 200: t.Array(WebhookAttempt) },
        detail: { tags, summary: "Every attempt of one delivery, oldest first" },
      },
    )
    .post("/:endpoint_id/deliveries/:delivery_id/redeliver", ({ principal, params }) => redeliver(s, principal.orgId, params.endpoint_id, params.delivery_id), {
      scope,
      params: DeliveryParams,
      response: { 200: WebhookDelivery },
      detail: {
        tags,
        summary: "Send a delivery again (same webhook-id), in its place in the endpoint's event order",
        description: "The delivery goes back to `pending` and the endpoint is due now. 409 `webhook_endpoint_disabled` while the endpoint is disabled.",
      },
    }),
);

/**
 * What one delivery sends: the body and headers for the endpoint's kind.
 * - `webhook`: the event view (lib/events/view.ts) as JSON, with the Standard Webhooks headers
 *   `webhook-id` (the event's id: the same on every attempt, so receivers dedupe),
 *   `webhook-timestamp` and `webhook-signature`.
 * - `slack`: the Slack message of the event (lib/notifications/slack.ts), unsigned.
 * - the deprecated process-wide endpoints (PURCHASE_WEBHOOK_URL, SUPPORT_WEBHOOK_URL): their old
 *   body shapes and `Idempotency-Key`, plus `webhook-id` and `webhook-timestamp` (no secret, so
 *   no signature) — lib/webhooks/legacy.ts.
 */
import type { events } from "../db/schema/events.ts";
import { eventView } from "../events/view.ts";
import { slackMessage } from "../notifications/slack.ts";
import type { Services } from "../services.ts";
import { legacyMessage } from "./legacy.ts";
import type { EndpointRow } from "./secrets.ts";
import { signatureHeader } from "./signing.ts";

export type EventRow = typeof events.$inferSelect;

export const USER_AGENT = "commitops-webhooks/1";

export interface Message {
  body: string;
  headers: Record<string, string>;
}

/**
 * The message of `event` for `endpoint`, signed with `secrets` (the ones signing now).
 * `attempt` is this attempt's number (1 for the first).
 */
export async function messageFor(s: Services, endpoint: EndpointRow, event: EventRow, secrets: readonly string[], attempt: number): Promise<Message> {
  // The timestamp receivers compare with their own clock (Standard Webhooks allows them ±5 min):
  // the machine's time of sending, not the service clock tests move.
  const timestamp = Math.floor(Date.now() / 1000);
  if (endpoint.legacyKey) {
    const legacy = await legacyMessage(s, endpoint.legacyKey, event, attempt);
    return { body: legacy.body, headers: { ...legacy.headers, "webhook-id": event.id, "webhook-timestamp": String(timestamp) } };
  }
  const view = eventView(event, s.config.publicUrl);
  if (endpoint.kind === "slack") {
    return { body: JSON.stringify(slackMessage(view, s.config.publicUrl)), headers: { "content-type": "application/json", "user-agent": USER_AGENT } };
  }
  const body = JSON.stringify(view);
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "user-agent": USER_AGENT,
    "webhook-id": event.id,
    "webhook-timestamp": String(timestamp),
  };
  if (secrets.length) headers["webhook-signature"] = signatureHeader(secrets, event.id, timestamp, body);
  return { body, headers };
}

/**
 * `POST …/webhook-endpoints/{id}/test`: one signed test message sent now, outside the event log
 * and the delivery schedule, so an admin can check a receiver (its URL, TLS, signature check)
 * before real events reach it. Same rules as a delivery: SSRF check, deadline, size cap, no
 * redirects; the answer says what the receiver did.
 */
import { randomUUID } from "node:crypto";
import type { EventView } from "../events/view.ts";
import { slackMessage } from "../notifications/slack.ts";
import { secretBoxOf } from "../secrets/index.ts";
import type { Services } from "../services.ts";
import { openTarget } from "./deliver.ts";
import { getEndpointRow } from "./endpoints.ts";
import { USER_AGENT } from "./payload.ts";
import { signingSecretsOf } from "./secrets.ts";
import { failureText, postBounded, SEND_TIMEOUT_MS } from "./send.ts";
import { signatureHeader } from "./signing.ts";
import { webhookEndpointLinks } from "../events/links.ts";
import { absoluteLinks } from "../events/view.ts";

export const TEST_EVENT_TYPE = "webhook_endpoint.test";

export interface TestDeliveryResult {
  ok: boolean;
  webhook_id: string;
  status_code: number | null;
  latency_ms: number;
  response_excerpt: string | null;
  error: string | null;
}

export async function sendTestMessage(s: Services, orgId: string, endpointId: string): Promise<TestDeliveryResult> {
  const endpoint = await getEndpointRow(s.db, orgId, endpointId);
  const now = s.now();
  const id = `test_${randomUUID()}`;
  const view: EventView = {
    id,
    type: TEST_EVENT_TYPE,
    version: 1,
    timestamp: now.toISOString(),
    org_id: orgId,
    data: { endpoint_id: endpoint.id, message: "A test message from commitops: this endpoint is reachable." },
    links: absoluteLinks(s.config.publicUrl, webhookEndpointLinks(orgId, endpoint.id)),
  };
  let target;
  try {
    target = await openTarget(s, endpoint);
  } catch (e) {
    return { ok: false, webhook_id: id, status_code: null, latency_ms: 0, response_excerpt: null, error: failureText(e, SEND_TIMEOUT_MS) };
  }
  try {
    const timestamp = Math.floor(Date.now() / 1000);
    let body: string;
    const headers: Record<string, string> = { "content-type": "application/json", "user-agent": USER_AGENT };
    if (endpoint.kind === "slack") body = JSON.stringify(slackMessage(view, s.config.publicUrl));
    else {
      body = JSON.stringify(view);
      headers["webhook-id"] = id;
      headers["webhook-timestamp"] = String(timestamp);
      const secrets = signingSecretsOf(secretBoxOf(s.config), endpoint, now);
      if (secrets.length) headers["webhook-signature"] = signatureHeader(secrets, id, timestamp, body);
    }
    const r = await postBounded(target.egress, target.url, headers, body);
    return { ok: r.ok, webhook_id: id, status_code: r.statusCode, latency_ms: r.latencyMs, response_excerpt: r.excerpt, error: r.error };
  } finally {
    target.egress.close();
  }
}

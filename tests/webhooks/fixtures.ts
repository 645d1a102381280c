import { randomBytes } from "node:crypto";
import type { Services } from "../../lib/services.ts";
import { emitEvent, type EmittedEvent } from "../../lib/events/emit.ts";
import type { EventType } from "../../lib/events/catalog.ts";
import { deliverWebhooks, type DeliverOptions, type DeliverReport } from "../../lib/webhooks/deliver.ts";
import type { TestContext } from "../helpers/app.ts";

export const SECRET_KEY = randomBytes(32).toString("base64");

/** One event written as producers write them: in a transaction of its own. */
export async function emit(s: Services, orgId: string, type: EventType, occurredAt: Date, data: Record<string, unknown> = {}): Promise<EmittedEvent> {
  const e = await s.db.transaction((tx) => emitEvent(tx, { orgId, type, occurredAt, data, resourcePath: `/beta/v1/org/${orgId}/things/1`, consolePath: "/app/things/1" }));
  return e!;
}

/** Delivery passes until one claims nothing (everything due is delivered or backing off). */
export async function deliverUntilIdle(s: Services, opts: DeliverOptions = {}, maxPasses = 100): Promise<DeliverReport> {
  const total: DeliverReport = { endpoints: 0, delivered: 0, failed: 0, disabled: 0 };
  for (let i = 0; i < maxPasses; i++) {
    const r = await deliverWebhooks(s, opts);
    if (!r.endpoints) break;
    total.endpoints += r.endpoints;
    total.delivered += r.delivered;
    total.failed += r.failed;
    total.disabled += r.disabled;
  }
  return total;
}

export async function createEndpointVia(t: TestContext, body: Record<string, unknown>, org: { id: string; key: string } = t.org): Promise<any> {
  const r = await t.request("POST", `/beta/v1/org/${org.id}/webhook-endpoints`, { key: org.key, body });
  const b = await r.json();
  if (r.status !== 201) throw new Error(`create endpoint: ${r.status} ${JSON.stringify(b)}`);
  return b;
}

export async function endpointRow(s: Services, id: string): Promise<any> {
  const [row] = await s.handle.query<any>("SELECT * FROM webhook_endpoints WHERE id = $1", [id]);
  return row;
}

export async function deliveriesOf(s: Services, endpointId: string): Promise<any[]> {
  return s.handle.query<any>("SELECT * FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY event_occurred_at, event_seq", [endpointId]);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

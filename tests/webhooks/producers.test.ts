/**
 * The events this part writes, as receivers get them: `support.ticket_created` from a ticket
 * filed through the API and `webhook_endpoint.disabled` from a 410, each matching its versioned
 * `data` schema of the event catalog (the purchase.* documents are checked in
 * tests/purchasing/purchasing.test.ts), with links to the API resource and the console page.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { EVENT_CATALOG } from "../../lib/events/catalog.ts";
import { PurchaseEventDataSchema } from "../../lib/events/data/purchase.ts";
import { validBug } from "../support/fixtures.ts";
import { startReceiver, type Receiver } from "./receiver.ts";
import { createEndpointVia, deliverUntilIdle, emit, SECRET_KEY } from "./fixtures.ts";

describeEachDb("webhooks: the events of tickets and endpoints", (driver) => {
  const t = useTestApp(driver, { config: { secretKey: SECRET_KEY, connectionsAllowPrivateEndpoints: true } });
  let rx: Receiver;
  beforeAll(async () => {
    rx = await startReceiver();
  });
  afterAll(async () => {
    await rx?.close();
  });

  test("a filed ticket is a support.ticket_created event, written with it, delivered signed with its links", async () => {
    const ep = await createEndpointVia(t, { url: rx.url("/tickets"), event_types: ["support.ticket_created"] });
    rx.verifyWith("/tickets", [ep.secret]);
    const filed = await (await t.orgRequest("POST", "/support/bug-reports", { body: { ...validBug(), provider: "azure" } })).json();
    expect(filed.status).toBe("created");
    await deliverUntilIdle(t.s);
    const [m] = rx.on("/tickets");
    expect(m!.verified).toBe(true);
    expect(m!.json).toMatchObject({
      type: "support.ticket_created",
      version: 1,
      org_id: t.org.id,
      data: {
        ticket_key: filed.ticket_key,
        kind: "bug",
        summary: validBug().summary,
        provider: "azure",
        filed_by: { user_id: null, credential_kind: "api_key" },
        ticket_url: filed.ticket_url,
      },
      links: { api: `http://localhost/beta/v1/org/${t.org.id}/support/tickets/${filed.ticket_key}`, console: "http://localhost/app/support" },
    });
    expect(Value.Check(EVENT_CATALOG["support.ticket_created"].data, m!.json.data)).toBe(true);
    // The API link reads the ticket back.
    expect((await t.request("GET", new URL(m!.json.links.api).pathname)).status).toBe(200);
  });

  test("webhook_endpoint.disabled matches its schema and links to the endpoint", async () => {
    const gone = await createEndpointVia(t, { url: rx.url("/gone"), event_types: ["purchase.failed"], description: "old ERP" });
    const watcher = await createEndpointVia(t, { url: rx.url("/watch"), event_types: ["webhook_endpoint.disabled"] });
    rx.verifyWith("/watch", [watcher.secret]);
    rx.behave("/gone", { kind: "status", status: 410 });
    await emit(t.s, t.org.id, "purchase.failed", t.s.now());
    await deliverUntilIdle(t.s);
    const [m] = rx.on("/watch");
    expect(m!.verified).toBe(true);
    expect(m!.json.data).toMatchObject({ endpoint_id: gone.id, kind: "webhook", description: "old ERP", reason: "gone", last_status_code: 410, failed_deliveries: 1 });
    expect(Value.Check(EVENT_CATALOG["webhook_endpoint.disabled"].data, m!.json.data)).toBe(true);
    expect(m!.json.links).toEqual({ api: `http://localhost/beta/v1/org/${t.org.id}/webhook-endpoints/${gone.id}`, console: `http://localhost/app/notifications/endpoints/${gone.id}` });
    expect((await (await t.request("GET", new URL(m!.json.links.api).pathname)).json()).enabled).toBe(false);
  });

  test("every purchase.* type carries the one purchase document schema", () => {
    for (const type of Object.keys(EVENT_CATALOG).filter((k) => k.startsWith("purchase."))) {
      expect(EVENT_CATALOG[type as keyof typeof EVENT_CATALOG].data).toBe(PurchaseEventDataSchema);
    }
  });
});

import { afterAll, beforeAll, expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { createApp } from "../../lib/http/app.ts";
import { createServices } from "../../lib/services.ts";
import { createLogger } from "../../lib/log.ts";
import { openDb, type DatabaseHandle } from "../../lib/db/index.ts";
import { syncLegacyEndpoints } from "../../lib/webhooks/legacy.ts";
import { validBug, validFeature } from "./fixtures.ts";

const CAP = 5;
const EXTRA = 20;

describeEachDb("support: the daily cap under concurrency", (driver) => {
  const t = useTestApp(driver, { config: { supportDailyCap: CAP, supportWebhookUrl: "http://127.0.0.1:9/unused" } });
  const extraHandles: DatabaseHandle[] = [];
  // SUPPORT_WEBHOOK_URL as its endpoint, as the server does at start.
  beforeAll(() => syncLegacyEndpoints(t.s));
  afterAll(async () => {
    for (const h of extraHandles) await h.close();
  });

  async function countsFor(orgId: string) {
    const [tickets] = await t.s.handle.query<{ n: number }>("SELECT count(*)::int AS n FROM support_tickets WHERE org_id = $1", [orgId]);
    // SUPPORT_WEBHOOK_URL's deliveries (lib/webhooks/legacy.ts), scheduled in each ticket's transaction.
    const [outbox] = await t.s.handle.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id WHERE w.legacy_key = 'support' AND d.org_id = $1",
      [orgId],
    );
    const [counter] = await t.s.handle.query<{ n: number }>("SELECT coalesce(sum(count), 0)::int AS n FROM support_daily_counts WHERE org_id = $1", [orgId]);
    return { tickets: Number(tickets!.n), outbox: Number(outbox!.n), counter: Number(counter!.n) };
  }

  test(`cap ${CAP}, ${CAP + EXTRA} simultaneous posts → exactly ${CAP} tickets`, async () => {
    const org = await t.newOrg("burst");
    const results = await Promise.all(
      Array.from({ length: CAP + EXTRA }, (_, i) =>
        t
          .request("POST", `/beta/v1/org/${org.id}/support/${i % 2 ? "feature-requests" : "bug-reports"}`, { key: org.key, body: i % 2 ? validFeature() : validBug() })
          .then(async (r) => ({ http: r.status, body: (await r.json()) as any })),
      ),
    );
    expect(results.every((r) => r.http === 200)).toBe(true);
    const created = results.filter((r) => r.body.status === "created");
    expect(created.length).toBe(CAP);
    expect(results.filter((r) => r.body.status === "rate_limited").length).toBe(EXTRA);
    expect(new Set(created.map((r) => r.body.ticket_key)).size).toBe(CAP);
    expect(await countsFor(org.id)).toEqual({ tickets: CAP, outbox: CAP, counter: CAP });
  });

  if (driver === "postgres") {
    test("two replicas (separate connection pools) racing on one org → exactly the cap", async () => {
      const org = await t.newOrg("replicas");
      const replicas = [t.app];
      for (let i = 0; i < 2; i++) {
        const h = await openDb({ url: t.db.url, migrate: false });
        extraHandles.push(h);
        replicas.push(createApp(createServices(h, t.s.config, createLogger("silent"))));
      }
      const results = await Promise.all(
        Array.from({ length: CAP + EXTRA }, (_, i) =>
          replicas[i % replicas.length]!
            .handle(
              new Request(`http://localhost/beta/v1/org/${org.id}/support/bug-reports`, {
                method: "POST",
                headers: { authorization: `Bearer ${org.key}`, "content-type": "application/json" },
                body: JSON.stringify(validBug()),
              }),
            )
            .then(async (r) => ((await r.json()) as any).status as string),
        ),
      );
      expect(results.filter((s) => s === "created").length).toBe(CAP);
      expect(results.filter((s) => s === "rate_limited").length).toBe(EXTRA);
      expect(await countsFor(org.id)).toEqual({ tickets: CAP, outbox: CAP, counter: CAP });
    });
  }

  test("a burst on one org does not use another org's allowance", async () => {
    const [a, b] = [await t.newOrg("a"), await t.newOrg("b")];
    const post = (o: { id: string; key: string }) =>
      t.request("POST", `/beta/v1/org/${o.id}/support/bug-reports`, { key: o.key, body: validBug() }).then(async (r) => ((await r.json()) as any).status as string);
    const results = await Promise.all([...Array.from({ length: CAP + EXTRA }, () => post(a)), ...Array.from({ length: 2 }, () => post(b))]);
    expect(results.slice(CAP + EXTRA)).toEqual(["created", "created"]);
    expect((await countsFor(a.id)).tickets).toBe(CAP);
    expect((await countsFor(b.id)).tickets).toBe(2);
  });
});

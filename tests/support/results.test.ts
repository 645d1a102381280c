import { beforeAll, describe, expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { syncLegacyEndpoints } from "../../lib/webhooks/legacy.ts";
import { validBug, validFeature } from "./fixtures.ts";

describeEachDb("support: results", (driver) => {
  describe("created, rate_limited, repeats and the UTC day", () => {
    let clock = new Date("2026-03-10T08:00:00Z");
    const t = useTestApp(driver, { config: { supportDailyCap: 3 }, now: () => clock });

    async function file(path: string, body: unknown, key?: string) {
      const r = await t.orgRequest("POST", path, { body, key });
      expect(r.status).toBe(200);
      return (await r.json()) as any;
    }

    test("created: SUP-<n> key from a sequence, and a ticket_url that reads the ticket back", async () => {
      const a = await file("/support/bug-reports", validBug());
      const b = await file("/support/feature-requests", validFeature());
      expect(a.status).toBe("created");
      expect(a.ticket_key).toMatch(/^SUP-[1-9][0-9]*$/);
      expect(Number(b.ticket_key.slice(4))).toBe(Number(a.ticket_key.slice(4)) + 1);
      expect(a.ticket_url).toBe(`http://localhost/beta/v1/org/${t.org.id}/support/tickets/${a.ticket_key}`);
      expect(a.reason).toBeUndefined();

      const back = await t.request("GET", new URL(a.ticket_url).pathname);
      expect(back.status).toBe(200);
      const ticket = (await back.json()) as any;
      expect(ticket).toMatchObject({ ticket_key: a.ticket_key, kind: "bug", org_id: t.org.id, ...validBug() });
      expect(ticket.created_at).toBe(clock.toISOString());
      // A lower-case key reads the same ticket.
      expect((await t.orgRequest("GET", `/support/tickets/${a.ticket_key.toLowerCase()}`)).status).toBe(200);
    });

    test("a repeat of the same report is stored, not refused; the cap then gives rate_limited", async () => {
      // 2 of 3 used above; a repeat of the first is the third and is created.
      const repeat = await file("/support/bug-reports", validBug());
      expect(repeat.status).toBe("created");
      const [row] = await t.s.handle.query<{ n: number }>("SELECT count(*)::int AS n FROM support_tickets WHERE summary = $1", [validBug().summary]);
      expect(Number(row!.n)).toBe(2);

      for (const path of ["/support/bug-reports", "/support/feature-requests"]) {
        const limited = await file(path, path.includes("bug") ? validBug() : validFeature());
        expect(limited.status).toBe("rate_limited");
        expect(limited.ticket_key).toBeUndefined();
        expect(limited.ticket_url).toBeUndefined();
        expect(limited.reason).toContain("daily limit of 3");
        expect(limited.reason).toContain("2026-03-11T00:00:00Z");
      }
      const [all] = await t.s.handle.query<{ n: number }>("SELECT count(*)::int AS n FROM support_tickets WHERE org_id = $1", [t.org.id]);
      expect(Number(all!.n)).toBe(3);
    });

    test("the cap is per UTC day: still limited at 23:59:59Z, open again at 00:00Z", async () => {
      clock = new Date("2026-03-10T23:59:59.999Z");
      expect((await file("/support/bug-reports", validBug())).status).toBe("rate_limited");
      clock = new Date("2026-03-11T00:00:00Z");
      const next = await file("/support/bug-reports", validBug());
      expect(next.status).toBe("created");
      const rows = await t.s.handle.query<{ cap_day: string }>("SELECT cap_day::text AS cap_day FROM support_tickets WHERE org_id = $1 ORDER BY number", [t.org.id]);
      expect(rows.map((r) => r.cap_day)).toEqual(["2026-03-10", "2026-03-10", "2026-03-10", "2026-03-11"]);
    });

    test("org isolation: another org has its own cap and cannot read this org's tickets", async () => {
      clock = new Date("2026-03-10T12:00:00Z");
      // This org is at its cap for 2026-03-10; org B is not.
      expect((await file("/support/bug-reports", validBug())).status).toBe("rate_limited");
      const b = await t.newOrg("B");
      const res = await t.request("POST", `/beta/v1/org/${b.id}/support/bug-reports`, { key: b.key, body: validBug() });
      const created = (await res.json()) as any;
      expect(created.status).toBe("created");
      expect(created.ticket_url).toContain(`/org/${b.id}/`);
      // B's ticket did not count against A: A is still limited, and B reads only its own.
      expect((await file("/support/bug-reports", validBug())).status).toBe("rate_limited");
      const mine = await t.request("GET", `/beta/v1/org/${b.id}/support/tickets/${created.ticket_key}`, { key: b.key });
      expect(mine.status).toBe(200);
      expect((await t.orgRequest("GET", `/support/tickets/${created.ticket_key}`)).status).toBe(404);
      expect((await t.orgRequest("GET", "/support/tickets/SUP-999999")).status).toBe(404);
      expect((await t.orgRequest("GET", "/support/tickets/nonsense")).status).toBe(404);
      const [row] = await t.s.handle.query<{ org_id: string }>("SELECT org_id FROM support_tickets WHERE number = $1", [Number(created.ticket_key.slice(4))]);
      expect(row!.org_id).toBe(b.id);
    });

    test("the ticket records the credential that filed it", async () => {
      clock = new Date("2026-03-12T09:00:00Z");
      const k = await createApiKey(t.s.db, { orgId: t.org.id, scopes: ["support:write"], name: "support bot" });
      const r = await file("/support/feature-requests", validFeature(), k.key);
      const [row] = await t.s.handle.query<{ credential_id: string; credential_kind: string; user_id: string | null; kind: string }>(
        "SELECT credential_id, credential_kind, user_id, kind FROM support_tickets WHERE number = $1",
        [Number(r.ticket_key.slice(4))],
      );
      expect(row).toEqual({ credential_id: k.id, credential_kind: "api_key", user_id: null, kind: "feature" });
    });
  });

  describe("auth", () => {
    const t = useTestApp(driver);

    test("no credential → 401, nothing stored", async () => {
      for (const path of ["/support/bug-reports", "/support/feature-requests"]) {
        const r = await t.orgRequest("POST", path, { key: null, body: path.includes("bug") ? validBug() : validFeature() });
        expect(r.status).toBe(401);
        expect((await r.json()).type).toBe("unauthorized");
      }
      expect((await t.orgRequest("GET", "/support/tickets/SUP-1", { key: null })).status).toBe(401);
      const [row] = await t.s.handle.query<{ n: number }>("SELECT count(*)::int AS n FROM support_tickets");
      expect(Number(row!.n)).toBe(0);
    });

    test("a key without support:write → 403 insufficient_scope, nothing stored", async () => {
      const k = await createApiKey(t.s.db, { orgId: t.org.id, scopes: ["reports:read", "estimates:write"] });
      for (const path of ["/support/bug-reports", "/support/feature-requests"]) {
        const r = await t.orgRequest("POST", path, { key: k.key, body: path.includes("bug") ? validBug() : validFeature() });
        expect(r.status).toBe(403);
        expect((await r.json()).code).toBe("insufficient_scope");
      }
      const [row] = await t.s.handle.query<{ n: number }>("SELECT count(*)::int AS n FROM support_tickets");
      expect(Number(row!.n)).toBe(0);
    });

    test("another org's key → 403", async () => {
      const other = await t.newOrg("other");
      const r = await t.orgRequest("POST", "/support/bug-reports", { key: other.key, body: validBug() });
      expect(r.status).toBe(403);
    });

    test("wrong method → 405", async () => {
      const r = await t.orgRequest("GET", "/support/bug-reports");
      expect(r.status).toBe(405);
    });
  });

  describe("filing disabled", () => {
    const t = useTestApp(driver, { config: { supportFilingEnabled: false, supportWebhookUrl: "http://127.0.0.1:9/never" } });
    beforeAll(() => syncLegacyEndpoints(t.s));

    test("not_filed with a reason, HTTP 200, nothing stored or counted or queued", async () => {
      for (const [path, body] of [["/support/bug-reports", validBug()], ["/support/feature-requests", validFeature()]] as const) {
        const r = await t.orgRequest("POST", path, { body });
        expect(r.status).toBe(200);
        const res = (await r.json()) as any;
        expect(res.status).toBe("not_filed");
        expect(res.reason).toMatch(/disabled/);
        expect(res.ticket_key).toBeUndefined();
        expect(res.ticket_url).toBeUndefined();
      }
      for (const table of ["support_tickets", "support_daily_counts", "events", "webhook_deliveries"]) {
        const [row] = await t.s.handle.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
        expect(Number(row!.n)).toBe(0);
      }
    });

    test("validation still applies when filing is disabled", async () => {
      const r = await t.orgRequest("POST", "/support/bug-reports", { body: { ...validBug(), summary: "" } });
      expect(r.status).toBe(422);
    });
  });

  describe("a cap of 0", () => {
    const t = useTestApp(driver, { config: { supportDailyCap: 0 } });
    test("every filing is rate_limited", async () => {
      const r = await t.orgRequest("POST", "/support/bug-reports", { body: validBug() });
      expect(((await r.json()) as any).status).toBe("rate_limited");
    });
  });
});

test("SUPPORT_DAILY_CAP and SUPPORT_FILING_ENABLED come from the environment", async () => {
  const { loadConfig } = await import("../../lib/config.ts");
  expect(loadConfig({}).supportDailyCap).toBe(10);
  expect(loadConfig({}).supportFilingEnabled).toBe(true);
  expect(loadConfig({ SUPPORT_DAILY_CAP: "25", SUPPORT_FILING_ENABLED: "false" })).toMatchObject({ supportDailyCap: 25, supportFilingEnabled: false });
});

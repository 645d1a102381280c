import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { revokeApiKey, createApiKey } from "../../lib/auth/apiKeys.ts";
import { createOrganization } from "../../lib/orgs/service.ts";

describeEachDb("org guard", (driver) => {
  const t = useTestApp(driver);

  test("right key → 200 with the organization", async () => {
    const r = await t.orgRequest("GET", "/");
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(body.id).toBe(t.org.id);
    expect(body.name).toBe("Test org");
  });

  test("x-api-key works like Bearer", async () => {
    const r = await t.orgRequest("GET", "/", { key: null, headers: { "x-api-key": t.org.key } });
    expect(r.status).toBe(200);
  });

  test("no token → 401 with WWW-Authenticate and the error body", async () => {
    const r = await t.orgRequest("GET", "/", { key: null });
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toContain("Bearer");
    const b = await r.json();
    expect(b).toMatchObject({ error: "Unauthorized", type: "unauthorized", code: 401, status: "UNAUTHORIZED", errors: {} });
    expect(typeof b.timestamp).toBe("string");
  });

  test("unknown token → 401", async () => {
    const r = await t.orgRequest("GET", "/", { key: "co_notarealkeyatall" });
    expect(r.status).toBe(401);
  });

  test("revoked key → 401", async () => {
    const k = await createApiKey(t.s.db, { orgId: t.org.id });
    expect((await t.orgRequest("GET", "/", { key: k.key })).status).toBe(200);
    await revokeApiKey(t.s.db, k.id);
    expect((await t.orgRequest("GET", "/", { key: k.key })).status).toBe(401);
  });

  test("key of org A on org B's path → 403, same answer whether B exists or not", async () => {
    const other = await createOrganization(t.s.db, { name: "B" });
    const a = await t.request("GET", `/beta/v1/org/${other.id}`);
    const b = await t.request("GET", `/beta/v1/org/${crypto.randomUUID()}`);
    expect(a.status).toBe(403);
    expect(b.status).toBe(403);
    const [ja, jb] = [await a.json(), await b.json()];
    expect(ja.message).toBe(jb.message);
    expect(JSON.stringify(ja)).not.toContain("\"B\"");
  });

  test("API keys are stored hashed, never in clear", async () => {
    const rows = await t.s.handle.query<{ key_hash: string }>("SELECT key_hash FROM api_keys");
    for (const r of rows) {
      expect(r.key_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(r.key_hash).not.toContain(t.org.key);
    }
  });
});

describeEachDb("guard before validation", (driver) => {
  const t = useTestApp(driver);
  test("no token with an invalid body → 401, not 422", async () => {
    const r = await t.orgRequest("POST", "/api-keys", { key: null, body: { bogus: 1 } });
    expect(r.status).toBe(401);
  });
  test("other org's key with an invalid body → 403, not 422", async () => {
    const other = await t.newOrg("other");
    const r = await t.orgRequest("POST", "/api-keys", { key: other.key, body: { bogus: 1 } });
    expect(r.status).toBe(403);
  });
});

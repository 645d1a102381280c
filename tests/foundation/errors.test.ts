import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";

/** Every error answer carries the spec's body (SPEC "Errors", DESIGN §4). */
async function expectErrorBody(r: Response, status: number, code: string | number) {
  expect(r.status).toBe(status);
  expect(r.headers.get("content-type")).toContain("application/json");
  const b = await r.json();
  expect(typeof b.error).toBe("string");
  expect(typeof b.message).toBe("string");
  expect(b.message.length).toBeGreaterThan(0);
  expect(b.errors).toBeObject();
  expect(b.errors).not.toBeNull();
  expect(Number.isNaN(Date.parse(b.timestamp))).toBe(false);
  expect(typeof b.type).toBe("string");
  expect(b.code).toBe(code);
  expect(JSON.stringify(b)).not.toMatch(/\bat .*\.ts:\d+|node_modules|stack/i);
  return b;
}

describeEachDb("error shapes", (driver) => {
  const t = useTestApp(driver);

  test("malformed JSON → 400 invalid_request", async () => {
    const r = await t.orgRequest("POST", "/api-keys", { rawBody: '{"name": "x",' });
    await expectErrorBody(r, 400, "invalid_request");
  });

  test("invalid query parameter → 400 naming the parameter", async () => {
    const r = await t.orgRequest("GET", "/api-keys?include_revoked=perhaps");
    const b = await expectErrorBody(r, 400, "invalid_parameter");
    expect(Object.keys(b.errors)).toContain("include_revoked");
  });

  test("body failing validation → 422 with each field named", async () => {
    const r = await t.orgRequest("POST", "/api-keys", { body: { name: "", scopes: ["reports:read", "root:everything"] } });
    const b = await expectErrorBody(r, 422, "validation_error");
    expect(Object.keys(b.errors).some((k) => k.startsWith("name"))).toBe(true);
    expect(Object.keys(b.errors).some((k) => k.startsWith("scopes"))).toBe(true);
  });

  test("unknown body field → 422", async () => {
    const r = await t.orgRequest("POST", "/api-keys", { body: { name: "ci", admin: true } });
    const b = await expectErrorBody(r, 422, "validation_error");
    expect(Object.keys(b.errors)).toContain("admin");
  });

  test("unknown path → 404", async () => {
    await expectErrorBody(await t.request("GET", "/no/such/thing"), 404, "not_found");
    await expectErrorBody(await t.orgRequest("GET", "/no-such-resource"), 404, "not_found");
  });

  test("wrong method on a known path → 405 with Allow", async () => {
    const r = await t.orgRequest("PATCH", "/api-keys");
    expect(r.headers.get("allow")).toContain("GET");
    expect(r.headers.get("allow")).toContain("POST");
    await expectErrorBody(r, 405, 405);
  });

  test("revoke of an unknown key → 404; bad key id → 400", async () => {
    await expectErrorBody(await t.orgRequest("DELETE", `/api-keys/${crypto.randomUUID()}`), 404, "not_found");
    await expectErrorBody(await t.orgRequest("DELETE", `/api-keys/not-a-uuid`), 400, "invalid_parameter");
  });

  test("API key lifecycle over HTTP: create (secret once), list without secrets, scoped key limited, revoke", async () => {
    const c = await t.orgRequest("POST", "/api-keys", { body: { name: "reporting", scopes: ["reports:read"] } });
    expect(c.status).toBe(200);
    const created = await c.json();
    expect(created.api_key).toStartWith("co_");
    const list = await (await t.orgRequest("GET", "/api-keys")).json();
    expect(list.find((k: any) => k.id === created.id)).toBeDefined();
    expect(JSON.stringify(list)).not.toContain(created.api_key);
    // a key without every scope may not manage keys: 403 insufficient_scope
    const r = await t.orgRequest("GET", "/api-keys", { key: created.api_key });
    await expectErrorBody(r, 403, "insufficient_scope");
    expect((await t.orgRequest("DELETE", `/api-keys/${created.id}`)).status).toBe(204);
    expect((await t.orgRequest("GET", "/", { key: created.api_key })).status).toBe(401);
  });
});

describeEachDb("API rate limit", (driver) => {
  const t = useTestApp(driver, { config: { apiRateLimitPerMinute: 3 } });

  test("over the per-credential limit → 429 with Retry-After; other credentials unaffected", async () => {
    for (let i = 0; i < 3; i++) expect((await t.orgRequest("GET", "/")).status).toBe(200);
    const r = await t.orgRequest("GET", "/");
    await expectErrorBody(r, 429, 429);
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
    const other = await t.newOrg("other");
    expect((await t.request("GET", `/beta/v1/org/${other.id}`, { key: other.key })).status).toBe(200);
  });
});

describeEachDb("values PostgreSQL cannot store", (driver) => {
  const t = useTestApp(driver);

  test("a NUL character in a validated text field → 422, not 500", async () => {
    const r = await t.orgRequest("POST", "/api-keys", { body: { name: "ci\u0000key" } });
    const b = await expectErrorBody(r, 422, "validation_error");
    expect(Object.keys(b.errors)).toContain("name");
  });

  test("a NUL character reaching the database unvalidated → 400, not 500 (unauthenticated OAuth endpoints)", async () => {
    const reg = await t.request("POST", "/oauth/register", { key: null, body: { client_name: "a\u0000b", redirect_uris: ["http://127.0.0.1:5555/cb"] } });
    expect(reg.status).toBeGreaterThanOrEqual(400);
    expect(reg.status).toBeLessThan(500);
    const tok = await t.request("POST", "/oauth/token", { key: null, rawBody: "grant_type=authorization_code&code=x&client_id=%00&code_verifier=y&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcb", headers: { "content-type": "application/x-www-form-urlencoded" } });
    expect(tok.status).toBeGreaterThanOrEqual(400);
    expect(tok.status).toBeLessThan(500);
    const auth = await t.request("GET", "/oauth/authorize?client_id=%00&response_type=code", { key: null });
    expect(auth.status).toBeLessThan(500);
  });
});

// API keys created by a user (through an OAuth token, or through a key that user created) never
// outlive or out-scope the user's membership: the resolver bounds them by the current role.
import { beforeAll, expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { addMember, createOrganization } from "../../lib/orgs/service.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { SCOPES } from "../../lib/auth/scopes.ts";
import { REST_RESOURCE, bearer, makeUser, obtainTokens, send } from "./helpers.ts";

describeEachDb("oauth: API keys are bound to their creator's role", (driver) => {
  const t = useTestApp(driver);
  let org: { id: string };

  beforeAll(async () => {
    org = await createOrganization(t.s.db, { name: "Key creators org" });
  });

  const call = (key: string, method: string, path: string, body?: unknown) =>
    send(t, method, `/beta/v1/org/${org.id}${path}`, {
      headers: { ...bearer(key), ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const writeEstimate = (key: string) => call(key, "POST", "/cost-estimates", { provider: "aws", name: "Made with a user's key" });

  async function keyOf(credential: string, body: Record<string, unknown> = { name: "CI key" }) {
    const r = await call(credential, "POST", "/api-keys", body);
    expect(r.status).toBe(200);
    return (await r.json()) as { id: string; api_key: string; scopes: string[] };
  }

  async function adminWithToken() {
    const admin = await makeUser(t, [{ orgId: org.id, role: "admin" }]);
    const { access_token } = await obtainTokens(t, admin, org.id, { resource: REST_RESOURCE });
    return { admin, token: access_token };
  }

  test("demoting the creator to viewer takes the key's write scopes at once; promoting back restores them", async () => {
    const { admin, token } = await adminWithToken();
    const key = await keyOf(token);
    expect(key.scopes).toEqual([...SCOPES]);
    expect((await writeEstimate(key.api_key)).status).toBe(200);

    await addMember(t.s.db, { orgId: org.id, userId: admin.id, role: "viewer" });
    const denied = await writeEstimate(key.api_key);
    expect(denied.status).toBe(403);
    expect((await denied.json()).code).toBe("insufficient_scope");
    expect((await call(key.api_key, "GET", "/api-keys")).status).toBe(403);
    expect((await call(key.api_key, "GET", "/cost-estimates?provider=aws")).status).toBe(200); // a viewer reads

    await addMember(t.s.db, { orgId: org.id, userId: admin.id, role: "admin" });
    expect((await writeEstimate(key.api_key)).status).toBe(200);
  });

  test("removing the creator from the org makes the key answer 401 like a revoked one; a CLI key is untouched", async () => {
    const { admin, token } = await adminWithToken();
    const key = await keyOf(token);
    const cliKey = await createApiKey(t.s.db, { orgId: org.id, name: "made by the CLI" });
    await t.s.handle.query("DELETE FROM memberships WHERE org_id = $1 AND user_id = $2", [org.id, admin.id]);
    const r = await call(key.api_key, "GET", "/cost-estimates?provider=aws");
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toContain('error="invalid_token"');
    expect((await writeEstimate(cliKey.key)).status).toBe(200);
  });

  test("a key created with a user's key stays bound to that user", async () => {
    const { admin, token } = await adminWithToken();
    const first = await keyOf(token);
    const second = await keyOf(first.api_key, { name: "made by a key", scopes: ["estimates:read", "estimates:write"] });
    expect((await writeEstimate(second.api_key)).status).toBe(200);
    await addMember(t.s.db, { orgId: org.id, userId: admin.id, role: "viewer" });
    expect((await writeEstimate(second.api_key)).status).toBe(403);
    await t.s.handle.query("DELETE FROM memberships WHERE org_id = $1 AND user_id = $2", [org.id, admin.id]);
    expect((await call(second.api_key, "GET", "/cost-estimates?provider=aws")).status).toBe(401);
  });

  test("deleting the creator deletes the key instead of leaving it creator-less and unbounded", async () => {
    const { admin, token } = await adminWithToken();
    const key = await keyOf(token);
    await t.s.handle.query("DELETE FROM users WHERE id = $1", [admin.id]);
    expect((await call(key.api_key, "GET", "/cost-estimates?provider=aws")).status).toBe(401);
    expect(await t.s.handle.query("SELECT id FROM api_keys WHERE id = $1", [key.id])).toEqual([]);
  });

  test("a viewer cannot create a key with write scopes", async () => {
    const viewer = await makeUser(t, [{ orgId: org.id, role: "viewer" }]);
    const { access_token } = await obtainTokens(t, viewer, org.id, { resource: REST_RESOURCE });
    for (const scopes of [["estimates:write"], ["templates:write"], undefined]) {
      const r = await call(access_token, "POST", "/api-keys", { name: "viewer key", ...(scopes ? { scopes } : {}) });
      expect(r.status).toBe(403);
      expect((await r.json()).code).toBe("insufficient_scope");
    }
    expect(await t.s.handle.query("SELECT id FROM api_keys WHERE created_by = $1", [viewer.id])).toEqual([]);
  });
});

import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { createOrganization } from "../../lib/orgs/service.ts";
import { pruneOAuthState } from "../../lib/oauth/cleanup.ts";
import { REST_RESOURCE, bearer, makeUser, obtainTokens, send } from "./helpers.ts";

describeEachDb("oauth: cleanup job", (driver) => {
  const t = useTestApp(driver);

  test("prunes only what expired more than a day ago (and old login failures); live tokens keep working", async () => {
    const org = await createOrganization(t.s.db, { name: "Cleanup org" });
    const user = await makeUser(t, [{ orgId: org.id, role: "admin" }]);
    const old = await obtainTokens(t, user, org.id, { resource: REST_RESOURCE });
    const live = await obtainTokens(t, user, org.id, { resource: REST_RESOURCE });
    await t.s.handle.query("UPDATE oauth_tokens SET expires_at = now() - interval '2 days' WHERE client_id = $1", [old.client_id]);
    await t.s.handle.query("UPDATE oauth_codes SET expires_at = now() - interval '2 days' WHERE client_id = $1", [old.client_id]);
    await t.s.handle.query("INSERT INTO oauth_login_failures (email, ip, created_at) VALUES ('a@b.c', '1.2.3.4', now() - interval '1 hour'), ('a@b.c', '1.2.3.4', now())");
    const r = await pruneOAuthState(t.s.db, new Date());
    expect(r.tokens).toBe(2);
    expect(r.codes).toBe(1);
    expect(r.login_failures).toBe(1);
    expect((await t.s.handle.query("SELECT id FROM oauth_tokens WHERE client_id = $1", [old.client_id])).length).toBe(0);
    expect((await t.s.handle.query("SELECT id FROM oauth_login_failures")).length).toBe(1);
    expect((await send(t, "GET", `/beta/v1/org/${org.id}`, { headers: bearer(live.access_token) })).status).toBe(200);
    expect(await pruneOAuthState(t.s.db, new Date())).toMatchObject({ tokens: 0, codes: 0, login_failures: 0 });
  });
});

import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { createOrganization } from "../../lib/orgs/service.ts";
import { SCOPES } from "../../lib/auth/scopes.ts";
import { verifyAccessToken } from "../../lib/oauth/resolver.ts";
import { resolvePrincipal } from "../../lib/auth/guard.ts";
import { BASE, FORM, Jar, MCP_RESOURCE, REDIRECT, REST_RESOURCE, authorize, bearer, csrfFrom, form, makeUser, pkce, registerClient, send, signIn, token } from "./helpers.ts";

describeEachDb("oauth: end-to-end authorization", (driver) => {
  const t = useTestApp(driver);

  test("discovery metadata (RFC 8414) describes the server", async () => {
    const r = await send(t, "GET", "/.well-known/oauth-authorization-server");
    expect(r.status).toBe(200);
    const m = await r.json();
    expect(m).toMatchObject({
      issuer: BASE,
      authorization_endpoint: `${BASE}/oauth/authorize`,
      token_endpoint: `${BASE}/oauth/token`,
      registration_endpoint: `${BASE}/oauth/register`,
      revocation_endpoint: `${BASE}/oauth/revoke`,
      code_challenge_methods_supported: ["S256"],
      grant_types_supported: ["authorization_code", "refresh_token"],
      response_types_supported: ["code"],
      token_endpoint_auth_methods_supported: ["none"],
      authorization_response_iss_parameter_supported: true,
    });
    expect(m.scopes_supported).toEqual([...SCOPES]);
    expect(r.headers.get("access-control-allow-origin")).toBe("*");
  });

  test("discovery → registration → PKCE → login → consent → code → token → Beta API on the granted org only", async () => {
    const orgA = await createOrganization(t.s.db, { name: "Org A" });
    const orgB = await createOrganization(t.s.db, { name: "Org B" });
    const user = await makeUser(t, [{ orgId: orgA.id, role: "admin" }]);

    const meta = await (await send(t, "GET", "/.well-known/oauth-authorization-server")).json();
    const reg = await send(t, "POST", new URL(meta.registration_endpoint).pathname, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_name: "Claude", redirect_uris: [REDIRECT], token_endpoint_auth_method: "none" }),
    });
    expect(reg.status).toBe(201);
    const client = await reg.json();
    expect(client.client_id).toMatch(/^cid_/);
    expect(client.token_endpoint_auth_method).toBe("none");
    expect(client.redirect_uris).toEqual([REDIRECT]);

    const { verifier, challenge } = pkce();
    const { code, location, consentHtml } = await authorize(t, { client_id: client.client_id, code_challenge: challenge, resource: REST_RESOURCE, state: "xyz" }, user, orgA.id);
    expect(consentHtml).toContain("Claude");
    expect(consentHtml).toContain("Org A");
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
    expect(location.searchParams.get("state")).toBe("xyz");
    expect(location.searchParams.get("iss")).toBe(BASE); // RFC 9207

    const r = await token(t, { grant_type: "authorization_code", client_id: client.client_id, code, redirect_uri: REDIRECT, code_verifier: verifier });
    expect(r.status).toBe(200);
    expect(r.headers.get("cache-control")).toBe("no-store");
    expect(r.body).toMatchObject({ token_type: "Bearer", expires_in: 3600 });
    expect(r.body.access_token).toMatch(/^cot_/);
    expect(r.body.refresh_token).toMatch(/^cor_/);
    expect(r.body.scope.split(" ").sort()).toEqual([...SCOPES].sort());

    const own = await send(t, "GET", `/beta/v1/org/${orgA.id}`, { headers: bearer(r.body.access_token) });
    expect(own.status).toBe(200);
    expect((await own.json()).name).toBe("Org A");
    const keys = await send(t, "GET", `/beta/v1/org/${orgA.id}/api-keys`, { headers: bearer(r.body.access_token) });
    expect(keys.status).toBe(200);
    const other = await send(t, "GET", `/beta/v1/org/${orgB.id}`, { headers: bearer(r.body.access_token) });
    expect(other.status).toBe(403);
    expect(JSON.stringify(await other.json())).not.toContain("Org B");
  });

  test("a user with several organizations chooses one; the token sees that one only", async () => {
    const orgA = await createOrganization(t.s.db, { name: "Alpha" });
    const orgB = await createOrganization(t.s.db, { name: "Beta" });
    const user = await makeUser(t, [{ orgId: orgA.id, role: "member" }, { orgId: orgB.id, role: "viewer" }]);
    const client = await registerClient(t);
    const { verifier, challenge } = pkce();
    const { code, consentHtml } = await authorize(t, { client_id: client.client_id, code_challenge: challenge, resource: REST_RESOURCE }, user, orgB.id);
    expect(consentHtml).toContain('<select id="org_id" name="org_id"');
    expect(consentHtml).toContain(orgA.id);
    expect(consentHtml).toContain(orgB.id);
    const r = await token(t, { grant_type: "authorization_code", client_id: client.client_id, code, redirect_uri: REDIRECT, code_verifier: verifier });
    expect(r.status).toBe(200);
    // The token response names the organization chosen on the consent page (a client needs it for every path).
    expect(r.body.org_id).toBe(orgB.id);
    expect((await send(t, "GET", `/beta/v1/org/${orgB.id}`, { headers: bearer(r.body.access_token) })).status).toBe(200);
    expect((await send(t, "GET", `/beta/v1/org/${orgA.id}`, { headers: bearer(r.body.access_token) })).status).toBe(403);
  });

  test("approving for an organization the user is not a member of is refused", async () => {
    const mine = await createOrganization(t.s.db, { name: "Mine" });
    const foreign = await createOrganization(t.s.db, { name: "Foreign" });
    const user = await makeUser(t, [{ orgId: mine.id, role: "admin" }]);
    const client = await registerClient(t);
    const { challenge } = pkce();
    const jar = new Jar();
    const { consentHtml, query } = await signIn(t, { client_id: client.client_id, code_challenge: challenge }, user, jar);
    const r = await send(t, "POST", "/oauth/authorize", {
      headers: { ...FORM, ...jar.header() },
      body: `${query}&${form({ action: "approve", csrf_token: csrfFrom(consentHtml), org_id: foreign.id })}`,
    });
    expect(r.status).toBe(400);
    expect(r.headers.get("location")).toBeNull();
    expect(await r.text()).toContain("Choose one of your organizations");
  });

  test("deny redirects with access_denied, state and iss", async () => {
    const org = await createOrganization(t.s.db, { name: "Deny org" });
    const user = await makeUser(t, [{ orgId: org.id, role: "admin" }]);
    const client = await registerClient(t);
    const jar = new Jar();
    const { consentHtml, query } = await signIn(t, { client_id: client.client_id, code_challenge: pkce().challenge, state: "s1" }, user, jar);
    const r = await send(t, "POST", "/oauth/authorize", { headers: { ...FORM, ...jar.header() }, body: `${query}&${form({ action: "deny", csrf_token: csrfFrom(consentHtml) })}` });
    expect(r.status).toBe(303);
    const loc = new URL(r.headers.get("location")!);
    expect(loc.searchParams.get("error")).toBe("access_denied");
    expect(loc.searchParams.get("state")).toBe("s1");
    expect(loc.searchParams.get("iss")).toBe(BASE);
    expect(loc.searchParams.get("code")).toBeNull();
  });

  test("without `resource` the token is bound to the MCP server (verifyAccessToken)", async () => {
    const org = await createOrganization(t.s.db, { name: "Mcp org" });
    const user = await makeUser(t, [{ orgId: org.id, role: "member" }]);
    const client = await registerClient(t);
    const { verifier, challenge } = pkce();
    const { code } = await authorize(t, { client_id: client.client_id, code_challenge: challenge }, user, org.id);
    const r = await token(t, { grant_type: "authorization_code", client_id: client.client_id, code, redirect_uri: REDIRECT, code_verifier: verifier });
    const ok = await verifyAccessToken(t.s.db, r.body.access_token, MCP_RESOURCE);
    expect(ok.ok).toBe(true);
    if (ok.ok) {
      expect(ok.principal).toMatchObject({ kind: "oauth", orgId: org.id, userId: user.id });
      expect(ok.principal.scopes).not.toContain("templates:write");
    }
    expect(await verifyAccessToken(t.s.db, r.body.access_token, `${MCP_RESOURCE}/`)).toMatchObject({ ok: true });
    // The shared guard (used by /mcp) resolves it for the MCP audience only.
    expect(await resolvePrincipal(t.s, r.body.access_token, MCP_RESOURCE)).toMatchObject({ kind: "oauth", orgId: org.id });
    expect(await resolvePrincipal(t.s, r.body.access_token, REST_RESOURCE)).toBeNull();
    expect(await verifyAccessToken(t.s.db, r.body.access_token, REST_RESOURCE)).toEqual({ ok: false, reason: "wrong_audience" });
    expect(await verifyAccessToken(t.s.db, null, MCP_RESOURCE)).toEqual({ ok: false, reason: "missing" });
    expect(await verifyAccessToken(t.s.db, "cot_nope", MCP_RESOURCE)).toEqual({ ok: false, reason: "invalid" });
    expect(await verifyAccessToken(t.s.db, t.org.key, MCP_RESOURCE)).toEqual({ ok: false, reason: "invalid" });
    // Used on the REST API, an MCP-bound token is not valid.
    expect((await send(t, "GET", `/beta/v1/org/${org.id}`, { headers: bearer(r.body.access_token) })).status).toBe(401);
  });

  test("tokens are stored hashed", async () => {
    const rows = await t.s.handle.query<{ token_hash: string }>("SELECT token_hash FROM oauth_tokens");
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) expect(r.token_hash).toMatch(/^[0-9a-f]{64}$/);
    const codes = await t.s.handle.query<{ code_hash: string }>("SELECT code_hash FROM oauth_codes");
    for (const c of codes) expect(c.code_hash).toMatch(/^[0-9a-f]{64}$/);
    const sessions = await t.s.handle.query<{ session_hash: string }>("SELECT session_hash FROM oauth_sessions");
    expect(sessions.length).toBeGreaterThan(0);
    for (const c of sessions) expect(c.session_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  test("client-supplied text is escaped on the pages", async () => {
    const client = await registerClient(t, { client_name: '<script>alert("x")</script>' });
    const q = new URLSearchParams({ response_type: "code", client_id: client.client_id, redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: "S256", state: '"><img src=x onerror=alert(1)>' });
    const r = await send(t, "GET", `/oauth/authorize?${q}`);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    const html = await r.text();
    expect(html).not.toContain("<script>");
    expect(html).not.toContain("<img src=x");
    expect(html).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
  });
});

import { beforeAll, expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { addMember, createOrganization } from "../../lib/orgs/service.ts";
import { verifyAccessToken } from "../../lib/oauth/resolver.ts";
import { BASE, FORM, Jar, MCP_RESOURCE, REDIRECT, REST_RESOURCE, authorize, authorizeQuery, bearer, csrfFrom, form, makeUser, obtainTokens, pkce, registerClient, send, signIn, token } from "./helpers.ts";

describeEachDb("oauth: registration and authorization request checks", (driver) => {
  const t = useTestApp(driver);

  const reg = (body: unknown, type = "application/json") =>
    send(t, "POST", "/oauth/register", { headers: { "content-type": type }, body: typeof body === "string" ? body : JSON.stringify(body) });

  test("registration accepts https and loopback http redirect URIs", async () => {
    for (const uri of ["https://app.example.com/cb", "http://127.0.0.1:33418/cb", "http://localhost:6274/oauth/callback", "http://[::1]:9000/cb"]) {
      const r = await reg({ redirect_uris: [uri] });
      expect(r.status).toBe(201);
      expect((await r.json()).redirect_uris).toEqual([uri]);
    }
  });

  test("registration refuses non-loopback http, other schemes, fragments, missing URIs (RFC 7591 errors)", async () => {
    for (const uri of ["http://evil.example.com/cb", "http://127.0.0.1.evil.com/cb", "ftp://127.0.0.1/cb", "myapp://cb", "https://app.example.com/cb#frag", "/relative", ""]) {
      const r = await reg({ redirect_uris: [uri] });
      expect(r.status).toBe(400);
      const b = await r.json();
      expect(b.error).toBe("invalid_redirect_uri");
      expect(typeof b.error_description).toBe("string");
    }
    for (const body of [{}, { redirect_uris: [] }, { redirect_uris: "https://a.example/cb" }]) {
      const r = await reg(body);
      expect(r.status).toBe(400);
      expect((await r.json()).error).toBe("invalid_redirect_uri");
    }
  });

  test("registration refuses unsupported metadata and malformed bodies with invalid_client_metadata", async () => {
    const cases: [unknown, string?][] = [
      [{ redirect_uris: [REDIRECT], grant_types: ["client_credentials"] }],
      [{ redirect_uris: [REDIRECT], response_types: ["token"] }],
      [{ redirect_uris: [REDIRECT], client_name: 42 }],
      ["{not json"],
      ["[1,2]"],
      [{ redirect_uris: [REDIRECT] }, "text/plain"],
    ];
    for (const [body, type] of cases) {
      const r = await reg(body, type);
      expect(r.status).toBe(400);
      expect((await r.json()).error).toBe("invalid_client_metadata");
    }
    const rows = await t.s.handle.query("SELECT id FROM oauth_clients WHERE 'http://127.0.0.1:8765/callback' = ANY(redirect_uris) AND name <> 'Test client'");
    expect(rows.length).toBe(0);
  });

  test("a confidential auth method is overridden to none: every client is public", async () => {
    const r = await reg({ redirect_uris: [REDIRECT], token_endpoint_auth_method: "client_secret_post" });
    expect(r.status).toBe(201);
    const b = await r.json();
    expect(b.token_endpoint_auth_method).toBe("none");
    expect(b.client_secret).toBeUndefined();
  });

  test("unknown client or unregistered redirect_uri → error page, never a redirect", async () => {
    const client = await registerClient(t);
    const { challenge } = pkce();
    for (const q of [
      authorizeQuery({ client_id: "cid_unknown", code_challenge: challenge }),
      authorizeQuery({ client_id: client.client_id, code_challenge: challenge, redirect_uri: "https://evil.example.com/cb" }),
      authorizeQuery({ client_id: client.client_id, code_challenge: challenge, redirect_uri: `${REDIRECT}/extra` }),
      authorizeQuery({ client_id: client.client_id, code_challenge: challenge, redirect_uri: "http://127.0.0.1:8766/callback" }),
    ]) {
      const r = await send(t, "GET", `/oauth/authorize?${q}`);
      expect(r.status).toBe(400);
      expect(r.headers.get("location")).toBeNull();
      expect(r.headers.get("content-type")).toContain("text/html");
      expect(await r.text()).toContain("Cannot continue the sign-in");
    }
  });

  test("PKCE is mandatory (S256 only); errors go back to the verified redirect URI with state and iss", async () => {
    const client = await registerClient(t);
    const { challenge } = pkce();
    const cases: [Record<string, string | undefined>, string][] = [
      [{ code_challenge: undefined }, "invalid_request"],
      [{ code_challenge: challenge, code_challenge_method: "plain" }, "invalid_request"],
      [{ code_challenge: "short" }, "invalid_request"],
      [{ code_challenge: challenge, response_type: "token" }, "unsupported_response_type"],
      [{ code_challenge: challenge, resource: "https://elsewhere.example.com/mcp" }, "invalid_target"],
      [{ code_challenge: challenge, scope: "openid profile" }, "invalid_scope"],
    ];
    for (const [p, error] of cases) {
      const q = new URLSearchParams(authorizeQuery({ client_id: client.client_id, code_challenge: challenge, state: "abc" }));
      for (const [k, v] of Object.entries(p)) (v === undefined ? q.delete(k) : q.set(k, v));
      const r = await send(t, "GET", `/oauth/authorize?${q}`);
      expect(r.status).toBe(303);
      const loc = new URL(r.headers.get("location")!);
      expect(`${loc.origin}${loc.pathname}`).toBe(REDIRECT);
      expect(loc.searchParams.get("error")).toBe(error);
      expect(loc.searchParams.get("state")).toBe("abc");
      expect(loc.searchParams.get("iss")).toBe(BASE);
    }
  });
});

describeEachDb("oauth: code and token checks", (driver) => {
  const t = useTestApp(driver);
  let org: { id: string };
  let user: { id: string; email: string; password: string };

  beforeAll(async () => {
    org = await createOrganization(t.s.db, { name: "Tokens org" });
    user = await makeUser(t, [{ orgId: org.id, role: "admin" }]);
  });

  async function freshCode(o: { resource?: string } = {}) {
    const client = await registerClient(t);
    const { verifier, challenge } = pkce();
    const { code } = await authorize(t, { client_id: client.client_id, code_challenge: challenge, resource: o.resource ?? REST_RESOURCE }, user, org.id);
    return { client_id: client.client_id, code, verifier };
  }

  test("wrong code_verifier → invalid_grant, and the code is burnt", async () => {
    const c = await freshCode();
    const bad = await token(t, { grant_type: "authorization_code", client_id: c.client_id, code: c.code, redirect_uri: REDIRECT, code_verifier: pkce().verifier });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe("invalid_grant");
    expect(typeof bad.body.error_description).toBe("string");
    const retry = await token(t, { grant_type: "authorization_code", client_id: c.client_id, code: c.code, redirect_uri: REDIRECT, code_verifier: c.verifier });
    expect(retry.status).toBe(400);
    expect(retry.body.error).toBe("invalid_grant");
  });

  test("reused code → invalid_grant and the tokens issued from it are revoked", async () => {
    const c = await freshCode();
    const first = await token(t, { grant_type: "authorization_code", client_id: c.client_id, code: c.code, redirect_uri: REDIRECT, code_verifier: c.verifier });
    expect(first.status).toBe(200);
    expect((await send(t, "GET", `/beta/v1/org/${org.id}`, { headers: bearer(first.body.access_token) })).status).toBe(200);
    const second = await token(t, { grant_type: "authorization_code", client_id: c.client_id, code: c.code, redirect_uri: REDIRECT, code_verifier: c.verifier });
    expect(second.status).toBe(400);
    expect(second.body.error).toBe("invalid_grant");
    expect((await send(t, "GET", `/beta/v1/org/${org.id}`, { headers: bearer(first.body.access_token) })).status).toBe(401);
    const refresh = await token(t, { grant_type: "refresh_token", client_id: c.client_id, refresh_token: first.body.refresh_token });
    expect(refresh.body.error).toBe("invalid_grant");
  });

  test("concurrent exchanges of one code: exactly one succeeds", async () => {
    const c = await freshCode();
    const body = { grant_type: "authorization_code", client_id: c.client_id, code: c.code, redirect_uri: REDIRECT, code_verifier: c.verifier };
    const results = await Promise.all([token(t, body), token(t, body), token(t, body)]);
    expect(results.filter((r) => r.status === 200).length).toBe(1);
    expect(results.filter((r) => r.status === 400 && r.body.error === "invalid_grant").length).toBe(2);
  });

  test("wrong redirect_uri, other client, unknown code, missing params, bad grant type", async () => {
    const c = await freshCode();
    const wrongUri = await token(t, { grant_type: "authorization_code", client_id: c.client_id, code: c.code, redirect_uri: "http://127.0.0.1:8765/other", code_verifier: c.verifier });
    expect(wrongUri.status).toBe(400);
    expect(wrongUri.body.error).toBe("invalid_grant");

    const c2 = await freshCode();
    const other = await registerClient(t);
    const otherClient = await token(t, { grant_type: "authorization_code", client_id: other.client_id, code: c2.code, redirect_uri: REDIRECT, code_verifier: c2.verifier });
    expect(otherClient.body.error).toBe("invalid_grant");

    expect((await token(t, { grant_type: "authorization_code", client_id: c.client_id, code: "coc_unknown", redirect_uri: REDIRECT, code_verifier: c.verifier })).body.error).toBe("invalid_grant");
    expect((await token(t, { grant_type: "authorization_code", client_id: c.client_id, redirect_uri: REDIRECT, code_verifier: c.verifier })).body.error).toBe("invalid_request");
    expect((await token(t, { grant_type: "password", client_id: c.client_id })).body.error).toBe("unsupported_grant_type");
    const noClient = await token(t, { grant_type: "authorization_code", code: "x" });
    expect(noClient.status).toBe(401);
    expect(noClient.body.error).toBe("invalid_client");
    const json = await send(t, "POST", "/oauth/token", { headers: { "content-type": "application/json" }, body: JSON.stringify({ grant_type: "authorization_code" }) });
    expect(json.status).toBe(400);
    expect((await json.json()).error).toBe("invalid_request");
  });

  test("expired code → invalid_grant", async () => {
    const c = await freshCode();
    await t.s.handle.query("UPDATE oauth_codes SET expires_at = now() - interval '1 second' WHERE used_at IS NULL");
    const r = await token(t, { grant_type: "authorization_code", client_id: c.client_id, code: c.code, redirect_uri: REDIRECT, code_verifier: c.verifier });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe("invalid_grant");
  });

  test("wrong resource: at the token endpoint → invalid_target; a REST token at /mcp and vice versa → wrong audience", async () => {
    const c = await freshCode();
    const r = await token(t, { grant_type: "authorization_code", client_id: c.client_id, code: c.code, redirect_uri: REDIRECT, code_verifier: c.verifier, resource: MCP_RESOURCE });
    expect(r.body.error).toBe("invalid_target");

    const rest = await obtainTokens(t, user, org.id, { resource: REST_RESOURCE });
    expect((await send(t, "GET", `/beta/v1/org/${org.id}`, { headers: bearer(rest.access_token) })).status).toBe(200);
    expect(await verifyAccessToken(t.s.db, rest.access_token, MCP_RESOURCE)).toEqual({ ok: false, reason: "wrong_audience" });
    const mcp = await obtainTokens(t, user, org.id, { resource: MCP_RESOURCE });
    const res = await send(t, "GET", `/beta/v1/org/${org.id}`, { headers: bearer(mcp.access_token) });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toContain("invalid_token");
  });

  test("expired access token → 401", async () => {
    const tok = await obtainTokens(t, user, org.id, { resource: REST_RESOURCE });
    expect((await send(t, "GET", `/beta/v1/org/${org.id}`, { headers: bearer(tok.access_token) })).status).toBe(200);
    await t.s.handle.query("UPDATE oauth_tokens SET expires_at = now() - interval '1 second' WHERE kind = 'access' AND client_id = $1", [tok.client_id]);
    expect((await send(t, "GET", `/beta/v1/org/${org.id}`, { headers: bearer(tok.access_token) })).status).toBe(401);
    expect(await verifyAccessToken(t.s.db, tok.access_token, REST_RESOURCE)).toEqual({ ok: false, reason: "invalid" });
  });

  test("revocation (RFC 7009): access token alone; refresh token revokes the whole authorization", async () => {
    const a = await obtainTokens(t, user, org.id, { resource: REST_RESOURCE });
    const rv = await send(t, "POST", "/oauth/revoke", { headers: FORM, body: form({ client_id: a.client_id, token: a.access_token }) });
    expect(rv.status).toBe(200);
    expect((await send(t, "GET", `/beta/v1/org/${org.id}`, { headers: bearer(a.access_token) })).status).toBe(401);
    // The refresh token still works after revoking only the access token.
    const renewed = await token(t, { grant_type: "refresh_token", client_id: a.client_id, refresh_token: a.refresh_token });
    expect(renewed.status).toBe(200);

    const b = await obtainTokens(t, user, org.id, { resource: REST_RESOURCE });
    // Another client cannot revoke it.
    const stranger = await registerClient(t);
    expect((await send(t, "POST", "/oauth/revoke", { headers: FORM, body: form({ client_id: stranger.client_id, token: b.refresh_token }) })).status).toBe(200);
    expect((await send(t, "GET", `/beta/v1/org/${org.id}`, { headers: bearer(b.access_token) })).status).toBe(200);
    await send(t, "POST", "/oauth/revoke", { headers: FORM, body: form({ client_id: b.client_id, token: b.refresh_token }) });
    expect((await send(t, "GET", `/beta/v1/org/${org.id}`, { headers: bearer(b.access_token) })).status).toBe(401);
    expect((await token(t, { grant_type: "refresh_token", client_id: b.client_id, refresh_token: b.refresh_token })).body.error).toBe("invalid_grant");
    // Unknown tokens: 200 as well (RFC 7009 §2.2).
    expect((await send(t, "POST", "/oauth/revoke", { headers: FORM, body: form({ client_id: b.client_id, token: "cot_whatever" }) })).status).toBe(200);
  });

  test("refresh rotation; reusing a rotated refresh token revokes the whole family", async () => {
    const a = await obtainTokens(t, user, org.id, { resource: REST_RESOURCE });
    const r1 = await token(t, { grant_type: "refresh_token", client_id: a.client_id, refresh_token: a.refresh_token });
    expect(r1.status).toBe(200);
    expect(r1.body.refresh_token).not.toBe(a.refresh_token);
    expect(r1.body.access_token).not.toBe(a.access_token);
    expect((await send(t, "GET", `/beta/v1/org/${org.id}`, { headers: bearer(r1.body.access_token) })).status).toBe(200);
    const r2 = await token(t, { grant_type: "refresh_token", client_id: a.client_id, refresh_token: r1.body.refresh_token });
    expect(r2.status).toBe(200);

    const replay = await token(t, { grant_type: "refresh_token", client_id: a.client_id, refresh_token: a.refresh_token });
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe("invalid_grant");
    for (const at of [a.access_token, r1.body.access_token, r2.body.access_token])
      expect((await send(t, "GET", `/beta/v1/org/${org.id}`, { headers: bearer(at) })).status).toBe(401);
    expect((await token(t, { grant_type: "refresh_token", client_id: a.client_id, refresh_token: r2.body.refresh_token })).body.error).toBe("invalid_grant");
  });

  test("a client that did not register the refresh_token grant gets no refresh token", async () => {
    const client = await registerClient(t, { grant_types: ["authorization_code"] });
    const { verifier, challenge } = pkce();
    const { code } = await authorize(t, { client_id: client.client_id, code_challenge: challenge, resource: REST_RESOURCE }, user, org.id);
    const r = await token(t, { grant_type: "authorization_code", client_id: client.client_id, code, redirect_uri: REDIRECT, code_verifier: verifier });
    expect(r.status).toBe(200);
    expect(r.body.refresh_token).toBeUndefined();
    expect((await send(t, "GET", `/beta/v1/org/${org.id}`, { headers: bearer(r.body.access_token) })).status).toBe(200);
  });

  test("refresh may narrow scopes, never widen; another client's refresh token is refused", async () => {
    const a = await obtainTokens(t, user, org.id, { resource: REST_RESOURCE, scope: "reports:read estimates:read" });
    expect(a.scope.split(" ").sort()).toEqual(["estimates:read", "reports:read"]);
    const wide = await token(t, { grant_type: "refresh_token", client_id: a.client_id, refresh_token: a.refresh_token, scope: "reports:read templates:write" });
    expect(wide.body.error).toBe("invalid_scope");
    const b = await obtainTokens(t, user, org.id, { resource: REST_RESOURCE });
    const narrow = await token(t, { grant_type: "refresh_token", client_id: b.client_id, refresh_token: b.refresh_token, scope: "reports:read" });
    expect(narrow.status).toBe(200);
    expect(narrow.body.scope).toBe("reports:read");
    const c = await obtainTokens(t, user, org.id, { resource: REST_RESOURCE });
    const stolen = await token(t, { grant_type: "refresh_token", client_id: b.client_id, refresh_token: c.refresh_token });
    expect(stolen.body.error).toBe("invalid_grant");
    expect((await token(t, { grant_type: "refresh_token", client_id: c.client_id, refresh_token: c.refresh_token })).status).toBe(200);
  });

  test("a viewer's token lacks write scopes; scopes follow the user's current role", async () => {
    const viewer = await makeUser(t, [{ orgId: org.id, role: "viewer" }]);
    const { consentHtml } = await signIn(t, { client_id: (await registerClient(t)).client_id, code_challenge: pkce().challenge, resource: REST_RESOURCE }, viewer);
    expect(consentHtml).toContain("Not granted (your role is viewer)");
    expect(consentHtml).toMatch(/Not granted[^\n]*templates:write/);
    const v = await obtainTokens(t, viewer, org.id, { resource: REST_RESOURCE });
    const granted = v.scope.split(" ");
    expect(granted).not.toContain("templates:write");
    expect(granted).not.toContain("estimates:write");
    expect(granted).toContain("reports:read");
    const keys = await send(t, "GET", `/beta/v1/org/${org.id}/api-keys`, { headers: bearer(v.access_token) });
    expect(keys.status).toBe(403);
    expect((await keys.json()).code).toBe("insufficient_scope");

    // An admin demoted to viewer loses the write scopes at once, on tokens already issued.
    const admin = await makeUser(t, [{ orgId: org.id, role: "admin" }]);
    const a = await obtainTokens(t, admin, org.id, { resource: REST_RESOURCE });
    expect((await send(t, "GET", `/beta/v1/org/${org.id}/api-keys`, { headers: bearer(a.access_token) })).status).toBe(200);
    await addMember(t.s.db, { orgId: org.id, userId: admin.id, role: "viewer" });
    expect((await send(t, "GET", `/beta/v1/org/${org.id}/api-keys`, { headers: bearer(a.access_token) })).status).toBe(403);
    const check = await verifyAccessToken(t.s.db, a.access_token, REST_RESOURCE);
    expect(check.ok && check.principal.scopes.includes("templates:write")).toBe(false);
    // Removed from the org: the token stops working.
    await t.s.handle.query("DELETE FROM memberships WHERE user_id = $1", [admin.id]);
    expect((await send(t, "GET", `/beta/v1/org/${org.id}`, { headers: bearer(a.access_token) })).status).toBe(401);
  });

  test("a token never shows another org's data, whether that org exists or not", async () => {
    const other = await createOrganization(t.s.db, { name: "Secret other org" });
    const a = await obtainTokens(t, user, org.id, { resource: REST_RESOURCE });
    for (const id of [other.id, crypto.randomUUID()]) {
      for (const path of ["", "/api-keys"]) {
        const r = await send(t, "GET", `/beta/v1/org/${id}${path}`, { headers: bearer(a.access_token) });
        expect(r.status).toBe(403);
        expect(await r.text()).not.toContain("Secret other org");
      }
    }
  });
});

describeEachDb("oauth: browser session security", (driver) => {
  const t = useTestApp(driver, { config: { trustProxy: true } });
  let org: { id: string };

  beforeAll(async () => {
    org = await createOrganization(t.s.db, { name: "Browser org" });
  });

  test("login and approve without or with a wrong CSRF token → 403, no session, no code", async () => {
    const user = await makeUser(t, [{ orgId: org.id, role: "admin" }]);
    const client = await registerClient(t);
    const q = authorizeQuery({ client_id: client.client_id, code_challenge: pkce().challenge });
    const jar = new Jar();
    const page = await send(t, "GET", `/oauth/authorize?${q}`);
    jar.store(page);
    const goodCsrf = csrfFrom(await page.text());
    for (const csrf of [undefined, "", "0".repeat(64), goodCsrf]) {
      // The last case: a valid token presented without the cookie it is bound to.
      const headers = csrf === goodCsrf ? FORM : { ...FORM, ...jar.header() };
      const r = await send(t, "POST", "/oauth/authorize", { headers, body: `${q}&${form({ action: "login", csrf_token: csrf, email: user.email, password: user.password })}` });
      expect(r.status).toBe(403);
      expect(r.headers.get("set-cookie")).toBeNull();
      expect(await r.text()).toContain("Security check failed");
    }
    // Signed in properly, an approval with another browser's CSRF token is refused.
    const other = new Jar();
    jar.cookies.clear();
    const { consentHtml, query } = await signIn(t, { client_id: client.client_id, code_challenge: pkce().challenge }, user, jar);
    const otherPage = await send(t, "GET", `/oauth/authorize?${q}`);
    other.store(otherPage);
    const foreignCsrf = csrfFrom(await otherPage.text());
    expect(foreignCsrf).not.toBe(csrfFrom(consentHtml));
    const r = await send(t, "POST", "/oauth/authorize", { headers: { ...FORM, ...jar.header() }, body: `${query}&${form({ action: "approve", csrf_token: foreignCsrf, org_id: org.id })}` });
    expect(r.status).toBe(403);
    expect(r.headers.get("location")).toBeNull();
    expect((await t.s.handle.query("SELECT id FROM oauth_codes WHERE client_id = $1", [client.client_id])).length).toBe(0);
  });

  test("the session cookie is HttpOnly, SameSite=Lax and rotated at login", async () => {
    const user = await makeUser(t, [{ orgId: org.id, role: "admin" }]);
    const client = await registerClient(t);
    const q = authorizeQuery({ client_id: client.client_id, code_challenge: pkce().challenge });
    const page = await send(t, "GET", `/oauth/authorize?${q}`);
    const first = page.headers.get("set-cookie")!;
    expect(first).toContain("HttpOnly");
    expect(first).toContain("SameSite=Lax");
    expect(first).not.toContain("Secure"); // http://localhost: Secure only when the public URL is https
    const jar = new Jar();
    jar.store(page);
    const before = [...jar.cookies.values()][0];
    const login = await send(t, "POST", "/oauth/authorize", { headers: { ...FORM, ...jar.header() }, body: `${q}&${form({ action: "login", csrf_token: csrfFrom(await page.text()), email: user.email, password: user.password })}` });
    expect(login.status).toBe(303);
    jar.store(login);
    expect([...jar.cookies.values()][0]).not.toBe(before);
  });

  test("login throttling: 5 failures per email+IP within 15 minutes → wait, even with the right password", async () => {
    const user = await makeUser(t, [{ orgId: org.id, role: "admin" }]);
    const client = await registerClient(t);
    const q = authorizeQuery({ client_id: client.client_id, code_challenge: pkce().challenge });
    const jar = new Jar();
    const ip = { "x-forwarded-for": "203.0.113.7" };
    const page = await send(t, "GET", `/oauth/authorize?${q}`, { headers: ip });
    jar.store(page);
    const csrf = csrfFrom(await page.text());
    const attempt = (password: string, headers = ip) =>
      send(t, "POST", "/oauth/authorize", { headers: { ...FORM, ...jar.header(), ...headers }, body: `${q}&${form({ action: "login", csrf_token: csrf, email: user.email, password })}` });
    for (let i = 0; i < 5; i++) {
      const r = await attempt("wrong password!");
      expect(r.status).toBe(401);
      expect(await r.text()).toContain("The email or password is incorrect.");
    }
    const blocked = await attempt(user.password);
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(800);
    expect(await blocked.text()).toContain("Too many failed sign-in attempts. Wait 15 minutes");
    // Same email from another address is not blocked.
    expect((await attempt(user.password, { "x-forwarded-for": "198.51.100.1" })).status).toBe(303);
    // When the failures leave the window the right password works again.
    await t.s.handle.query("UPDATE oauth_login_failures SET created_at = created_at - interval '16 minutes' WHERE email = $1", [user.email.toLowerCase()]);
    expect((await attempt(user.password)).status).toBe(303);
  });

  test("concurrent wrong guesses cannot exceed the limit", async () => {
    const user = await makeUser(t, [{ orgId: org.id, role: "admin" }]);
    const client = await registerClient(t);
    const q = authorizeQuery({ client_id: client.client_id, code_challenge: pkce().challenge });
    const jar = new Jar();
    const ip = { "x-forwarded-for": "203.0.113.99" };
    const page = await send(t, "GET", `/oauth/authorize?${q}`, { headers: ip });
    jar.store(page);
    const csrf = csrfFrom(await page.text());
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        send(t, "POST", "/oauth/authorize", { headers: { ...FORM, ...jar.header(), ...ip }, body: `${q}&${form({ action: "login", csrf_token: csrf, email: user.email, password: "nope nope nope" })}` }),
      ),
    );
    expect(results.filter((r) => r.status === 401).length).toBe(5);
    expect(results.filter((r) => r.status === 429).length).toBe(3);
    const rows = await t.s.handle.query("SELECT id FROM oauth_login_failures WHERE email = $1", [user.email.toLowerCase()]);
    expect(rows.length).toBe(5);
  });

  test("an unknown account fails like a wrong password", async () => {
    const client = await registerClient(t);
    const q = authorizeQuery({ client_id: client.client_id, code_challenge: pkce().challenge });
    const jar = new Jar();
    const page = await send(t, "GET", `/oauth/authorize?${q}`);
    jar.store(page);
    const r = await send(t, "POST", "/oauth/authorize", { headers: { ...FORM, ...jar.header() }, body: `${q}&${form({ action: "login", csrf_token: csrfFrom(await page.text()), email: "nobody@example.com", password: "whatever123" })}` });
    expect(r.status).toBe(401);
    expect(await r.text()).toContain("The email or password is incorrect.");
  });

  test("a user without any membership gets a clear error page", async () => {
    const loner = await makeUser(t, []);
    const client = await registerClient(t);
    const q = authorizeQuery({ client_id: client.client_id, code_challenge: pkce().challenge });
    const jar = new Jar();
    const page = await send(t, "GET", `/oauth/authorize?${q}`);
    jar.store(page);
    const login = await send(t, "POST", "/oauth/authorize", { headers: { ...FORM, ...jar.header() }, body: `${q}&${form({ action: "login", csrf_token: csrfFrom(await page.text()), email: loner.email, password: loner.password })}` });
    jar.store(login);
    const r = await send(t, "GET", login.headers.get("location")!, { headers: jar.header() });
    expect(r.status).toBe(403);
    expect(await r.text()).toContain("is not a member of any commitops organization");
  });

  test("sign-out (POST with CSRF) revokes the session's tokens; signing in again gives working ones", async () => {
    const user = await makeUser(t, [{ orgId: org.id, role: "admin" }]);
    const a = await obtainTokens(t, user, org.id, { resource: REST_RESOURCE });
    const renewed = await token(t, { grant_type: "refresh_token", client_id: a.client_id, refresh_token: a.refresh_token });
    expect((await send(t, "GET", `/beta/v1/org/${org.id}`, { headers: bearer(a.access_token) })).status).toBe(200);

    const logoutPage = await send(t, "GET", "/oauth/logout", { headers: a.jar.header() });
    expect(logoutPage.status).toBe(200);
    const csrf = csrfFrom(await logoutPage.text());
    const noCsrf = await send(t, "POST", "/oauth/logout", { headers: { ...FORM, ...a.jar.header() }, body: "" });
    expect(noCsrf.status).toBe(403);
    expect((await send(t, "GET", `/beta/v1/org/${org.id}`, { headers: bearer(a.access_token) })).status).toBe(200);

    const out = await send(t, "POST", "/oauth/logout", { headers: { ...FORM, ...a.jar.header() }, body: form({ csrf_token: csrf }) });
    expect(out.status).toBe(200);
    expect(out.headers.get("set-cookie")).toContain("Max-Age=0");
    expect(await out.text()).toContain("Signed out");
    for (const at of [a.access_token, renewed.body.access_token]) expect((await send(t, "GET", `/beta/v1/org/${org.id}`, { headers: bearer(at) })).status).toBe(401);
    expect((await token(t, { grant_type: "refresh_token", client_id: a.client_id, refresh_token: renewed.body.refresh_token })).body.error).toBe("invalid_grant");

    // The old cookie is no longer a session: the authorize page asks to sign in again.
    const client = await registerClient(t);
    const again = await send(t, "GET", `/oauth/authorize?${authorizeQuery({ client_id: client.client_id, code_challenge: pkce().challenge })}`, { headers: a.jar.header() });
    expect(await again.text()).toContain('id="sign-in"');
    const b = await obtainTokens(t, user, org.id, { resource: REST_RESOURCE });
    expect((await send(t, "GET", `/beta/v1/org/${org.id}`, { headers: bearer(b.access_token) })).status).toBe(200);
  });

  test("'Not you? Sign out' on the consent page ends the session and returns to the login form of the same request", async () => {
    const user = await makeUser(t, [{ orgId: org.id, role: "admin" }]);
    const client = await registerClient(t);
    const jar = new Jar();
    const { consentHtml } = await signIn(t, { client_id: client.client_id, code_challenge: pkce().challenge, state: "resume-me" }, user, jar);
    const cont = /name="continue" value="([^"]+)"/.exec(consentHtml)![1]!.replaceAll("&amp;", "&");
    const out = await send(t, "POST", "/oauth/logout", { headers: { ...FORM, ...jar.header() }, body: form({ csrf_token: csrfFrom(consentHtml), continue: cont }) });
    expect(out.status).toBe(303);
    const loc = out.headers.get("location")!;
    expect(loc.startsWith("/oauth/authorize?")).toBe(true);
    expect(new URLSearchParams(loc.split("?")[1]).get("state")).toBe("resume-me");
    jar.store(out);
    const again = await send(t, "GET", loc, { headers: jar.header() });
    expect(await again.text()).toContain('id="sign-in"');
    expect((await t.s.handle.query("SELECT id FROM oauth_sessions WHERE user_id = $1 AND revoked_at IS NULL", [user.id])).length).toBe(0);
  });
});

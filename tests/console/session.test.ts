// test:solo — drives Chromium: three browsers on two cores made its waits race (a CI run lost a PATCH behind a repaint); it runs with the machine to itself, as it was written for.
// The console's server side over plain HTTP: sign-in as an OAuth client of this server, the
// session cookie, CSRF on state changes, the single-flight token refresh, sign-out, the shell's
// headers and the assets' compression and caching.
import { expect, test } from "bun:test";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp, type TestContext } from "../helpers/app.ts";
import { FORM, Jar, csrfFrom, form, makeUser, send } from "../oauth/helpers.ts";
import { ROLE_SCOPES } from "../../lib/auth/scopes.ts";
import { hashSecret } from "../../lib/auth/tokens.ts";

/** The browser's whole sign-in, over HTTP: /app/login → login form → organization → /app/callback. */
async function consoleSignIn(t: TestContext, user: { email: string; password: string }, orgId: string, returnTo = "/app/", jar = new Jar()) {
  const start = await send(t, "GET", `/app/login?return=${encodeURIComponent(returnTo)}`, { headers: jar.header() });
  expect(start.status).toBe(303);
  jar.store(start);
  const authorizeUrl = start.headers.get("location")!;
  const page = await send(t, "GET", authorizeUrl, { headers: jar.header() });
  jar.store(page);
  const query = authorizeUrl.slice(authorizeUrl.indexOf("?") + 1);
  const login = await send(t, "POST", "/oauth/authorize", { headers: { ...FORM, ...jar.header() }, body: `${query}&${form({ action: "login", csrf_token: csrfFrom(await page.text()), email: user.email, password: user.password })}` });
  expect(login.status).toBe(303);
  jar.store(login);
  const consent = await send(t, "GET", login.headers.get("location")!, { headers: jar.header() });
  const approve = await send(t, "POST", "/oauth/authorize", { headers: { ...FORM, ...jar.header() }, body: `${query}&${form({ action: "approve", csrf_token: csrfFrom(await consent.text()), org_id: orgId })}` });
  expect(approve.status).toBe(303);
  const callback = await send(t, "GET", approve.headers.get("location")!, { headers: jar.header() });
  jar.store(callback);
  return { jar, callback, location: callback.headers.get("location") };
}

async function sessionOf(t: TestContext, jar: Jar) {
  return (await (await send(t, "GET", "/app/session", { headers: jar.header() })).json()) as { signed_in: boolean; org_id: string; scopes: string[]; csrf_token: string };
}

describeEachDb("console: sessions over HTTP", (driver) => {
  const t = useTestApp(driver);

  test("sign-in lands on the page asked for; the session holds the role's scopes; no token is stored in clear", async () => {
    const user = await makeUser(t, [{ orgId: t.org.id, role: "member" }]);
    const { jar, callback, location } = await consoleSignIn(t, user, t.org.id, "/app/reports?year=2026&month=3");
    expect(callback.status).toBe(303);
    expect(location).toBe("/app/reports?year=2026&month=3");
    const cookie = callback.headers.getSetCookie().find((c) => c.startsWith("commitops_console="))!;
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Lax");
    expect(cookie).not.toContain("Secure"); // http://localhost; on https the cookie is __Host- and Secure
    const s = await sessionOf(t, jar);
    expect(s).toMatchObject({ signed_in: true, org_id: t.org.id });
    expect(s.scopes.sort()).toEqual([...ROLE_SCOPES.member].sort());
    // The row holds no token in clear: every issued token's text is absent from it.
    const [row] = await t.s.handle.query<Record<string, unknown>>("SELECT * FROM console_sessions WHERE secret_hash = $1", [hashSecret(jar.cookies.get("commitops_console")!)]);
    expect(row).toBeDefined();
    expect(JSON.stringify(row)).not.toMatch(/coa_|cor_/);
  });

  test("the return path is always a console path (no open redirect)", async () => {
    const user = await makeUser(t, [{ orgId: t.org.id, role: "viewer" }]);
    for (const bad of ["https://evil.example/app/", "//evil.example/app/", "/app/../oauth/token", "/\\evil.example", "/app/api/beta/v1/org/x", "/docs"]) {
      const { location } = await consoleSignIn(t, user, t.org.id, bad);
      expect(location).toBe("/app/");
    }
  });

  test("a callback not started in this browser, or replayed, makes no session", async () => {
    const user = await makeUser(t, [{ orgId: t.org.id, role: "admin" }]);
    const jar = new Jar();
    const start = await send(t, "GET", "/app/login", {});
    const state = new URL(start.headers.get("location")!, "http://localhost").searchParams.get("state")!;
    // The attacker's own code, delivered to a victim browser that never started this sign-in.
    const victim = await send(t, "GET", `/app/callback?code=coc_x&state=${state}`, { headers: jar.header() });
    expect(victim.status).toBe(400);
    expect(victim.headers.getSetCookie().some((c) => c.startsWith("commitops_console=") && !c.includes("Max-Age=0"))).toBe(false);
    const { jar: signedIn } = await consoleSignIn(t, user, t.org.id);
    expect((await sessionOf(t, signedIn)).signed_in).toBe(true);
  });

  test("state changes need the session's CSRF token and a same-origin request; nothing is written without them", async () => {
    const user = await makeUser(t, [{ orgId: t.org.id, role: "admin" }]);
    const { jar } = await consoleSignIn(t, user, t.org.id);
    const { csrf_token } = await sessionOf(t, jar);
    const path = `/app/api/beta/v1/org/${t.org.id}/api-keys`;
    const body = JSON.stringify({ name: "from the console" });
    const json = { "content-type": "application/json", ...jar.header() };
    const missing = await send(t, "POST", path, { headers: json, body });
    expect(missing.status).toBe(403);
    expect((await missing.json()).code).toBe("csrf_failed");
    const wrong = await send(t, "POST", path, { headers: { ...json, "x-csrf-token": "0".repeat(64) }, body });
    expect(wrong.status).toBe(403);
    const crossSite = await send(t, "POST", path, { headers: { ...json, "x-csrf-token": csrf_token, origin: "https://evil.example" }, body });
    expect(crossSite.status).toBe(403);
    const keysBefore = await t.s.handle.query<{ n: number }>("SELECT count(*)::int AS n FROM api_keys WHERE org_id = $1 AND name = 'from the console'", [t.org.id]);
    expect(keysBefore[0]!.n).toBe(0);
    const ok = await send(t, "POST", path, { headers: { ...json, "x-csrf-token": csrf_token, origin: "http://localhost" }, body });
    expect(ok.status).toBe(200);
    expect((await ok.json()).api_key).toMatch(/^co_/);
    // Reads need no token; other paths than the Beta API are not reachable through the console.
    expect((await send(t, "GET", `/app/api/beta/v1/org/${t.org.id}`, { headers: jar.header() })).status).toBe(200);
    expect((await send(t, "POST", "/app/api/oauth/token", { headers: { ...json, "x-csrf-token": csrf_token }, body: "{}" })).status).toBe(404);
  });

  test("an expired access token is refreshed once for concurrent requests; the grant survives", async () => {
    const user = await makeUser(t, [{ orgId: t.org.id, role: "viewer" }]);
    const { jar } = await consoleSignIn(t, user, t.org.id);
    const hash = hashSecret(jar.cookies.get("commitops_console")!);
    await t.s.handle.query("UPDATE console_sessions SET access_expires_at = now() - interval '1 minute' WHERE secret_hash = $1", [hash]);
    const answers = await Promise.all(Array.from({ length: 6 }, () => send(t, "GET", `/app/api/beta/v1/org/${t.org.id}`, { headers: jar.header() })));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const [u] = await t.s.handle.query<{ id: string }>("SELECT id FROM users WHERE email = $1", [user.email]);
    const refreshes = await t.s.handle.query<{ used: number; live: number; revoked: number }>(
      "SELECT count(*) FILTER (WHERE used_at IS NOT NULL)::int AS used, count(*) FILTER (WHERE used_at IS NULL AND revoked_at IS NULL)::int AS live, count(*) FILTER (WHERE revoked_at IS NOT NULL)::int AS revoked FROM oauth_tokens WHERE kind = 'refresh' AND user_id = $1",
      [u!.id],
    );
    // One refresh token consumed, one new one live, none revoked (a second use would revoke the family).
    expect(refreshes[0]).toEqual({ used: 1, live: 1, revoked: 0 });
    const [after] = await t.s.handle.query<{ expired: boolean }>("SELECT access_expires_at < now() AS expired FROM console_sessions WHERE secret_hash = $1", [hash]);
    expect(after!.expired).toBe(false);
  });

  test("a member removed from the organization is signed out of the console at the next request", async () => {
    const user = await makeUser(t, [{ orgId: t.org.id, role: "viewer" }]);
    const { jar } = await consoleSignIn(t, user, t.org.id);
    expect((await send(t, "GET", `/app/api/beta/v1/org/${t.org.id}`, { headers: jar.header() })).status).toBe(200);
    const [u] = await t.s.handle.query<{ id: string }>("SELECT id FROM users WHERE email = $1", [user.email]);
    await t.s.handle.query("DELETE FROM memberships WHERE org_id = $1 AND user_id = $2", [t.org.id, u!.id]);
    const r = await send(t, "GET", `/app/api/beta/v1/org/${t.org.id}`, { headers: jar.header() });
    expect(r.status).toBe(401);
    expect((await r.json()).code).toBe("session_expired");
    expect((await sessionOf(t, jar)).signed_in).toBe(false);
  });

  test("sign-out revokes the console's grant and ends the login, so the next sign-in asks for the password", async () => {
    const user = await makeUser(t, [{ orgId: t.org.id, role: "admin" }]);
    const { jar } = await consoleSignIn(t, user, t.org.id);
    const { csrf_token } = await sessionOf(t, jar);
    const forged = await send(t, "POST", "/app/logout", { headers: jar.header() });
    expect(forged.status).toBe(403);
    const out = await send(t, "POST", "/app/logout", { headers: { ...jar.header(), "x-csrf-token": csrf_token } });
    expect(out.status).toBe(200);
    jar.store(out);
    expect(jar.cookies.has("commitops_console")).toBe(false);
    expect(jar.cookies.has("commitops_login")).toBe(false);
    const [u] = await t.s.handle.query<{ id: string }>("SELECT id FROM users WHERE email = $1", [user.email]);
    const live = await t.s.handle.query<{ n: number }>("SELECT count(*)::int AS n FROM oauth_tokens WHERE user_id = $1 AND revoked_at IS NULL AND client_id = 'commitops-console'", [u!.id]);
    expect(live[0]!.n).toBe(0);
    const again = await send(t, "GET", "/app/login", { headers: jar.header() });
    jar.store(again);
    const page = await send(t, "GET", again.headers.get("location")!, { headers: jar.header() });
    expect(await page.text()).toContain('id="password"');
  });

  test("the shell: strict CSP, never framed, no inline script; / sends a browser to the console and an API client a 404", async () => {
    const shell = await send(t, "GET", "/app/explorer", {});
    expect(shell.status).toBe(200);
    const csp = shell.headers.get("content-security-policy")!;
    for (const d of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"]) expect(csp).toContain(d);
    expect(csp).not.toContain("unsafe-inline");
    expect(shell.headers.get("x-frame-options")).toBe("DENY");
    expect(shell.headers.get("cache-control")).toBe("no-store");
    const html = await shell.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\bstyle=/);
    expect(html).not.toMatch(/https?:\/\//);
    const browser = await send(t, "GET", "/", { headers: { accept: "text/html,application/xhtml+xml" } });
    expect(browser.status).toBe(302);
    expect(browser.headers.get("location")).toBe("/app/");
    const client = await send(t, "GET", "/", { headers: { accept: "application/json" } });
    expect(client.status).toBe(404);
    expect((await client.json()).code).toBeDefined();
  });

  test("assets: content-hashed, cached a year, brotli or gzip as accepted, 304 on a matching ETag", async () => {
    const html = await (await send(t, "GET", "/app/", {})).text();
    const script = /src="(\/app\/assets\/main-[a-z0-9]+\.js)"/.exec(html)![1]!;
    const plain = await send(t, "GET", script, {});
    expect(plain.status).toBe(200);
    expect(plain.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(plain.headers.get("content-type")).toContain("javascript");
    const bytes = new Uint8Array(await plain.arrayBuffer());
    const br = await send(t, "GET", script, { headers: { "accept-encoding": "gzip, deflate, br" } });
    expect(br.headers.get("content-encoding")).toBe("br");
    const brBytes = new Uint8Array(await br.arrayBuffer());
    expect(brBytes.length).toBeLessThan(bytes.length / 2);
    expect(new Uint8Array(brotliDecompressSync(brBytes))).toEqual(bytes);
    const gz = await send(t, "GET", script, { headers: { "accept-encoding": "gzip" } });
    expect(gz.headers.get("content-encoding")).toBe("gzip");
    expect(new Uint8Array(gunzipSync(new Uint8Array(await gz.arrayBuffer())))).toEqual(bytes);
    const again = await send(t, "GET", script, { headers: { "if-none-match": plain.headers.get("etag")! } });
    expect(again.status).toBe(304);
    expect((await send(t, "GET", "/app/assets/main-00000000.js", {})).status).toBe(404);
  });
});

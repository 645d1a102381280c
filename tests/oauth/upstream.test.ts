// Upstream sign-in against a real OpenID Provider (oidc-provider) started on a random loopback port.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createServer, type Server } from "node:http";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { createOrganization } from "../../lib/orgs/service.ts";
import { BASE, FORM, Jar, REDIRECT, REST_RESOURCE, authorizeQuery, bearer, csrfFrom, form, makeUser, pkce, registerClient, send, token } from "./helpers.ts";

const CLIENT_ID = "commitops-test";
const CLIENT_SECRET = "upstream-client-secret-for-tests";

// oidc-provider prints development-mode notices (in-memory adapter, dev keys, runtime): expected
// here, so they are filtered while this file's provider runs.
const originalConsole = { warn: console.warn, info: console.info };
function quietProvider(on: boolean) {
  for (const level of ["warn", "info"] as const) {
    console[level] = on
      ? (...args: unknown[]) => {
          if (typeof args[0] === "string" && args[0].includes("oidc-provider ")) return;
          originalConsole[level].apply(console, args);
        }
      : originalConsole[level];
  }
}

async function startProvider(): Promise<{ issuer: string; server: Server }> {
  const { default: Provider } = await import("oidc-provider");
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const issuer = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const provider = new Provider(issuer, {
    clients: [{ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [`${BASE}/oauth/upstream/callback`], grant_types: ["authorization_code"], response_types: ["code"] }],
    // The login name typed at the provider is the account's email; "unverified…" addresses are not verified.
    async findAccount(_ctx: unknown, id: string) {
      return { accountId: id, async claims() { return { sub: id, email: id, email_verified: !id.startsWith("unverified") }; } };
    },
    claims: { openid: ["sub"], email: ["email", "email_verified"] },
    conformIdTokenClaims: false,
    ttl: { Interaction: 600, Session: 600, Grant: 600, AccessToken: 600, AuthorizationCode: 60, IdToken: 600 } as any,
  });
  server.on("request", provider.callback());
  return { issuer, server };
}

/** Follows the provider's redirects and dev login/consent forms (its own cookie jar) until it redirects back to us. */
async function signInAtProvider(authUrl: string, login: string): Promise<URL> {
  const jar = new Jar();
  let url = authUrl;
  let method = "GET";
  let body: string | undefined;
  for (let hop = 0; hop < 12; hop++) {
    const r = await fetch(url, { method, body, redirect: "manual", headers: { ...jar.header(), ...(body ? FORM : {}) } });
    jar.store(r);
    const loc = r.headers.get("location");
    if (loc) {
      const next = new URL(loc, url);
      if (next.href.startsWith(`${BASE}/oauth/upstream/callback`)) return next;
      url = next.href;
      method = "GET";
      body = undefined;
      continue;
    }
    const html = await r.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    if (!action) throw new Error(`provider page without form (${r.status}): ${html.slice(0, 300)}`);
    url = new URL(action, url).href;
    method = "POST";
    body = html.includes('name="prompt" value="login"') ? form({ prompt: "login", login, password: "anything" }) : form({ prompt: "consent" });
  }
  throw new Error("too many hops at the provider");
}

describeEachDb("oauth: upstream OpenID Connect sign-in", (driver) => {
  const config: Record<string, string> = {};
  let op: { issuer: string; server: Server } | undefined;
  beforeAll(async () => {
    quietProvider(true);
    op = await startProvider();
    Object.assign(config, { oidcIssuer: op.issuer, oidcClientId: CLIENT_ID, oidcClientSecret: CLIENT_SECRET, oidcName: "Test IdP" });
  });
  afterAll(() => {
    op?.server.close();
    quietProvider(false);
  });
  const t = useTestApp(driver, { config });
  let org: { id: string };
  beforeAll(async () => {
    org = await createOrganization(t.s.db, { name: "SSO org" });
  });

  /** Our authorize page → "Sign in with Test IdP" → the provider's authorization URL. */
  async function startUpstream(jar: Jar, clientId: string, challenge: string) {
    const q = authorizeQuery({ client_id: clientId, code_challenge: challenge, resource: REST_RESOURCE, state: "sso-state" });
    const page = await send(t, "GET", `/oauth/authorize?${q}`, { headers: jar.header() });
    jar.store(page);
    const html = await page.text();
    expect(html).toContain("Sign in with Test IdP");
    const r = await send(t, "POST", "/oauth/authorize", { headers: { ...FORM, ...jar.header() }, body: `${q}&${form({ action: "upstream", csrf_token: csrfFrom(html) })}` });
    expect(r.status).toBe(303);
    const loc = new URL(r.headers.get("location")!);
    expect(loc.origin).toBe(op!.issuer);
    expect(loc.searchParams.get("code_challenge_method")).toBe("S256");
    expect(loc.searchParams.get("nonce")).toBeTruthy();
    return loc.href;
  }

  test("a verified email links to the existing account: consent, code, working token", async () => {
    const user = await makeUser(t, [{ orgId: org.id, role: "member" }]);
    const client = await registerClient(t);
    const { verifier, challenge } = pkce();
    const jar = new Jar();
    const callback = await signInAtProvider(await startUpstream(jar, client.client_id, challenge), user.email.toUpperCase());
    const cb = await send(t, "GET", callback.href, { headers: jar.header() });
    expect(cb.status).toBe(303);
    jar.store(cb);
    expect(cb.headers.get("location")).toStartWith("/oauth/authorize?");
    const consent = await send(t, "GET", cb.headers.get("location")!, { headers: jar.header() });
    expect(consent.status).toBe(200);
    const html = await consent.text();
    expect(html).toContain(`Signed in as <strong>${user.email}</strong>`);
    const q = new URL(cb.headers.get("location")!, BASE).search.slice(1);
    const approve = await send(t, "POST", "/oauth/authorize", { headers: { ...FORM, ...jar.header() }, body: `${q}&${form({ action: "approve", csrf_token: csrfFrom(html), org_id: org.id })}` });
    expect(approve.status).toBe(303);
    const back = new URL(approve.headers.get("location")!);
    expect(back.searchParams.get("state")).toBe("sso-state");
    const tok = await token(t, { grant_type: "authorization_code", client_id: client.client_id, code: back.searchParams.get("code")!, redirect_uri: REDIRECT, code_verifier: verifier });
    expect(tok.status).toBe(200);
    expect((await send(t, "GET", `/beta/v1/org/${org.id}`, { headers: bearer(tok.body.access_token) })).status).toBe(200);
    const sessions = await t.s.handle.query<{ method: string }>("SELECT method FROM oauth_sessions WHERE user_id = $1", [user.id]);
    expect(sessions.map((s) => s.method)).toEqual(["oidc"]);
  });

  test("no account with that email → error page, no account created, no session", async () => {
    const client = await registerClient(t);
    const jar = new Jar();
    const callback = await signInAtProvider(await startUpstream(jar, client.client_id, pkce().challenge), "stranger@example.org");
    const cb = await send(t, "GET", callback.href, { headers: jar.header() });
    expect(cb.status).toBe(403);
    expect(cb.headers.get("location")).toBeNull();
    expect(await cb.text()).toContain("No commitops account uses the email stranger@example.org");
    expect((await t.s.handle.query("SELECT id FROM users WHERE email = 'stranger@example.org'")).length).toBe(0);
  });

  test("an unverified email is not linked", async () => {
    const user = await makeUser(t, [{ orgId: org.id, role: "member" }]);
    await t.s.handle.query("UPDATE users SET email = $1 WHERE id = $2", [`unverified-${user.email}`, user.id]);
    const client = await registerClient(t);
    const jar = new Jar();
    const callback = await signInAtProvider(await startUpstream(jar, client.client_id, pkce().challenge), `unverified-${user.email}`);
    const cb = await send(t, "GET", callback.href, { headers: jar.header() });
    expect(cb.status).toBe(403);
    expect(await cb.text()).toContain("did not confirm a verified email address");
    expect((await t.s.handle.query("SELECT id FROM oauth_sessions WHERE user_id = $1", [user.id])).length).toBe(0);
  });

  test("the callback only completes in the browser that started it, and only once", async () => {
    const user = await makeUser(t, [{ orgId: org.id, role: "member" }]);
    const client = await registerClient(t);
    const jar = new Jar();
    const callback = await signInAtProvider(await startUpstream(jar, client.client_id, pkce().challenge), user.email);
    const otherBrowser = await send(t, "GET", callback.href, { headers: { cookie: "commitops_login=cos_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" } });
    expect(otherBrowser.status).toBe(403);
    expect(await otherBrowser.text()).toContain("started in another browser");
    // The state was consumed by that attempt: replaying it, even from the right browser, fails.
    const replay = await send(t, "GET", callback.href, { headers: jar.header() });
    expect(replay.status).toBe(400);
    expect(await replay.text()).toContain("already used");
    const forged = await send(t, "GET", `${BASE}/oauth/upstream/callback?code=x&state=forged`, { headers: jar.header() });
    expect(forged.status).toBe(400);
  });
});

// ID token checks of the upstream sign-in, against a deliberately misbehaving provider: a tiny
// OpenID provider on a random loopback port whose token endpoint returns whatever ID token the
// test chooses (wrong key, audience, issuer, expiry, nonce, email_verified).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SignJWT, exportJWK, generateKeyPair } from "jose";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { createOrganization } from "../../lib/orgs/service.ts";
import { BASE, FORM, Jar, authorizeQuery, csrfFrom, form, makeUser, pkce, registerClient, send } from "./helpers.ts";

const CLIENT_ID = "commitops-idtoken-test";

describeEachDb("oauth: upstream ID token verification", (driver) => {
  const config: Record<string, string> = {};
  let server: ReturnType<typeof Bun.serve> | undefined;
  let issuer = "";
  let nextIdToken: () => Promise<string> = async () => "";
  let goodKey: CryptoKey;
  let rogueKey: CryptoKey;
  let tokenRequests: { authorization: string | null; body: URLSearchParams }[] = [];

  beforeAll(async () => {
    const good = await generateKeyPair("RS256");
    const rogue = await generateKeyPair("RS256");
    goodKey = good.privateKey;
    rogueKey = rogue.privateKey;
    const jwk = { ...(await exportJWK(good.publicKey)), kid: "k1", alg: "RS256", use: "sig" };
    server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: async (req) => {
        const path = new URL(req.url).pathname;
        if (path === "/.well-known/openid-configuration")
          return Response.json({ issuer, authorization_endpoint: `${issuer}/auth`, token_endpoint: `${issuer}/token`, jwks_uri: `${issuer}/jwks` });
        if (path === "/jwks") return Response.json({ keys: [jwk] });
        if (path === "/token" && req.method === "POST") {
          tokenRequests.push({ authorization: req.headers.get("authorization"), body: new URLSearchParams(await req.text()) });
          return Response.json({ access_token: "upstream-at", token_type: "Bearer", expires_in: 60, id_token: await nextIdToken() });
        }
        return new Response("not found", { status: 404 });
      },
    });
    issuer = `http://127.0.0.1:${server.port}`;
    Object.assign(config, { oidcIssuer: issuer, oidcClientId: CLIENT_ID, oidcClientSecret: "s3cret-value", oidcName: "Rogue IdP" });
  });
  afterAll(() => server?.stop(true));
  const t = useTestApp(driver, { config });
  let user: { id: string; email: string };
  beforeAll(async () => {
    const org = await createOrganization(t.s.db, { name: "IdToken org" });
    user = await makeUser(t, [{ orgId: org.id, role: "member" }]);
  });

  /** Starts an upstream sign-in and "returns" from the provider with a code; the provider then answers with `build`'s ID token. */
  async function callbackWith(build: (nonce: string) => Promise<string>) {
    const client = await registerClient(t);
    const q = authorizeQuery({ client_id: client.client_id, code_challenge: pkce().challenge });
    const jar = new Jar();
    const page = await send(t, "GET", `/oauth/authorize?${q}`);
    jar.store(page);
    const start = await send(t, "POST", "/oauth/authorize", { headers: { ...FORM, ...jar.header() }, body: `${q}&${form({ action: "upstream", csrf_token: csrfFrom(await page.text()) })}` });
    expect(start.status).toBe(303);
    const auth = new URL(start.headers.get("location")!);
    const nonce = auth.searchParams.get("nonce")!;
    nextIdToken = () => build(nonce);
    tokenRequests = [];
    const cb = await send(t, "GET", `${BASE}/oauth/upstream/callback?${form({ code: "upstream-code", state: auth.searchParams.get("state")! })}`, { headers: jar.header() });
    return { cb, auth };
  }

  const sign = (claims: Record<string, unknown>, o: { key?: CryptoKey; exp?: number } = {}) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: "RS256", kid: "k1" })
      .setIssuedAt()
      .setExpirationTime(o.exp ?? Math.floor(Date.now() / 1000) + 300)
      .sign(o.key ?? goodKey);

  test("a well-formed ID token signs the user in; the code is redeemed with PKCE and client credentials", async () => {
    const { cb, auth } = await callbackWith((nonce) => sign({ iss: issuer, aud: CLIENT_ID, sub: "u1", email: user.email, email_verified: true, nonce }));
    expect(cb.status).toBe(303);
    expect(cb.headers.get("location")).toStartWith("/oauth/authorize?");
    expect(auth.searchParams.get("redirect_uri")).toBe(`${BASE}/oauth/upstream/callback`);
    expect(tokenRequests.length).toBe(1);
    expect(tokenRequests[0]!.authorization).toStartWith("Basic ");
    expect(tokenRequests[0]!.body.get("code_verifier")).toBeTruthy();
  });

  // The real user's email throughout, so only the named defect stands between the token and a sign-in.
  const bad: [string, (nonce: string, email: string) => Promise<string>, string][] = [
    ["signed with a key not in the issuer's JWKS", (nonce, email) => sign({ iss: issuer, aud: CLIENT_ID, sub: "u1", email, email_verified: true, nonce }, { key: rogueKey }), "ID token"],
    ["for another audience", (nonce, email) => sign({ iss: issuer, aud: "someone-else", sub: "u1", email, email_verified: true, nonce }), "ID token"],
    ["from another issuer", (nonce, email) => sign({ iss: "https://evil.example.com", aud: CLIENT_ID, sub: "u1", email, email_verified: true, nonce }), "ID token"],
    ["expired", (nonce, email) => sign({ iss: issuer, aud: CLIENT_ID, sub: "u1", email, email_verified: true, nonce }, { exp: Math.floor(Date.now() / 1000) - 3600 }), "ID token"],
    ["with another nonce", (_n, email) => sign({ iss: issuer, aud: CLIENT_ID, sub: "u1", email, email_verified: true, nonce: "not-the-nonce" }), "nonce"],
    ["unsigned (alg none)", async (nonce, email) =>
        `${Buffer.from('{"alg":"none"}').toString("base64url")}.${Buffer.from(JSON.stringify({ iss: issuer, aud: CLIENT_ID, sub: "u1", email, email_verified: true, nonce, exp: Math.floor(Date.now() / 1000) + 300 })).toString("base64url")}.`, "ID token"],
  ];
  for (const [name, build, message] of bad) {
    test(`an ID token ${name} is refused, no session`, async () => {
      const { cb } = await callbackWith((nonce) => build(nonce, user.email));
      expect(cb.status).toBe(502);
      expect(cb.headers.get("set-cookie")).toBeNull();
      expect(await cb.text()).toContain(message);
    });
  }

  test("email_verified must be exactly true", async () => {
    for (const v of [false, "true", undefined]) {
      const { cb } = await callbackWith((nonce) => sign({ iss: issuer, aud: CLIENT_ID, sub: "u1", email: user.email, email_verified: v, nonce }));
      expect(cb.status).toBe(403);
      expect(await cb.text()).toContain("verified email");
    }
    expect((await t.s.handle.query("SELECT id FROM oauth_sessions WHERE user_id = $1", [user.id])).length).toBe(1); // only the one of the first test
  });
});

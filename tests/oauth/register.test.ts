// RFC 7591 registration: redirect URIs must be canonical absolute URLs, since the authorization
// request matches them as exact strings.
import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { authorizeQuery, pkce, send } from "./helpers.ts";

const ACCEPTED = [
  "https://app.example.com/callback",
  "http://127.0.0.1:8765/cb",
  "http://localhost:3000/cb",
  "http://[::1]:9000/cb",
  "https://app.example.com/",
  "https://app.example.com/cb?tenant=acme",
  "https://10.0.0.7:8443/oauth/cb",
];

const REFUSED: [string, string][] = [
  ["https:evil.example", "no // (the parser invents them)"],
  ["https:/evil.example/cb", "one slash"],
  ["https:///evil", "empty authority (the parser takes the path as host)"],
  ["https://*.example.com/cb", "wildcard host"],
  ["https://app.example.com/*", "wildcard path"],
  ["https://app.example.com/cb*", "star in the path"],
  ["https://app.example.com/cb\n", "trailing newline"],
  ["https://app.example.com/c\r\nb", "CRLF inside"],
  [" https://app.example.com/cb", "leading space"],
  ["https://app.example.com/c b", "space inside"],
  ["https://app.example.com/cb\t", "tab"],
  ["https://app.example.com/\u0000cb", "NUL"],
  ["https://app.example.com/\u007fcb", "DEL"],
  ["https://app.example.com/\u0085cb", "C1 control"],
  ["https://app.example.com/cb\u2028", "line separator"],
  ["https://app.example.com/cb\u00a0", "no-break space"],
  ["https://APP.example.com/cb", "upper-case host"],
  ["HTTPS://app.example.com/cb", "upper-case scheme"],
  ["https://app.example.com:443/cb", "default port spelled out"],
  ["https://app.example.com", "no path (canonical form ends in /)"],
  ["https://app.example.com/a/../cb", "dot segments"],
  ["https://app.example.com\\cb", "backslash"],
  ["https://app.example.com/caf\u00e9", "raw non-ASCII path"],
  ["https://b\u00fccher.example/cb", "raw IDN host"],
  ["http://127.1:8765/cb", "shortened IPv4 loopback"],
  ["http://2130706433/cb", "numeric IPv4 loopback"],
  ["https://app.example.com/cb#", "empty fragment"],
  ["https://app.example.com/cb#x", "fragment"],
  ["https://user@app.example.com/cb", "user name"],
  ["https://user:pw@app.example.com/cb", "credentials"],
  ["http://app.example.com/cb", "http on a public host"],
  ["http://localhost.evil.example/cb", "http on a look-alike of localhost"],
  ["javascript:alert(1)", "javascript scheme"],
  ["data:text/html,hi", "data scheme"],
  ["myapp://cb", "custom scheme"],
  ["//app.example.com/cb", "scheme-relative"],
  ["/cb", "relative"],
  [`https://app.example.com/${"a".repeat(2001)}`, "over 2000 characters"],
];

describeEachDb("oauth: registered redirect URIs are canonical", (driver) => {
  const t = useTestApp(driver);

  const register = (redirectUris: unknown[]) =>
    send(t, "POST", "/oauth/register", { headers: { "content-type": "application/json" }, body: JSON.stringify({ client_name: "Redirect URI test", redirect_uris: redirectUris }) });

  test("canonical https and loopback http URIs are accepted as sent", async () => {
    for (const uri of ACCEPTED) {
      const r = await register([uri]);
      expect(r.status, uri).toBe(201);
      expect((await r.json()).redirect_uris).toEqual([uri]);
    }
  });

  test("non-canonical, wildcard, whitespace/control, credential, fragment and over-long URIs → 400 invalid_redirect_uri", async () => {
    for (const [uri, why] of REFUSED) {
      const r = await register([uri]);
      expect(r.status, why).toBe(400);
      const body = await r.json();
      expect(body.error, why).toBe("invalid_redirect_uri");
      expect(typeof body.error_description, why).toBe("string");
    }
  });

  test("the answer names the canonical form to register instead", async () => {
    const body = await (await register(["https://APP.example.com:443/cb"])).json();
    expect(body.error_description).toContain('"https://app.example.com/cb"');
  });

  test("one refused URI refuses the whole registration: no client is stored", async () => {
    const r = await register(["https://app.example.com/callback", "https://*.example.com/cb"]);
    expect(r.status).toBe(400);
    const rows = await t.s.handle.query("SELECT id FROM oauth_clients WHERE 'https://*.example.com/cb' = ANY(redirect_uris)");
    expect(rows.length).toBe(0);
  });

  test("authorize still matches the registered URI exactly; any other spelling is an error page", async () => {
    const registered = "https://app.example.com/callback";
    const r = await register([registered]);
    const { client_id } = await r.json();
    const { challenge } = pkce();
    const page = await send(t, "GET", `/oauth/authorize?${authorizeQuery({ client_id, code_challenge: challenge, redirect_uri: registered })}`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("Sign in to commitops");
    for (const other of ["https://app.example.com/callback/", "https://APP.example.com/callback", "https://app.example.com:443/callback", "https://app.example.com/callback?x=1", "https:app.example.com/callback", "https://app.example.com/Callback"]) {
      const res = await send(t, "GET", `/oauth/authorize?${authorizeQuery({ client_id, code_challenge: challenge, redirect_uri: other })}`);
      expect(res.status, other).toBe(400);
      expect(res.headers.get("location")).toBeNull();
      expect(await res.text()).toContain("Cannot continue the sign-in");
    }
  });
});

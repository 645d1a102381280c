// test:solo — drives Chromium: three browsers on two cores made its waits race (a CI run lost a PATCH behind a repaint); it runs with the machine to itself, as it was written for.
// The login and consent pages driven in headless Chromium (Debian's /usr/bin/chromium; CI installs
// it with scripts/ci-install-chromium.sh). Skipped, with a message, only when it is absent.
import { expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { useServedTestApp } from "../helpers/chromium.ts";
import { describeEachDb } from "../helpers/db.ts";
import { createOrganization } from "../../lib/orgs/service.ts";
import { makeUser, pkce } from "./helpers.ts";

const ARTIFACTS = join(import.meta.dir, "..", "artifacts");
const CLIENT_REDIRECT = "http://127.0.0.1:9/oauth-client/callback"; // never reached: intercepted in the browser

describeEachDb("oauth: headless browser authorization", (driver) => {
  // The server must listen before the app exists (its URL is the issuer): bind first, serve the app once created.
  const { t, hasChromium, baseUrl, browser } = useServedTestApp(driver, "oauth browser test");

  test.skipIf(!hasChromium)(
    "register → authorize → login form → organization + consent → redirect with code → token → API call → sign-out revokes",
    async () => {
      const base = baseUrl();
      const orgA = await createOrganization(t.s.db, { name: "Browser Org A" });
      const orgB = await createOrganization(t.s.db, { name: "Browser Org B" });
      const user = await makeUser(t, [{ orgId: orgA.id, role: "viewer" }, { orgId: orgB.id, role: "admin" }]);

      const reg = await fetch(`${base}/oauth/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ client_name: "Browser Test Client", redirect_uris: [CLIENT_REDIRECT] }),
      });
      expect(reg.status).toBe(201);
      const { client_id } = await reg.json();
      const { verifier, challenge } = pkce();
      const authUrl = `${base}/oauth/authorize?${new URLSearchParams({
        response_type: "code",
        client_id,
        redirect_uri: CLIENT_REDIRECT,
        code_challenge: challenge,
        code_challenge_method: "S256",
        state: "browser-state",
        resource: `${base}/beta/v1`,
        scope: "reports:read estimates:read estimates:write",
      })}`;

      const context = await browser().newContext();
      const page = await context.newPage();
      let redirectedTo: string | null = null;
      await page.route(`${CLIENT_REDIRECT}**`, (route) => {
        redirectedTo = route.request().url();
        return route.fulfill({ status: 200, contentType: "text/html", body: "<h1>Client received the code</h1>" });
      });
      try {
        await page.goto(authUrl);
        expect(await page.title()).toContain("Sign in");
        expect(await page.textContent("main")).toContain("Browser Test Client");

        // A wrong password first: the page says so and stays on the form.
        await page.fill("#email", user.email);
        await page.fill("#password", "not the password");
        await page.click("#sign-in");
        expect(await page.textContent(".error")).toContain("The email or password is incorrect.");
        // The failure is counted against the browser's real address (login throttling key).
        const failed = await t.s.handle.query<{ ip: string }>("SELECT ip FROM oauth_login_failures WHERE email = $1", [user.email.toLowerCase()]);
        expect(failed.map((f) => f.ip)).toEqual(["127.0.0.1"]);

        await page.fill("#password", user.password);
        await page.click("#sign-in");
        await page.waitForSelector("#approve");
        expect(await page.title()).toContain("Authorize access");
        const cookies = await context.cookies(base);
        expect(cookies.find((c) => c.name === "commitops_login")?.httpOnly).toBe(true);
        expect(cookies.find((c) => c.name === "commitops_login")?.sameSite).toBe("Lax");

        await page.selectOption("#org_id", orgB.id);
        mkdirSync(ARTIFACTS, { recursive: true });
        await page.screenshot({ path: join(ARTIFACTS, `oauth-consent-${driver}.png`), fullPage: true });
        await page.click("#approve");
        await page.waitForURL(`${CLIENT_REDIRECT}**`);

        expect(redirectedTo).not.toBeNull();
        const back = new URL(redirectedTo!);
        expect(back.searchParams.get("state")).toBe("browser-state");
        expect(back.searchParams.get("iss")).toBe(base);
        const code = back.searchParams.get("code")!;
        expect(code).toMatch(/^coc_/);

        const tok = await fetch(`${base}/oauth/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ grant_type: "authorization_code", client_id, code, redirect_uri: CLIENT_REDIRECT, code_verifier: verifier }),
        });
        expect(tok.status).toBe(200);
        const tokens = await tok.json();
        expect(tokens.scope.split(" ").sort()).toEqual(["estimates:read", "estimates:write", "reports:read"]);
        const api = await fetch(`${base}/beta/v1/org/${orgB.id}`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
        expect(api.status).toBe(200);
        expect((await api.json()).name).toBe("Browser Org B");
        expect((await fetch(`${base}/beta/v1/org/${orgA.id}`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).status).toBe(403);
        // A successful sign-in clears the failures of its (email, address).
        const failures = await t.s.handle.query<{ ip: string }>("SELECT ip FROM oauth_login_failures WHERE email = $1", [user.email.toLowerCase()]);
        expect(failures).toEqual([]);

        // Signing out in the browser revokes the token obtained through this sign-in.
        await page.goto(`${base}/oauth/logout`);
        await page.click("#sign-out");
        await page.waitForSelector("text=You are signed out");
        await page.screenshot({ path: join(ARTIFACTS, `oauth-signed-out-${driver}.png`) });
        expect((await fetch(`${base}/beta/v1/org/${orgB.id}`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).status).toBe(401);
      } finally {
        await context.close();
      }
    },
    60_000,
  );
});

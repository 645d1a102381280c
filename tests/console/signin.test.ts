// test:solo — drives Chromium: three browsers on two cores made its waits race (a CI run lost a PATCH behind a repaint); it runs with the machine to itself, as it was written for.
// Sign-in, organization choice, roles and sign-out, in Chromium against the real server.
import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { consoleOrg, expectCleanPage, newPage, screenshot, signIn, useConsole } from "./harness.ts";
import { createOrganization, addMember, findUserByEmail } from "../../lib/orgs/service.ts";

describeEachDb("console: sign-in and roles", (driver) => {
  const { t, hasChromium, baseUrl, browser } = useConsole(driver, "console sign-in");

  test.skipIf(!hasChromium)("a browser opening / lands in the console's sign-in; the session cookie is HttpOnly and SameSite=Lax; sign-out ends it", async () => {
    const base = baseUrl();
    const org = await consoleOrg(t);
    const { context, page, problems } = await newPage(browser());
    try {
      await page.goto(`${base}/`);
      await page.waitForURL((u) => u.pathname === "/oauth/authorize");
      await signIn(page, base, org.people.admin, org.orgId, "/app/reports?year=2026", problems);
      // Back on the page asked for, with its query.
      expect(new URL(page.url()).pathname + new URL(page.url()).search).toBe("/app/reports?year=2026");
      const cookies = await context.cookies(base);
      const session = cookies.find((c) => c.name === "commitops_console")!;
      expect(session.httpOnly).toBe(true);
      expect(session.sameSite).toBe("Lax");
      // No token reaches the page's storage.
      expect(await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }))).toBe("{}{}");
      expect(await page.textContent("#org-name")).toBe(org.name);
      await expectCleanPage(page, problems);

      await page.click("#sign-out");
      await page.waitForSelector("#email");
      // The old cookie no longer opens anything.
      const after = await fetch(`${base}/app/session`, { headers: { cookie: `commitops_console=${session.value}` } });
      expect(await after.json()).toEqual({ signed_in: false });
      const api = await fetch(`${base}/app/api/beta/v1/org/${org.orgId}`, { headers: { cookie: `commitops_console=${session.value}` } });
      expect(api.status).toBe(401);
      expect((await api.json()).code).toBe("session_expired");
    } finally {
      await context.close();
    }
  }, 60_000);

  test.skipIf(!hasChromium)("each role sees only what it may do; a viewer calling an admin route through the console is refused by the server", async () => {
    const base = baseUrl();
    const org = await consoleOrg(t);
    const expected = {
      admin: ["Overview", "Reports", "Cost explorer", "Plans", "Purchases", "Estimates", "Budgets", "Notifications", "Connections", "Support", "Settings"],
      member: ["Overview", "Reports", "Cost explorer", "Plans", "Purchases", "Estimates", "Budgets", "Notifications", "Support"],
      viewer: ["Overview", "Reports", "Cost explorer", "Plans", "Estimates", "Budgets", "Notifications", "Support"],
    } as const;
    for (const role of ["admin", "member", "viewer"] as const) {
      const { context, page } = await newPage(browser());
      try {
        await signIn(page, base, org.people[role], org.orgId);
        expect(await page.$$eval("nav.side a", (as) => as.map((a) => a.textContent))).toEqual([...expected[role]]);
        await screenshot(page, `signin-${role}-${driver}`);
        if (role === "viewer") {
          // Typed into the address bar: the page says the role does not include it.
          await page.goto(`${base}/app/settings`);
          await page.waitForSelector("#page-title");
          expect(await page.textContent("main")).toContain("does not include this page");
          // And the server refuses the call even when the page is bypassed.
          const status = await page.evaluate(async (orgId) => {
            const s = await (await fetch("/app/session")).json();
            const r = await fetch(`/app/api/beta/v1/org/${orgId}/api-keys`, { method: "POST", headers: { "content-type": "application/json", "x-csrf-token": s.csrf_token }, body: JSON.stringify({ name: "sneaky" }) });
            return r.status;
          }, org.orgId);
          expect(status).toBe(403);
        }
      } finally {
        await context.close();
      }
    }
  }, 120_000);

  test.skipIf(!hasChromium)("a child organization can be chosen; switching organization replaces the session", async () => {
    const base = baseUrl();
    const org = await consoleOrg(t);
    const child = await createOrganization(t.s.db, { name: `${org.name} / EMEA`, parentId: org.orgId });
    const admin = await findUserByEmail(t.s.db, org.people.admin.email);
    await addMember(t.s.db, { orgId: child.id, userId: admin!.id, role: "admin" });
    const { context, page } = await newPage(browser());
    try {
      await signIn(page, base, org.people.admin, org.orgId);
      await page.waitForFunction((name) => document.getElementById("org-name")?.textContent === name, org.name);
      await page.click("text=Switch organization");
      await page.waitForSelector("#approve");
      await page.selectOption("#org_id", child.id);
      await page.click("#approve");
      await page.waitForSelector("#page-title");
      await page.waitForFunction((name) => document.getElementById("org-name")?.textContent === name, child.name);
      const sessions = await t.s.handle.query<{ org_id: string }>("SELECT org_id FROM console_sessions WHERE org_id IN ($1, $2)", [org.orgId, child.id]);
      expect(sessions.map((r) => r.org_id)).toEqual([child.id]);
    } finally {
      await context.close();
    }
  }, 60_000);

  test.skipIf(!hasChromium)("an ended session sends the user to sign-in and back to the same page", async () => {
    const base = baseUrl();
    const org = await consoleOrg(t);
    const { context, page } = await newPage(browser());
    try {
      await signIn(page, base, org.people.member, org.orgId, "/app/plans?provider=azure");
      // The page's own requests are done (one of them failing with the ended session would send it to sign-in first).
      await page.waitForLoadState("networkidle");
      // The session ends server-side (expired, or signed out elsewhere) while the page is open.
      await t.s.handle.query("UPDATE console_sessions SET expires_at = now() - interval '1 second' WHERE org_id = $1", [org.orgId]);
      await page.click("nav.side a[href='/app/estimates']");
      await page.waitForURL((u) => u.pathname === "/oauth/authorize");
      // The login session at the authorization server still holds: only the organization is asked again.
      await page.waitForSelector("#approve");
      if (await page.$("#org_id")) await page.selectOption("#org_id", org.orgId);
      await page.click("#approve");
      await page.waitForURL((u) => u.pathname === "/app/estimates");
      await page.waitForSelector("#page-title");
      expect(await page.textContent("#page-title")).toBe("Estimates");
    } finally {
      await context.close();
    }
  }, 60_000);
});

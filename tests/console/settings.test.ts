// test:solo — drives Chromium: three browsers on two cores made its waits race (a CI run lost a PATCH behind a repaint); it runs with the machine to itself, as it was written for.
// Settings in Chromium: an admin creates an API key (its secret shown once, and it works against
// the API), sees it listed, revokes it (confirmed) and the key is refused from then on; leaving
// the page forgets the secret. Members: add, change a role, remove; the last admin's refusal
// is shown as the server words it.
import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { findUserByEmail } from "../../lib/orgs/service.ts";
import { apiGet, consoleOrg, expectCleanPage, newPage, overflowsHorizontally, screenshot, signIn, useConsole, type ConsoleOrg } from "./harness.ts";

describeEachDb("console: settings", (driver) => {
  const { t, hasChromium, baseUrl, browser } = useConsole(driver, "console settings");
  let org: ConsoleOrg;

  test.skipIf(!hasChromium)("API keys: create (secret shown once, works against the API), list, revoke with confirmation → the key gets 401", async () => {
    const base = baseUrl();
    org = await consoleOrg(t);
    const { context, page, problems } = await newPage(browser());
    try {
      await signIn(page, base, org.people.admin, org.orgId, "/app/settings", problems);
      await page.waitForSelector("#api-keys .empty");
      expect(await page.textContent("#api-keys .empty")).toContain("No API key yet");
      await expectCleanPage(page, problems);
      await screenshot(page, `settings-empty-${driver}`);

      await page.fill("#new-key-name", "CI export job");
      // Scopes narrowed: only reading reports.
      for (const box of await page.$$("#new-key-form .checks input:checked")) await box.uncheck();
      await page.check("#new-key-scope-reports-read");
      await page.click("#new-key-submit");
      await page.waitForSelector("#new-key-value");
      const secret = (await page.textContent("#new-key-value"))!.trim();
      expect(secret.length).toBeGreaterThan(20);
      expect(await page.textContent("#new-key")).toContain("only time the key is shown");
      await page.waitForSelector("#keys-table");
      const row = await page.$$eval("#keys-table tbody tr", (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)));
      expect(row.length).toBe(1);
      expect(row[0]![0]).toBe("CI export job");
      expect(secret.startsWith(row[0]![1]!.replace("…", ""))).toBe(true);
      expect(row[0]![2]).toBe("reports:read");
      expect(row[0]![5]).toBe("Active");
      await expectCleanPage(page, problems);
      await screenshot(page, `settings-key-created-${driver}`);

      // The key works against the API, within its scopes.
      const call = (path: string) => fetch(`${base}/beta/v1/org/${org.orgId}${path}`, { headers: { authorization: `Bearer ${secret}` } });
      expect((await call("")).status).toBe(200);
      expect((await call("/billing-connections")).status).toBe(403);

      // Copy button: the clipboard gets the key (or the page says to copy by hand).
      await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
      await page.click("#new-key-copy");
      await page.waitForFunction(() => /Copied|did not allow/.test(document.querySelector("#new-key [role=status]")?.textContent ?? ""));
      if ((await page.textContent("#new-key [role=status]"))!.includes("Copied")) expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);

      // Leaving the page forgets the secret.
      await page.click("nav.side >> text=Overview");
      await page.waitForFunction(() => location.pathname === "/app/");
      await page.click("nav.side >> text=Settings");
      await page.waitForSelector("#keys-table");
      expect(await page.$("#new-key-value")).toBeNull();
      expect(await page.content()).not.toContain(secret);

      // Revoke, confirmed.
      await page.click("#keys-table [data-revoke]");
      await page.waitForSelector("#keys-table [data-revoke-confirm]");
      expect(await page.textContent("#keys-table")).toContain("Revoke “CI export job”?");
      await expectCleanPage(page, problems);
      await screenshot(page, `settings-revoke-confirm-${driver}`);
      await page.click("#keys-table [data-revoke-confirm]");
      await page.waitForSelector("#api-keys .empty");
      expect((await call("")).status).toBe(401);
      await page.check("#show-revoked");
      await page.waitForFunction(() => document.querySelector("#keys-table tbody")?.textContent?.includes("Revoked"));
      await expectCleanPage(page, problems);
    } finally {
      await context.close();
    }
  }, 120_000);

  test.skipIf(!hasChromium)("members: add by email, change the role, remove (confirmed); demoting the last admin shows the server's refusal", async () => {
    const base = baseUrl();
    const key = (await createApiKey(t.s.db, { orgId: org.orgId, name: "members check" })).key;
    const members = async () => (await apiGet(t, base, org.orgId, key, "/members?page_size=100")) as { user_id: string; email: string; role: string }[];
    const admin = await findUserByEmail(t.s.db, org.people.admin.email);
    const newcomer = `newcomer.${Math.random().toString(36).slice(2, 8)}@example.com`;
    const { context, page, problems } = await newPage(browser());
    try {
      await signIn(page, base, org.people.admin, org.orgId, "/app/settings", problems);
      await page.waitForSelector("#members-table");
      const emails = await page.$$eval("#members-table tbody tr td:first-child", (tds) => tds.map((td) => td.textContent));
      expect(emails.sort()).toEqual((await members()).map((m) => m.email).sort());

      await page.fill("#add-member-email", newcomer);
      await page.selectOption("#add-member-role", "viewer");
      await page.click("#add-member-submit");
      await page.waitForSelector(`#add-member-form .notice`);
      const added = (await members()).find((m) => m.email === newcomer)!;
      expect(added.role).toBe("viewer");
      await page.waitForSelector(`[data-role="${added.user_id}"]`);
      expect(await page.inputValue(`[data-role="${added.user_id}"]`)).toBe("viewer");

      await page.selectOption(`[data-role="${added.user_id}"]`, "member");
      await page.waitForSelector("#members-result .notice");
      expect(await page.textContent("#members-result")).toContain(`${newcomer} is now member.`);
      expect((await members()).find((m) => m.email === newcomer)!.role).toBe("member");
      await expectCleanPage(page, problems);
      await screenshot(page, `settings-members-${driver}`);

      await page.click(`[data-remove="${added.user_id}"]`);
      await page.waitForSelector(`[data-remove-confirm="${added.user_id}"]`);
      await page.click(`[data-remove-confirm="${added.user_id}"]`);
      await page.waitForFunction((email) => !document.querySelector("#members-table")?.textContent?.includes(email), newcomer);
      expect((await members()).some((m) => m.email === newcomer)).toBe(false);

      // The only admin demoting themselves: the server refuses, its message is shown, the role stays.
      await page.selectOption(`[data-role="${admin!.id}"]`, "member");
      await page.waitForSelector("#members-result .error");
      expect(await page.textContent("#members-result .error")).toContain("The last admin of an organization cannot be demoted");
      await page.waitForFunction((id) => (document.querySelector(`[data-role="${id}"]`) as HTMLSelectElement | null)?.value === "admin", admin!.id);
      expect((await members()).find((m) => m.user_id === admin!.id)!.role).toBe("admin");
      expect(problems.errors).toEqual([`HTTP 409 PATCH /app/api/beta/v1/org/${org.orgId}/members/${admin!.id}`]);
      problems.errors.splice(0);
      await expectCleanPage(page, problems);
      await screenshot(page, `settings-last-admin-${driver}`);
    } finally {
      await context.close();
    }
  }, 120_000);

  test.skipIf(!hasChromium)("at 375 px the page fits the screen", async () => {
    const base = baseUrl();
    const { context, page, problems } = await newPage(browser(), { width: 375 });
    try {
      await signIn(page, base, org.people.admin, org.orgId, "/app/settings", problems);
      await page.fill("#new-key-name", "Narrow screen key");
      await page.click("#new-key-submit");
      await page.waitForSelector("#new-key-value");
      await page.waitForSelector("#keys-table");
      await page.waitForSelector("#members-table");
      expect(await overflowsHorizontally(page)).toBe(false);
      await expectCleanPage(page, problems);
      await screenshot(page, `settings-375-${driver}`);
    } finally {
      await context.close();
    }
  }, 60_000);
});

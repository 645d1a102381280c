// test:solo — drives Chromium: three browsers on two cores made its waits race (a CI run lost a PATCH behind a repaint); it runs with the machine to itself, as it was written for.
// Support in Chromium: a bug report filed from the "Report a problem" link carries the console page
// the user came from as app_url (read back through GET /support/tickets/{key}); a feature
// request; the org's tickets listed as the API lists them; the not-filed and rate-limited results
// shown as the API says them; a viewer files at 375 px.
import { expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { describeEachDb } from "../helpers/db.ts";
import { apiGet, consoleOrg, expectCleanPage, newPage, overflowsHorizontally, screenshot, signIn, useConsole } from "./harness.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { validBug, validFeature } from "../support/fixtures.ts";

describeEachDb("console: support", (driver) => {
  const { t, hasChromium, baseUrl, browser } = useConsole(driver, "console support");
  let org: Awaited<ReturnType<typeof consoleOrg>>;
  let key: string;

  async function fillBug(page: Page, summary: string) {
    const b = validBug();
    await page.fill("#bug-summary", summary);
    await page.fill("#bug-verbatim", b.user_verbatim);
    await page.fill("#bug-what", b.what_happened);
    await page.fill("#bug-steps", b.steps_to_reproduce);
    await page.fill("#bug-expected", b.expected_behavior);
  }

  test.skipIf(!hasChromium)("a bug report filed from an estimate's 'Report a problem' link stores that page as app_url; the ticket is listed", async () => {
    const base = baseUrl();
    org = await consoleOrg(t);
    key = (await createApiKey(t.s.db, { orgId: org.orgId, name: "support check" })).key;
    const est = await (
      await fetch(`${base}/beta/v1/org/${org.orgId}/cost-estimates`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ provider: "aws", name: "Where it broke" }) })
    ).json();
    const { context, page, problems } = await newPage(browser());
    try {
      await signIn(page, base, org.people.member, org.orgId, `/app/estimates/${est.id}`, problems);
      await page.waitForSelector("text=The basket is empty");
      await page.click("text=Report a problem");
      await page.waitForSelector("#bug-summary");
      expect(new URL(page.url()).pathname).toBe("/app/support");
      expect(new URL(page.url()).searchParams.get("from")).toBe(`/app/estimates/${est.id}`);
      expect(await page.inputValue("#bug-app-url")).toBe(`${base}/app/estimates/${est.id}`);
      await page.waitForSelector("text=No ticket filed yet");
      await expectCleanPage(page, problems);
      await screenshot(page, `support-form-${driver}`);

      await fillBug(page, "Estimate page shows no basket");
      await page.selectOption("#bug-provider", "aws");
      await page.click("#ticket-submit");
      await page.waitForSelector("#ticket-key");
      const ticketKey = (await page.textContent("#ticket-key"))!;
      expect(ticketKey).toMatch(/^SUP-\d+$/);
      const stored = await apiGet(t, base, org.orgId, key, `/support/tickets/${ticketKey}`);
      expect(stored).toMatchObject({ kind: "bug", summary: "Estimate page shows no basket", app_url: `${base}/app/estimates/${est.id}`, provider: "aws", what_happened: validBug().what_happened });
      // The list shows the API's tickets.
      await page.waitForSelector(`#tickets-table >> text=${ticketKey}`);
      const listed = await apiGet(t, base, org.orgId, key, "/support/tickets");
      expect(await page.$$eval("#tickets-table tbody tr td:first-child", (tds) => tds.map((td) => td.textContent))).toEqual(listed.map((x: any) => x.ticket_key));
      expect(await page.textContent("#tickets-table")).toContain(`${base}/app/estimates/${est.id}`);
      // The form is cleared for the next report; the page it is about stays.
      expect(await page.inputValue("#bug-summary")).toBe("");
      expect(await page.inputValue("#bug-app-url")).toBe(`${base}/app/estimates/${est.id}`);
      await expectCleanPage(page, problems);
      await screenshot(page, `support-filed-${driver}`);

      // A feature request.
      const f = validFeature();
      await page.selectOption("#ticket-kind", "feature");
      await page.fill("#feature-summary", f.summary);
      await page.fill("#feature-verbatim", f.user_verbatim);
      await page.fill("#feature-problem", f.problem);
      await page.fill("#feature-desired", f.desired_behavior);
      await page.fill("#feature-value", f.business_value);
      await page.click("#ticket-submit");
      await page.waitForSelector("#ticket-key");
      const featureKey = (await page.textContent("#ticket-key"))!;
      expect(await apiGet(t, base, org.orgId, key, `/support/tickets/${featureKey}`)).toMatchObject({ kind: "feature", ...f });
      await page.waitForSelector(`#tickets-table >> text=${featureKey}`);
      await page.selectOption("#tickets-kind", "feature");
      await page.waitForFunction(() => document.querySelectorAll("#tickets-table tbody tr").length === 1);
      expect(await page.textContent("#tickets-table tbody")).toContain(featureKey);
      await expectCleanPage(page, problems);
    } finally {
      await context.close();
    }
  }, 120_000);

  test.skipIf(!hasChromium)("without ?from the report is about the support page itself; not-filed and rate-limited results are shown as the API says", async () => {
    const base = baseUrl();
    const config = t.s.config as { supportFilingEnabled: boolean; supportDailyCap: number };
    const before = { ...config };
    const { context, page, problems } = await newPage(browser());
    try {
      await signIn(page, base, org.people.admin, org.orgId, "/app/support", problems);
      await page.waitForSelector("#bug-summary");
      expect(await page.inputValue("#bug-app-url")).toBe(`${base}/app/support`);

      config.supportFilingEnabled = false;
      await fillBug(page, "Filing is off");
      await page.click("#ticket-submit");
      await page.waitForSelector("#support-result");
      expect(await page.textContent("#support-result")).toContain("Not filed");
      await screenshot(page, `support-not-filed-${driver}`);

      config.supportFilingEnabled = true;
      config.supportDailyCap = 0;
      await page.click("#ticket-submit");
      await page.waitForSelector("#support-result >> text=daily limit");
      config.supportDailyCap = before.supportDailyCap;
      expect((await apiGet(t, base, org.orgId, key, "/support/tickets")).map((x: any) => x.summary)).not.toContain("Filing is off");

      // A too-long summary is refused by the browser's limit before the server sees it.
      expect(await page.getAttribute("#bug-summary", "maxlength")).toBe("200");
      await expectCleanPage(page, problems);
    } finally {
      Object.assign(config, before);
      await context.close();
    }
  }, 120_000);

  test.skipIf(!hasChromium)("a viewer files a bug report at 375 px; the page fits", async () => {
    const base = baseUrl();
    const { context, page, problems } = await newPage(browser(), { width: 375 });
    try {
      await signIn(page, base, org.people.viewer, org.orgId, "/app/support?from=%2Fapp%2Freports%3Fyear%3D2026", problems);
      await page.waitForSelector("#bug-summary");
      expect(await page.inputValue("#bug-app-url")).toBe(`${base}/app/reports?year=2026`);
      await fillBug(page, "Reports page at 2026");
      await page.click("#ticket-submit");
      await page.waitForSelector("#ticket-key");
      const ticketKey = (await page.textContent("#ticket-key"))!;
      expect((await apiGet(t, base, org.orgId, key, `/support/tickets/${ticketKey}`)).app_url).toBe(`${base}/app/reports?year=2026`);
      await page.waitForSelector(`#tickets-table >> text=${ticketKey}`);
      expect(await overflowsHorizontally(page)).toBe(false);
      await expectCleanPage(page, problems);
      await screenshot(page, `support-viewer-375-${driver}`);
    } finally {
      await context.close();
    }
  }, 120_000);
});

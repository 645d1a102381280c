// The cost explorer in Chromium: the URL is the API's query; every cell and total is GET /costs's
// to the cent; the CSV downloaded from the page is the API's byte for byte; a reload keeps the view.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { describeEachDb } from "../helpers/db.ts";
import { apiGet, consoleOrg, expectCleanPage, newPage, overflowsHorizontally, screenshot, signIn, useConsole } from "./harness.ts";
import { seedDemoData } from "../../lib/demo/seed.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";

const usd = (n: number) => new Intl.NumberFormat("en-US", { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(n);

describeEachDb("console: cost explorer", (driver) => {
  const { t, hasChromium, baseUrl, browser } = useConsole(driver, "console explorer");

  test.skipIf(!hasChromium)("grouped by service and month, filtered by provider: the API's rows and totals, its CSV, and the view survives a reload", async () => {
    const base = baseUrl();
    const org = await consoleOrg(t);
    await seedDemoData(t.s, org.orgId);
    const { key } = await createApiKey(t.s.db, { orgId: org.orgId, name: "explorer check" });
    const query = "group_by=service%2Cmonth&provider=aws&metric=effective_cost&limit=100";
    const api = await apiGet(t, base, org.orgId, key, `/costs?${query}`);
    expect(api.rows.length).toBeGreaterThan(0);
    const { context, page, problems } = await newPage(browser());
    try {
      await signIn(page, base, org.people.viewer, org.orgId, `/app/explorer?${query}`, problems);
      await page.waitForSelector("#explorer-ready", { state: "attached" });
      await page.waitForSelector("#explorer-table");
      const cells = await page.$$eval("#explorer-table tbody tr", (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)));
      expect(cells.length).toBe(api.rows.length);
      cells.forEach((row, i) => expect(row[row.length - 1]).toBe(usd(api.rows[i].effective_cost)));
      expect(await page.textContent("#explorer-table tfoot")).toContain(usd(api.totals[0].effective_cost));
      await expectCleanPage(page, problems);
      await screenshot(page, `explorer-${driver}`);

      const [download] = await Promise.all([page.waitForEvent("download"), page.click("#explorer-csv")]);
      const fromPage = readFileSync((await download.path())!);
      const fromApi = Buffer.from(await (await fetch(`${base}/beta/v1/org/${org.orgId}/costs?${query}&format=csv`, { headers: { authorization: `Bearer ${key}` } })).arrayBuffer());
      expect(fromPage.equals(fromApi)).toBe(true);

      await page.reload();
      await page.waitForSelector("#explorer-table");
      expect(await page.$$eval("#explorer-table tbody tr", (trs) => trs.length)).toBe(api.rows.length);
    } finally {
      await context.close();
    }
  }, 120_000);

  test.skipIf(!hasChromium)("no billing data: the page says what to do; 375 px fits", async () => {
    const base = baseUrl();
    const org = await consoleOrg(t);
    const { context, page, problems } = await newPage(browser(), { width: 375 });
    try {
      await signIn(page, base, org.people.admin, org.orgId, "/app/explorer", problems);
      await page.waitForSelector("#explorer-ready", { state: "attached" });
      expect(await page.textContent("main")).toMatch(/No billing data yet|No costs in this window/);
      expect(await overflowsHorizontally(page)).toBe(false);
      await expectCleanPage(page, problems);
    } finally {
      await context.close();
    }
  }, 60_000);
});

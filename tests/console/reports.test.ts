// Allocation reports in Chromium: the rows the API returns, the month's status label, paging,
// the CSV downloaded from the page byte for byte the API's, chargeback by child organization,
// and the empty state.
import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { apiGet, consoleOrg, expectCleanPage, newPage, overflowsHorizontally, screenshot, signIn, useConsole } from "./harness.ts";
import { seedDemoData } from "../../lib/demo/seed.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { readFileSync } from "node:fs";

describeEachDb("console: allocation reports", (driver) => {
  const { t, hasChromium, baseUrl, browser } = useConsole(driver, "console reports");

  test.skipIf(!hasChromium)("a report month: rows and status as the API's, CSV byte for byte the API's, pages of 50", async () => {
    const base = baseUrl();
    const org = await consoleOrg(t);
    await seedDemoData(t.s, org.orgId);
    const { key } = await createApiKey(t.s.db, { orgId: org.orgId, name: "reports check" });
    const report = "cloud_bill_by_resource";
    const periods = await apiGet(t, base, org.orgId, key, `/allocation-reports/${report}/periods?page_size=500`);
    const { year, month, status } = periods[0];
    const api = await apiGet(t, base, org.orgId, key, `/allocation-reports/${report}?year=${year}&month=${month}&provider=aws`);
    const { context, page, problems } = await newPage(browser());
    try {
      await signIn(page, base, org.people.viewer, org.orgId, `/app/reports?report=${report}&year=${year}&month=${month}&provider=aws`, problems);
      await page.waitForSelector("#report-table, .empty");
      expect(await page.textContent("#period-status")).toContain(status === "finalized" ? "Finalized" : "In progress");
      expect(api.period_status).toBe(status);
      const headers = await page.$$eval("#report-table thead th", (ths) => ths.map((th) => th.textContent));
      const descriptor = (await apiGet(t, base, org.orgId, key, "/allocation-reports")).find((d: any) => d.report_type === report);
      expect(headers).toEqual(descriptor.output_fields.map((f: any) => f.name.replace(/_/g, " ")));
      const shown = await page.$$eval("#report-table tbody tr", (trs) => trs.length);
      expect(shown).toBe(Math.min(50, api.rows.length));
      // Text cells are the API's values; money cells its cents.
      const first = await page.$$eval("#report-table tbody tr:first-child td", (tds) => tds.map((td) => td.textContent));
      descriptor.output_fields.forEach((f: any, i: number) => {
        const v = api.rows[0][f.name];
        if (f.type === "string" && v !== null) expect(first[i]).toBe(v);
        if (f.type === "number" && v !== null && /cost/.test(f.name)) expect(first[i]).toBe(new Intl.NumberFormat("en-US", { style: "currency", currency: api.rows[0].billing_currency ?? "USD", minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(v));
      });
      if (api.rows.length > 50) {
        await page.click("text=Next");
        await page.waitForSelector("#report-page");
        expect(await page.textContent("#report-page")).toContain("Page 2");
        expect(new URL(page.url()).searchParams.get("page")).toBe("2");
      }
      await expectCleanPage(page, problems);
      await screenshot(page, `reports-${driver}`);

      const [download] = await Promise.all([page.waitForEvent("download"), page.click("#report-csv")]);
      const fromPage = readFileSync((await download.path())!);
      const fromApi = Buffer.from(await (await fetch(`${base}/beta/v1/org/${org.orgId}/allocation-reports/${report}?year=${year}&month=${month}&provider=aws&format=csv`, { headers: { authorization: `Bearer ${key}` } })).arrayBuffer());
      expect(fromPage.length).toBeGreaterThan(0);
      expect(fromPage.equals(fromApi)).toBe(true);

      // Chargeback by child organization: the report of premiums and rebates per child org.
      const children = (await apiGet(t, base, org.orgId, key, "")).child_orgs;
      if (children.length) {
        await page.click("text=Chargeback by child organization");
        await page.waitForFunction(() => new URL(location.href).searchParams.get("report") === "premiums_and_rebates_by_child_org");
        await page.waitForSelector("#report-table, .empty");
        await expectCleanPage(page, problems);
      }
    } finally {
      await context.close();
    }
  }, 120_000);

  test.skipIf(!hasChromium)("no billing data: the page says what to do; 375 px fits", async () => {
    const base = baseUrl();
    const org = await consoleOrg(t);
    const { context, page, problems } = await newPage(browser(), { width: 375 });
    try {
      await signIn(page, base, org.people.admin, org.orgId, "/app/reports", problems);
      await page.waitForSelector(".empty");
      expect(await page.textContent("main")).toContain("No billing data yet");
      expect(await overflowsHorizontally(page)).toBe(false);
      await expectCleanPage(page, problems);
      await screenshot(page, `reports-empty-375-${driver}`);
    } finally {
      await context.close();
    }
  }, 60_000);
});

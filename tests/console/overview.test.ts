// test:solo — drives Chromium: three browsers on two cores made its waits race (a CI run lost a PATCH behind a repaint); it runs with the machine to itself, as it was written for.
// The overview in Chromium: every figure equals the API's to the cent and links to the report rows behind it.
import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { apiGet, consoleOrg, expectCleanPage, newPage, overflowsHorizontally, screenshot, signIn, useConsole } from "./harness.ts";
import { seedDemoData } from "../../lib/demo/seed.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";

const usd = (n: number) => new Intl.NumberFormat("en-US", { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(n);
const pct = (n: number | null) => (n === null ? "—" : new Intl.NumberFormat("en-US", { style: "percent", minimumFractionDigits: 1, maximumFractionDigits: 1 }).format(n));

describeEachDb("console: overview", (driver) => {
  const { t, hasChromium, baseUrl, browser } = useConsole(driver, "console overview");

  test.skipIf(!hasChromium)("figures, spend by month and provider, coverage over time: the API's to the cent, with links to the rows", async () => {
    const base = baseUrl();
    const org = await consoleOrg(t);
    await seedDemoData(t.s, org.orgId);
    const { key } = await createApiKey(t.s.db, { orgId: org.orgId, name: "overview check" });
    const { context, page, problems } = await newPage(browser());
    try {
      await signIn(page, base, org.people.viewer, org.orgId, "/app/", problems);
      await page.waitForSelector("#overview-ready", { state: "attached" });
      const summary = await apiGet(t, base, org.orgId, key, "/commitment-summary");
      const total = summary.totals.find((x: any) => x.currency === "USD");
      expect(total).toBeDefined();
      expect(await page.textContent("[data-testid='esr-USD']")).toBe(pct(total.effective_savings_rate));
      expect(await page.textContent("[data-testid='savings-USD']")).toBe(usd(total.realized_savings));
      const last = summary.rows.filter((r: any) => r.currency === "USD").at(-1);
      expect(await page.textContent("[data-testid='coverage-USD']")).toBe(pct(last.coverage));
      expect(await page.textContent("[data-testid='utilization-USD']")).toBe(pct(last.utilization));
      expect(await page.textContent("[data-testid='lock-in']")).toBe(`${summary.lock_in.weighted_remaining_months} months`);

      // Spend by month and provider: each cell is the API's cost row for that month and provider.
      const now = new Date();
      const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 11, 1)).toISOString().slice(0, 10);
      const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString().slice(0, 10);
      const costs = await apiGet(t, base, org.orgId, key, `/costs?group_by=month,provider&start_date=${start}&end_date=${end}&metric=effective_cost&limit=1000`);
      const usdRows = costs.rows.filter((r: any) => r.currency === "USD");
      expect(usdRows.length).toBeGreaterThan(0);
      const cells = await page.$$eval("#spend-table-USD tbody tr", (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)));
      const providers = await page.$$eval("#spend-table-USD thead th", (ths) => ths.slice(1).map((th) => th.textContent!));
      const months = [...new Set(usdRows.map((r: any) => r.keys.month))].sort();
      expect(cells.length).toBe(months.length);
      for (const r of usdRows) {
        const row = cells[months.indexOf(r.keys.month)]!;
        expect(row[1 + providers.indexOf(r.keys.provider)]).toBe(usd(r.effective_cost));
      }

      // Coverage over time: one row per month of the API's summary.
      const coverageRows = await page.$$eval("#coverage-table tbody tr", (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)));
      expect(coverageRows.map((r) => r[2])).toEqual(summary.rows.map((r: any) => pct(r.coverage)));
      expect(coverageRows.map((r) => r[4])).toEqual(summary.rows.map((r: any) => usd(r.realized_savings)));

      // Expiring commitments and freshness: the API's lists.
      const expiring = await apiGet(t, base, org.orgId, key, "/commitments?expiring_within_days=90&page_size=50");
      if (expiring.length === 0) expect(await page.textContent("#expiring")).toContain("No commitment ends in the next 90 days");
      else expect(await page.$$eval("#expiring-table tbody tr", (trs) => trs.length)).toBe(expiring.length);

      await expectCleanPage(page, problems);
      await screenshot(page, `overview-${driver}`);

      // A figure's link opens the report rows behind it.
      await page.click("#esr-USD a.figure-link");
      await page.waitForFunction(() => location.pathname === "/app/reports");
      const q = new URL(page.url()).searchParams;
      expect(q.get("report")).toBe("commitment_cost_by_account");
      expect(`${q.get("year")}-${String(q.get("month")).padStart(2, "0")}`).toBe(last.month);
    } finally {
      await context.close();
    }
  }, 120_000);

  test.skipIf(!hasChromium)("an organization without billing data is told what to do; the page fits 375 px", async () => {
    const base = baseUrl();
    const org = await consoleOrg(t);
    const { context, page, problems } = await newPage(browser(), { width: 375 });
    try {
      await signIn(page, base, org.people.admin, org.orgId, "/app/", problems);
      await page.waitForSelector("#overview-ready", { state: "attached" });
      const text = await page.textContent("main");
      expect(text).toContain("No billing data yet.");
      expect(text).toContain("Add a connection");
      expect(await overflowsHorizontally(page)).toBe(false);
      await expectCleanPage(page, problems);
      await screenshot(page, `overview-empty-375-${driver}`);
    } finally {
      await context.close();
    }
  }, 60_000);
});

// test:solo — drives Chromium: three browsers on two cores made its waits race (a CI run lost a PATCH behind a repaint); it runs with the machine to itself, as it was written for.
// The cost explorer in Chromium: every cell and total equals GET /costs for the same query to the
// cent, tag grouping, the CSV download byte for byte, the view kept in the URL, empty states, 375 px.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import type { Page } from "playwright-core";
import { describeEachDb } from "../helpers/db.ts";
import { apiGet, consoleOrg, expectCleanPage, newPage, overflowsHorizontally, screenshot, signIn, useConsole } from "./harness.ts";
import { seedDemoData } from "../../lib/demo/seed.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";

const usd = (n: number) => new Intl.NumberFormat("en-US", { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(n);
const monthLabel = (ym: string) => new Intl.DateTimeFormat("en-US", { year: "numeric", month: "short", timeZone: "UTC" }).format(new Date(`${ym}-01T00:00:00Z`));

/** Waits until the page shows the answer of a query whose params satisfy `ok`; returns that query. */
async function shown(page: Page, ok: (q: URLSearchParams) => boolean): Promise<URLSearchParams> {
  const until = Date.now() + 20_000;
  for (;;) {
    const raw = await page.getAttribute("#explorer-ready", "data-query", { timeout: 20_000 }).catch(() => null);
    if (raw !== null && ok(new URLSearchParams(raw))) return new URLSearchParams(raw);
    if (Date.now() > until) throw new Error(`the explorer did not show the expected query (last: ${raw})`);
    await Bun.sleep(100);
  }
}

const tableCells = (page: Page) => page.$$eval("#explorer-table tbody tr", (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)));
const footCells = (page: Page) => page.$$eval("#explorer-table tfoot tr", (trs) => trs.map((tr) => [...tr.querySelectorAll("th, td")].map((td) => td.textContent)));

describeEachDb("console: cost explorer", (driver) => {
  const { t, hasChromium, baseUrl, browser } = useConsole(driver, "console explorer");

  test.skipIf(!hasChromium)("group by service and month filtered by a provider: every cell and total is the API's; tag grouping; CSV byte for byte; the URL keeps the view", async () => {
    const base = baseUrl();
    const org = await consoleOrg(t);
    await seedDemoData(t.s, org.orgId);
    const { key } = await createApiKey(t.s.db, { orgId: org.orgId, name: "explorer check" });
    const { context, page, problems } = await newPage(browser());
    try {
      await signIn(page, base, org.people.viewer, org.orgId, "/app/explorer", problems);
      await shown(page, () => true);
      // Group by service, then month; filter on provider aws (chosen from the dimensions route).
      await page.selectOption("#group-1", "service");
      await page.selectOption("#group-2", "month");
      await page.click("#add-filter");
      await page.selectOption("#filter-1-dimension", "provider");
      await page.waitForSelector("#filter-1-value:not([disabled])");
      const offered = await page.$$eval("#filter-1-value option", (os) => os.map((o) => o.textContent));
      const providers = await apiGet(t, base, org.orgId, key, "/costs/dimensions/provider");
      expect(offered.slice(1)).toEqual(providers.values.map((v: any) => v.value));
      await page.selectOption("#filter-1-value", "=aws");
      const q = await shown(page, (q) => q.get("provider") === "aws" && q.get("group_by") === "service,month");
      expect(new URL(page.url()).searchParams.toString()).toBe(q.toString());

      const costs = await apiGet(t, base, org.orgId, key, `/costs?${q}`);
      expect(costs.rows.length).toBeGreaterThan(10);
      expect(costs.rows.every((r: any) => r.currency === "USD")).toBe(true);
      const cells = await tableCells(page);
      expect(cells).toEqual(costs.rows.map((r: any) => [r.keys.service ?? "(not set)", monthLabel(r.keys.month), usd(r.effective_cost)]));
      const all = await apiGet(t, base, org.orgId, key, `/costs?group_by=service,month&metric=effective_cost&limit=1000`);
      // The filter took effect: fewer rows than all providers' (aws only).
      expect(costs.totals[0].effective_cost).toBeLessThan(all.totals[0].effective_cost);
      expect(await footCells(page)).toEqual([[`Total (${costs.totals[0].rows} rows)`, usd(costs.totals[0].effective_cost)]]);
      // The date inputs show the API's default window.
      expect(await page.inputValue("#start-date")).toBe(costs.window.start_date);
      expect(await page.inputValue("#end-date")).toBe(costs.window.end_date);
      expect(await page.$("#explorer-chart-USD")).not.toBeNull();
      await expectCleanPage(page, problems);
      await screenshot(page, `explorer-service-month-${driver}`);

      // The CSV link downloads exactly the rows shown: the API's CSV of the same query, byte for byte.
      const [download] = await Promise.all([page.waitForEvent("download"), page.click("#explorer-csv")]);
      const csv = readFileSync((await download.path())!, "utf8");
      const apiCsv = await apiGet(t, base, org.orgId, key, `/costs?${q}&start_date=${costs.window.start_date}&end_date=${costs.window.end_date}&format=csv`);
      expect(csv).toBe(apiCsv);
      expect(csv.split("\r\n")[0]).toContain("service");

      // A reload (or a shared link) shows the same view.
      await page.reload();
      const again = await shown(page, () => true);
      expect(again.toString()).toBe(q.toString());
      expect(await tableCells(page)).toEqual(cells);
      expect(await page.inputValue("#group-1")).toBe("service");
      expect(await page.inputValue("#group-2")).toBe("month");
      expect(await page.inputValue("#filter-1-value")).toBe("=aws");

      // Fewer rows than there are: the page says so.
      await page.selectOption("#limit", "10");
      const limited = await shown(page, (q) => q.get("limit") === "10");
      const cut = await apiGet(t, base, org.orgId, key, `/costs?${limited}`);
      expect(cut.truncated).toBe(true);
      expect(await page.textContent("#explorer-truncated")).toContain(`Showing the largest 10 of ${cut.total_rows} rows`);
      expect((await tableCells(page)).length).toBe(10);

      // Group by a tag: the tag-key select is fed by tag_keys; rows and totals are the API's.
      await page.selectOption("#group-2", "");
      await shown(page, (q) => q.get("group_by") === "service");
      const tagKeys = await apiGet(t, base, org.orgId, key, "/costs/dimensions/tag_keys");
      expect(tagKeys.values.map((v: any) => v.value)).toContain("team");
      await page.selectOption("#group-1", "tag");
      await page.selectOption("#group-1-tag", "team");
      await page.click("#filter-1 button");
      const tq = await shown(page, (q) => q.get("group_by") === "tag:team" && !q.has("provider"));
      expect(await page.$$eval("#group-1-tag option", (os) => os.map((o) => o.textContent))).toEqual(tagKeys.values.map((v: any) => v.value));
      const byTeam = await apiGet(t, base, org.orgId, key, `/costs?${tq}`);
      expect(byTeam.rows.length).toBeGreaterThan(1);
      expect(await tableCells(page)).toEqual(byTeam.rows.map((r: any) => [r.keys["tag:team"] ?? "(not set)", usd(r.effective_cost)]));
      expect(await footCells(page)).toEqual([[`Total (${byTeam.totals[0].rows} rows)`, usd(byTeam.totals[0].effective_cost)]]);
      expect(await page.textContent("#explorer-table thead")).toContain("Tag team");
      await expectCleanPage(page, problems);
      await screenshot(page, `explorer-tag-${driver}`);

      // The split metric: its money columns, each the API's.
      await page.selectOption("#metric", "split");
      const sq = await shown(page, (q) => q.get("metric") === "split");
      const split = await apiGet(t, base, org.orgId, key, `/costs?${sq}`);
      expect(await tableCells(page)).toEqual(split.rows.map((r: any) => [r.keys["tag:team"] ?? "(not set)", usd(r.effective_cost), usd(r.ondemand_cost), usd(r.commitment_cost), usd(r.other_cost)]));

      // A window without costs says what to do.
      await page.fill("#start-date", "2001-01-01");
      await page.fill("#end-date", "2001-02-01");
      await page.click("#apply-dates");
      const eq = await shown(page, (q) => q.get("start_date") === "2001-01-01");
      expect(eq.get("end_date")).toBe("2001-02-01");
      await page.waitForSelector("#explorer-empty");
      expect(await page.textContent("#explorer-empty")).toBe("No costs in this window: widen the dates or remove a filter.");
      await expectCleanPage(page, problems);
    } finally {
      await context.close();
    }
  }, 180_000);

  test.skipIf(!hasChromium)("at 375 px the page does not overflow; an organization without billing data is told what to do", async () => {
    const base = baseUrl();
    const org = await consoleOrg(t);
    await seedDemoData(t.s, org.orgId);
    const { context, page, problems } = await newPage(browser(), { width: 375 });
    try {
      await signIn(page, base, org.people.viewer, org.orgId, "/app/explorer?group_by=account,month&metric=all&provider=aws&provider=gcp", problems);
      const q = await shown(page, () => true);
      expect(q.getAll("provider")).toEqual(["aws", "gcp"]);
      expect((await tableCells(page)).length).toBeGreaterThan(0);
      expect(await overflowsHorizontally(page)).toBe(false);
      await expectCleanPage(page, problems);
      await screenshot(page, `explorer-375-${driver}`);
    } finally {
      await context.close();
    }
    const empty = await consoleOrg(t);
    const other = await newPage(browser(), { width: 375 });
    try {
      await signIn(other.page, base, empty.people.viewer, empty.orgId, "/app/explorer", other.problems);
      await other.page.waitForSelector("#explorer-no-data");
      expect(await other.page.textContent("#explorer-no-data")).toContain("No billing data yet:");
      expect(await other.page.textContent("#explorer-no-data")).toContain("import a FOCUS file");
      expect(await overflowsHorizontally(other.page)).toBe(false);
      await expectCleanPage(other.page, other.problems);
      await screenshot(other.page, `explorer-empty-375-${driver}`);
    } finally {
      await other.context.close();
    }
  }, 120_000);
});

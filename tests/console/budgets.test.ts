// test:solo — drives Chromium: three browsers on two cores made its waits race (a CI run lost a PATCH behind a repaint); it runs with the machine to itself, as it was written for.
// Budgets in Chromium: an admin creates a budget through the form (a bad amount is refused by the
// API and its message shown at the field), reads its figures — equal to GET /budgets/{id} —, its
// months (chart and table equal to GET /history), edits and deletes it (confirmed); a viewer sees
// the budgets and their figures but nothing to change; the demo data's two budgets; 375 px.
import { expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { describeEachDb } from "../helpers/db.ts";
import { apiGet, consoleOrg, expectCleanPage, newPage, overflowsHorizontally, screenshot, signIn, useConsole, type ConsoleOrg } from "./harness.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { dailyRows, importThroughCli } from "../budgets/helpers.ts";
import { billingDemoSeeder } from "../../lib/billing/demo.ts";
import { budgetsDemoSeeder } from "../../lib/budgets/demo.ts";

const NOW = new Date("2026-06-17T12:00:00Z");
const usd = (v: number) => new Intl.NumberFormat("en-US", { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(v);
const pct = (v: number) => new Intl.NumberFormat("en-US", { style: "percent", minimumFractionDigits: 1, maximumFractionDigits: 1 }).format(v / 100);

/** The figures a budget card or the detail page shows, by the API field they name. */
async function cardFigures(page: Page, id: string): Promise<Record<string, string>> {
  return page.$$eval(`[data-budget="${id}"] [data-figure]`, (dds) => Object.fromEntries(dds.map((d) => [d.getAttribute("data-figure")!, d.textContent!.trim()])));
}

describeEachDb("console: budgets", (driver) => {
  const { t, hasChromium, baseUrl, browser } = useConsole(driver, "console budgets", { now: () => NOW });
  let org: ConsoleOrg;
  let key: string;
  let budgetId: string;

  /** An org with May and June (to the 16th) of AWS and Azure spend: $100/day AWS EC2, $40/day Azure VMs. */
  async function orgWithSpend(): Promise<ConsoleOrg> {
    const o = await consoleOrg(t);
    await importThroughCli(t.s, o.orgId, [
      ...dailyRows([{ account: "111", service: "EC2", perDay: 100 }], "2026-05-01", "2026-06-17"),
      ...dailyRows([{ payer: "sub-1", account: "sub-1", service: "Virtual Machines", perDay: 40, provider: "Microsoft" }], "2026-05-01", "2026-06-17"),
    ]);
    return o;
  }

  test.skipIf(!hasChromium)("an admin creates a budget through the form (a bad amount: the API's error at the field) and sees GET /budgets/{id}'s figures; edit; delete confirmed", async () => {
    const base = baseUrl();
    org = await orgWithSpend();
    key = (await createApiKey(t.s.db, { orgId: org.orgId, name: "budgets check" })).key;
    const { context, page, problems } = await newPage(browser());
    try {
      await signIn(page, base, org.people.admin, org.orgId, "/app/budgets", problems);
      await page.waitForSelector(".empty");
      expect(await page.textContent(".empty")).toContain("No budget yet");
      await expectCleanPage(page, problems);

      await page.click("text=New budget");
      await page.waitForSelector("#budget-form");
      await page.fill("#budget-name", "AWS platform");
      await page.fill("#budget-amount", "2000.005");
      await page.selectOption("#budget-provider", "aws");
      await page.click("#budget-submit");
      // The API refuses it (422) and names the field: the message is shown at the amount.
      await page.waitForSelector("#budget-amount-error");
      expect(await page.textContent("#budget-amount-error")).toContain("2 decimals");
      expect(await page.getAttribute("#budget-amount", "aria-invalid")).toBe("true");
      expect(await page.getAttribute("#budget-amount", "aria-describedby")).toContain("budget-amount-error");
      expect(await page.$("#budget-name-error")).toBeNull();
      expect(problems.errors).toEqual([`HTTP 422 POST /app/api/beta/v1/org/${org.orgId}/budgets`]);
      problems.errors.splice(0);
      expect((await apiGet(t, base, org.orgId, key, "/budgets")).length).toBe(0);
      await expectCleanPage(page, problems);
      await screenshot(page, `budgets-field-error-${driver}`);

      // A threshold row's error is shown at that row.
      await page.fill("#budget-amount", "2000");
      await page.fill("#threshold-1-percent", "0");
      await page.click("#budget-submit");
      await page.waitForSelector("#threshold-1-percent-error");
      expect(await page.$("#budget-amount-error")).toBeNull();
      problems.errors.splice(0);

      await page.fill("#threshold-1-percent", "100");
      await page.click("#add-threshold");
      await page.fill("#threshold-2-percent", "50");
      await page.click("#budget-submit");
      await page.waitForURL((u) => /^\/app\/budgets\/[0-9a-f-]{36}$/.test(u.pathname));
      budgetId = new URL(page.url()).pathname.split("/").pop()!;
      await page.waitForSelector("#history-table");

      const b = await apiGet(t, base, org.orgId, key, `/budgets/${budgetId}`);
      expect(b).toMatchObject({ name: "AWS platform", amount: 2000, currency: "USD", filter: { provider: "aws" } });
      expect(b.thresholds).toEqual([
        { percent: 50, basis: "actual" },
        { percent: 80, basis: "actual" },
        { percent: 100, basis: "forecast" },
      ]);
      // AWS only: 16 days × $100 (Azure's $40/day not counted).
      expect(b.status.actual).toBe(1600);
      expect(await page.textContent("#figure-actual [data-testid]")).toBe(usd(b.status.actual));
      expect(await page.textContent("#figure-forecast [data-testid]")).toBe(usd(b.status.forecast));
      expect(await page.textContent("#figure-remaining [data-testid]")).toBe(usd(b.status.remaining));
      expect(await page.textContent("#figure-actual .figure-note")).toBe(`${pct(b.status.percent_used)} of the amount`);
      const thresholdRows = await page.$$eval("#thresholds-table tbody tr", (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)));
      expect(thresholdRows.length).toBe(b.status.thresholds.length);
      b.status.thresholds.forEach((th: any, i: number) => {
        expect(thresholdRows[i]![0]).toBe(`${th.percent} %`);
        expect(thresholdRows[i]![1]).toBe(th.basis);
        expect(thresholdRows[i]![2]).toBe(usd(th.threshold_amount));
        expect(thresholdRows[i]![3]!.startsWith(th.crossed_at ? "Crossed" : "Not reached")).toBe(true);
      });
      // $1,600 of $2,000: 50 % and 80 % of actual crossed; the forecast (> $2,000) too.
      expect(b.status.thresholds.map((x: any) => x.crossed_at !== null)).toEqual([true, true, true]);
      const history = await apiGet(t, base, org.orgId, key, `/budgets/${budgetId}/history`);
      const historyRows = await page.$$eval("#history-table tbody tr", (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)));
      expect(historyRows.length).toBe(history.length);
      expect(historyRows[0]!.slice(1, 5)).toEqual([usd(history[0].amount), usd(history[0].actual), history[0].forecast === null ? "—" : usd(history[0].forecast), pct(history[0].percent_used)]);
      expect(await page.$("#history-chart")).not.toBeNull();
      await expectCleanPage(page, problems);
      await screenshot(page, `budgets-detail-${driver}`);

      // The list: the same figures on the budget's card.
      await page.click("text=All budgets");
      await page.waitForSelector(`[data-budget="${budgetId}"]`);
      expect(await cardFigures(page, budgetId)).toEqual({ actual: usd(b.status.actual), forecast: usd(b.status.forecast), amount: usd(2000), percent_used: pct(b.status.percent_used) });
      expect(await page.$$eval(`[data-budget="${budgetId}"] [data-threshold]`, (els) => els.map((e) => e.textContent))).toEqual(b.status.thresholds.map((x: any) => expect.stringContaining(x.crossed_at ? "crossed" : "not reached")));
      await expectCleanPage(page, problems);

      // Edit: the amount; the figures follow the API's new answer.
      await page.click(`[data-budget="${budgetId}"] a`);
      await page.click("text=Edit");
      await page.waitForSelector("#budget-form");
      expect(await page.inputValue("#budget-amount")).toBe("2000");
      expect(await page.inputValue("#budget-provider")).toBe("aws");
      await page.fill("#budget-amount", "5000");
      await page.click("#budget-submit");
      await page.waitForURL((u) => u.pathname === `/app/budgets/${budgetId}`);
      await page.waitForSelector("#figure-remaining");
      const edited = await apiGet(t, base, org.orgId, key, `/budgets/${budgetId}`);
      expect(edited.amount).toBe(5000);
      expect(await page.textContent("#figure-remaining [data-testid]")).toBe(usd(edited.status.remaining));
      expect(edited.status.remaining).toBe(3400);

      // Delete, confirmed.
      await page.click("#delete-budget");
      await page.waitForSelector("#confirm-delete-budget");
      expect(await page.textContent(".confirm")).toContain("Delete the budget “AWS platform”");
      expect((await apiGet(t, base, org.orgId, key, "/budgets")).length).toBe(1);
      await page.click("#confirm-delete-budget");
      await page.waitForURL((u) => u.pathname === "/app/budgets");
      await page.waitForSelector(".empty");
      expect((await apiGet(t, base, org.orgId, key, "/budgets")).length).toBe(0);
      await expectCleanPage(page, problems);
    } finally {
      await context.close();
    }
  }, 120_000);

  test.skipIf(!hasChromium)("a viewer sees the budgets and their figures, but no create, edit or delete; at 375 px nothing scrolls sideways", async () => {
    const base = baseUrl();
    const created = await t.request("POST", `/beta/v1/org/${org.orgId}/budgets`, {
      key,
      body: { name: "Whole org", amount: 3000, currency: "USD", thresholds: [{ percent: 90, basis: "forecast" }] },
    });
    expect(created.status).toBe(201);
    const b = await created.json();
    const { context, page, problems } = await newPage(browser(), { width: 375 });
    try {
      await signIn(page, base, org.people.viewer, org.orgId, "/app/budgets", problems);
      await page.waitForSelector(`[data-budget="${b.id}"]`);
      expect(await cardFigures(page, b.id)).toEqual({ actual: usd(b.status.actual), forecast: usd(b.status.forecast), amount: usd(3000), percent_used: pct(b.status.percent_used) });
      // Both providers: 16 × ($100 + $40).
      expect(b.status.actual).toBe(2240);
      expect(await page.$("text=New budget")).toBeNull();
      expect(await overflowsHorizontally(page)).toBe(false);
      await expectCleanPage(page, problems);
      await screenshot(page, `budgets-viewer-375-${driver}`);

      await page.click(`[data-budget="${b.id}"] a`);
      await page.waitForSelector("#history-table");
      expect(await page.$("#delete-budget")).toBeNull();
      expect(await page.$$eval(".budget-actions a", (as) => as.map((a) => a.textContent))).toEqual(["All budgets"]);
      expect(await page.textContent("#figure-actual [data-testid]")).toBe(usd(b.status.actual));
      expect(await overflowsHorizontally(page)).toBe(false);
      await expectCleanPage(page, problems);
      await screenshot(page, `budgets-detail-375-${driver}`);

      // The form is not offered by URL either (and the API refuses a viewer's create anyway).
      await page.goto(`${base}/app/budgets/new`);
      await page.waitForSelector("#page-title");
      expect(await page.$("#budget-form")).toBeNull();
      const status = await page.evaluate(async (path) => {
        const s = await (await fetch("/app/session")).json();
        return (await fetch(path, { method: "POST", headers: { "content-type": "application/json", "x-csrf-token": s.csrf_token }, body: JSON.stringify({ name: "x", amount: 1, currency: "USD", thresholds: [{ percent: 1, basis: "actual" }] }) })).status;
      }, `/app/api/beta/v1/org/${org.orgId}/budgets`);
      expect(status).toBe(403);
    } finally {
      await context.close();
    }
    // An admin's form at 375 px.
    const admin = await newPage(browser(), { width: 375 });
    try {
      await signIn(admin.page, base, org.people.admin, org.orgId, "/app/budgets/new", admin.problems);
      await admin.page.waitForSelector("#budget-form");
      await admin.page.fill("#budget-name", "Narrow");
      await admin.page.fill("#budget-amount", "-5");
      await admin.page.click("#budget-submit");
      await admin.page.waitForSelector("#budget-amount-error");
      admin.problems.errors.splice(0);
      expect(await overflowsHorizontally(admin.page)).toBe(false);
      await expectCleanPage(admin.page, admin.problems);
      await screenshot(admin.page, `budgets-form-375-${driver}`);
    } finally {
      await admin.context.close();
    }
  }, 120_000);

  test.skipIf(!hasChromium)("the demo data's two budgets (one org-wide, one for AWS) with their figures", async () => {
    const base = baseUrl();
    const demo = await consoleOrg(t);
    await billingDemoSeeder.run(t.s, demo.orgId);
    await budgetsDemoSeeder.run(t.s, demo.orgId);
    // Idempotent: a second run adds nothing.
    await budgetsDemoSeeder.run(t.s, demo.orgId);
    const demoKey = (await createApiKey(t.s.db, { orgId: demo.orgId, name: "demo check" })).key;
    const budgets = await apiGet(t, base, demo.orgId, demoKey, "/budgets");
    // Created at the same (frozen) instant: listed in id order.
    expect(budgets.map((x: any) => [x.name, x.filter]).sort()).toEqual([
      ["AWS", { provider: "aws" }],
      ["Whole organization", {}],
    ]);
    for (const x of budgets) expect(x.status.actual).toBeGreaterThan(0);
    // The AWS budget is sized below last month: its thresholds fired events.
    const events = await apiGet(t, base, demo.orgId, demoKey, "/events?type=budget.threshold_crossed");
    expect(events.length).toBeGreaterThan(0);
    const { context, page, problems } = await newPage(browser());
    try {
      await signIn(page, base, demo.people.admin, demo.orgId, "/app/budgets", problems);
      for (const x of budgets) {
        await page.waitForSelector(`[data-budget="${x.id}"]`);
        expect((await cardFigures(page, x.id)).actual).toBe(usd(x.status.actual));
      }
      await expectCleanPage(page, problems);
      await screenshot(page, `budgets-${driver}`);
    } finally {
      await context.close();
    }
  }, 180_000);
});

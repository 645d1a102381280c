// test:solo — drives Chromium: three browsers on two cores made its waits race (a CI run lost a PATCH behind a repaint); it runs with the machine to itself, as it was written for.
// Plans in Chromium: the what-if panel shows the planner's figures, a plan is generated and read,
// two editors of one template get the conflict instead of overwriting each other, and a viewer
// is offered no change.
import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { apiGet, consoleOrg, expectCleanPage, newPage, overflowsHorizontally, screenshot, signIn, useConsole } from "./harness.ts";
import { seedDemoData } from "../../lib/demo/seed.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";

const usd = (n: number) => new Intl.NumberFormat("en-US", { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(n);

describeEachDb("console: plans", (driver) => {
  const { t, hasChromium, baseUrl, browser } = useConsole(driver, "console plans");
  let org: Awaited<ReturnType<typeof consoleOrg>>;
  let key: string;
  const api = (method: string, path: string, body?: unknown) =>
    fetch(`${baseUrl()}/beta/v1/org/${org.orgId}${path}`, { method, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });

  test.skipIf(!hasChromium)("what-if: the planner's savings, upfront and lock-in per coverage target; then generate a plan and read its items", async () => {
    const base = baseUrl();
    org = await consoleOrg(t);
    await seedDemoData(t.s, org.orgId);
    key = (await createApiKey(t.s.db, { orgId: org.orgId, name: "plans check" })).key;
    const templates = await apiGet(t, base, org.orgId, key, "/commitment-plan-templates?provider=aws");
    const recommended = templates.find((x: any) => x.name === "Recommended");
    expect(recommended).toBeDefined();
    const { context, page, problems } = await newPage(browser());
    try {
      await signIn(page, base, org.people.admin, org.orgId, "/app/plans", problems);
      await page.click("#templates-table >> text=Recommended");
      await page.waitForSelector("#what-if-run");
      await page.click("#what-if-run");
      await page.waitForSelector("#what-if-table");
      const preview = await (await api("POST", "/commitment-plans/preview", { template_id: recommended.id, overrides: { contract_specs: recommended.configuration.contract_specs }, settings: [50, 60, 70, 80, 90, 100].map((coverage_target) => ({ coverage_target })) })).json();
      const rows = await page.$$eval("#what-if-table tbody tr", (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)));
      expect(rows.length).toBe(6);
      rows.forEach((r, i) => {
        const s = preview.settings[i];
        expect(r[0]).toBe(`${s.coverage_target}%`);
        expect(r[3]).toBe(usd(s.monthly_net_savings));
        expect(r[4]).toBe(usd(s.term_net_savings));
        expect(r[5]).toBe(usd(s.total_upfront_cost));
      });
      // Nothing was saved by the what-if.
      expect(await apiGet(t, base, org.orgId, key, "/commitment-plans?provider=aws")).toEqual([]);
      await expectCleanPage(page, problems);
      await screenshot(page, `plans-what-if-${driver}`);

      await page.click("#generate-plan");
      await page.waitForSelector("#plan-facts");
      const planId = new URL(page.url()).pathname.split("/").pop()!;
      const plan = await apiGet(t, base, org.orgId, key, `/commitment-plans/${planId}`);
      expect(await page.textContent("#plan-savings")).toBe(usd(plan.monthly_net_savings));
      if (plan.items.length) expect(await page.$$eval("#plan-items tbody tr", (trs) => trs.length)).toBe(plan.items.length);
      await expectCleanPage(page, problems);
      await screenshot(page, `plans-plan-${driver}`);
    } finally {
      await context.close();
    }
  }, 120_000);

  test.skipIf(!hasChromium)("two tabs edit one template: the second save is refused with the conflict, the first one's change stays", async () => {
    const base = baseUrl();
    const templates = await apiGet(t, base, org.orgId, key, "/commitment-plan-templates?provider=aws");
    const recommended = templates.find((x: any) => x.name === "Recommended");
    const { context, page, problems } = await newPage(browser());
    try {
      await signIn(page, base, org.people.admin, org.orgId, `/app/plans/templates/${recommended.id}`, problems);
      await page.click("#copy-template");
      await page.waitForSelector("#tpl-name");
      const templateUrl = page.url();
      const second = await context.newPage();
      await second.goto(templateUrl);
      await second.waitForSelector("#tpl-name");

      await page.fill("#tpl-name", "Edited in tab one");
      await page.click("#template-save");
      await page.waitForSelector("text=Saved.");
      await second.fill("#tpl-name", "Edited in tab two");
      await second.click("#template-save");
      await second.waitForSelector("#template-conflict");
      expect(await second.textContent("#template-conflict")).toContain("Someone else saved this template");
      const id = new URL(templateUrl).pathname.split("/").pop()!;
      expect((await apiGet(t, base, org.orgId, key, `/commitment-plan-templates/${id}`)).name).toBe("Edited in tab one");
      await screenshot(second, `plans-conflict-${driver}`);
      // After a reload the second tab edits the current version.
      await second.click("text=Reload the template");
      await second.waitForSelector("#tpl-name");
      expect(await second.inputValue("#tpl-name")).toBe("Edited in tab one");
      await second.fill("#tpl-name", "Edited in tab two");
      await second.click("#template-save");
      await second.waitForSelector("text=Saved.");
      expect((await apiGet(t, base, org.orgId, key, `/commitment-plan-templates/${id}`)).name).toBe("Edited in tab two");
    } finally {
      await context.close();
    }
  }, 120_000);

  test.skipIf(!hasChromium)("a viewer reads templates and plays with the what-if but is offered no change; 375 px fits", async () => {
    const base = baseUrl();
    const templates = await apiGet(t, base, org.orgId, key, "/commitment-plan-templates?provider=aws");
    const recommended = templates.find((x: any) => x.name === "Recommended");
    const { context, page, problems } = await newPage(browser(), { width: 375 });
    try {
      await signIn(page, base, org.people.viewer, org.orgId, `/app/plans/templates/${recommended.id}`, problems);
      await page.waitForSelector("#what-if-run");
      expect(await page.$("#template-save")).toBeNull();
      expect(await page.$("#generate-plan")).toBeNull();
      expect(await page.$("#copy-template")).toBeNull();
      expect(await page.isDisabled("#tpl-auto")).toBe(true);
      await page.click("#what-if-run");
      await page.waitForSelector("#what-if-table");
      expect(await overflowsHorizontally(page)).toBe(false);
      await expectCleanPage(page, problems);
      await screenshot(page, `plans-viewer-375-${driver}`);
    } finally {
      await context.close();
    }
  }, 120_000);
});

// test:solo — drives Chromium: three browsers on two cores made its waits race (a CI run lost a PATCH behind a repaint); it runs with the machine to itself, as it was written for.
// Estimates in Chromium: search the catalog, build a basket, read its pricing (every figure equal
// to GET /cost-estimates/{id} to the cent, the prices' as-of date and stale flag), change a
// quantity, choose and compare two commitment options; a viewer reads but is offered no change and
// the server refuses a forged write.
import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { apiGet, consoleOrg, expectCleanPage, newPage, overflowsHorizontally, screenshot, signIn, useConsole } from "./harness.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";

const usd = (n: number) => new Intl.NumberFormat("en-US", { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(n);
const day = (d: string) => new Intl.DateTimeFormat("en-US", { dateStyle: "medium", timeZone: "UTC" }).format(new Date(`${d}T00:00:00Z`));
const pct = (n: number) => new Intl.NumberFormat("en-US", { style: "percent", minimumFractionDigits: 1, maximumFractionDigits: 1 }).format(n);
/** AWS Pricing Calculator SKU of the bundled snapshot: RI and savings plan grids with real upfront/recurring splits. */
const SKU = "aws:ec2:ap-northeast-1:c5.xlarge:windows";

describeEachDb("console: estimates", (driver) => {
  const { t, hasChromium, baseUrl, browser } = useConsole(driver, "console estimates");
  let org: Awaited<ReturnType<typeof consoleOrg>>;
  let key: string;
  let estimateId = "";

  const cells = (page: import("playwright-core").Page, sel: string) => page.$$eval(`${sel} tbody tr`, (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent ?? "")));

  async function expectFiguresMatchApi(page: import("playwright-core").Page) {
    const e = await apiGet(t, baseUrl(), org.orgId, key, `/cost-estimates/${estimateId}?include_options=true`);
    const totals = e.pricing.totals;
    expect(await page.textContent("[data-testid=total-ondemand]")).toBe(usd(totals.ondemand_monthly_cost));
    expect(await page.textContent("[data-testid=total-estimated]")).toBe(usd(totals.estimated_monthly_cost));
    expect(await page.textContent("[data-testid=total-savings]")).toBe(usd(totals.monthly_net_savings));
    expect(await page.textContent("[data-testid=total-upfront]")).toBe(usd(totals.commitment_upfront_cost));
    expect(await page.textContent("#prices-as-of")).toBe(day(e.pricing.prices_as_of));
    expect(await page.textContent("#prices-stale")).toBe(e.pricing.stale ? "Stale" : "Current");
    const rows = await cells(page, "#basket-table");
    expect(rows.length).toBe(e.line_items.length);
    e.line_items.forEach((l: any, i: number) => {
      const p = e.pricing.line_items.find((x: any) => x.line_item_id === l.id);
      expect(rows[i]![3]).toBe(usd(p.ondemand_monthly_cost));
      expect(rows[i]![4]).toBe(usd(p.estimated_monthly_cost));
      expect(rows[i]![5]).toBe(usd(p.monthly_net_savings));
      expect(rows[i]![6]).toBe(day(p.prices_as_of));
      // Every option of the line, priced by the API.
      expect(p.commitment_options.length).toBeGreaterThan(1);
    });
    return e;
  }

  test.skipIf(!hasChromium)("search a SKU, add it to a new basket, the pricing equals the API's to the cent; change quantity; compare two options; choose one", async () => {
    const base = baseUrl();
    org = await consoleOrg(t);
    key = (await createApiKey(t.s.db, { orgId: org.orgId, name: "estimates check" })).key;
    const { context, page, problems } = await newPage(browser());
    try {
      await signIn(page, base, org.people.admin, org.orgId, "/app/estimates", problems);
      await page.waitForSelector("text=No aws estimate yet");
      await expectCleanPage(page, problems);
      await screenshot(page, `estimates-empty-${driver}`);

      await page.fill("#estimate-name", "Tokyo Windows fleet");
      await page.click("#create-estimate");
      await page.waitForSelector("text=The basket is empty");
      estimateId = new URL(page.url()).pathname.split("/").pop()!;
      expect((await apiGet(t, base, org.orgId, key, `/cost-estimates/${estimateId}`)).name).toBe("Tokyo Windows fleet");

      await page.fill("#catalog-q", "c5.xlarge");
      await page.fill("#catalog-region", "ap-northeast-1");
      await page.fill("#catalog-quantity", "2");
      await page.click("#catalog-search");
      await page.waitForSelector(`#catalog-results button[data-sku="${SKU}"]`);
      // The same search as the API's.
      const hits = await apiGet(t, base, org.orgId, key, "/catalog-skus?provider=aws&q=c5.xlarge&region=ap-northeast-1&page_size=10");
      expect(await page.$$eval("#catalog-results tbody tr", (trs) => trs.length)).toBe(hits.length);
      await page.click(`#catalog-results button[data-sku="${SKU}"]`);
      await page.waitForSelector("#basket-table");
      await page.waitForSelector("[data-testid=total-ondemand]");

      let e = await expectFiguresMatchApi(page);
      expect(e.line_items).toHaveLength(1);
      expect(e.line_items[0].catalog_sku.provider_sku_id).toBe(SKU);
      expect(e.line_items[0].quantity).toBe(2);
      // The options grid of the line shows each of the API's options.
      const options = e.pricing.line_items[0].commitment_options;
      const optRows = await cells(page, "#options-0");
      expect(optRows.length).toBe(options.length);
      optRows.forEach((r, i) => {
        expect(r[3]).toBe(usd(options[i].commitment_financials_monthly_rate.commitment_cost.total));
        expect(r[4]).toBe(usd(options[i].commitment_financials_monthly_rate.commitment_savings.net));
        expect(r[6]).toBe(usd(options[i].commitment_upfront_cost));
        expect(r[5]).toBe(pct(options[i].discount_rate));
      });
      await expectCleanPage(page, problems);
      await screenshot(page, `estimates-basket-${driver}`);

      // Change the quantity: PATCH, then the page shows the API's new figures.
      const qty = `#qty-${e.line_items[0].id}`;
      await page.fill(qty, "5");
      // The PATCH's answer, not the page's look, says the change is saved (a busy machine can
      // paint the typed value and a disabled button before the request is answered).
      const patched = page.waitForResponse((r) => r.request().method() === "PATCH" && r.url().includes(`/line-items/${e.line_items[0].id}`));
      await page.click(`form.qty:has(${qty}) button[type=submit]`);
      expect((await patched).status()).toBe(200);
      await page.waitForFunction((id) => (document.getElementById(id) as HTMLInputElement | null)?.value === "5" && !!document.querySelector("[data-testid=total-ondemand]"), `qty-${e.line_items[0].id}`);
      await page.waitForFunction(() => !document.querySelector("form.qty button[type=submit]:not([disabled])"));
      e = await apiGet(t, base, org.orgId, key, `/cost-estimates/${estimateId}?include_options=true`);
      expect(e.line_items[0].quantity).toBe(5);
      await page.waitForFunction((v) => document.querySelector("[data-testid=total-ondemand]")?.textContent === v, usd(e.pricing.totals.ondemand_monthly_cost));
      e = await expectFiguresMatchApi(page);

      // Compare two options side by side: the API's figures in two columns.
      const opts = e.pricing.line_items[0].commitment_options;
      const [ia, ib] = [2, opts.length - 1];
      await page.selectOption("#compare-a", String(ia));
      await page.selectOption("#compare-b", String(ib));
      const compared = await page.$$eval("#compare-table tbody tr", (trs) => Object.fromEntries(trs.map((tr) => [tr.querySelector("th")!.textContent, [...tr.querySelectorAll("td")].map((td) => td.textContent)])));
      const [a, b] = [opts[ia], opts[ib]];
      const fin = (o: any) => o.commitment_financials_monthly_rate;
      expect(compared["Commitment cost / month"]).toEqual([usd(fin(a).commitment_cost.total), usd(fin(b).commitment_cost.total)]);
      expect(compared["of which recurring"]).toEqual([usd(fin(a).commitment_cost.breakdown.cloud_provider_cost.breakdown.recurring), usd(fin(b).commitment_cost.breakdown.cloud_provider_cost.breakdown.recurring)]);
      expect(compared["of which amortized upfront"]).toEqual([usd(fin(a).commitment_cost.breakdown.cloud_provider_cost.breakdown.amortized_upfront), usd(fin(b).commitment_cost.breakdown.cloud_provider_cost.breakdown.amortized_upfront)]);
      expect(compared["Net savings / month"]).toEqual([usd(fin(a).commitment_savings.net), usd(fin(b).commitment_savings.net)]);
      expect(compared["Gross savings / month"]).toEqual([usd(fin(a).commitment_savings.gross), usd(fin(b).commitment_savings.gross)]);
      expect(compared["Upfront (one-time)"]).toEqual([usd(a.commitment_upfront_cost), usd(b.commitment_upfront_cost)]);
      expect(compared["Discount"]).toEqual([pct(a.discount_rate), pct(b.discount_rate)]);
      expect(compared["Term"]).toEqual([a.contract_term.replace(/_/g, " "), b.contract_term.replace(/_/g, " ")]);
      await expectCleanPage(page, problems);
      await screenshot(page, `estimates-compare-${driver}`);
      expect(await overflowsHorizontally(page)).toBe(false);

      // Choose option B for the line: the API now prices the line under it.
      await page.click(`#options-0 tbody tr:nth-child(${ib + 1}) button`);
      await page.waitForSelector(`#options-0 tbody tr:nth-child(${ib + 1}) >> text=selected`);
      e = await apiGet(t, base, org.orgId, key, `/cost-estimates/${estimateId}?include_options=true`);
      expect(e.line_items[0].selected_commitment_option).toMatchObject({ offer_id: b.offer_id, lease_menu_item_id: b.lease_menu_item_id, payment_option: b.payment_option });
      await page.waitForFunction((v) => document.querySelector("[data-testid=total-estimated]")?.textContent === v, usd(e.pricing.totals.estimated_monthly_cost));
      await expectFiguresMatchApi(page);
      await expectCleanPage(page, problems);

      // The list shows the estimate.
      await page.click("text=All estimates");
      await page.waitForSelector("#estimates-table");
      expect(await page.textContent("#estimates-table")).toContain("Tokyo Windows fleet");
    } finally {
      await context.close();
    }
  }, 120_000);

  test.skipIf(!hasChromium)("a line can be removed; the page shows the API's emptied basket", async () => {
    const base = baseUrl();
    const created = await (
      await fetch(`${base}/beta/v1/org/${org.orgId}/cost-estimates`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ provider: "aws", name: "To empty" }) })
    ).json();
    const { context, page, problems } = await newPage(browser());
    try {
      await signIn(page, base, org.people.member, org.orgId, `/app/estimates/${created.id}`, problems);
      await page.fill("#catalog-q", "c5.xlarge");
      await page.fill("#catalog-region", "ap-northeast-1");
      await page.click("#catalog-search");
      await page.click(`#catalog-results button[data-sku="${SKU}"]`);
      await page.waitForSelector("#basket-table");
      await page.click("#basket-table >> text=Remove");
      await page.waitForSelector("text=The basket is empty");
      expect((await apiGet(t, base, org.orgId, key, `/cost-estimates/${created.id}`)).line_items).toEqual([]);
      await expectCleanPage(page, problems);
    } finally {
      await context.close();
    }
  }, 120_000);

  test.skipIf(!hasChromium)("a viewer reads the estimate with its pricing but is offered no change; a forged POST is refused (403); 375 px fits", async () => {
    const base = baseUrl();
    const { context, page, problems } = await newPage(browser(), { width: 375 });
    try {
      await signIn(page, base, org.people.viewer, org.orgId, `/app/estimates/${estimateId}`, problems);
      await page.waitForSelector("#basket-table");
      await expectFiguresMatchApi(page);
      expect(await page.$("#catalog")).toBeNull();
      expect(await page.$("#catalog-search")).toBeNull();
      expect(await page.$("form.qty")).toBeNull();
      expect(await page.$("#basket-table button")).toBeNull();
      expect(await page.$("#options-0 button")).toBeNull();
      // The comparison is reading, so it is offered.
      await page.waitForSelector("#compare-table");
      expect(await overflowsHorizontally(page)).toBe(false);
      await expectCleanPage(page, problems);
      await screenshot(page, `estimates-viewer-375-${driver}`);

      const e = await apiGet(t, base, org.orgId, key, `/cost-estimates/${estimateId}`);
      const status = await page.evaluate(
        async ({ orgId, id, sku }) => {
          const s = await (await fetch("/app/session")).json();
          const r = await fetch(`/app/api/beta/v1/org/${orgId}/cost-estimates/${id}/line-items`, {
            method: "POST",
            headers: { "content-type": "application/json", "x-csrf-token": s.csrf_token },
            body: JSON.stringify({ line_items: [{ catalog_sku_id: sku.catalog_sku_id, catalog_sku_org_id: sku.catalog_sku_org_id }] }),
          });
          return r.status;
        },
        { orgId: org.orgId, id: estimateId, sku: e.line_items[0].catalog_sku },
      );
      expect(status).toBe(403);
      expect((await apiGet(t, base, org.orgId, key, `/cost-estimates/${estimateId}`)).line_items).toHaveLength(1);

      // The list at 375 px: no "New estimate" for a viewer.
      await page.goto(`${base}/app/estimates`);
      await page.waitForSelector("#estimates-table");
      expect(await page.$("#create-estimate")).toBeNull();
      expect(await overflowsHorizontally(page)).toBe(false);
      problems.errors.splice(0);
      await expectCleanPage(page, problems);
      await screenshot(page, `estimates-list-viewer-375-${driver}`);
    } finally {
      await context.close();
    }
  }, 120_000);
});

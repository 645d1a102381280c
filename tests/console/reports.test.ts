// test:solo — drives Chromium: three browsers on two cores made its waits race (a CI run lost a PATCH behind a repaint); it runs with the machine to itself, as it was written for.
// Allocation reports in Chromium: report and month picked in the page, every cell the API's to the
// cent, paging, the month's finalized / in-progress label as the API's period status, the CSV
// downloaded from the page byte for byte the API's for the same query (filters included),
// chargeback by child organization, the URL reloading to the same view, a viewer, the empty
// state, and 375 px.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import type { Page } from "playwright-core";
import { describeEachDb } from "../helpers/db.ts";
import type { TestContext } from "../helpers/app.ts";
import { apiGet, consoleOrg, expectCleanPage, newPage, overflowsHorizontally, screenshot, signIn, useConsole } from "./harness.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { closeBillingPeriod, freezeClosedPeriods } from "../../lib/reports/periods.ts";
import { focusCsv, importCsvText } from "../reports/helpers.ts";

const ACCOUNTS = 60;
const CHARGEBACK = "premiums_and_rebates_by_child_org";

/**
 * Billing data: January 2023 (closed and frozen: finalized) with an insured savings plan used by
 * acct-a (assigned to the child organization "Child X") and acct-b, and 60 more accounts (62 rows
 * of cloud_bill_by_account: two pages); February 2023 open (in progress for the daily reports).
 */
async function seedBilling(t: TestContext, orgId: string): Promise<{ childId: string }> {
  const [child] = await t.s.handle.query<{ id: string }>(`INSERT INTO organizations (name, parent_id) VALUES ('Child X', $1) RETURNING id`, [orgId]);
  const childId = child!.id;
  const C = { CommitmentDiscountId: "ins-1", CommitmentDiscountCategory: "Spend", CommitmentDiscountType: "Savings Plan", PricingCategory: "Committed" };
  const feb = { BillingPeriodStart: "2023-02-01T00:00:00Z", BillingPeriodEnd: "2023-03-01T00:00:00Z", ChargePeriodStart: "2023-02-03T00:00:00Z", ChargePeriodEnd: "2023-02-03T01:00:00Z" };
  const rows: Record<string, string | number | null>[] = [
    { ...C, ChargeCategory: "Purchase", ChargeFrequency: "Recurring", ChargePeriodStart: "2023-01-01T00:00:00Z", ChargePeriodEnd: "2023-02-01T00:00:00Z", SubAccountId: "acct-a", SubAccountName: "A", BilledCost: "10", EffectiveCost: "0", ListCost: "10", ContractedCost: "10", x_ContractTerm: "thirty_day_gris", x_FeeRate: "0.2", x_CommitmentStart: "2022-12-01T00:00:00Z" },
    { ...C, SubAccountId: "acct-a", SubAccountName: "A", EffectiveCost: "6", ListCost: "10", ContractedCost: "10", CommitmentDiscountStatus: "Used" },
    { ...C, SubAccountId: "acct-b", SubAccountName: "B", EffectiveCost: "3", ListCost: "5", ContractedCost: "5", CommitmentDiscountStatus: "Used" },
    { ...C, SubAccountId: "acct-a", SubAccountName: "A", EffectiveCost: "1", ListCost: "0", ContractedCost: "0", CommitmentDiscountStatus: "Unused" },
  ];
  for (let i = 0; i < ACCOUNTS; i++) {
    const id = `acct-${String(i).padStart(3, "0")}`;
    // Thirds of a cent: the API rounds, the page shows its cents.
    rows.push({ SubAccountId: id, SubAccountName: `Team ${i}`, BilledCost: (i * 7.3333 + 0.005).toFixed(4), EffectiveCost: (i * 7.3333 + 0.005).toFixed(4), ListCost: (i * 7.3333).toFixed(4), ContractedCost: (i * 7.3333).toFixed(4) });
    if (i % 2 === 0) rows.push({ SubAccountId: id, SubAccountName: `Team ${i}`, ChargeCategory: "Tax", BilledCost: (i * 0.4567).toFixed(4), EffectiveCost: (i * 0.4567).toFixed(4), ListCost: (i * 0.4567).toFixed(4), ContractedCost: (i * 0.4567).toFixed(4) });
  }
  rows.push({ ...feb, SubAccountId: "acct-a", SubAccountName: "A", ServiceName: "Storage Service", ServiceCategory: "Storage", BilledCost: "12.345", EffectiveCost: "12.345", ListCost: "12.345", ContractedCost: "12.345" });
  rows.push({ ...feb, SubAccountId: "acct-b", SubAccountName: "B", BilledCost: "98.7654", EffectiveCost: "98.7654", ListCost: "98.7654", ContractedCost: "98.7654" });
  await importCsvText(t, orgId, focusCsv(rows));
  await t.s.handle.query(`UPDATE cloud_accounts SET child_org_id = $2 WHERE org_id = $1 AND account_id = 'acct-a'`, [orgId, childId]);
  await closeBillingPeriod(t.s.db, orgId, "aws", "2023-01", new Date());
  await freezeClosedPeriods(t.s.db, new Date(), { orgId });
  return { childId };
}

/** What the page must show for a cell of an API row (en-US: the test browser's locale). */
function expectedCell(name: string, type: string, row: Record<string, unknown>): string {
  const v = row[name];
  if (v === null || v === undefined) return name.startsWith("child_org_") ? "Not assigned" : "—";
  if (type === "number" && typeof row.billing_currency === "string")
    return new Intl.NumberFormat("en-US", { style: "currency", currency: row.billing_currency, minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(v as number);
  return String(v);
}

async function shownRows(page: Page): Promise<string[][]> {
  return page.$$eval("#report-table tbody tr", (trs) => trs.map((tr) => [...(tr as HTMLTableRowElement).cells].map((td) => td.textContent ?? "")));
}

async function waitForCaption(page: Page, text: string): Promise<void> {
  await page.waitForFunction((t) => document.querySelector("#report-table caption")?.textContent === t, text);
}

async function csvFromPage(page: Page): Promise<Buffer> {
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#report-csv")]);
  return readFileSync((await download.path())!);
}

async function csvFromApi(base: string, orgId: string, key: string, type: string, query: string): Promise<Buffer> {
  const r = await fetch(`${base}/beta/v1/org/${orgId}/allocation-reports/${type}?${query}&format=csv`, { headers: { authorization: `Bearer ${key}` } });
  expect(r.status).toBe(200);
  return Buffer.from(await r.arrayBuffer());
}

describeEachDb("console: allocation reports", (driver) => {
  const { t, hasChromium, baseUrl, browser } = useConsole(driver, "console reports");

  test.skipIf(!hasChromium)("a viewer picks report and month: cells, label, pages, reload, CSV and filters as the API's", async () => {
    const base = baseUrl();
    const org = await consoleOrg(t);
    await seedBilling(t, org.orgId);
    const { key } = await createApiKey(t.s.db, { orgId: org.orgId, name: "reports check" });
    const descriptors = await apiGet(t, base, org.orgId, key, "/allocation-reports");
    const fieldsOf = (type: string) => descriptors.find((d: any) => d.report_type === type).output_fields as { name: string; type: string }[];
    const expectRows = (type: string, rows: Record<string, unknown>[]) => rows.map((r) => fieldsOf(type).map((f) => expectedCell(f.name, f.type, r)));

    const type = "cloud_bill_by_account";
    const periods = await apiGet(t, base, org.orgId, key, `/allocation-reports/${type}/periods`);
    const jan = periods.find((p: any) => p.year === 2023 && p.month === 1);
    expect(jan.status).toBe("finalized");
    const api = await apiGet(t, base, org.orgId, key, `/allocation-reports/${type}?year=2023&month=1`);
    expect(api.rows.length).toBe(ACCOUNTS + 2);

    const { context, page, problems } = await newPage(browser());
    try {
      await signIn(page, base, org.people.viewer, org.orgId, "/app/reports", problems);
      await page.waitForSelector("#report-type");
      await page.selectOption("#report-type", type);
      await page.waitForSelector('#report-month option[value="2023-1"]', { state: "attached" });
      expect(await page.textContent('#report-month option[value="2023-1"]')).toBe("Jan 2023 (finalized)");
      await page.selectOption("#report-month", "2023-1");
      await waitForCaption(page, "Cloud bill by account, Jan 2023, page 1 of 2");
      const url = new URL(page.url());
      expect([url.searchParams.get("report"), url.searchParams.get("year"), url.searchParams.get("month")]).toEqual([type, "2023", "1"]);

      // The label is the API's period status; every cell of the page is the API's, to the cent.
      expect(api.period_status).toBe("finalized");
      expect(await page.textContent("#period-status")).toContain("Finalized");
      expect(await page.$$eval("#report-table thead th", (ths) => ths.map((th) => th.textContent))).toEqual(fieldsOf(type).map((f) => f.name.replace(/_/g, " ")));
      expect(await shownRows(page)).toEqual(expectRows(type, api.rows.slice(0, 50)));
      expect(await page.textContent("#report-page")).toBe(`Page 1 of 2 (${ACCOUNTS + 2} rows)`);
      await expectCleanPage(page, problems);
      await screenshot(page, `reports-${driver}`);

      // Paging: page 2 holds the API's rows 51 to 62; the URL keeps it, so a reload shows the same view.
      await page.click("nav.pager >> text=Next");
      await waitForCaption(page, "Cloud bill by account, Jan 2023, page 2 of 2");
      expect(new URL(page.url()).searchParams.get("page")).toBe("2");
      expect(await shownRows(page)).toEqual(expectRows(type, api.rows.slice(50)));
      await page.reload();
      await waitForCaption(page, "Cloud bill by account, Jan 2023, page 2 of 2");
      expect(await shownRows(page)).toEqual(expectRows(type, api.rows.slice(50)));
      expect(await page.inputValue("#report-month")).toBe("2023-1");

      // The CSV from the page is the API's CSV of the same report and month, byte for byte.
      const csv = await csvFromPage(page);
      expect(csv.length).toBeGreaterThan(0);
      expect(csv.equals(await csvFromApi(base, org.orgId, key, type, "year=2023&month=1"))).toBe(true);

      // A filter: the table and the CSV are the API's answer with the same filter.
      await page.fill("#filter-account_id", "acct-a");
      await page.click("text=Apply filters");
      await waitForCaption(page, "Cloud bill by account, Jan 2023");
      expect(new URL(page.url()).searchParams.get("account_id")).toBe("acct-a");
      const filtered = await apiGet(t, base, org.orgId, key, `/allocation-reports/${type}?year=2023&month=1&account_id=acct-a`);
      expect(filtered.rows.length).toBe(1);
      expect(await shownRows(page)).toEqual(expectRows(type, filtered.rows));
      const filteredCsv = await csvFromPage(page);
      expect(filteredCsv.equals(await csvFromApi(base, org.orgId, key, type, "year=2023&month=1&account_id=acct-a"))).toBe(true);
      expect(filteredCsv.equals(csv)).toBe(false);
      await expectCleanPage(page, problems);
      await page.click("text=Clear filters");
      await waitForCaption(page, "Cloud bill by account, Jan 2023, page 1 of 2");

      // An open month of a daily report: labelled in progress, as its period is in the API.
      const daily = "cloud_bill_by_service";
      const dailyPeriods = await apiGet(t, base, org.orgId, key, `/allocation-reports/${daily}/periods`);
      expect(dailyPeriods.find((p: any) => p.year === 2023 && p.month === 2).status).toBe("in_progress");
      await page.selectOption("#report-type", daily);
      await page.waitForSelector('#report-month option[value="2023-2"]', { state: "attached" });
      expect(await page.textContent('#report-month option[value="2023-2"]')).toBe("Feb 2023 (in progress)");
      await page.selectOption("#report-month", "2023-2");
      await waitForCaption(page, "Cloud bill by service, Feb 2023");
      const feb = await apiGet(t, base, org.orgId, key, `/allocation-reports/${daily}?year=2023&month=2`);
      expect(feb.period_status).toBe("in_progress");
      expect(await page.textContent("#period-status")).toContain("In progress");
      expect(await shownRows(page)).toEqual(expectRows(daily, feb.rows));
      expect((await csvFromPage(page)).equals(await csvFromApi(base, org.orgId, key, daily, "year=2023&month=2"))).toBe(true);
      await expectCleanPage(page, problems);
      await screenshot(page, `reports-in-progress-${driver}`);
    } finally {
      await context.close();
    }
  }, 180_000);

  test.skipIf(!hasChromium)("chargeback by child organization from an overview link, at 375 px", async () => {
    const base = baseUrl();
    const org = await consoleOrg(t);
    const { childId } = await seedBilling(t, org.orgId);
    const { key } = await createApiKey(t.s.db, { orgId: org.orgId, name: "reports check" });
    const descriptors = await apiGet(t, base, org.orgId, key, "/allocation-reports");
    const fields = descriptors.find((d: any) => d.report_type === CHARGEBACK).output_fields as { name: string; type: string }[];
    const { context, page, problems } = await newPage(browser(), { width: 375 });
    try {
      await signIn(page, base, org.people.admin, org.orgId, "/app/reports?report=cloud_bill_by_account&year=2023&month=1", problems);
      await waitForCaption(page, "Cloud bill by account, Jan 2023, page 1 of 2");
      expect(await overflowsHorizontally(page)).toBe(false);
      await expectCleanPage(page, problems);
      await screenshot(page, `reports-375-${driver}`);

      await page.click("text=Chargeback by child organization");
      await waitForCaption(page, "Premiums and rebates by child organization, Jan 2023");
      const url = new URL(page.url());
      expect([url.searchParams.get("report"), url.searchParams.get("year"), url.searchParams.get("month")]).toEqual([CHARGEBACK, "2023", "1"]);
      const api = await apiGet(t, base, org.orgId, key, `/allocation-reports/${CHARGEBACK}?year=2023&month=1`);
      expect(api.rows.map((r: any) => [r.child_org_name, r.premiums, r.net_savings])).toEqual([
        [null, 0.33, 1.67],
        ["Child X", 0.67, 3.33],
      ]);
      const expected = api.rows.map((r: any) => fields.map((f) => expectedCell(f.name, f.type, r)));
      expect(await shownRows(page)).toEqual(expected);
      expect(await page.textContent("#period-status")).toContain("Finalized");

      // One child organization: the filter offers it by name.
      await page.selectOption("#filter-child_org_id", childId);
      await page.click("text=Apply filters");
      await page.waitForFunction(() => document.querySelectorAll("#report-table tbody tr").length === 1);
      const one = await apiGet(t, base, org.orgId, key, `/allocation-reports/${CHARGEBACK}?year=2023&month=1&child_org_id=${childId}`);
      expect(await shownRows(page)).toEqual(one.rows.map((r: any) => fields.map((f) => expectedCell(f.name, f.type, r))));
      expect((await csvFromPage(page)).equals(await csvFromApi(base, org.orgId, key, CHARGEBACK, `year=2023&month=1&child_org_id=${childId}`))).toBe(true);
      expect(await overflowsHorizontally(page)).toBe(false);
      await expectCleanPage(page, problems);
      await screenshot(page, `reports-chargeback-375-${driver}`);
    } finally {
      await context.close();
    }
  }, 120_000);

  test.skipIf(!hasChromium)("no billing data: the page says what to do (a link for those who may add a connection); 375 px fits", async () => {
    const base = baseUrl();
    const org = await consoleOrg(t);
    const { context, page, problems } = await newPage(browser(), { width: 375 });
    try {
      await signIn(page, base, org.people.admin, org.orgId, "/app/reports", problems);
      await page.waitForSelector("#no-billing-data");
      expect(await page.textContent("#no-billing-data")).toBe("No billing data yet: add a connection or import a FOCUS file");
      expect(await page.getAttribute("#no-billing-data a", "href")).toBe("/app/connections");
      expect(await page.$("#report-table")).toBeNull();
      expect(await overflowsHorizontally(page)).toBe(false);
      await expectCleanPage(page, problems);
      await screenshot(page, `reports-empty-375-${driver}`);
      // A daily report lists the running month even without data: still the same advice.
      await page.selectOption("#report-type", "cloud_bill_by_service");
      await page.waitForFunction(() => new URL(location.href).searchParams.get("report") === "cloud_bill_by_service");
      await page.waitForSelector("#no-billing-data");
      await expectCleanPage(page, problems);
    } finally {
      await context.close();
    }
    const viewer = await newPage(browser());
    try {
      await signIn(viewer.page, base, org.people.viewer, org.orgId, "/app/reports", viewer.problems);
      await viewer.page.waitForSelector("#no-billing-data");
      expect(await viewer.page.textContent("#no-billing-data")).toBe("No billing data yet: add a connection or import a FOCUS file");
      expect(await viewer.page.$("#no-billing-data a")).toBeNull();
      await expectCleanPage(viewer.page, viewer.problems);
    } finally {
      await viewer.context.close();
    }
  }, 90_000);
});

/**
 * The allocation report tools (list_allocation_reports, list_report_periods,
 * get_allocation_report) answer what the REST API answers: the same catalog, periods, rows,
 * filters and errors, plus paging, totals per currency over all rows and the REST CSV link.
 * Through the SDK client and the real app, both drivers.
 */
import { expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp, type TestContext } from "../helpers/app.ts";
import { closeBillingPeriod, freezeClosedPeriods } from "../../lib/reports/periods.ts";
import { setReportHidden } from "../../lib/reports/service.ts";
import { focusCsv, importCsvText } from "../reports/helpers.ts";
import { NOW, connectMcp } from "./fixtures.ts";

const cents = (v: unknown) => Math.round(Number(v ?? 0) * 100);

async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
  const r: any = await client.callTool({ name, arguments: args });
  if (r.isError) throw new Error(`${name}: ${r.content?.[0]?.text}`);
  expect(JSON.parse(r.content[1].text)).toEqual(r.structuredContent);
  return r.structuredContent;
}

async function rest(t: TestContext, org: { id: string; key: string }, path: string) {
  const r = await t.request("GET", `/beta/v1/org/${org.id}${path}`, { key: org.key });
  return { status: r.status, body: r.headers.get("content-type")?.includes("json") ? await r.json() : await r.text() };
}

/** RFC 4180 rows keyed by the header (the report CSVs have no line breaks inside fields). */
function parseCsv(text: string): Record<string, string>[] {
  const lines = text.split("\r\n").filter((l) => l !== "");
  const split = (l: string) => l.match(/("([^"]|"")*"|[^,]*)(,|$)/g)!.slice(0, -1).map((c) => c.replace(/,$/, "").replace(/^"(.*)"$/, "$1").replace(/""/g, '"'));
  const [header, ...rest] = lines.map(split);
  return rest.map((r) => Object.fromEntries(header!.map((h, i) => [h, r[i] ?? ""])));
}

const INS = { CommitmentDiscountId: "ins-sp-1", CommitmentDiscountCategory: "Spend", CommitmentDiscountType: "Savings Plan", PricingCategory: "Committed" };

function row(month: string, o: Record<string, string | number | null>) {
  const next = month === "2026-05" ? "2026-06" : "2026-07";
  return {
    BillingAccountId: "ba-1", BillingAccountName: "Payer", BillingPeriodStart: `${month}-01T00:00:00Z`, BillingPeriodEnd: `${next}-01T00:00:00Z`,
    ChargePeriodStart: `${month}-04T00:00:00Z`, ChargePeriodEnd: `${month}-04T23:59:59Z`,
    ...o,
  };
}

/**
 * An insured savings plan (fee 20 %) used by acct-a (assigned to a child organization) and
 * acct-b, its Unused hour after the lock-in; on-demand usage in acct-c; an Azure account billed
 * in EUR. May and the current June.
 */
async function seed(t: TestContext, org: { id: string }) {
  const child = await t.s.handle.query<{ id: string }>(`INSERT INTO organizations (name, parent_id) VALUES ('Retail (child)', $1) RETURNING id`, [org.id]);
  const rows = [];
  for (const month of ["2026-05", "2026-06"]) {
    rows.push(
      row(month, { ...INS, ChargeCategory: "Purchase", ChargeFrequency: "Recurring", ChargePeriodStart: `${month}-01T00:00:00Z`, ChargePeriodEnd: `${month}-02T00:00:00Z`, SubAccountId: "acct-a", SubAccountName: "A", BilledCost: "10", EffectiveCost: "0", ListCost: "10", ContractedCost: "10", x_ContractTerm: "thirty_day_gris", x_FeeRate: "0.2", x_CommitmentStart: "2026-01-01T00:00:00Z" }),
      row(month, { ...INS, SubAccountId: "acct-a", SubAccountName: "A", EffectiveCost: "6.004", ListCost: "10.006", ContractedCost: "10.006", CommitmentDiscountStatus: "Used" }),
      row(month, { ...INS, SubAccountId: "acct-b", SubAccountName: "B", EffectiveCost: "3.003", ListCost: "5.004", ContractedCost: "5.004", CommitmentDiscountStatus: "Used" }),
      row(month, { ...INS, SubAccountId: "acct-a", SubAccountName: "A", EffectiveCost: "1.001", ListCost: "0", ContractedCost: "0", CommitmentDiscountStatus: "Unused" }),
      row(month, { SubAccountId: "acct-c", SubAccountName: "C", ServiceName: "Amazon Relational Database Service", ServiceCategory: "Databases", BilledCost: "7.777", EffectiveCost: "7.777", ListCost: "7.777", ContractedCost: "7.777" }),
      row(month, { ProviderName: "Microsoft", BillingAccountId: "eur-ea", BillingAccountName: "EUR", BillingCurrency: "EUR", SubAccountId: "eur-sub", SubAccountName: "EUR sub", ServiceName: "Virtual Machines", BilledCost: "12.345", EffectiveCost: "12.345", ListCost: "12.345", ContractedCost: "12.345" }),
    );
  }
  await importCsvText(t, org.id, focusCsv(rows), { now: NOW });
  await t.s.handle.query(`UPDATE cloud_accounts SET child_org_id = $2 WHERE org_id = $1 AND account_id = 'acct-a'`, [org.id, child[0]!.id]);
  return { childId: child[0]!.id };
}

async function closeMay(t: TestContext, orgId: string) {
  for (const p of ["aws", "azure"] as const) await closeBillingPeriod(t.s.db, orgId, p, "2026-05", NOW);
  await freezeClosedPeriods(t.s.db, NOW, { orgId });
}

describeEachDb("mcp allocation report tools", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });

  test("list_allocation_reports is the REST catalog (hidden reports left out); the report tools need reports:read", async () => {
    const org = await t.newOrg("Catalog");
    const client = await connectMcp(t, org.key);
    const catalog = (await rest(t, org, "/allocation-reports?page_size=100")).body as any[];
    const doc = await call(client, "list_allocation_reports");
    expect(doc.count).toBe(catalog.length);
    expect(doc.reports.map((r: any) => r.report_type)).toEqual(catalog.map((r) => r.report_type));
    for (const [i, r] of doc.reports.entries()) {
      const c = catalog[i];
      expect({ name: r.name, description: r.description, category: r.category, row_grain: r.row_grain, update_cadence: r.update_cadence, output_fields: r.output_fields }).toEqual({
        name: c.name, description: c.description, category: c.category, row_grain: c.row_grain, update_cadence: c.update_cadence, output_fields: c.output_fields,
      });
      expect(r.filters.map((f: any) => f.name)).toEqual(c.params.map((p: any) => p.name).filter((n: string) => !["year", "month", "format"].includes(n)));
      for (const m of r.money_fields) expect(c.output_fields.find((f: any) => f.name === m)?.type).toBe("number");
    }
    const tool = (await client.listTools()).tools.find((x) => x.name === "get_allocation_report")!;
    expect(tool.description).toContain("premiums_and_rebates_by_child_org");

    await setReportHidden(t.s.db, org.id, "cloud_bill_daily", true);
    const hidden = await call(client, "list_allocation_reports");
    expect(hidden.reports.map((r: any) => r.report_type)).not.toContain("cloud_bill_daily");
    expect(hidden.count).toBe(catalog.length - 1);
    const r: any = await client.callTool({ name: "get_allocation_report", arguments: { report_type: "cloud_bill_daily", month: "2026-06" } });
    expect(r.isError).toBe(true);
    expect(r.content[0].text).toBe((await rest(t, org, "/allocation-reports/cloud_bill_daily?year=2026&month=6")).body.message);
    await client.close();

    const noReports = await t.newOrg("No reports scope", ["assistant:read"]);
    const limited = await connectMcp(t, noReports.key);
    const names = (await limited.listTools()).tools.map((x) => x.name);
    for (const n of ["list_allocation_reports", "list_report_periods", "get_allocation_report"]) expect(names).not.toContain(n);
    expect(names).toContain("get_coverage_and_utilization");
    await limited.close();
  }, 120_000);

  test("list_report_periods equals REST /periods, with and without provider; finalized once the month is frozen", async () => {
    const org = await t.newOrg("Periods");
    await seed(t, org);
    const client = await connectMcp(t, org.key);
    const asRest = (doc: any) => doc.periods.map((p: any) => ({ year: Number(p.month.slice(0, 4)), month: Number(p.month.slice(5, 7)), status: p.status }));
    const before = await call(client, "list_report_periods", { report_type: "commitment_cost_by_account" });
    expect(before.periods).toEqual([{ month: "2026-06", status: "in_progress" }, { month: "2026-05", status: "in_progress" }]);
    expect((await call(client, "list_report_periods", { report_type: "premiums_and_rebates_by_child_org" })).periods).toEqual([]);
    await closeMay(t, org.id);
    for (const type of ["commitment_cost_by_account", "cloud_bill_by_account", "premiums_and_rebates_by_child_org", "commitment_inventory"]) {
      for (const provider of [undefined, "azure"]) {
        const doc = await call(client, "list_report_periods", { report_type: type, ...(provider ? { provider } : {}) });
        const r = await rest(t, org, `/allocation-reports/${type}/periods${provider ? `?provider=${provider}` : ""}`);
        expect(r.status).toBe(200);
        expect(asRest(doc), `${type} ${provider}`).toEqual(r.body);
      }
    }
    expect((await call(client, "list_report_periods", { report_type: "commitment_cost_by_account" })).periods).toEqual([{ month: "2026-06", status: "in_progress" }, { month: "2026-05", status: "finalized" }]);
    expect((await call(client, "list_report_periods", { report_type: "cloud_bill_by_account" })).periods).toEqual([{ month: "2026-05", status: "finalized" }]);
    const bad: any = await client.callTool({ name: "list_report_periods", arguments: { report_type: "no_such_report" } });
    expect(bad.isError).toBe(true);
    expect(bad.content[0].text).toBe((await rest(t, org, "/allocation-reports/no_such_report/periods")).body.message);
    await client.close();
  }, 120_000);

  test("get_allocation_report: the REST rows, paged; totals per currency over all rows; filters; the CSV link downloads the same month", async () => {
    const org = await t.newOrg("Rows");
    const { childId } = await seed(t, org);
    await closeMay(t, org.id);
    const client = await connectMcp(t, org.key);

    const all = (await rest(t, org, "/allocation-reports/cloud_bill_by_account?year=2026&month=5")).body;
    expect(all.rows.length).toBe(4);
    const doc = await call(client, "get_allocation_report", { report_type: "cloud_bill_by_account", month: "2026-05" });
    expect(doc).toMatchObject({ report_type: "cloud_bill_by_account", month: "2026-05", period_status: "finalized", total_rows: 4, returned_rows: 4, offset: 0, truncated: false, note: null });
    expect(doc.rows).toEqual(all.rows);
    // Totals: per currency, sums of the shown cents of every row; EUR apart.
    const expectTotals = (rows: any[], money: string[]) =>
      [...new Set(rows.map((r) => r.billing_currency))].sort().map((cur) => ({
        currency: cur,
        ...Object.fromEntries(money.map((m) => [m, rows.filter((r) => r.billing_currency === cur).reduce((a, r) => a + cents(r[m]), 0) / 100])),
      }));
    expect(doc.money_fields).toEqual(["ondemand_cost", "commitment_cost", "other_cost", "total_cost", "billed_cost"]);
    expect(doc.totals).toEqual(expectTotals(all.rows, doc.money_fields));
    expect(doc.totals.map((x: any) => x.currency)).toEqual(["EUR", "USD"]);
    expect(doc.totals[0].total_cost).toBe(12.35);

    // A page: the same rows as REST from the offset; totals still over all rows.
    const page = await call(client, "get_allocation_report", { report_type: "cloud_bill_by_account", month: "2026-05", limit: 2, offset: 1 });
    expect(page.rows).toEqual(all.rows.slice(1, 3));
    expect(page).toMatchObject({ total_rows: 4, returned_rows: 2, offset: 1, truncated: true });
    expect(page.totals).toEqual(doc.totals);
    const past = await call(client, "get_allocation_report", { report_type: "cloud_bill_by_account", month: "2026-05", offset: 10 });
    expect(past).toMatchObject({ total_rows: 4, returned_rows: 0, truncated: false });

    // Filters as REST takes them.
    const filtered = await call(client, "get_allocation_report", { report_type: "commitment_cost_by_account", month: "2026-05", provider: "aws", account_id: "acct-b" });
    const restFiltered = (await rest(t, org, "/allocation-reports/commitment_cost_by_account?year=2026&month=5&provider=aws&account_id=acct-b")).body;
    expect(filtered.rows).toEqual(restFiltered.rows);
    expect(filtered.rows.map((r: any) => r.account_id)).toEqual(["acct-b"]);
    expect(filtered.filters).toEqual({ provider: "aws", account_id: "acct-b" });

    // The CSV link: the REST download of the same month and filters.
    const prefix = `http://localhost/beta/v1/org/${org.id}`;
    expect(filtered.csv_url).toBe(`${prefix}/allocation-reports/commitment_cost_by_account?year=2026&month=5&format=csv&provider=aws&account_id=acct-b`);
    const csv = await rest(t, org, doc.csv_url.slice(prefix.length));
    expect(csv.status).toBe(200);
    const csvRows = parseCsv(csv.body as string);
    expect(csvRows.length).toBe(doc.rows.length);
    for (const [i, r] of csvRows.entries()) {
      expect(r.account_id).toBe(doc.rows[i].account_id);
      for (const m of doc.money_fields) expect(r[m]).toBe(Number(doc.rows[i][m]).toFixed(2));
    }

    // Chargeback of insured premiums by child organization, and its child_org_id filter.
    const byChild = await call(client, "get_allocation_report", { report_type: "premiums_and_rebates_by_child_org", month: "2026-05" });
    expect(byChild.rows).toEqual((await rest(t, org, "/allocation-reports/premiums_and_rebates_by_child_org?year=2026&month=5")).body.rows);
    expect(byChild.rows.map((r: any) => r.child_org_name)).toEqual([null, "Retail (child)"]);
    expect(cents(byChild.totals[0].premiums)).toBe(byChild.rows.reduce((a: number, r: any) => a + cents(r.premiums), 0));
    expect(cents(byChild.totals[0].premiums)).toBeGreaterThan(0);
    const one = await call(client, "get_allocation_report", { report_type: "premiums_and_rebates_by_child_org", month: "2026-05", child_org_id: childId });
    expect(one.rows.map((r: any) => r.child_org_id)).toEqual([childId]);

    // The inventory has no billing currency: no totals rather than a made-up one.
    const inv = await call(client, "get_allocation_report", { report_type: "commitment_inventory", month: "2026-05" });
    expect(inv.rows.map((r: any) => r.commitment_id)).toEqual(["ins-sp-1"]);
    expect(inv.totals).toEqual([]);
    await client.close();
  }, 120_000);

  test("get_allocation_report: an on_period_close report of an open month says so; errors are REST's", async () => {
    const org = await t.newOrg("Errors");
    await seed(t, org);
    const client = await connectMcp(t, org.key);
    const open = await call(client, "get_allocation_report", { report_type: "premiums_and_rebates_by_child_org", month: "2026-06" });
    expect(open).toMatchObject({ period_status: null, total_rows: 0, rows: [], totals: [] });
    expect(open.note).toContain("on_period_close");
    const live = await call(client, "get_allocation_report", { report_type: "commitment_cost_by_service", month: "2026-06" });
    expect(live.period_status).toBe("in_progress");
    expect(live.rows).toEqual((await rest(t, org, "/allocation-reports/commitment_cost_by_service?year=2026&month=6")).body.rows);

    const cases: [Record<string, unknown>, string][] = [
      [{ report_type: "no_such_report", month: "2026-05" }, "/allocation-reports/no_such_report?year=2026&month=5"],
      [{ report_type: "cloud_bill_by_service", month: "2027-05" }, "/allocation-reports/cloud_bill_by_service?year=2027&month=5"],
      [{ report_type: "cloud_bill_by_service", month: "2026-13" }, "/allocation-reports/cloud_bill_by_service?year=2026&month=13"],
      [{ report_type: "cloud_bill_by_service", month: "2026-05", child_org_id: "x" }, "/allocation-reports/cloud_bill_by_service?year=2026&month=5&child_org_id=x"],
      [{ report_type: "premiums_and_rebates_by_child_org", month: "2026-05", child_org_id: "not-a-uuid" }, "/allocation-reports/premiums_and_rebates_by_child_org?year=2026&month=5&child_org_id=not-a-uuid"],
      [{ report_type: "commitment_cost_by_account", month: "2026-05", account_id: "nobody" }, "/allocation-reports/commitment_cost_by_account?year=2026&month=5&account_id=nobody"],
    ];
    for (const [args, path] of cases) {
      const r: any = await client.callTool({ name: "get_allocation_report", arguments: args });
      const expected = await rest(t, org, path);
      expect(expected.status, path).toBeGreaterThanOrEqual(400);
      expect(r.isError, path).toBe(true);
      expect(r.content[0].text, path).toBe(expected.body.message);
    }
    await client.close();
  }, 120_000);
});

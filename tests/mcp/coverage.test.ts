/**
 * get_coverage_and_utilization reads the allocation reports' own rows (issue 15): per account it
 * equals commitment_cost_by_account (REST) to the cent, the Unused cost of a commitment is spread
 * over the accounts that used it (never booked to the holding account), and on-demand usage of
 * services no commitment touches counts against coverage (AWS used to show 100 % while RDS ran
 * on demand). Through the SDK client and the real app, both drivers.
 */
import { expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp, type TestContext } from "../helpers/app.ts";
import { closeBillingPeriod, freezeClosedPeriods } from "../../lib/reports/periods.ts";
import { focusCsv, getReport, importCsvText } from "../reports/helpers.ts";
import { NOW, connectMcp } from "./fixtures.ts";

const MONEY = ["commitment_used_cost", "commitment_unused_allocated_cost", "commitment_cost", "covered_ondemand_cost", "ondemand_cost", "savings"] as const;
const cents = (v: unknown) => Math.round(Number(v ?? 0) * 100);
const sumShown = (xs: unknown[]) => xs.reduce<number>((a, v) => a + cents(v), 0) / 100;
const rate6 = (x: number) => Math.round(x * 1e6) / 1e6;

async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
  const r: any = await client.callTool({ name, arguments: args });
  if (r.isError) throw new Error(`${name}: ${r.content?.[0]?.text}`);
  expect(JSON.parse(r.content[1].text)).toEqual(r.structuredContent);
  return r.structuredContent;
}

const SP = "arn:aws:savingsplans::900000000000:savingsplan/sp-cov";
const RO = "/providers/Microsoft.Capacity/reservationOrders/ro-eur";
const spRow = { CommitmentDiscountId: SP, CommitmentDiscountCategory: "Spend", CommitmentDiscountType: "Compute Savings Plans", PricingCategory: "Committed" };
const roRow = { CommitmentDiscountId: RO, CommitmentDiscountCategory: "Usage", CommitmentDiscountType: "Reservation", PricingCategory: "Committed" };

/** One FOCUS usage row of `month` (YYYY-MM) on `day`. */
function usage(month: string, day: number, o: Record<string, string | number | null>) {
  const next = month === "2026-05" ? "2026-06" : "2026-07";
  const d = `${month}-${String(day).padStart(2, "0")}`;
  return {
    BillingAccountId: "900000000000", BillingAccountName: "Payer", BillingPeriodStart: `${month}-01T00:00:00Z`, BillingPeriodEnd: `${next}-01T00:00:00Z`,
    ChargePeriodStart: `${d}T00:00:00Z`, ChargePeriodEnd: `${d}T23:59:59Z`, ServiceName: "Amazon Elastic Compute Cloud", ServiceCategory: "Compute",
    ...o,
  };
}
const ec2 = { ServiceName: "Amazon Elastic Compute Cloud", ServiceCategory: "Compute" };
const rds = { ServiceName: "Amazon Relational Database Service", ServiceCategory: "Databases" };
const od = (cost: string) => ({ BilledCost: cost, EffectiveCost: cost, ListCost: cost, ContractedCost: cost });
const eur = (month: string, day: number, o: Record<string, string | number | null>) =>
  usage(month, day, { ProviderName: "Microsoft", BillingAccountId: "eur-ea", BillingAccountName: "EUR enrollment", BillingCurrency: "EUR", ServiceName: "Virtual Machines", ServiceCategory: "Compute", ...o });

/**
 * AWS (USD): a savings plan held by acct-hold (its Unused cost lands there) and used by acct-b
 * and acct-c for EC2; in May no EC2 runs on demand at all, but RDS — which no commitment
 * covers — runs on demand in acct-b and acct-d. Azure (EUR): a reservation held by eur-hold,
 * used by eur-sub, plus on-demand VMs. Sub-cent amounts, so every figure goes through rounding.
 */
async function seed(t: TestContext, orgId: string) {
  await importCsvText(
    t,
    orgId,
    focusCsv([
      // May: EC2 fully covered; RDS on demand only.
      usage("2026-05", 3, { ...spRow, ...ec2, SubAccountId: "acct-hold", SubAccountName: "Holding", EffectiveCost: "10.005", ListCost: "0", ContractedCost: "0", CommitmentDiscountStatus: "Unused" }),
      usage("2026-05", 3, { ...spRow, ...ec2, SubAccountId: "acct-b", SubAccountName: "B", EffectiveCost: "30.004", ListCost: "45.006", ContractedCost: "45.006", CommitmentDiscountStatus: "Used" }),
      usage("2026-05", 4, { ...spRow, ...ec2, SubAccountId: "acct-c", SubAccountName: "C", EffectiveCost: "10.003", ListCost: "15.004", ContractedCost: "15.004", CommitmentDiscountStatus: "Used" }),
      usage("2026-05", 4, { ...rds, SubAccountId: "acct-d", SubAccountName: "D", ...od("20.007") }),
      usage("2026-05", 5, { ...rds, SubAccountId: "acct-b", SubAccountName: "B", ...od("5.002") }),
      usage("2026-05", 5, { SubAccountId: "acct-b", SubAccountName: "B", ChargeCategory: "Tax", ServiceName: "Tax", ServiceCategory: "Other", BilledCost: "1.50", EffectiveCost: "1.50", ListCost: "1.50", ContractedCost: "1.50" }),
      // June (current month): some EC2 on demand too.
      usage("2026-06", 2, { ...spRow, ...ec2, SubAccountId: "acct-hold", SubAccountName: "Holding", EffectiveCost: "4.002", ListCost: "0", ContractedCost: "0", CommitmentDiscountStatus: "Unused" }),
      usage("2026-06", 2, { ...spRow, ...ec2, SubAccountId: "acct-b", SubAccountName: "B", EffectiveCost: "8.001", ListCost: "12.003", ContractedCost: "12.003", CommitmentDiscountStatus: "Used" }),
      usage("2026-06", 3, { ...ec2, SubAccountId: "acct-c", SubAccountName: "C", ...od("3.333") }),
      usage("2026-06", 3, { ...rds, SubAccountId: "acct-d", SubAccountName: "D", ...od("6.667") }),
      // Azure in EUR.
      eur("2026-05", 6, { ...roRow, SubAccountId: "eur-hold", SubAccountName: "EUR holding", EffectiveCost: "1.001", ListCost: "0", ContractedCost: "0", CommitmentDiscountStatus: "Unused" }),
      eur("2026-05", 6, { ...roRow, SubAccountId: "eur-sub", SubAccountName: "EUR sub", EffectiveCost: "7.001", ListCost: "10.002", ContractedCost: "10.002", CommitmentDiscountStatus: "Used" }),
      eur("2026-05", 7, { SubAccountId: "eur-sub", SubAccountName: "EUR sub", ...od("12.345") }),
    ]),
    { now: NOW },
  );
}

const find = (rows: any[], month: string, key: string) => rows.find((r) => r.month === month && r.key === key);

describeEachDb("mcp get_coverage_and_utilization from the allocation reports", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });

  test("by account: equals commitment_cost_by_account (REST) to the cent per account and month, Unused spread to the users, never to the holding account; the bill's on-demand beside it", async () => {
    const org = await t.newOrg("Coverage by account");
    await seed(t, org.id);
    const client = await connectMcp(t, org.key);
    const args = { group_by: "account", start_month: "2026-05", end_month: "2026-06" };
    // May is still open: cloud_bill_by_account (on_period_close) shows nothing yet, the tool reads its query live.
    const open = await call(client, "get_coverage_and_utilization", args);
    expect(open.months).toEqual([{ month: "2026-05", status: "in_progress" }, { month: "2026-06", status: "in_progress" }]);

    await closeBillingPeriod(t.s.db, org.id, "aws", "2026-05", NOW);
    await closeBillingPeriod(t.s.db, org.id, "azure", "2026-05", NOW);
    await freezeClosedPeriods(t.s.db, NOW, { orgId: org.id });
    const doc = await call(client, "get_coverage_and_utilization", args);
    expect(doc.months).toEqual([{ month: "2026-05", status: "finalized" }, { month: "2026-06", status: "in_progress" }]);
    // Live before the close, frozen snapshot after: the same cents.
    expect(doc.rows).toEqual(open.rows);

    let compared = 0;
    for (const [year, month] of [[2026, 5], [2026, 6]] as const) {
      const m = `${year}-0${month}`;
      const rest = await getReport(t, org, "commitment_cost_by_account", `year=${year}&month=${month}`);
      for (const r of rest.rows) {
        const mine = find(doc.rows, m, r.account_id);
        const shown = ["commitment_used_cost", "commitment_unused_allocated_cost", "commitment_cost", "covered_ondemand_cost", "savings"];
        if (shown.every((k) => cents(r[k]) === 0)) continue;
        expect(mine, `${m} ${r.account_id}`).toBeDefined();
        expect(mine.currency).toBe(r.billing_currency);
        expect(mine.provider).toBe(r.provider);
        for (const k of shown) expect(cents(mine[k]), `${m} ${r.account_id} ${k}`).toBe(cents(r[k]));
        compared++;
      }
    }
    // acct-b, acct-c, eur-sub in May; acct-b in June.
    expect(compared).toBe(4);

    // The holding accounts keep none of the Unused cost: the users carry it (~3/4 and ~1/4 of 10.005).
    expect(find(doc.rows, "2026-05", "acct-hold")).toBeUndefined();
    expect(find(doc.rows, "2026-05", "eur-hold")).toBeUndefined();
    expect(Math.abs(cents(find(doc.rows, "2026-05", "acct-b").commitment_unused_allocated_cost) - 750)).toBeLessThanOrEqual(1);
    expect(Math.abs(cents(find(doc.rows, "2026-05", "acct-c").commitment_unused_allocated_cost) - 250)).toBeLessThanOrEqual(1);
    expect(cents(find(doc.rows, "2026-05", "eur-sub").commitment_unused_allocated_cost)).toBe(100);

    // On-demand: cloud_bill_by_account's ondemand_cost (May, finalized) per account.
    const bill = await getReport(t, org, "cloud_bill_by_account", "year=2026&month=5");
    for (const r of bill.rows.filter((x) => cents(x.ondemand_cost) !== 0)) expect(cents(find(doc.rows, "2026-05", r.account_id).ondemand_cost), r.account_id).toBe(cents(r.ondemand_cost));
    expect(find(doc.rows, "2026-05", "acct-d")).toMatchObject({ ondemand_cost: 20.01, commitment_cost: 0, coverage: 0, utilization: null });
    expect(find(doc.rows, "2026-06", "acct-c")).toMatchObject({ ondemand_cost: 3.33, commitment_cost: 0 });

    // Each row's ratios from its own shown cents.
    for (const r of doc.rows) {
      expect(r.commitment_cost).toBe(sumShown([r.commitment_used_cost, r.commitment_unused_allocated_cost]));
      expect(r.coverage).toBe(cents(r.covered_ondemand_cost) + cents(r.ondemand_cost) ? rate6(cents(r.covered_ondemand_cost) / (cents(r.covered_ondemand_cost) + cents(r.ondemand_cost))) : null);
      expect(r.utilization).toBe(cents(r.commitment_used_cost) + cents(r.commitment_unused_allocated_cost) ? rate6(cents(r.commitment_used_cost) / (cents(r.commitment_used_cost) + cents(r.commitment_unused_allocated_cost))) : null);
    }
    await client.close();
  }, 120_000);

  test("a service with on-demand usage and no commitment lowers coverage (AWS is not 100 % covered while RDS runs on demand)", async () => {
    const org = await t.newOrg("Coverage RDS");
    await seed(t, org.id);
    const client = await connectMcp(t, org.key);
    const bySvc = await call(client, "get_coverage_and_utilization", { group_by: "service", provider: "aws", start_month: "2026-05", end_month: "2026-05" });
    const ec2Row = find(bySvc.rows, "2026-05", "Amazon Elastic Compute Cloud");
    const rdsRow = find(bySvc.rows, "2026-05", "Amazon Relational Database Service");
    // EC2 alone is fully covered; RDS (20.007 + 5.002 on demand) has no commitment at all.
    expect(ec2Row).toMatchObject({ covered_ondemand_cost: 60.01, ondemand_cost: 0, coverage: 1 });
    expect(rdsRow).toMatchObject({ covered_ondemand_cost: 0, ondemand_cost: 25.01, commitment_cost: 0, coverage: 0 });
    // Tax is no usage: not on demand.
    expect(find(bySvc.rows, "2026-05", "Tax")).toBeUndefined();

    // AWS in May: 60.01 covered against 25.01 on demand = 0.705834, not 1.
    const byMonth = await call(client, "get_coverage_and_utilization", { group_by: "period", provider: "aws", start_month: "2026-05", end_month: "2026-05" });
    expect(byMonth.rows).toHaveLength(1);
    expect(byMonth.rows[0]).toMatchObject({ month: "2026-05", key: "2026-05", provider: "aws", currency: "USD", covered_ondemand_cost: 60.01, ondemand_cost: 25.01 });
    expect(byMonth.rows[0].coverage).toBe(0.705834);
    expect(bySvc.totals).toHaveLength(1);
    expect(bySvc.totals[0].coverage).toBe(0.705834);
    // The service rows agree with commitment_cost_by_service and cloud_bill_by_service (REST).
    const svc = await getReport(t, org, "commitment_cost_by_service", "year=2026&month=5&provider=aws");
    for (const r of svc.rows.filter((x) => cents(x.commitment_cost) || cents(x.covered_ondemand_cost))) expect(cents(find(bySvc.rows, "2026-05", r.service_name).commitment_cost)).toBe(cents(r.commitment_cost));
    const svcBill = await getReport(t, org, "cloud_bill_by_service", "year=2026&month=5&provider=aws");
    expect(cents(rdsRow.ondemand_cost)).toBe(cents(svcBill.rows.find((r) => r.service_name === "Amazon Relational Database Service")!.ondemand_cost));
    await client.close();
  }, 120_000);

  test("period rows are the month's account rows summed, per currency; totals per currency, EUR kept apart; the commitment grain has no coverage", async () => {
    const org = await t.newOrg("Coverage currencies");
    await seed(t, org.id);
    const client = await connectMcp(t, org.key);
    const window = { start_month: "2026-05", end_month: "2026-06" };
    const byAccount = await call(client, "get_coverage_and_utilization", { group_by: "account", ...window });
    const byPeriod = await call(client, "get_coverage_and_utilization", { group_by: "period", ...window });
    expect(byPeriod.rows.map((r: any) => [r.month, r.provider, r.currency])).toEqual([
      ["2026-05", "aws", "USD"],
      ["2026-05", "azure", "EUR"],
      ["2026-06", "aws", "USD"],
    ]);
    for (const p of byPeriod.rows) {
      const parts = byAccount.rows.filter((r: any) => r.month === p.month && r.provider === p.provider && r.currency === p.currency);
      for (const k of MONEY) expect(p[k], `${p.month} ${p.currency} ${k}`).toBe(sumShown(parts.map((r: any) => r[k])));
    }
    // EUR: reservation 7.001 used + 1.001 unused, 10.002 covered, 12.345 on demand — never added to USD.
    const eurTotals = byPeriod.totals.find((x: any) => x.currency === "EUR");
    expect(eurTotals).toMatchObject({ commitment_used_cost: 7, commitment_unused_allocated_cost: 1, commitment_cost: 8, covered_ondemand_cost: 10, ondemand_cost: 12.35, savings: 3 });
    expect(eurTotals.coverage).toBe(rate6(1000 / (1000 + 1235)));
    for (const doc of [byAccount, byPeriod]) {
      expect(doc.totals.map((x: any) => x.currency)).toEqual(["EUR", "USD"]);
      for (const tot of doc.totals) for (const k of MONEY) expect(tot[k]).toBe(sumShown(doc.rows.filter((r: any) => r.currency === tot.currency).map((r: any) => r[k])));
    }
    const usd = byPeriod.totals.find((x: any) => x.currency === "USD");
    // USD on demand: 25.01 in May + 3.33 + 6.67 in June; no EUR in it.
    expect(usd.ondemand_cost).toBe(35.01);

    const byCommitment = await call(client, "get_coverage_and_utilization", { group_by: "commitment", ...window });
    // Its months' status (read from the report's periods, no report rows) is the other groupings'.
    expect(byCommitment.months).toEqual(byPeriod.months);
    expect(byCommitment.rows.map((r: any) => [r.month, r.key, r.currency])).toEqual([
      ["2026-05", SP, "USD"],
      ["2026-05", RO, "EUR"],
      ["2026-06", SP, "USD"],
    ]);
    for (const r of byCommitment.rows) {
      expect(r.coverage).toBeNull();
      expect(r.ondemand_cost).toBe(0);
    }
    expect(find(byCommitment.rows, "2026-05", RO)).toMatchObject({ commitment_used_cost: 7, commitment_unused_allocated_cost: 1, utilization: 0.875 });

    // The limit keeps the largest rows; totals still cover them all.
    const one = await call(client, "get_coverage_and_utilization", { group_by: "account", ...window, limit: 1 });
    expect(one.rows).toHaveLength(1);
    expect(one.truncated).toBe(true);
    expect(one.total_rows).toBe(byAccount.rows.length);
    expect(one.totals).toEqual(byAccount.totals);
    await client.close();
  }, 120_000);

  test("the window: default the current month and the two before; months validated", async () => {
    const org = await t.newOrg("Coverage window");
    await seed(t, org.id);
    const client = await connectMcp(t, org.key);
    const d = await call(client, "get_coverage_and_utilization");
    expect(d.window).toEqual({ start_month: "2026-04", end_month: "2026-06" });
    expect(d.group_by).toBe("period");
    expect(d.months).toEqual([{ month: "2026-04", status: "no_data" }, { month: "2026-05", status: "in_progress" }, { month: "2026-06", status: "in_progress" }]);
    expect((await call(client, "get_coverage_and_utilization", { group_by: "commitment" })).months).toEqual(d.months);
    const bad = async (args: Record<string, unknown>, text: string) => {
      const r: any = await client.callTool({ name: "get_coverage_and_utilization", arguments: args });
      expect(r.isError, JSON.stringify(args)).toBe(true);
      expect(r.content[0].text).toContain(text);
    };
    await bad({ start_month: "2026-13" }, "start_month");
    await bad({ start_month: "2026-06", end_month: "2026-05" }, "end_month must not be before start_month");
    await bad({ end_month: "2026-07" }, "after the current month");
    await bad({ start_month: "2023-01", end_month: "2026-06" }, "at most 36 months");
    await bad({ start_month: "May 2026" }, "YYYY-MM");
    await client.close();
  }, 120_000);
});

/**
 * Golden figures for the FOCUS 1.2 specification's commitment-discount worked examples
 * (data/focus/spec_examples): each file is imported into its own organization and the
 * reports are read through the HTTP API. Expected numbers are worked out by hand in comments.
 * The examples leave out provider/account columns; EXAMPLE_DEFAULTS supplies them
 * (one account `acct-1`), and the examples have no ListCost unless stated, so the on-demand
 * equivalent falls back to EffectiveCost.
 */
import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { coverageAndUtilization, listCommitments } from "../../lib/billing/queries.ts";
import { closeBillingPeriod, freezeClosedPeriods } from "../../lib/reports/periods.ts";
import { focusCsv, getReport, importCsvText, importExample } from "./helpers.ts";

const NOW = new Date("2023-03-15T12:00:00Z");
const Q = "year=2023&month=1";

describeEachDb("allocation reports: FOCUS spec worked examples", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });

  async function orgWith(file: string) {
    const org = await t.newOrg(file);
    const r = await importExample(t, org.id, file);
    expect(r.rows_rejected).toBe(0);
    return org;
  }
  const util = async (orgId: string) => (await coverageAndUtilization(t.s.db, orgId, { from: "2023-01-01", to: "2023-02-01", groupBy: "period" }))[0]!;

  test("100 % utilization (usage scenario 1): all commitment cost is used", async () => {
    const org = await orgWith("commitment_discount_usage_scenario_1.csv");
    const { rows, period_status } = await getReport(t, org, "commitment_cost_by_account", Q);
    expect(period_status).toBe("in_progress"); // daily cadence, billing period still open
    // Used EffectiveCost 1.00; no Unused row → allocated 0; cost 1.00 + 0 = 1.00.
    expect(rows).toEqual([
      { month: "2023-01", provider: "aws", billing_currency: "USD", billing_account_id: "ba-1", account_id: "acct-1", account_name: "Account One", commitment_used_cost: 1, commitment_unused_allocated_cost: 0, commitment_cost: 1, covered_ondemand_cost: 1, savings: 0 },
    ]);
    // utilization = 1.00 / (1.00 + 0) = 100 %
    expect((await util(org.id)).utilization).toBe(1);
  });

  test("0 % utilization (usage scenario 2): the Unused cost stays on the holding account", async () => {
    const org = await orgWith("commitment_discount_usage_scenario_2.csv");
    const { rows } = await getReport(t, org, "commitment_cost_by_account", Q);
    // Used 0; Unused 1.00 with nothing using the commitment → kept where the Unused row is: 1.00.
    expect(rows.map((r) => [r.account_id, r.commitment_used_cost, r.commitment_unused_allocated_cost, r.commitment_cost, r.savings])).toEqual([["acct-1", 0, 1, 1, 0]]);
    // utilization = 0 / (0 + 1.00) = 0
    expect((await util(org.id)).utilization).toBe(0);
  });

  test("75/25 (usage scenario 3): utilization 75 %, the 0.25 unused goes to the user", async () => {
    const org = await orgWith("commitment_discount_usage_scenario_3.csv");
    const { rows } = await getReport(t, org, "commitment_cost_by_account", Q);
    // Used 0.75; Unused 0.25 spread pro rata to Used: acct-1 used 0.75 of 0.75 → 0.25; cost 1.00.
    expect(rows.map((r) => [r.commitment_used_cost, r.commitment_unused_allocated_cost, r.commitment_cost])).toEqual([[0.75, 0.25, 1]]);
    // utilization = 0.75 / (0.75 + 0.25) = 0.75
    expect((await util(org.id)).utilization).toBe(0.75);
    const daily = await getReport(t, org, "commitment_cost_daily", Q);
    expect(daily.rows).toEqual([{ date: "2023-01-01", provider: "aws", billing_currency: "USD", account_id: "acct-1", commitment_used_cost: 0.75, commitment_unused_allocated_cost: 0.25, commitment_cost: 1, savings: 0 }]);
  });

  test("75/25 across accounts: Unused cost follows each account's share of Used cost", async () => {
    const org = await t.newOrg("split");
    const C = { CommitmentDiscountId: "cd-1", CommitmentDiscountCategory: "Usage", CommitmentDiscountType: "Reserved Instance", PricingCategory: "Committed" };
    await importCsvText(t, org.id, focusCsv([
      { ...C, SubAccountId: "acct-a", SubAccountName: "A", EffectiveCost: "0.60", ListCost: "1.00", ContractedCost: "1.00", CommitmentDiscountStatus: "Used" },
      { ...C, SubAccountId: "acct-b", SubAccountName: "B", EffectiveCost: "0.15", ListCost: "0.25", ContractedCost: "0.25", CommitmentDiscountStatus: "Used" },
      { ...C, SubAccountId: "acct-hold", SubAccountName: "Holder", EffectiveCost: "0.25", ListCost: "0", ContractedCost: "0", CommitmentDiscountStatus: "Unused" },
    ]));
    const { rows } = await getReport(t, org, "commitment_cost_by_account", Q);
    // Used total 0.75. A: 0.25 × 0.60/0.75 = 0.20 → cost 0.80, savings 1.00 − 0.60 = 0.40.
    // B: 0.25 × 0.15/0.75 = 0.05 → cost 0.20, savings 0.25 − 0.15 = 0.10. Holder used nothing → 0.
    expect(rows.map((r) => [r.account_id, r.commitment_used_cost, r.commitment_unused_allocated_cost, r.commitment_cost, r.covered_ondemand_cost, r.savings])).toEqual([
      ["acct-a", 0.6, 0.2, 0.8, 1, 0.4],
      ["acct-b", 0.15, 0.05, 0.2, 0.25, 0.1],
      ["acct-hold", 0, 0, 0, 0, 0],
    ]);
    // Σ commitment_cost = 0.80 + 0.20 + 0 = 1.00 = Σ(Used + Unused) EffectiveCost
    expect(rows.reduce((s, r) => s + r.commitment_cost, 0)).toBeCloseTo(1, 10);
  });

  test("amounts in different billing currencies are never summed together", async () => {
    const org = await t.newOrg("currencies");
    await importCsvText(t, org.id, focusCsv([
      { BillingAccountId: "ba-usd", EffectiveCost: "10", BilledCost: "10", ListCost: "10", ContractedCost: "10" },
      { BillingAccountId: "ba-eur", SubAccountId: "acct-2", BillingCurrency: "EUR", EffectiveCost: "7", BilledCost: "7", ListCost: "7", ContractedCost: "7" },
    ]));
    const { rows } = await getReport(t, org, "cloud_bill_daily", Q);
    // One row per currency for the same day and provider: EUR 7.00, USD 10.00 (not 17.00).
    expect(rows.map((r) => [r.date, r.billing_currency, r.total_cost])).toEqual([["2023-01-01", "EUR", 7], ["2023-01-01", "USD", 10]]);
  });

  test("overage (usage scenario 4): Used commitment plus on-demand beyond it", async () => {
    const org = await orgWith("commitment_discount_usage_scenario_4.csv");
    const bill = await getReport(t, org, "cloud_bill_by_service", Q);
    // on-demand 0.50 (Standard row); commitment 1.00 (Used EffectiveCost); total 1.50; billed 0 + 0.50.
    expect(bill.rows.map((r) => [r.ondemand_cost, r.commitment_cost, r.other_cost, r.total_cost, r.billed_cost])).toEqual([[0.5, 1, 0, 1.5, 0.5]]);
    const u = await util(org.id);
    // coverage = covered on-demand equiv 1.00 / (1.00 + uncovered 0.50) = 2/3; utilization 1.00/1.00
    expect(u.coverage).toBeCloseTo(2 / 3, 10);
    expect(u.utilization).toBe(1);
  });

  test("100 % utilization without flexibility: savings = ListCost − EffectiveCost, purchase excluded", async () => {
    const org = await orgWith("one_hundred_percent_utilization_without_commitment_discount_flexibility.csv");
    const { rows } = await getReport(t, org, "commitment_cost_by_account", Q);
    // Used: EffectiveCost 1.50, ListCost 3.00 → covered 3.00, savings 3.00 − 1.50 = 1.50.
    // The Purchase row (BilledCost 1.50, EffectiveCost 0) is not counted again.
    expect(rows.map((r) => [r.commitment_used_cost, r.commitment_unused_allocated_cost, r.commitment_cost, r.covered_ondemand_cost, r.savings])).toEqual([[1.5, 0, 1.5, 3, 1.5]]);
    const bill = await getReport(t, org, "cloud_bill_by_service", Q);
    // total = Σ EffectiveCost = 0 (purchase) + 1.50 (used) = 1.50; billed = 1.50 (purchase) + 0 = 1.50
    expect(bill.rows.map((r) => [r.ondemand_cost, r.commitment_cost, r.total_cost, r.billed_cost])).toEqual([[0, 1.5, 1.5, 1.5]]);
  });

  test("0 % utilization without flexibility: unused commitment and on-demand usage", async () => {
    const org = await orgWith("zero_percent_utilization_without_commitment_discount_flexibility.csv");
    const { rows } = await getReport(t, org, "commitment_cost_by_account", Q);
    // Unused EffectiveCost 1.50, nothing Used → stays on acct-1; no covered usage, no savings.
    expect(rows.map((r) => [r.commitment_used_cost, r.commitment_unused_allocated_cost, r.commitment_cost, r.covered_ondemand_cost, r.savings])).toEqual([[0, 1.5, 1.5, 0, 0]]);
    const bill = await getReport(t, org, "cloud_bill_by_service", Q);
    // on-demand medium VM 2.00; commitment 1.50 (Unused) + 0 (Purchase); total 3.50; billed 1.50 + 0 + 2.00 = 3.50
    expect(bill.rows.map((r) => [r.ondemand_cost, r.commitment_cost, r.total_cost, r.billed_cost])).toEqual([[2, 1.5, 3.5, 3.5]]);
    expect((await util(org.id)).utilization).toBe(0);
  });

  test("flexibility, one resource: commitment covers a third of a large VM, the rest on demand", async () => {
    const org = await orgWith("one_hundred_percent_utilization_with_commitment_discount_flexibility_with_1_resource.csv");
    const { rows } = await getReport(t, org, "commitment_cost_by_account", Q);
    // Used EffectiveCost 0.50 with the row's ListCost 3.00 taken as given → savings 3.00 − 0.50 = 2.50.
    expect(rows.map((r) => [r.commitment_used_cost, r.commitment_cost, r.covered_ondemand_cost, r.savings])).toEqual([[0.5, 0.5, 3, 2.5]]);
    const bill = await getReport(t, org, "cloud_bill_by_service", Q);
    // on-demand 2.25 + commitment 0.50 = 2.75; billed 0.50 (purchase) + 0 + 2.25 = 2.75
    expect(bill.rows.map((r) => [r.ondemand_cost, r.commitment_cost, r.total_cost, r.billed_cost])).toEqual([[2.25, 0.5, 2.75, 2.75]]);
  });

  test("flexibility, two resources: two medium VMs use the 4 normalized units fully", async () => {
    const org = await orgWith("one_hundred_percent_utilization_with_commitment_discount_flexibility_with_2_resources.csv");
    const { rows } = await getReport(t, org, "commitment_cost_by_account", Q);
    // Used 1.00 + 1.00 = 2.00 (= Purchase BilledCost 2.00); ListCost 2.00 + 2.00 = 4.00; savings 4.00 − 2.00 = 2.00.
    expect(rows.map((r) => [r.commitment_used_cost, r.commitment_unused_allocated_cost, r.commitment_cost, r.covered_ondemand_cost, r.savings])).toEqual([[2, 0, 2, 4, 2]]);
    expect((await util(org.id)).utilization).toBe(1);
  });

  test("purchase scenario 1: a one-time 8,760 purchase becomes a one-year all-upfront commitment", async () => {
    const org = await orgWith("commitment_discount_purchase_scenario_1.csv");
    const [c] = await listCommitments(t.s.db, org.id, { status: "all" });
    // ChargePeriod 2023-01-01 → 2024-01-01 = 365 days → one_year; only a One-Time purchase → all_upfront.
    expect(c).toMatchObject({ provider_commitment_id: "<my-commitment-discount-id>", upfront_cost: 8760, contract_term: "one_year", payment_option: "all_upfront", starts_at: "2023-01-01T00:00:00.000Z", ends_at: "2024-01-01T00:00:00.000Z", holding_account_id: "acct-1" });
  });

  test("an all-upfront savings plan without CommitmentDiscountQuantity commits upfront ÷ term hours $/hour", async () => {
    const org = await t.newOrg("sp-upfront");
    const C = { CommitmentDiscountId: "sp-all-upfront", CommitmentDiscountCategory: "Spend", CommitmentDiscountType: "Savings Plan", PricingCategory: "Committed" };
    await importCsvText(t, org.id, focusCsv([
      // 8,760 paid once for 2023-01-01 → 2024-01-01 (8,760 hours), nothing recurring: $1.00/hour.
      { ...C, ChargeCategory: "Purchase", ChargeFrequency: "One-Time", ChargePeriodStart: "2023-01-01T00:00:00Z", ChargePeriodEnd: "2024-01-01T00:00:00Z", SubAccountId: "acct-a", SubAccountName: "A", BilledCost: "8760", EffectiveCost: "0", ListCost: "8760", ContractedCost: "8760" },
      { ...C, SubAccountId: "acct-a", SubAccountName: "A", EffectiveCost: "600", ListCost: "900", ContractedCost: "900", CommitmentDiscountStatus: "Used" },
    ]));
    const [c] = await listCommitments(t.s.db, org.id, { status: "all" });
    // Counted at 0 before, an upfront plan would have looked like no coverage to plan generation.
    expect(c).toMatchObject({ provider_commitment_id: "sp-all-upfront", payment_option: "all_upfront", upfront_cost: 8760 });
    expect(c!.amount).toBeCloseTo(1, 9);
  });

  test("purchase scenario 2 has an impossible timestamp (hour 30): that row is reported with its line", async () => {
    const org = await t.newOrg("p2");
    const r = await importExample(t, org.id, "commitment_discount_purchase_scenario_2.csv", { skipInvalid: true });
    // Header = line 1; rows on lines 2–4; the third row ends at 2023-02-01T30:00:00Z.
    expect(r.rows_imported).toBe(2);
    expect(r.rejects).toEqual([{ line: 4, errors: ['ChargePeriodEnd is not a date-time: "2023-02-01T30:00:00Z"'] }]);
  });

  test("insured commitment: premium on gross savings, rebate of unused value after lock-in, spread by savings share", async () => {
    const org = await t.newOrg("insured");
    const child = await t.s.handle.query<{ id: string }>(`INSERT INTO organizations (name, parent_id) VALUES ('Child X', $1) RETURNING id`, [org.id]);
    const C = { CommitmentDiscountId: "ins-1", CommitmentDiscountCategory: "Spend", CommitmentDiscountType: "Savings Plan", PricingCategory: "Committed" };
    await importCsvText(t, org.id, focusCsv([
      // Purchase on 2022-12-01 with a thirty-day lock-in → lock-in over on 2022-12-31.
      { ...C, ChargeCategory: "Purchase", ChargeFrequency: "Recurring", ChargePeriodStart: "2023-01-01T00:00:00Z", ChargePeriodEnd: "2023-02-01T00:00:00Z", SubAccountId: "acct-a", SubAccountName: "A", BilledCost: "10", EffectiveCost: "0", ListCost: "10", ContractedCost: "10", x_ContractTerm: "thirty_day_gris", x_FeeRate: "0.2", x_CommitmentStart: "2022-12-01T00:00:00Z" },
      { ...C, SubAccountId: "acct-a", SubAccountName: "A", EffectiveCost: "6", ListCost: "10", ContractedCost: "10", CommitmentDiscountStatus: "Used" },
      { ...C, SubAccountId: "acct-b", SubAccountName: "B", EffectiveCost: "3", ListCost: "5", ContractedCost: "5", CommitmentDiscountStatus: "Used" },
      { ...C, SubAccountId: "acct-a", SubAccountName: "A", EffectiveCost: "1", ListCost: "0", ContractedCost: "0", CommitmentDiscountStatus: "Unused" },
    ]));
    const [c] = await listCommitments(t.s.db, org.id, { status: "all" });
    // Lock-in = start 2022-12-01 + 30 days = 2022-12-31, before the Unused hour of 2023-01-01.
    expect(c).toMatchObject({ insured: true, contract_term: "thirty_day_gris", fee_rate: 0.2, starts_at: "2022-12-01T00:00:00.000Z", lock_in_ends_at: "2022-12-31T00:00:00.000Z" });
    await t.s.handle.query(`UPDATE cloud_accounts SET child_org_id = $2 WHERE org_id = $1 AND account_id = 'acct-a'`, [org.id, child[0]!.id]);
    await closeBillingPeriod(t.s.db, org.id, "aws", "2023-01", NOW);
    await freezeClosedPeriods(t.s.db, NOW, { orgId: org.id });
    const { rows, period_status } = await getReport(t, org, "premiums_and_rebates_by_account", Q);
    expect(period_status).toBe("finalized");
    // gross = covered 15 − (Used 9 + Unused 1) = 5; premium = 0.2 × 5 = 1.00; rebate = Unused after lock-in = 1.00.
    // Savings A = 10 − 6 = 4, B = 5 − 3 = 2 → shares 2/3 and 1/3.
    // A: premium 0.67, rebate 0.67, gross 3.33, net 3.33 − 0.67 + 0.67 = 3.33; B: 0.33, 0.33, 1.67, 1.67.
    expect(rows.map((r) => [r.account_id, r.premiums, r.rebates, r.gross_savings, r.net_savings])).toEqual([
      ["acct-a", 0.67, 0.67, 3.33, 3.33],
      ["acct-b", 0.33, 0.33, 1.67, 1.67],
    ]);
    const byChild = await getReport(t, org, "premiums_and_rebates_by_child_org", Q);
    // Unassigned (B) sorts first (null child), then Child X (A).
    expect(byChild.rows.map((r) => [r.child_org_name, r.premiums, r.rebates, r.net_savings])).toEqual([
      [null, 0.33, 0.33, 1.67],
      ["Child X", 0.67, 0.67, 3.33],
    ]);
  });
});

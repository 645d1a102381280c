/**
 * One figure everywhere (issue 26, item 9): every report's total of a money measure for a
 * provider-month (and for a billing account, where a report shows it) is the same rounded figure
 * — each invoice's total is computed by one rule from its exact sums and every report spreads it
 * over its rows — and the assistant's totals are sums of the reports' shown figures.
 *
 * - a regression: three one-cent mismatches of the old per-report partitions (two payers'
 *   half cents, savings derived from rounded covered − used, the bill's commitment cost losing
 *   its cent to on-demand in the largest remainder), through the HTTP app and the MCP tools;
 * - a property over generated months (providers, billing accounts in USD or EUR, accounts,
 *   services, days, commitments — insured too — usage, tax and credits with sub-cent parts):
 *   every pair of reports over a measure agrees per provider-month and per billing account, and
 *   get_spend, forecast_spend and get_coverage_and_utilization total what the reports show.
 */
import { expect, test } from "bun:test";
import fc from "fast-check";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp, type TestContext } from "../helpers/app.ts";
import { closeBillingPeriod, freezeClosedPeriods } from "../../lib/reports/periods.ts";
import { connectMcp } from "../mcp/fixtures.ts";
import { focusCsv, getReport, importCsvText } from "./helpers.ts";

const RUNS = Number(process.env.ONE_FIGURE_RUNS ?? 4);
const NOW = new Date("2026-06-17T12:00:00Z");
const MONTH = "2026-05";
const Q = "year=2026&month=5";

type Row = Record<string, any>;
const cents = (v: unknown) => Math.round(Number(v ?? 0) * 100);

/** Σ of `measure` in cents per key of `keyOf` over shown rows. */
function totals(rows: Row[], measure: string, keyOf: (r: Row) => string): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of rows) out.set(keyOf(r), (out.get(keyOf(r)) ?? 0) + cents(r[measure]));
  return out;
}
const byProvider = (r: Row) => `${r.provider}|${r.billing_currency}`;
const byInvoice = (r: Row) => `${r.provider}|${r.billing_currency}|${r.billing_account_id}`;
/** The non-zero totals, by key (a report without rows for a provider shows 0 of it). */
const sorted = (m: Map<string, number>) => [...m].filter(([, v]) => v !== 0).sort(([a], [b]) => a.localeCompare(b));

const BILL = ["cloud_bill_by_account", "cloud_bill_by_service", "cloud_bill_daily", "cloud_bill_by_resource"];
const BILL_MONEY = ["ondemand_cost", "commitment_cost", "other_cost", "total_cost", "billed_cost"];
const COMMIT = ["commitment_cost_by_account", "commitment_cost_by_service", "commitment_cost_daily"];
const COMMIT_MONEY = ["commitment_used_cost", "commitment_unused_allocated_cost", "commitment_cost", "savings"];
const PREMIUM = ["premiums_and_rebates_by_account", "premiums_and_rebates_by_child_org"];
const PREMIUM_MONEY = ["premiums", "rebates", "gross_savings", "net_savings"];
const ALL = [...BILL, ...COMMIT, ...PREMIUM];

async function reportsOf(t: TestContext, org: { id: string; key: string }): Promise<Record<string, Row[]>> {
  const out: Record<string, Row[]> = {};
  for (const type of ALL) {
    const r = await getReport(t, org, type, Q);
    expect(r.period_status).toBe("finalized");
    out[type] = r.rows;
  }
  return out;
}

/** Every pair of reports over a measure: equal totals per provider-month and per billing account where both show one. */
function checkPairs(reports: Record<string, Row[]>) {
  const same = (types: string[], measure: string, keyOf: (r: Row) => string) => {
    const [first, ...rest] = types;
    const want = sorted(totals(reports[first!]!, measure, keyOf));
    for (const other of rest) expect(sorted(totals(reports[other]!, measure, keyOf)), `${measure}: ${other} vs ${first}`).toEqual(want);
  };
  for (const m of BILL_MONEY) same(BILL, m, byProvider);
  for (const m of COMMIT_MONEY) same(COMMIT, m, byProvider);
  same(["commitment_cost_by_account", "commitment_cost_by_service"], "covered_ondemand_cost", byProvider);
  for (const m of PREMIUM_MONEY) same(PREMIUM, m, byProvider);
  // Across categories: the bill's commitment cost is the commitment reports' (no Purchase cost here).
  same(["cloud_bill_by_service", "commitment_cost_by_service"], "commitment_cost", byProvider);
  // Per billing account, where both reports show it.
  for (const m of ["commitment_cost"]) same(["cloud_bill_by_account", "commitment_cost_by_account"], m, byInvoice);
}

async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
  const r: any = await client.callTool({ name, arguments: args });
  if (r.isError) throw new Error(`${name}: ${r.content?.[0]?.text}`);
  return r.structuredContent;
}

/** The assistant's totals against the sums of the reports' shown figures (per currency). */
async function checkAssistant(client: Client, reports: Record<string, Row[]>) {
  const perCurrency = (rows: Row[], measure: string) => Object.fromEntries(sorted(totals(rows, measure, (r) => r.billing_currency)));
  const spendMeasures: [string, string][] = [
    ["effective_cost", "total_cost"],
    ["billed_cost", "billed_cost"],
    ["ondemand_cost", "ondemand_cost"],
    ["commitment_cost", "commitment_cost"],
    ["other_cost", "other_cost"],
  ];
  const window = { start_date: `${MONTH}-01`, end_date: "2026-06-01", limit: 1000 };
  for (const [group, report] of [["account", "cloud_bill_by_account"], ["service", "cloud_bill_by_service"], ["day", "cloud_bill_daily"], ["month", "cloud_bill_by_resource"]] as const) {
    const s = await call(client, "get_spend", { group_by: group, ...window });
    for (const [mine, theirs] of spendMeasures) {
      const got = Object.fromEntries(s.totals.map((x: Row) => [x.currency, cents(x[mine])]).filter(([, v]: [string, number]) => v !== 0));
      expect(got, `get_spend by ${group}: ${mine} = Σ ${report}.${theirs}`).toEqual(perCurrency(reports[report]!, theirs));
    }
    // A day or an account row is the report's row (summed over providers for the key).
    if (group === "day" || group === "account") {
      const col = group === "day" ? "date" : "account_id";
      const shown = totals(reports[report]!, "total_cost", (r) => `${r.billing_currency}|${r.provider}|${r[col]}`);
      for (const r of s.rows) expect(cents(r.effective_cost), `get_spend ${group} ${r.key}`).toBe(shown.get(`${r.currency}|${r.provider}|${r.key}`) ?? 0);
    }
  }
  // forecast_spend: the history's days are the daily report's shown days; its total their sum.
  const daily = reports.cloud_bill_daily!;
  for (const currency of [...new Set(daily.map((r) => r.billing_currency as string))]) {
    const f = await call(client, "forecast_spend", { currency, history_days: 60, horizon_days: 7 });
    const last = f.history.last_complete_date as string;
    const want = daily.filter((r) => r.billing_currency === currency && r.date <= last).reduce((a, r) => a + cents(r.total_cost), 0);
    expect(cents(f.history.total), `forecast_spend ${currency} history through ${last}`).toBe(want);
    const all = daily.filter((r) => r.billing_currency === currency).reduce((a, r) => a + cents(r.total_cost), 0);
    expect(cents(f.currencies.find((c: Row) => c.currency === currency).effective_cost)).toBe(all);
  }
  // get_coverage_and_utilization: totals are the commitment and bill reports' sums.
  for (const [group, commit, bill] of [["account", "commitment_cost_by_account", "cloud_bill_by_account"], ["service", "commitment_cost_by_service", "cloud_bill_by_service"], ["period", "commitment_cost_by_account", "cloud_bill_by_account"]] as const) {
    const c = await call(client, "get_coverage_and_utilization", { group_by: group, start_month: MONTH, end_month: MONTH, limit: 1000 });
    for (const m of ["commitment_used_cost", "commitment_unused_allocated_cost", "commitment_cost", "covered_ondemand_cost", "savings"]) {
      const got = Object.fromEntries(c.totals.map((x: Row) => [x.currency, cents(x[m])]).filter(([, v]: [string, number]) => v !== 0));
      const want = perCurrency(reports[commit]!, m);
      expect(got, `coverage by ${group}: ${m}`).toEqual(want);
    }
    const od = Object.fromEntries(c.totals.map((x: Row) => [x.currency, cents(x.ondemand_cost)]).filter(([, v]: [string, number]) => v !== 0));
    expect(od, `coverage by ${group}: ondemand_cost`).toEqual(perCurrency(reports[bill]!, "ondemand_cost"));
  }
}

async function importAndFreeze(t: TestContext, orgId: string, rows: Row[]) {
  await importCsvText(t, orgId, focusCsv(rows), { now: NOW });
  for (const provider of ["aws", "azure"] as const) {
    if (!rows.some((r) => r.ProviderName === PROVIDER_NAME[provider])) continue;
    await closeBillingPeriod(t.s.db, orgId, provider, MONTH, NOW);
  }
  await freezeClosedPeriods(t.s.db, NOW, { orgId });
}

const PROVIDER_NAME = { aws: "AWS", azure: "Microsoft" } as const;
const month = { BillingPeriodStart: `${MONTH}-01T00:00:00Z`, BillingPeriodEnd: "2026-06-01T00:00:00Z" };
const day = (d: number) => ({ ChargePeriodStart: `${MONTH}-${String(d).padStart(2, "0")}T00:00:00Z`, ChargePeriodEnd: `${MONTH}-${String(d + 1).padStart(2, "0")}T00:00:00Z` });
const committed = (cid: string, status: "Used" | "Unused") => ({
  CommitmentDiscountId: cid, CommitmentDiscountStatus: status, CommitmentDiscountCategory: "Usage", CommitmentDiscountType: "Reserved Instance", PricingCategory: "Committed",
});

describeEachDb("one figure everywhere", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });

  test("regression: the by-account, by-service and daily reports, the bill and commitment reports, and the assistant show the same cents", async () => {
    const org = await t.newOrg("one figure");
    const base = { ProviderName: "AWS", ...month, ...day(3), ServiceName: "AmazonEC2" };
    await importAndFreeze(t, org.id, [
      // Two AWS payers, 0.006 each: 0.01 on each invoice, so 0.02 for AWS in every report (the
      // provider-wide rounding of the service, daily and resource reports showed 0.01).
      { ...base, BillingAccountId: "payer-a", SubAccountId: "acct-a", EffectiveCost: "0.006", BilledCost: "0.006", ListCost: "0.006", ContractedCost: "0.006" },
      { ...base, BillingAccountId: "payer-b", SubAccountId: "acct-b", EffectiveCost: "0.006", BilledCost: "0.006", ListCost: "0.006", ContractedCost: "0.006" },
      // Azure: savings 0.0055 (covered 0.0115 − used 0.006) shows 0.01 in all three commitment
      // reports (by account and service derived it as 0.01 − 0.01 = 0.00); the commitment cost
      // 0.006 shows 0.01 in the bill reports too (there on-demand's 0.007 took the invoice's cent).
      { ...base, ...committed("ri-c", "Used"), ProviderName: "Microsoft", BillingAccountId: "payer-c", SubAccountId: "acct-c", EffectiveCost: "0.006", BilledCost: "0", ListCost: "0.0115", ContractedCost: "0.0115" },
      { ...base, ProviderName: "Microsoft", BillingAccountId: "payer-c", SubAccountId: "acct-c", EffectiveCost: "0.007", BilledCost: "0.007", ListCost: "0.007", ContractedCost: "0.007" },
    ]);
    const reports = await reportsOf(t, org);
    const of = (provider: string) => (type: string, m: string) => totals(reports[type]!, m, byProvider).get(`${provider}|USD`);
    const [aws, azure] = [of("aws"), of("azure")];
    for (const type of BILL) expect([type, aws(type, "total_cost"), aws(type, "billed_cost")]).toEqual([type, 2, 2]);
    for (const type of COMMIT) expect([type, azure(type, "savings"), azure(type, "commitment_cost")]).toEqual([type, 1, 1]);
    for (const type of BILL) expect([type, azure(type, "commitment_cost"), azure(type, "ondemand_cost"), azure(type, "total_cost")]).toEqual([type, 1, 0, 1]);
    checkPairs(reports);
    const client = await connectMcp(t, org.key);
    await checkAssistant(client, reports);
    await client.close();
  }, 120_000);

  const arbAmount = (min: number, max: number) => fc.integer({ min, max }).map((micro) => (micro / 1e6).toFixed(6));
  const arbLine = fc.record({
    provider: fc.constantFrom<keyof typeof PROVIDER_NAME>("aws", "azure"),
    payer: fc.integer({ min: 0, max: 2 }),
    account: fc.integer({ min: 0, max: 2 }),
    service: fc.constantFrom("Compute", "Storage", "Database"),
    day: fc.integer({ min: 1, max: 6 }),
    kind: fc.constantFrom("usage", "usage", "used", "used", "unused", "tax", "credit"),
    cost: arbAmount(1, 40_000_000),
    discount: arbAmount(0, 9_000_000),
    resource: fc.constantFrom<string | null>("r-1", "r-2", null),
  });
  /** Each provider's payers: USD, USD and EUR; payer 0's commitment is insured. */
  const rowOf = (l: Row): Row => {
    const payer = `${l.provider}-payer-${l.payer}`;
    const account = `${payer}-acct-${l.account}`;
    const cid = `${payer}-ri`;
    const row: Row = {
      ProviderName: PROVIDER_NAME[l.provider as keyof typeof PROVIDER_NAME], BillingAccountId: payer, SubAccountId: account, SubAccountName: account,
      BillingCurrency: l.payer === 2 ? "EUR" : "USD", ...month, ...day(l.day), ServiceName: l.service, ServiceCategory: l.service, ResourceId: l.resource,
      EffectiveCost: l.cost, BilledCost: l.cost, ListCost: l.cost, ContractedCost: l.cost,
    };
    const insured = l.payer === 0 ? { x_ContractTerm: "thirty_day_gris", x_FeeRate: "0.2", x_CommitmentStart: "2026-04-10T00:00:00Z" } : {};
    if (l.kind === "used") {
      const od = (Number(l.cost) + Number(l.discount)).toFixed(6);
      Object.assign(row, committed(cid, "Used"), insured, { BilledCost: "0", ListCost: od, ContractedCost: od });
    } else if (l.kind === "unused") Object.assign(row, committed(cid, "Unused"), insured, { SubAccountId: `${payer}-acct-0`, SubAccountName: `${payer}-acct-0`, BilledCost: "0" });
    else if (l.kind === "tax") Object.assign(row, { ChargeCategory: "Tax", ListCost: "0", ContractedCost: "0" });
    else if (l.kind === "credit") Object.assign(row, { ChargeCategory: "Credit", EffectiveCost: `-${l.cost}`, BilledCost: `-${l.cost}`, ListCost: "0", ContractedCost: "0" });
    return row;
  };

  test(
    "property: over generated months every pair of reports agrees per provider-month and billing account, and the assistant totals the reports' figures",
    async () => {
      let n = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(arbLine, { minLength: 4, maxLength: 30 }), async (lines) => {
          const org = await t.newOrg(`generated ${n++}`);
          await importAndFreeze(t, org.id, lines.map(rowOf));
          const reports = await reportsOf(t, org);
          checkPairs(reports);
          const client = await connectMcp(t, org.key);
          try {
            await checkAssistant(client, reports);
          } finally {
            await client.close();
          }
        }),
        { numRuns: RUNS, seed: Number(process.env.ONE_FIGURE_SEED ?? 20260926) },
      );
    },
    600_000,
  );
});

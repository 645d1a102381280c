/**
 * The report summaries an import builds (lib/billing/summaries.ts): they follow every replace of
 * a billing period, leave other billing accounts' periods alone, never go stale when accounts are
 * renamed or reassigned, and the import leaves fresh planner statistics behind.
 */
import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { createOrganization } from "../../lib/orgs/service.ts";
import { closeBillingPeriod, freezeClosedPeriods } from "../../lib/reports/periods.ts";
import { Readable } from "node:stream";
import { stringify } from "csv-stringify/sync";
import { rebuildAllBillingSummaries } from "../../lib/billing/summaries.ts";
import { importFocus } from "../../lib/billing/focus.ts";
import { FOCUS_GENERATOR_COLUMNS, generateFocusRows } from "../../lib/billing/generator.ts";
import { focusCsv, getReport, importCsvText } from "../reports/helpers.ts";

const NOW = new Date("2023-03-10T00:00:00Z");
const JAN = "year=2023&month=1";

/** A payer's January: on-demand and covered usage, a commitment with Unused hours, tax. */
function payerMonth(payer: string, scale: number) {
  const cid = `ri-${payer}`;
  const used = (acct: string, hour: number, cost: number) => ({
    BillingAccountId: payer, SubAccountId: acct, SubAccountName: `${acct} name`, ChargePeriodStart: `2023-01-0${hour}T00:00:00Z`, ChargePeriodEnd: `2023-01-0${hour}T01:00:00Z`,
    BilledCost: 0, EffectiveCost: cost * scale, ListCost: cost * scale * 2, CommitmentDiscountId: cid, CommitmentDiscountStatus: "Used", CommitmentDiscountCategory: "Usage", ResourceId: `i-${acct}`,
  });
  const rows: Record<string, string | number | null>[] = [
    used(`${payer}-a`, 1, 3),
    used(`${payer}-b`, 1, 1),
    used(`${payer}-a`, 2, 2),
    { BillingAccountId: payer, SubAccountId: `${payer}-a`, ChargePeriodStart: "2023-01-02T00:00:00Z", ChargePeriodEnd: "2023-01-02T01:00:00Z", EffectiveCost: 4 * scale, BilledCost: 0, CommitmentDiscountId: cid, CommitmentDiscountStatus: "Unused", CommitmentDiscountCategory: "Usage" },
    { BillingAccountId: payer, SubAccountId: `${payer}-b`, ChargePeriodStart: "2023-01-03T00:00:00Z", ChargePeriodEnd: "2023-01-03T01:00:00Z", EffectiveCost: 10 * scale, BilledCost: 10 * scale, ListCost: 10 * scale, ServiceName: "Storage Service", ResourceId: "bucket-1" },
    { BillingAccountId: payer, SubAccountId: `${payer}-b`, ChargeCategory: "Tax", ChargeFrequency: "One-Time", EffectiveCost: 1.5 * scale, BilledCost: 1.5 * scale, ServiceName: null },
  ];
  return rows.map((r) => ({ ...r, ListCost: r.ListCost ?? r.EffectiveCost!, ContractedCost: r.ListCost ?? r.EffectiveCost! }));
}

/** Summary rows with every amount as numeric text of 10 decimals (zero sums print alike whoever added them). */
const summaryRows = (t: ReturnType<typeof useTestApp>, orgId: string) =>
  Promise.all([
    t.s.handle.query(
      `SELECT provider, billing_account_id, month::text, grain, currency, account_id, account_name, service_category, service_name, day::text,
         round(ondemand_cost, 10)::text AS o, round(commitment_cost, 10)::text AS c, round(other_cost, 10)::text AS x, round(total_cost, 10)::text AS t, round(billed_cost, 10)::text AS b
       FROM billing_cost_summaries WHERE org_id = $1 ORDER BY 1, 2, 3, 4, 5, 6, 8, 9, 10`,
      [orgId],
    ),
    t.s.handle.query(
      `SELECT provider, billing_account_id, month::text, grain, currency, commitment_id, account_id, service_name, day::text,
         round(used_cost, 10)::text AS u, round(unused_cost, 10)::text AS n, round(covered_ondemand_cost, 10)::text AS c, round(savings, 10)::text AS s
       FROM commitment_usage_summaries WHERE org_id = $1 ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9`,
      [orgId],
    ),
  ]);

describeEachDb("report summaries", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });
  const byAccount = async (org: { id: string; key: string }, type: string, field: string) =>
    Object.fromEntries((await getReport(t, org, type, JAN)).rows.map((r) => [r.account_id, r[field]]));

  test("a re-import replaces its period's summaries; another billing account's stay; reports equal the raw rows", async () => {
    const org = await t.newOrg();
    await importCsvText(t, org.id, focusCsv(payerMonth("p1", 1)));
    await importCsvText(t, org.id, focusCsv(payerMonth("p2", 10)));
    expect(await byAccount(org, "commitment_cost_by_account", "commitment_cost")).toEqual({ "p1-a": 8.33, "p1-b": 1.67, "p2-a": 83.33, "p2-b": 16.67 });

    // p1 is delivered again with other amounts: its figures change, p2's do not.
    await importCsvText(t, org.id, focusCsv(payerMonth("p1", 2)));
    expect(await byAccount(org, "commitment_cost_by_account", "commitment_cost")).toEqual({ "p1-a": 16.67, "p1-b": 3.33, "p2-a": 83.33, "p2-b": 16.67 });
    const daily = await getReport(t, org, "cloud_bill_daily", JAN);
    const raw = await t.s.handle.query<{ day: string; total: string; billed: string }>(
      `SELECT to_char(charge_period_start AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, round(SUM(effective_cost), 2) AS total, round(SUM(billed_cost), 2) AS billed
       FROM billing_line_items WHERE org_id = $1 GROUP BY 1 ORDER BY 1`,
      [org.id],
    );
    expect(daily.rows.map((r) => [r.date, r.total_cost, r.billed_cost])).toEqual(raw.map((r) => [r.day, Number(r.total), Number(r.billed)]));
    const services = await getReport(t, org, "cloud_bill_by_service", JAN);
    expect(services.rows.map((r) => [r.service_name, r.ondemand_cost, r.commitment_cost, r.other_cost])).toEqual([
      [null, 0, 0, 18],
      ["Compute Service", 0, 120, 0],
      ["Storage Service", 120, 0, 0],
    ]);
    // Rebuilding everything from the raw rows changes nothing: the import kept them current.
    const before = await summaryRows(t, org.id);
    await t.s.db.transaction((tx) => rebuildAllBillingSummaries(tx, org.id));
    expect(await summaryRows(t, org.id)).toEqual(before);
  });

  test("the import's summaries equal PostgreSQL's own sums over the stored rows, digit for digit", async () => {
    const org = await t.newOrg();
    const gen = { now: new Date("2026-03-01T05:00:00Z"), months: 2, providers: ["aws", "azure", "gcp"] as const, accountsPerProvider: 2, resourcesPerAccount: 2, grain: "hourly" as const, seed: 5 };
    const csv = Readable.from((function* () {
      yield stringify([FOCUS_GENERATOR_COLUMNS as unknown as string[]]);
      for (const r of generateFocusRows({ ...gen, providers: [...gen.providers] })) yield stringify([r]);
    })());
    expect((await importFocus(t.s.db, org.id, csv)).rows_rejected).toBe(0);
    // Odd amounts, another currency, names that differ within an account, a row without service.
    await importCsvText(
      t,
      org.id,
      focusCsv([
        { BillingAccountId: "eur", BillingCurrency: "EUR", SubAccountName: "zeta", EffectiveCost: "1e-3", BilledCost: "0.00000000005", ListCost: "2.5E+1", ContractedCost: "7" },
        { BillingAccountId: "eur", BillingCurrency: "EUR", SubAccountName: "Alpha", EffectiveCost: "-0.00000000005", BilledCost: "12.345678901249", ListCost: "1", ContractedCost: "1", ServiceName: null },
        { BillingAccountId: "eur", BillingCurrency: "EUR", SubAccountName: null, EffectiveCost: "3.33333333335", BilledCost: "0", ListCost: "4.000000000051", ContractedCost: "0", CommitmentDiscountId: "sp-1", CommitmentDiscountStatus: "Used", CommitmentDiscountCategory: "Spend" },
        { BillingAccountId: "eur", BillingCurrency: "EUR", EffectiveCost: "-.99999999995", BilledCost: "0.99999999995", ListCost: "1e2", ContractedCost: "-2.5e-11", CommitmentDiscountId: "sp-1", CommitmentDiscountStatus: "Unused", CommitmentDiscountCategory: "Spend" },
      ]),
    );
    const fromImport = await summaryRows(t, org.id);
    // A payer whose amounts exceed what doubles hold exactly: summed exactly all the same.
    await importCsvText(t, org.id, focusCsv([{ BillingAccountId: "huge", EffectiveCost: "1234567890123456789.5", BilledCost: "1", ListCost: "1", ContractedCost: "1" }, { BillingAccountId: "huge", EffectiveCost: "0.5", BilledCost: "1", ListCost: "1", ContractedCost: "1" }]));
    const withHuge = await summaryRows(t, org.id);
    expect(withHuge[0].filter((r: any) => r.billing_account_id === "huge" && r.grain === "day").map((r: any) => r.t)).toEqual(["1234567890123456790.0000000000"]);
    expect(fromImport[0].length).toBeGreaterThan(50);
    expect(fromImport[1].length).toBeGreaterThan(50);
    // Each grain against a plain GROUP BY of the stored rows, written here without the import's
    // grouping sets and roll-ups (rounded to the stored scale, as summaryRows reads them).
    const r = (x: string) => `round(COALESCE(${x}, 0), 10)::text`;
    const costs = `${r("SUM(effective_cost) FILTER (WHERE charge_category = 'Usage' AND commitment_discount_id IS NULL)")} AS o,
      ${r("SUM(effective_cost) FILTER (WHERE (charge_category = 'Usage' AND commitment_discount_id IS NOT NULL) OR charge_category = 'Purchase')")} AS c,
      ${r("SUM(effective_cost) FILTER (WHERE charge_category NOT IN ('Usage', 'Purchase'))")} AS x, ${r("SUM(effective_cost)")} AS t, ${r("SUM(billed_cost)")} AS b`;
    const head = `provider, billing_account_id, billing_period::text AS month, billing_currency AS currency`;
    const plain = (sql: string) => t.s.handle.query(sql, [org.id]);
    const stored = (grain: string, cols: string) =>
      withHuge[0].filter((row: any) => row.grain === grain).map((row: any) => Object.fromEntries(["provider", "billing_account_id", "month", "currency", ...cols.split(" "), "o", "c", "x", "t", "b"].map((k) => [k, row[k]])));
    const sorted = (rows: any[]) => [...rows].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
    expect(stored("account", "account_id").length).toBeGreaterThan(5);
    expect(sorted(stored("account", "account_id"))).toEqual(
      sorted(await plain(`SELECT ${head}, COALESCE(sub_account_id, billing_account_id) AS account_id, ${costs} FROM billing_line_items WHERE org_id = $1 GROUP BY 1, 2, 3, 4, 5`)),
    );
    expect(sorted(stored("service", "service_category service_name"))).toEqual(
      sorted(await plain(`SELECT ${head}, service_category, service_name, ${costs} FROM billing_line_items WHERE org_id = $1 GROUP BY 1, 2, 3, 4, 5, 6`)),
    );
    expect(sorted(stored("day", "day"))).toEqual(
      sorted(await plain(`SELECT ${head}, (charge_period_start AT TIME ZONE 'UTC')::date::text AS day, ${costs} FROM billing_line_items WHERE org_id = $1 GROUP BY 1, 2, 3, 4, 5`)),
    );
    const commitmentRows = withHuge[1].filter((row: any) => row.grain === "account").map(({ provider, billing_account_id, month, currency, commitment_id, account_id, u, n, c, s }: any) => ({ provider, billing_account_id, month, currency, commitment_id, account_id, u, n, c, s }));
    const od = "COALESCE(list_cost, NULLIF(contracted_cost, 0), effective_cost)";
    expect(sorted(commitmentRows)).toEqual(
      sorted(
        await plain(
          `SELECT ${head}, commitment_discount_id AS commitment_id, COALESCE(sub_account_id, billing_account_id) AS account_id,
             ${r("SUM(effective_cost) FILTER (WHERE commitment_discount_status = 'Used')")} AS u, ${r("SUM(effective_cost) FILTER (WHERE commitment_discount_status = 'Unused')")} AS n,
             ${r(`SUM(${od}) FILTER (WHERE commitment_discount_status = 'Used')`)} AS c, ${r(`SUM(${od} - effective_cost) FILTER (WHERE commitment_discount_status = 'Used')`)} AS s
           FROM billing_line_items WHERE org_id = $1 AND charge_category = 'Usage' AND commitment_discount_id IS NOT NULL AND commitment_discount_status IN ('Used', 'Unused')
           GROUP BY 1, 2, 3, 4, 5, 6`,
        ),
      ),
    );
    expect(commitmentRows.length).toBeGreaterThan(5);
  }, 60_000);

  test("names and child organizations are joined when read: a reassigned account needs no re-import", async () => {
    const org = await t.newOrg();
    await importCsvText(t, org.id, focusCsv(payerMonth("p1", 1)));
    expect(await byAccount(org, "commitment_cost_by_account", "account_name")).toEqual({ "p1-a": "p1-a name", "p1-b": "p1-b name" });
    await t.s.handle.query(`UPDATE cloud_accounts SET name = 'Renamed' WHERE org_id = $1 AND account_id = 'p1-b'`, [org.id]);
    expect(await byAccount(org, "commitment_cost_by_account", "account_name")).toEqual({ "p1-a": "p1-a name", "p1-b": "Renamed" });

    const child = await createOrganization(t.s.db, { name: "Child", parentId: org.id });
    await t.s.handle.query(`UPDATE cloud_accounts SET child_org_id = $2 WHERE org_id = $1 AND account_id = 'p1-a'`, [org.id, child.id]);
    await t.s.handle.query(`UPDATE commitments SET insured = true, fee_rate = 0.1 WHERE org_id = $1`, [org.id]);
    // An on_period_close report shows a month once it is closed and frozen (the freeze reads the names then).
    await closeBillingPeriod(t.s.db, org.id, "aws", "2023-01", new Date());
    await freezeClosedPeriods(t.s.db, new Date(), { orgId: org.id });
    const premiums = await getReport(t, org, "premiums_and_rebates_by_child_org", JAN);
    // Gross savings of the insured commitment: covered 12 − (Used 6 + Unused 4) = 2; premium 10 %; p1-a holds 5/6 of the savings.
    expect(premiums.rows.map((r) => [r.child_org_id, r.gross_savings, r.premiums])).toEqual([
      [null, 0.33, 0.03],
      [child.id, 1.67, 0.17],
    ]);
  });

  test("an import leaves planner statistics of what it wrote", async () => {
    const org = await t.newOrg();
    await importCsvText(t, org.id, focusCsv(payerMonth("p1", 1)));
    const [stats] = await t.s.handle.query<{ tuples: number; analyzed: boolean }>(
      `SELECT c.reltuples::float8 AS tuples,
         EXISTS (SELECT 1 FROM pg_statistic s WHERE s.starelid = c.oid AND s.staattnum = (SELECT attnum FROM pg_attribute WHERE attrelid = c.oid AND attname = 'billing_period')) AS analyzed
       FROM pg_class c WHERE c.relname = 'billing_line_items'`,
    );
    expect(stats!.analyzed).toBe(true);
    expect(Number(stats!.tuples)).toBeGreaterThanOrEqual(6);
  });
});

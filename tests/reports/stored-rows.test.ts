/**
 * Reports at 10 M rows (docs/features/reports.md): the detail summaries equal a GROUP BY of the
 * raw rows; a large month's report rows are stored ahead by the import and served as computed
 * (JSON and CSV), recomputed when what they join changes (an account rename), replaced by a
 * re-import; the assistant's daily spend reads the day-grain summaries with the raw rows' result.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Readable } from "node:stream";
import { stringify } from "csv-stringify/sync";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { importFocus } from "../../lib/billing/focus.ts";
import { FOCUS_GENERATOR_COLUMNS, generateFocusRows } from "../../lib/billing/generator.ts";
import { dailySpendBy } from "../../lib/billing/dailySpend.ts";
import { REPORTS } from "../../lib/reports/catalog.ts";
import { liveReportSql, typed } from "../../lib/reports/service.ts";
import { storable } from "../../lib/reports/rowCache.ts";
import { queryRows } from "../../lib/billing/sql.ts";

const NOW = new Date("2026-03-20T05:00:00Z");
const MARCH = "year=2026&month=3";
const MIN = "COMMITOPS_REPORT_ROWS_MIN_LINE_ITEMS";
let before: string | undefined;
beforeAll(() => {
  before = process.env[MIN];
  // Every month counts as large here: the stored path on test-sized data.
  process.env[MIN] = "0";
});
afterAll(() => {
  if (before === undefined) delete process.env[MIN];
  else process.env[MIN] = before;
});

const gen = (seed: number) => ({ now: NOW, months: 2, providers: ["aws", "gcp"] as ("aws" | "gcp")[], accountsPerProvider: 3, resourcesPerAccount: 3, grain: "daily" as const, seed });
const csvOf = (g: ReturnType<typeof gen>) =>
  Readable.from(
    (function* () {
      yield stringify([FOCUS_GENERATOR_COLUMNS as unknown as string[]]);
      for (const r of generateFocusRows(g)) yield stringify([r]);
    })(),
  );

describeEachDb("reports stored ahead", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });

  /** The report's rows computed from the summaries right now (what a read without stored rows serves). */
  const computed = async (orgId: string, type: string, provider: "aws" | "gcp") => {
    const def = REPORTS.find((r) => r.report_type === type)!;
    const { text, params } = liveReportSql(def, orgId, "2026-03-01", provider, {});
    return (await queryRows<Record<string, unknown>>(t.s.db, text, params)).map((r) => typed(def, r));
  };
  const fetch = async (org: { id: string; key: string }, type: string, query = "", format = "json") => {
    const r = await t.request("GET", `/beta/v1/org/${org.id}/allocation-reports/${type}?${MARCH}&format=${format}${query}`, { key: org.key });
    expect(r.status).toBe(200);
    return format === "json" ? ((await r.json()) as { rows: Record<string, unknown>[] }).rows : await r.text();
  };
  const sets = (orgId: string) =>
    t.s.handle.query<{ report_type: string; provider: string; month: string; row_count: number }>(
      `SELECT report_type, provider, to_char(month, 'YYYY-MM') AS month, row_count FROM report_row_sets WHERE org_id = $1 ORDER BY 1, 2, 3`,
      [orgId],
    );

  test("detail summaries equal a GROUP BY of the raw rows", async () => {
    const org = await t.newOrg();
    expect((await importFocus(t.s.db, org.id, csvOf(gen(3)))).rows_rejected).toBe(0);
    const q = (sql: string) => t.s.handle.query<Record<string, string>>(sql, [org.id]);
    const sums = `round(SUM(ondemand), 10)::text AS o, round(SUM(commitment), 10)::text AS c, round(SUM(other), 10)::text AS x, round(SUM(total), 10)::text AS t, round(SUM(billed), 10)::text AS b`;
    const raw = `(SELECT li.*, COALESCE(li.sub_account_id, li.billing_account_id) AS account_id, (li.charge_period_start AT TIME ZONE 'UTC')::date::text AS day,
        CASE WHEN li.charge_category = 'Usage' AND li.commitment_discount_id IS NULL THEN li.effective_cost ELSE 0 END AS ondemand,
        CASE WHEN (li.charge_category = 'Usage' AND li.commitment_discount_id IS NOT NULL) OR li.charge_category = 'Purchase' THEN li.effective_cost ELSE 0 END AS commitment,
        CASE WHEN li.charge_category NOT IN ('Usage', 'Purchase') THEN li.effective_cost ELSE 0 END AS other, li.effective_cost AS total, li.billed_cost AS billed
      FROM billing_line_items li WHERE li.org_id = $1) r`;
    const detail = `(SELECT s.*, s.day::text AS d, s.ondemand_cost AS ondemand, s.commitment_cost AS commitment, s.other_cost AS other, s.total_cost AS total, s.billed_cost AS billed
      FROM billing_detail_summaries s WHERE s.org_id = $1 AND s.grain = '%') r`;
    for (const [grain, keys, rawKeys] of [
      ["resource", "provider, billing_account_id, month, account_id, resource_id, service_name", "provider, billing_account_id, billing_period, account_id, resource_id, service_name"],
      ["day_account", "provider, billing_account_id, month, d, account_id", "provider, billing_account_id, billing_period, day, account_id"],
      ["day_service", "provider, billing_account_id, month, d, service_category, service_name", "provider, billing_account_id, billing_period, day, service_category, service_name"],
    ]) {
      const fromSummaries = await q(`SELECT ${keys}, ${sums} FROM ${detail.replace("%", grain!)} GROUP BY ${keys} ORDER BY ${keys}`);
      const fromRaw = await q(`SELECT ${rawKeys}, ${sums} FROM ${raw} GROUP BY ${rawKeys} ORDER BY ${rawKeys}`);
      expect(fromSummaries.length).toBeGreaterThan(10);
      expect(fromSummaries.map((r) => Object.values(r).map(String))).toEqual(fromRaw.map((r) => Object.values(r).map(String)));
    }
    const marks = await q(`SELECT provider, billing_account_id, to_char(month, 'YYYY-MM') AS month, line_items::text AS n FROM billing_summary_periods WHERE org_id = $1 ORDER BY 1, 2, 3`);
    const counts = await q(`SELECT provider, billing_account_id, to_char(billing_period, 'YYYY-MM') AS month, count(*)::text AS n FROM billing_line_items WHERE org_id = $1 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`);
    expect(marks).toEqual(counts);
  }, 60_000);

  test("a large month's report rows are stored by the import and served as computed, JSON and CSV", async () => {
    const org = await t.newOrg();
    await importFocus(t.s.db, org.id, csvOf(gen(4)));
    const stored = await sets(org.id);
    const daily = REPORTS.filter(storable).map((r) => r.report_type);
    expect(new Set(stored.filter((s) => s.month === "2026-03").map((s) => s.report_type))).toEqual(new Set(daily));
    for (const type of daily) {
      const expected = [...(await computed(org.id, type, "aws")), ...(await computed(org.id, type, "gcp"))];
      expect(expected.length).toBeGreaterThan(0);
      expect(await fetch(org, type)).toEqual(expected);
    }
    // Filters apply to stored rows as to computed ones.
    const aws = await computed(org.id, "cloud_bill_by_resource", "aws");
    const one = String(aws[0]!.account_id);
    expect(await fetch(org, "cloud_bill_by_resource", `&provider=aws&account_id=${one}`)).toEqual(aws.filter((r) => r.account_id === one));
    // CSV from the stored rows: the same bytes as computing it (the stored rows dropped).
    const csvStored = await fetch(org, "commitment_cost_daily", "", "csv");
    await t.s.handle.query(`DELETE FROM report_row_sets WHERE org_id = $1`, [org.id]);
    expect(await fetch(org, "commitment_cost_daily", "", "csv")).toBe(csvStored);
  }, 60_000);

  test("an account rename recomputes the stored rows that show names; a re-import replaces them", async () => {
    const org = await t.newOrg();
    await importFocus(t.s.db, org.id, csvOf(gen(5)));
    const [acct] = await t.s.handle.query<{ account_id: string }>(`SELECT account_id FROM cloud_accounts WHERE org_id = $1 AND provider = 'aws' ORDER BY 1 LIMIT 1`, [org.id]);
    const names = async () => Object.fromEntries(((await fetch(org, "commitment_cost_by_account", "&provider=aws")) as any[]).map((r) => [r.account_id, r.account_name]));
    expect((await names())[acct!.account_id]).not.toBe("Renamed");
    const builtAt = async (type: string) =>
      (await t.s.handle.query<{ b: string }>(`SELECT built_at::text AS b FROM report_row_sets WHERE org_id = $1 AND report_type = $2 AND provider = 'aws' AND month = '2026-03-01'`, [org.id, type]))[0]?.b;
    const resourceBuilt = await builtAt("cloud_bill_by_resource");
    await t.s.handle.query(`UPDATE cloud_accounts SET name = 'Renamed' WHERE org_id = $1 AND provider = 'aws' AND account_id = $2`, [org.id, acct!.account_id]);
    expect((await names())[acct!.account_id]).toBe("Renamed");
    expect(await fetch(org, "commitment_cost_by_account", "&provider=aws")).toEqual(await computed(org.id, "commitment_cost_by_account", "aws"));
    // The report that joins no names was left as stored.
    await fetch(org, "cloud_bill_by_resource", "&provider=aws");
    expect(await builtAt("cloud_bill_by_resource")).toBe(resourceBuilt);

    // Another delivery of the months (other amounts): the stored rows follow it.
    const totals = async () => ((await fetch(org, "cloud_bill_daily")) as any[]).reduce((a, r) => a + Math.round(r.total_cost * 100), 0);
    const first = await totals();
    await importFocus(t.s.db, org.id, csvOf(gen(6)));
    const second = await totals();
    expect(second).not.toBe(first);
    expect(await fetch(org, "cloud_bill_daily")).toEqual([...(await computed(org.id, "cloud_bill_daily", "aws")), ...(await computed(org.id, "cloud_bill_daily", "gcp"))]);
    expect((await sets(org.id)).filter((s) => s.month === "2026-03").length).toBe(REPORTS.filter(storable).length * 2);
  }, 60_000);

  test("daily spend reads the day-grain summaries with the raw rows' result", async () => {
    const org = await t.newOrg();
    await importFocus(t.s.db, org.id, csvOf(gen(7)));
    for (const dimension of ["account", "service"] as const) {
      const q = { from: "2026-02-03T00:00:00Z", to: "2026-03-15T00:00:00Z", dimension };
      const fromSummaries = await dailySpendBy(t.s.db, org.id, q);
      const gcp = await dailySpendBy(t.s.db, org.id, { ...q, provider: "gcp" });
      expect(fromSummaries.points.length).toBeGreaterThan(30);
      // Without the marks the same query reads the raw rows.
      await t.s.handle.query(`UPDATE billing_summary_periods SET org_id = gen_random_uuid() WHERE org_id = $1`, [org.id]);
      expect(await dailySpendBy(t.s.db, org.id, q)).toEqual(fromSummaries);
      expect(await dailySpendBy(t.s.db, org.id, { ...q, provider: "gcp" })).toEqual(gcp);
      await t.s.handle.query(`DELETE FROM billing_summary_periods WHERE org_id <> $1 AND NOT EXISTS (SELECT 1 FROM organizations o WHERE o.id = billing_summary_periods.org_id)`, [org.id]);
      await t.s.db.transaction(async (tx) => {
        const { rebuildAllBillingSummaries } = await import("../../lib/billing/summaries.ts");
        await rebuildAllBillingSummaries(tx, org.id);
      });
    }
  }, 60_000);
});

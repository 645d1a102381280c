/**
 * Frozen months as older freezes left them, read through the HTTP app:
 * - snapshots frozen before totals were derived from the rounded parts (a total a cent off its
 *   parts) are shown with the total re-derived (`shownSnapshotRow`), in JSON and CSV;
 * - months frozen before static reports were snapshotted (no commitment_inventory rows in
 *   report_snapshots) show the live inventory, for the fetch and for /periods' row check.
 */
import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { closeBillingPeriod, freezeClosedPeriods } from "../../lib/reports/periods.ts";
import { focusCsv, getReport, importCsvText } from "./helpers.ts";

const now = new Date("2026-06-10T12:00:00Z");
const MAY = {
  BillingPeriodStart: "2026-05-01T00:00:00Z",
  BillingPeriodEnd: "2026-06-01T00:00:00Z",
  ChargePeriodStart: "2026-05-02T00:00:00Z",
  ChargePeriodEnd: "2026-05-02T01:00:00Z",
};
const Q = "year=2026&month=5";
const cents = (v: number) => Math.round(v * 100);

describeEachDb("frozen months as older freezes left them", (driver) => {
  const t = useTestApp(driver, { now: () => now });

  test("a snapshot total a cent off its parts (an old freeze) is shown as the sum of its parts, JSON and CSV", async () => {
    const org = await t.newOrg("old totals");
    await importCsvText(t, org.id, focusCsv([
      { ...MAY, SubAccountId: "a1", EffectiveCost: "1.005", BilledCost: "1.005", ListCost: "1.005", ContractedCost: "1.005" },
      { ...MAY, SubAccountId: "a1", ChargeCategory: "Tax", EffectiveCost: "0.005", BilledCost: "0.005", ListCost: "0.005", ContractedCost: "0.005" },
      { ...MAY, SubAccountId: "a2", EffectiveCost: "2.50", BilledCost: "2.50", ListCost: "2.50", ContractedCost: "2.50" },
    ]));
    await closeBillingPeriod(t.s.db, org.id, "aws", "2026-05", now);
    await freezeClosedPeriods(t.s.db, now, { orgId: org.id });
    const before = (await getReport(t, org, "cloud_bill_by_account", Q)).rows;
    for (const r of before) expect(cents(r.ondemand_cost) + cents(r.commitment_cost) + cents(r.other_cost)).toBe(cents(r.total_cost));

    // An old freeze stored total_cost rounded on its own: a cent away from the sum of its parts.
    const bumped = await t.s.handle.query(
      `UPDATE report_snapshots SET row = jsonb_set(row, '{total_cost}', to_jsonb((row->>'total_cost')::numeric + 0.01))
       WHERE org_id = $1 AND report_type = 'cloud_bill_by_account' AND row->>'account_id' = 'a1' RETURNING row->>'total_cost' AS total`,
      [org.id],
    );
    expect(bumped.length).toBe(1);
    expect(cents(Number((bumped[0] as any).total))).toBe(cents(before[0]!.total_cost) + 1);
    // Served as stored while the freeze is a current one (its rows are stored as shown)…
    expect(cents((await getReport(t, org, "cloud_bill_by_account", Q)).rows[0]!.total_cost)).toBe(cents(before[0]!.total_cost) + 1);
    // …and re-derived for an old freeze, which did not record its reports.
    await t.s.handle.query(`UPDATE billing_periods SET frozen_reports = NULL WHERE org_id = $1`, [org.id]);

    const after = await getReport(t, org, "cloud_bill_by_account", Q);
    expect(after.period_status).toBe("finalized");
    expect(after.rows).toEqual(before);
    for (const r of after.rows) expect(cents(r.ondemand_cost) + cents(r.commitment_cost) + cents(r.other_cost)).toBe(cents(r.total_cost));
    const csv = await t.request("GET", `/beta/v1/org/${org.id}/allocation-reports/cloud_bill_by_account?${Q}&format=csv`, { key: org.key });
    expect(csv.status).toBe(200);
    const [head, ...lines] = (await csv.text()).trim().split("\r\n");
    const cols = head!.split(",");
    const a1 = lines.map((l) => Object.fromEntries(l.split(",").map((v, i) => [cols[i], v]))).find((r) => r.account_id === "a1")!;
    expect(a1.total_cost).toBe(before[0]!.total_cost.toFixed(2));
  });

  test("a month frozen without a commitment_inventory snapshot (before static reports were frozen) shows the live inventory", async () => {
    const org = await t.newOrg("old freeze");
    const C = { ...MAY, CommitmentDiscountId: "ri-1", CommitmentDiscountCategory: "Usage", CommitmentDiscountType: "Reserved Instance", PricingCategory: "Committed" };
    await importCsvText(t, org.id, focusCsv([
      { ...C, SubAccountId: "a1", CommitmentDiscountStatus: "Used", EffectiveCost: "0.75", ListCost: "1", ContractedCost: "1" },
      { ...C, SubAccountId: "hold", CommitmentDiscountStatus: "Unused", EffectiveCost: "0.25", ListCost: "0", ContractedCost: "0" },
    ]));
    await closeBillingPeriod(t.s.db, org.id, "aws", "2026-05", now);
    await freezeClosedPeriods(t.s.db, now, { orgId: org.id });
    const periods = async (qs: string) => (await t.request("GET", `/beta/v1/org/${org.id}/allocation-reports/commitment_inventory/periods${qs}`, { key: org.key })).json();
    const may = { year: 2026, month: 5, status: "finalized" };

    // Frozen now: the snapshot is what is served (a later change of the live inventory does not show).
    const frozen = await getReport(t, org, "commitment_inventory", Q);
    expect(frozen.period_status).toBe("finalized");
    expect(frozen.rows.map((r) => [r.commitment_id, r.account_id])).toEqual([["ri-1", "hold"]]);
    await t.s.handle.query(`UPDATE commitments SET name = 'renamed', amount = 7 WHERE org_id = $1`, [org.id]);
    expect((await getReport(t, org, "commitment_inventory", Q)).rows).toEqual(frozen.rows);

    // As an old freeze left it: the month is frozen, with no record of which reports it wrote and no commitment_inventory snapshot.
    const gone = await t.s.handle.query(`DELETE FROM report_snapshots WHERE org_id = $1 AND report_type = 'commitment_inventory' RETURNING 1`, [org.id]);
    expect(gone.length).toBe(1);
    await t.s.handle.query(`UPDATE billing_periods SET frozen_reports = NULL WHERE org_id = $1`, [org.id]);
    const live = await getReport(t, org, "commitment_inventory", Q);
    expect(live.period_status).toBe("finalized");
    expect(live.rows).toEqual([{ ...frozen.rows[0], amount: 7 }]);
    expect((await getReport(t, org, "commitment_inventory", `${Q}&provider=aws`)).rows).toEqual(live.rows);
    // /periods' row check and the fetch's read the same live rows.
    expect(await periods("?account_id=hold")).toContainEqual(may);
    expect((await getReport(t, org, "commitment_inventory", `${Q}&account_id=hold`)).rows).toEqual(live.rows);
    expect(await periods("?account_id=nobody")).not.toContainEqual(may);
    const none = await t.request("GET", `/beta/v1/org/${org.id}/allocation-reports/commitment_inventory?${Q}&account_id=nobody`, { key: org.key });
    expect(none.status).toBe(404);
    // The other reports of that month still come from their snapshots.
    expect((await getReport(t, org, "cloud_bill_by_account", Q)).rows.length).toBe(2);
  });

  test("a month frozen while the inventory was empty stays empty: a commitment bought later never shows in it", async () => {
    const org = await t.newOrg("empty inventory at freeze");
    await importCsvText(t, org.id, focusCsv([{ ...MAY, SubAccountId: "a1", EffectiveCost: "1", ListCost: "1", ContractedCost: "1" }]));
    await closeBillingPeriod(t.s.db, org.id, "aws", "2026-05", now);
    await freezeClosedPeriods(t.s.db, now, { orgId: org.id });
    const frozen = await getReport(t, org, "commitment_inventory", Q);
    expect(frozen).toMatchObject({ period_status: "finalized", rows: [] });
    // A commitment bought afterwards (June) is in the live inventory, not in May's finalized one.
    const JUNE = { ...MAY, BillingPeriodStart: "2026-06-01T00:00:00Z", BillingPeriodEnd: "2026-07-01T00:00:00Z", ChargePeriodStart: "2026-06-02T00:00:00Z", ChargePeriodEnd: "2026-06-02T01:00:00Z" };
    const C = { ...JUNE, CommitmentDiscountId: "ri-late", CommitmentDiscountCategory: "Usage", CommitmentDiscountType: "Reserved Instance", PricingCategory: "Committed" };
    await importCsvText(t, org.id, focusCsv([{ ...C, SubAccountId: "a1", CommitmentDiscountStatus: "Used", EffectiveCost: "0.75", ListCost: "1", ContractedCost: "1" }]));
    const [{ n }] = await t.s.handle.query<{ n: number }>(`SELECT count(*)::int AS n FROM commitments WHERE org_id = $1`, [org.id]);
    expect(Number(n)).toBe(1);
    expect((await getReport(t, org, "commitment_inventory", Q)).rows).toEqual([]);
  });
});

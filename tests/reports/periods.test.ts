import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { autoCloseOldPeriods, closeBillingPeriod, freezeClosedPeriods, listBillingPeriods } from "../../lib/reports/periods.ts";
import { freezePeriodsJob } from "../../jobs/freeze-periods.ts";
import { focusCsv, getReport, importCsvText } from "./helpers.ts";

// "Now" is 2026-06-10: June is the current month, May the previous one, April older.
let now = new Date("2026-06-10T12:00:00Z");

const usage = (month: string, account: string, cost: string, extra: Record<string, string> = {}) => ({
  SubAccountId: account,
  SubAccountName: `Account ${account}`,
  BillingPeriodStart: `${month}-01T00:00:00Z`,
  BillingPeriodEnd: month === "2026-06" ? "2026-07-01T00:00:00Z" : month === "2026-05" ? "2026-06-01T00:00:00Z" : "2026-05-01T00:00:00Z",
  ChargePeriodStart: `${month}-02T00:00:00Z`,
  ChargePeriodEnd: `${month}-02T01:00:00Z`,
  BilledCost: cost,
  EffectiveCost: cost,
  ListCost: cost,
  ContractedCost: cost,
  ...extra,
});

describeEachDb("report periods, close and freeze", (driver) => {
  const t = useTestApp(driver, { now: () => now });

  test("current month: in_progress for a daily report, absent (and empty, unlabelled) for an on_period_close one", async () => {
    const org = await t.newOrg();
    await importCsvText(t, org.id, focusCsv([usage("2026-06", "a1", "10"), usage("2026-05", "a1", "20")]));
    const daily = await t.request("GET", `/beta/v1/org/${org.id}/allocation-reports/cloud_bill_by_service/periods`, { key: org.key });
    expect(daily.status).toBe(200);
    // Previous month stays in progress until its invoice closes (DESIGN §8).
    expect(await daily.json()).toEqual([{ year: 2026, month: 6, status: "in_progress" }, { year: 2026, month: 5, status: "in_progress" }]);
    const onClose = await t.request("GET", `/beta/v1/org/${org.id}/allocation-reports/cloud_bill_by_account/periods`, { key: org.key });
    expect(await onClose.json()).toEqual([]);
    const cur = await getReport(t, org, "cloud_bill_by_account", "year=2026&month=6");
    expect(cur).toMatchObject({ period_status: null, rows: [] });
    const preview = await getReport(t, org, "cloud_bill_by_service", "year=2026&month=6");
    expect(preview.rows.map((r) => r.total_cost)).toEqual([10]);
    // A month with no data at all is not a period.
    const r = await t.request("GET", `/beta/v1/org/${org.id}/allocation-reports/cloud_bill_by_service?year=2025&month=6`, { key: org.key });
    expect(r.status).toBe(404);
    expect((await r.json()).code).toBe("period_not_available");
  });

  test("periods are listed most recent first across years, and follow the report's filters", async () => {
    const org = await t.newOrg();
    const next = (m: string) => {
      const [y, mo] = m.split("-").map(Number);
      return mo === 12 ? `${y! + 1}-01` : `${y}-${String(mo! + 1).padStart(2, "0")}`;
    };
    const row = (m: string) => ({ ...usage(m, "a1", "1"), BillingPeriodEnd: `${next(m)}-01T00:00:00Z` });
    await importCsvText(t, org.id, focusCsv(["2025-11", "2025-12", "2026-01", "2026-05", "2026-06"].map(row)));
    for (const m of ["2025-11", "2025-12", "2026-01"]) await closeBillingPeriod(t.s.db, org.id, "aws", m, now);
    await freezeClosedPeriods(t.s.db, now, { orgId: org.id });
    const periods = async (qs = "") => (await t.request("GET", `/beta/v1/org/${org.id}/allocation-reports/cloud_bill_by_service/periods${qs}`, { key: org.key })).json();
    expect(await periods()).toEqual([
      { year: 2026, month: 6, status: "in_progress" },
      { year: 2026, month: 5, status: "in_progress" },
      { year: 2026, month: 1, status: "finalized" },
      { year: 2025, month: 12, status: "finalized" },
      { year: 2025, month: 11, status: "finalized" },
    ]);
    // With no gcp data only the current month (always previewable for a daily report) is listed.
    expect(await periods("?provider=gcp")).toEqual([{ year: 2026, month: 6, status: "in_progress" }]);
    expect((await periods("?provider=aws")).length).toBe(5);
  });

  test("closing the invoice finalizes the month; late data never changes the finalized CSV", async () => {
    const org = await t.newOrg();
    await importCsvText(t, org.id, focusCsv([usage("2026-05", "a1", "20"), usage("2026-05", "a2", "5.5")]));
    await closeBillingPeriod(t.s.db, org.id, "aws", "2026-05", now);
    const frozen = await freezeClosedPeriods(t.s.db, now, { orgId: org.id });
    expect(frozen.map((f) => [f.provider, f.month])).toEqual([["aws", "2026-05-01"]]);
    const periods = await t.request("GET", `/beta/v1/org/${org.id}/allocation-reports/cloud_bill_by_account/periods`, { key: org.key });
    expect(await periods.json()).toEqual([{ year: 2026, month: 5, status: "finalized" }]);
    const csv = async (type: string) => {
      const r = await t.request("GET", `/beta/v1/org/${org.id}/allocation-reports/${type}?year=2026&month=5&format=csv`, { key: org.key });
      expect(r.status).toBe(200);
      return new Uint8Array(await r.arrayBuffer());
    };
    const before = { bill: await csv("cloud_bill_by_account"), svc: await csv("cloud_bill_by_service"), daily: await csv("cloud_bill_daily") };
    expect(new TextDecoder().decode(before.bill)).toContain("a1,Account a1,20.00,0.00,0.00,20.00,20.00");
    // Late rows and a re-import (correction) of the closed month.
    await importCsvText(t, org.id, focusCsv([usage("2026-05", "a1", "99"), usage("2026-05", "a3", "1", { ChargeClass: "Correction" })]));
    const live = await t.s.handle.query<{ s: string }>(`SELECT SUM(effective_cost) AS s FROM billing_line_items WHERE org_id = $1`, [org.id]);
    expect(Number(live[0]!.s)).toBe(100); // the data did change…
    expect(await csv("cloud_bill_by_account")).toEqual(before.bill); // …the finalized reports did not, byte for byte
    expect(await csv("cloud_bill_by_service")).toEqual(before.svc);
    expect(await csv("cloud_bill_daily")).toEqual(before.daily);
  });

  test("filters apply to frozen rows too", async () => {
    const org = await t.newOrg();
    await importCsvText(t, org.id, focusCsv([usage("2026-05", "a1", "20"), usage("2026-05", "a2", "5.5")]));
    await closeBillingPeriod(t.s.db, org.id, "aws", "2026-05", now);
    await freezeClosedPeriods(t.s.db, now, { orgId: org.id });
    const rep = await getReport(t, org, "cloud_bill_by_account", "year=2026&month=5&account_id=a2&provider=aws");
    expect(rep.rows.map((r) => [r.account_id, r.total_cost])).toEqual([["a2", 5.5]]);
    // Periods follow the filters: no gcp data in May → not a gcp period.
    const r = await t.request("GET", `/beta/v1/org/${org.id}/allocation-reports/cloud_bill_by_account?year=2026&month=5&provider=gcp`, { key: org.key });
    expect(r.status).toBe(404);
    expect((await r.json()).code).toBe("period_not_available");
  });

  test("concurrent freeze runs freeze each period exactly once", async () => {
    const org = await t.newOrg();
    await importCsvText(t, org.id, focusCsv([usage("2026-05", "a1", "20"), usage("2026-04", "a1", "7"), usage("2026-05", "g1", "3", { ProviderName: "Google Cloud" })]));
    for (const [p, m] of [["aws", "2026-05"], ["aws", "2026-04"], ["gcp", "2026-05"]] as const) await closeBillingPeriod(t.s.db, org.id, p, m, now);
    const runs = await Promise.all([freezeClosedPeriods(t.s.db, now, { orgId: org.id }), freezeClosedPeriods(t.s.db, now, { orgId: org.id }), freezeClosedPeriods(t.s.db, now, { orgId: org.id })]);
    expect(runs.flat().map((f) => `${f.provider}/${f.month}`).sort()).toEqual(["aws/2026-04-01", "aws/2026-05-01", "gcp/2026-05-01"]);
    const dup = await t.s.handle.query(`SELECT report_type, provider, month, seq FROM report_snapshots WHERE org_id = $1 GROUP BY 1, 2, 3, 4 HAVING count(*) > 1`, [org.id]);
    expect(dup).toEqual([]);
    // A second pass finds nothing left to do.
    expect(await freezeClosedPeriods(t.s.db, now, { orgId: org.id })).toEqual([]);
  });

  test("a freeze that fails half-way leaves nothing behind and is retried whole", async () => {
    const org = await t.newOrg();
    await importCsvText(t, org.id, focusCsv([usage("2026-05", "a1", "20")]));
    await closeBillingPeriod(t.s.db, org.id, "aws", "2026-05", now);
    // Make the snapshot of one report (late in the catalog) fail, as a crash would.
    await t.s.handle.query(`ALTER TABLE report_snapshots ADD CONSTRAINT freeze_crash_test CHECK (org_id <> '${org.id}' OR report_type <> 'cloud_bill_by_resource') NOT VALID`);
    try {
      await expect(freezeClosedPeriods(t.s.db, now, { orgId: org.id })).rejects.toThrow();
    } finally {
      await t.s.handle.query(`ALTER TABLE report_snapshots DROP CONSTRAINT freeze_crash_test`);
    }
    const left = await t.s.handle.query(`SELECT count(*)::int AS n FROM report_snapshots WHERE org_id = $1`, [org.id]);
    expect(Number((left[0] as any).n)).toBe(0);
    expect((await listBillingPeriods(t.s.db, org.id))[0]!.frozen_at).toBeNull();
    const done = await freezeClosedPeriods(t.s.db, now, { orgId: org.id });
    expect(done.length).toBe(1);
    expect((await listBillingPeriods(t.s.db, org.id))[0]!.frozen_at).not.toBeNull();
  });

  test("the freeze job closes periods older than the previous month; FOCUS BillingPeriodStatus=Closed closes too", async () => {
    const org = await t.newOrg();
    await importCsvText(t, org.id, focusCsv([usage("2026-04", "a1", "7"), usage("2026-05", "a1", "20")]));
    await freezePeriodsJob.run(t.s);
    const ps = await listBillingPeriods(t.s.db, org.id);
    expect(ps.map((p) => [p.month, p.status, p.frozen_at !== null])).toEqual([["2026-05-01", "open", false], ["2026-04-01", "closed", true]]);
    expect(await autoCloseOldPeriods(t.s.db, now)).toBe(0);
    const csv = focusCsv([usage("2026-05", "a1", "20")]).replace(/\n/, ",BillingPeriodStatus\n").split("\n").map((l, i) => (i === 0 || !l ? l : `${l},Closed`)).join("\n");
    await importCsvText(t, org.id, csv);
    expect((await listBillingPeriods(t.s.db, org.id)).find((p) => p.month === "2026-05-01")?.status).toBe("closed");
  });
  test("one label rule per cadence: finalized only once closed and frozen; in_progress (daily, static) or absent (on_period_close) before", async () => {
    const org = await t.newOrg();
    await importCsvText(t, org.id, focusCsv([usage("2026-05", "a1", "20"), usage("2026-06", "a1", "3")]));
    const periods = async (type: string) => (await t.request("GET", `/beta/v1/org/${org.id}/allocation-reports/${type}/periods`, { key: org.key })).json();
    const labels = async () => ({
      daily: await periods("cloud_bill_by_service"),
      onClose: await periods("cloud_bill_by_account"),
      static: await periods("commitment_inventory"),
    });
    const open = { year: 2026, month: 5, status: "in_progress" };
    const current = { year: 2026, month: 6, status: "in_progress" };
    expect(await labels()).toEqual({ daily: [current, open], onClose: [], static: [current, open] });

    // Closed but not frozen yet: nothing a client sees changes, the rows can still move.
    await t.s.handle.query(`UPDATE billing_periods SET status = 'closed', closed_at = now() WHERE org_id = $1 AND month = '2026-05-01'`, [org.id]);
    expect(await labels()).toEqual({ daily: [current, open], onClose: [], static: [current, open] });
    const waiting = await getReport(t, org, "cloud_bill_by_account", "year=2026&month=5");
    expect(waiting).toMatchObject({ period_status: null, rows: [] });
    expect((await getReport(t, org, "commitment_inventory", "year=2026&month=5")).period_status).toBe("in_progress");

    // Frozen: finalized for every cadence, and the fetch says the same as /periods.
    expect((await freezeClosedPeriods(t.s.db, now, { orgId: org.id })).map((f) => f.month)).toEqual(["2026-05-01"]);
    const done = { year: 2026, month: 5, status: "finalized" };
    expect(await labels()).toEqual({ daily: [current, done], onClose: [done], static: [current, done] });
    for (const type of ["cloud_bill_by_service", "cloud_bill_by_account", "commitment_inventory"]) {
      expect((await getReport(t, org, type, "year=2026&month=5")).period_status).toBe("finalized");
      const current = (await getReport(t, org, type, "year=2026&month=6")).period_status;
      if (type === "cloud_bill_by_account") expect(current).toBeNull();
      else expect(current).toBe("in_progress");
    }
    expect((await getReport(t, org, "cloud_bill_by_account", "year=2026&month=5")).rows.map((r) => r.total_cost)).toEqual([20]);
  });

  test("a month that has not ended is never frozen, even when its data says Closed", async () => {
    const org = await t.newOrg();
    const csv = focusCsv([usage("2026-06", "a1", "3")]).replace(/\n/, ",BillingPeriodStatus\n").split("\n").map((l, i) => (i === 0 || !l ? l : `${l},Closed`)).join("\n");
    await importCsvText(t, org.id, csv);
    expect((await listBillingPeriods(t.s.db, org.id)).map((p) => [p.month, p.status])).toEqual([["2026-06-01", "closed"]]);
    expect(await freezeClosedPeriods(t.s.db, now, { orgId: org.id })).toEqual([]);
    const daily = await t.request("GET", `/beta/v1/org/${org.id}/allocation-reports/cloud_bill_by_service/periods`, { key: org.key });
    expect(await daily.json()).toEqual([{ year: 2026, month: 6, status: "in_progress" }]);
    // Late rows of the running month still show.
    await importCsvText(t, org.id, focusCsv([usage("2026-06", "a1", "4")]));
    expect((await getReport(t, org, "cloud_bill_by_service", "year=2026&month=6")).rows.map((r) => r.total_cost)).toEqual([4]);
  });

  test("/periods applies the row filters: a month with no row for the account is not listed, and its fetch is 404", async () => {
    const org = await t.newOrg();
    await importCsvText(t, org.id, focusCsv([usage("2026-04", "a1", "7"), usage("2026-05", "a2", "20"), usage("2026-06", "a1", "1")]));
    for (const m of ["2026-04", "2026-05"]) await closeBillingPeriod(t.s.db, org.id, "aws", m, now);
    await freezeClosedPeriods(t.s.db, now, { orgId: org.id });
    const periods = async (type: string, qs: string) => {
      const r = await t.request("GET", `/beta/v1/org/${org.id}/allocation-reports/${type}/periods${qs}`, { key: org.key });
      expect(r.status).toBe(200);
      return (await r.json()).map((p: any) => `${p.year}-${p.month}:${p.status}`);
    };
    expect(await periods("cloud_bill_by_account", "")).toEqual(["2026-5:finalized", "2026-4:finalized"]);
    expect(await periods("cloud_bill_by_account", "?account_id=a1")).toEqual(["2026-4:finalized"]);
    expect(await periods("cloud_bill_by_account", "?account_id=a2")).toEqual(["2026-5:finalized"]);
    expect(await periods("cloud_bill_by_account", "?account_id=nobody")).toEqual([]);
    // A daily report keeps its current month (the preview) whatever the filter.
    expect(await periods("cloud_bill_by_resource", "?account_id=a2")).toEqual(["2026-6:in_progress", "2026-5:finalized"]);
    const r = await t.request("GET", `/beta/v1/org/${org.id}/allocation-reports/cloud_bill_by_account?year=2026&month=4&account_id=a2`, { key: org.key });
    expect(r.status).toBe(404);
    expect((await r.json()).code).toBe("period_not_available");
    // An unknown filter is refused, never ignored.
    const bad = await t.request("GET", `/beta/v1/org/${org.id}/allocation-reports/cloud_bill_by_account/periods?region=x`, { key: org.key });
    expect(bad.status).toBe(400);
  });
});

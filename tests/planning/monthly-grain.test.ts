/**
 * Auto-purchase on billing data of monthly grain (each usage row covers a whole month): the hours
 * the usage ran cannot be told, so no plan is sized on it. The run fails once, with a plain reason
 * recorded on it (no statement, no retry), instead of failing five times on the usage query.
 */
import { expect, test } from "bun:test";
import { PassThrough, Readable } from "node:stream";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { writeFocusCsv } from "../../lib/billing/generator.ts";
import { importFocus } from "../../lib/billing/focus.ts";
import { runDueAutoPurchases } from "../../lib/purchasing/autoPurchase.ts";
import { generatePlan } from "../../lib/planning/generate.ts";
import { CoarseUsageError } from "../../lib/planning/usage.ts";
import { ensureProviderSegment } from "../../lib/segments/service.ts";
import { OFFERS, createTemplate, seedCatalog, spec } from "./fixtures.ts";

const NOW = new Date("2026-06-10T12:00:00Z");

async function focusCsv(grain: "monthly" | "daily"): Promise<string> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on("data", (c) => chunks.push(c));
  await writeFocusCsv({ now: NOW, months: 2, providers: ["aws"], accountsPerProvider: 2, resourcesPerAccount: 3, grain, commitments: false }, out);
  out.end();
  return Buffer.concat(chunks).toString("utf8");
}

describeEachDb("auto-purchase on monthly-grain billing data", (driver) => {
  let clock = NOW;
  const t = useTestApp(driver, { now: () => clock });

  test("a FOCUS import of whole-month rows: the run fails once with a plain reason; the next tick does not retry it", async () => {
    const org = await t.newOrg("Monthly");
    await seedCatalog(t.s.db, org.id);
    const imported = await importFocus(t.s.db, org.id, Readable.from([await focusCsv("monthly")]), { now: NOW });
    expect(imported.rows_rejected).toBe(0);
    // Whole months (the current one up to now).
    const [grain] = await t.s.handle.query<{ lo: string; hi: string }>(
      `SELECT min(EXTRACT(EPOCH FROM charge_period_end - charge_period_start) / 3600)::text AS lo, max(EXTRACT(EPOCH FROM charge_period_end - charge_period_start) / 3600)::text AS hi FROM billing_line_items WHERE org_id = $1 AND charge_category = 'Usage'`,
      [org.id],
    );
    expect(Number(grain!.lo)).toBeGreaterThan(24);
    expect(Number(grain!.hi)).toBeGreaterThanOrEqual(30 * 24);
    const tpl = await createTemplate(t, org, { configuration: { contract_specs: [spec(OFFERS.oneYearNoUpfront)] }, auto_purchase: { schedule: "daily", start_date: "2026-06-10", enabled: true } });

    const first = (await runDueAutoPurchases(t.s)).filter((r) => r.template_id === tpl.id);
    expect(first.map((r) => r.outcome)).toEqual(["error"]);
    const reason = first[0]!.error!;
    expect(reason).toMatch(/^The aws usage between 2026-05-11 and 2026-06-10 is billed in rows that each cover more than a day \(e\.g\. 2026-0[56]-01 to 2026-06-(01|10)\): the hours it ran cannot be told from them, so no plan was sized\./);
    expect(reason).toContain("hourly (or daily) granularity");
    expect(reason).not.toMatch(/Failed query|WITH u|SELECT|params/);

    const [run] = await t.s.handle.query<{ status: string; attempts: number; last_error: string }>(`SELECT status, attempts, last_error FROM purchase_runs WHERE template_id = $1`, [tpl.id]);
    expect(run).toEqual({ status: "failed", attempts: 1, last_error: reason });
    const listed = await t.request("GET", `/beta/v1/org/${org.id}/purchase-runs?template_id=${tpl.id}`, { key: org.key });
    expect(((await listed.json()) as any[]).map((r) => [r.status, r.attempts, r.last_attempt_failed])).toEqual([["failed", 1, true]]);

    // Another tick the same day: the slot is not run again (a deterministic failure is not retried).
    expect((await runDueAutoPurchases(t.s)).filter((r) => r.template_id === tpl.id)).toEqual([]);
    const [after] = await t.s.handle.query<{ attempts: number }>(`SELECT attempts FROM purchase_runs WHERE template_id = $1`, [tpl.id]);
    expect(after!.attempts).toBe(1);
    expect(Number((await t.s.handle.query<{ n: string }>(`SELECT count(*)::text AS n FROM commitment_plans WHERE template_id = $1`, [tpl.id]))[0]!.n)).toBe(0);
  });

  test("the same usage at daily grain plans as before; generatePlan refuses monthly rows with CoarseUsageError (422)", async () => {
    const daily = await t.newOrg("Daily");
    await seedCatalog(t.s.db, daily.id);
    await importFocus(t.s.db, daily.id, Readable.from([await focusCsv("daily")]), { now: NOW });
    const cfg = { max_upfront_cost: 0, lookback_days: 30, contract_specs: [spec(OFFERS.oneYearNoUpfront)] as any, resource_ids: [], renewal_commitment_ids: [] };
    const plan = await generatePlan(t.s.db, daily.id, await ensureProviderSegment(t.s.db, daily.id, "aws"), cfg, NOW);
    expect(plan.usageGroupCount).toBeGreaterThan(0);

    const monthly = await t.newOrg("Monthly again");
    await importFocus(t.s.db, monthly.id, Readable.from([await focusCsv("monthly")]), { now: NOW });
    const refused = await generatePlan(t.s.db, monthly.id, await ensureProviderSegment(t.s.db, monthly.id, "aws"), cfg, NOW).catch((e) => e);
    expect(refused).toBeInstanceOf(CoarseUsageError);
    expect(refused.status).toBe(422);
    expect(refused.code).toBe("usage_too_coarse");
  });
});

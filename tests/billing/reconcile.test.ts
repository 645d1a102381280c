import { INSURED_TERMS } from "../../lib/catalog/insured.ts";
/**
 * Reconciliation on generated data: a month of hourly FOCUS rows (aws and gcp, commitments of
 * every kind incl. insured ones) is imported; the reports must add up to the rows themselves.
 * Expected totals are summed here straight from the generator's output, not from the database.
 */
import { expect, test } from "bun:test";
import { Readable } from "node:stream";
import { stringify } from "csv-stringify/sync";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { importFocus } from "../../lib/billing/focus.ts";
import { FOCUS_GENERATOR_COLUMNS, generateFocusRows, type GeneratorOptions } from "../../lib/billing/generator.ts";
import { coverageAndUtilization, hourlyOnDemandEquivalentUsage, listCommitments, spendBy } from "../../lib/billing/queries.ts";
import { closeBillingPeriod, freezeClosedPeriods } from "../../lib/reports/periods.ts";
import { getReport } from "../reports/helpers.ts";

const NOW = new Date("2026-03-01T05:00:00Z");
const GEN: GeneratorOptions = { now: NOW, months: 2, providers: ["aws", "gcp"], accountsPerProvider: 2, resourcesPerAccount: 2, grain: "hourly", seed: 11 };
const col = Object.fromEntries(FOCUS_GENERATOR_COLUMNS.map((c, i) => [c, i])) as Record<string, number>;

/** February's generated rows. */
function februaryRows() {
  return [...generateFocusRows(GEN)].filter((r) => r[col.BillingPeriodStart!] === "2026-02-01T00:00:00Z");
}
const money = (rows: (string | null)[][], c: string, keep: (r: (string | null)[]) => boolean = () => true) => rows.filter(keep).reduce((s, r) => s + Number(r[col[c]!] ?? 0), 0);

/**
 * "Reconciles to the cent": per provider (the generator gives each one billing account, so one
 * invoice and one rounding partition each, `partitionOf`), the rows of a report add up to the
 * exact sum of the data rounded to the cent — no tolerance. Amounts are summed exactly here
 * (10-decimal strings as integers), and each shown value is compared in whole cents.
 */
const SCALE = 10n ** 10n;
const PROVIDER_OF: Record<string, string> = { AWS: "aws", "Google Cloud": "gcp" };
function exactSum(rows: (string | null)[][], c: string, keep: (r: (string | null)[]) => boolean = () => true): bigint {
  let s = 0n;
  for (const r of rows.filter(keep)) {
    const v = r[col[c]!] ?? "0";
    const [int, frac = ""] = v.replace("-", "").split(".");
    const n = BigInt(int!) * SCALE + BigInt((frac + "0000000000").slice(0, 10));
    s += v.startsWith("-") ? -n : n;
  }
  return s;
}
/** An exact amount rounded to whole cents, half away from zero (PostgreSQL's ROUND). */
const toCents = (v: bigint) => {
  const unit = SCALE / 100n;
  const q = (v < 0n ? -v : v) * 2n + unit;
  const c = q / (2n * unit);
  return Number(v < 0n ? -c : c);
};
const cents = (v: number) => Math.round(v * 100);
const sumCents = (rows: Record<string, any>[], c: string) => rows.reduce((s, r) => s + cents(r[c]), 0);
const byProvider = (p: string) => (r: (string | null)[]) => PROVIDER_OF[r[col.ProviderName!]!] === p;
/** The shown total of a column is the floor or the ceiling of its exact sum (|difference| < 1 cent). */
function withinACent(shownCents: number, exact: bigint) {
  const diff = BigInt(shownCents) * (SCALE / 100n) - exact;
  expect(diff < SCALE / 100n && diff > -SCALE / 100n, `${shownCents} vs ${exact}`).toBe(true);
}

describeEachDb("billing reconciliation on generated data", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });
  let org: { id: string; key: string };
  const feb = februaryRows();

  test("generated data imports completely and keeps the commitment invariant", async () => {
    org = await t.newOrg("generated");
    const csv = Readable.from((function* () {
      yield stringify([FOCUS_GENERATOR_COLUMNS as unknown as string[]]);
      for (const r of generateFocusRows(GEN)) yield stringify([r]);
    })());
    const r = await importFocus(t.s.db, org.id, csv);
    expect(r.rows_rejected).toBe(0);
    expect(r.rows_imported).toBe([...generateFocusRows(GEN)].length);
    // Per commitment and month: Σ (Used + Unused) EffectiveCost = Σ Purchase BilledCost.
    const inv = await t.s.handle.query<any>(
      `SELECT commitment_discount_id, billing_period,
         SUM(effective_cost) FILTER (WHERE commitment_discount_status IN ('Used', 'Unused')) AS usage_cost,
         SUM(billed_cost) FILTER (WHERE charge_category = 'Purchase') AS purchased
       FROM billing_line_items WHERE org_id = $1 AND commitment_discount_id IS NOT NULL GROUP BY 1, 2`,
      [org.id],
    );
    expect(inv.length).toBe(12); // 3 commitments × 2 providers × 2 months
    for (const x of inv) expect(Math.abs(Number(x.usage_cost) - Number(x.purchased))).toBeLessThan(1e-6);
  }, 60_000);

  test("inventory: RI/CUD, savings plan / spend CUD and an insured thirty_day_gris with fee rate and lock-in", async () => {
    const cs = await listCommitments(t.s.db, org.id, { status: "all" });
    expect(cs.map((c) => `${c.provider}:${c.commitment_type}:${c.contract_term}`).sort()).toEqual([
      "aws:compute_savings_plan:thirty_day_gris",
      "aws:compute_savings_plan:three_year",
      "aws:reserved_instance:one_year",
      "gcp:resource_cud:one_year",
      "gcp:spend_cud:thirty_day_gris",
      "gcp:spend_cud:three_year",
    ]);
    for (const c of cs.filter((x) => x.insured)) {
      expect(c.fee_rate).toBe(INSURED_TERMS.find((g) => g.contractTerm === "thirty_day_gris")!.feeRate);
      expect(Date.parse(c.lock_in_ends_at!) - Date.parse(c.starts_at!)).toBe(30 * 86_400_000);
      expect(c.payment_option).toBe("no_upfront");
    }
    expect(cs.every((c) => c.holding_account_id !== null && c.recurring_hourly_cost! > 0)).toBe(true);
  });

  test("Σ cloud_bill_by_service = Σ EffectiveCost (and BilledCost) of the month's rows, to the cent", async () => {
    const rep = await getReport(t, org, "cloud_bill_by_service", "year=2026&month=2");
    for (const p of ["aws", "gcp"]) {
      const rows = rep.rows.filter((r) => r.provider === p);
      const mine = byProvider(p);
      expect(rows.length).toBeGreaterThan(1);
      expect(sumCents(rows, "total_cost")).toBe(toCents(exactSum(feb, "EffectiveCost", mine)));
      expect(sumCents(rows, "billed_cost")).toBe(toCents(exactSum(feb, "BilledCost", mine)));
      const onDemand = (r: (string | null)[]) => mine(r) && r[col.ChargeCategory!] === "Usage" && !r[col.CommitmentDiscountId!];
      withinACent(sumCents(rows, "ondemand_cost"), exactSum(feb, "EffectiveCost", onDemand));
    }
    // Each row adds up as shown.
    for (const r of rep.rows) expect(cents(r.ondemand_cost) + cents(r.commitment_cost) + cents(r.other_cost)).toBe(cents(r.total_cost));
  });

  test("Σ commitment cost over accounts = Σ Purchase BilledCost of the month (no-upfront: amortized = billed)", async () => {
    const rep = await getReport(t, org, "commitment_cost_by_account", "year=2026&month=2");
    const daily = await getReport(t, org, "commitment_cost_daily", "year=2026&month=2");
    expect(daily.rows.length).toBeGreaterThanOrEqual(28);
    expect(money(feb, "BilledCost", (r) => r[col.ChargeCategory!] === "Purchase")).toBeGreaterThan(100);
    for (const p of ["aws", "gcp"]) {
      const mine = byProvider(p);
      const purchased = toCents(exactSum(feb, "BilledCost", (r) => mine(r) && r[col.ChargeCategory!] === "Purchase"));
      expect(sumCents(rep.rows.filter((r) => r.provider === p), "commitment_cost")).toBe(purchased);
      expect(sumCents(daily.rows.filter((r) => r.provider === p), "commitment_cost")).toBe(purchased);
      // Unused cost is redistributed, never lost: Σ allocated unused = Σ Unused EffectiveCost.
      withinACent(sumCents(rep.rows.filter((r) => r.provider === p), "commitment_unused_allocated_cost"), exactSum(feb, "EffectiveCost", (r) => mine(r) && r[col.CommitmentDiscountStatus!] === "Unused"));
    }
    for (const r of [...rep.rows, ...daily.rows]) expect(cents(r.commitment_used_cost) + cents(r.commitment_unused_allocated_cost)).toBe(cents(r.commitment_cost));
    for (const r of rep.rows) expect(cents(r.covered_ondemand_cost) - cents(r.commitment_used_cost)).toBe(cents(r.savings));
  });

  test("closing February freezes cloud_bill_by_account with the same totals", async () => {
    for (const p of ["aws", "gcp"] as const) await closeBillingPeriod(t.s.db, org.id, p, "2026-02", NOW);
    await freezeClosedPeriods(t.s.db, NOW, { orgId: org.id });
    const rep = await getReport(t, org, "cloud_bill_by_account", "year=2026&month=2");
    expect(rep.period_status).toBe("finalized");
    for (const p of ["aws", "gcp"]) expect(sumCents(rep.rows.filter((r) => r.provider === p), "total_cost")).toBe(toCents(exactSum(feb, "EffectiveCost", byProvider(p))));
  });

  test("query functions agree with the rows: spendBy, coverage/utilization, hourly on-demand equivalent", async () => {
    const [s] = (await spendBy(t.s.db, org.id, { provider: "aws", from: "2026-02-01", to: "2026-03-01", groupBy: "month" }));
    const awsFeb = feb.filter((r) => r[col.ProviderName!] === "AWS");
    expect(s!.effective_cost).toBeCloseTo(money(awsFeb, "EffectiveCost"), 6);
    const cu = await coverageAndUtilization(t.s.db, org.id, { provider: "aws", from: "2026-02-01", to: "2026-03-01", groupBy: "commitment" });
    expect(cu.length).toBe(3);
    for (const c of cu) {
      expect(c.utilization!).toBeGreaterThan(0);
      expect(c.utilization!).toBeLessThanOrEqual(1);
    }
    const hourly = await hourlyOnDemandEquivalentUsage(t.s.db, org.id, { provider: "aws", from: "2026-02-01T00:00:00Z", to: "2026-03-01T00:00:00Z" });
    const usage = (r: (string | null)[]) => r[col.ChargeCategory!] === "Usage" && r[col.CommitmentDiscountStatus!] !== "Unused";
    expect(hourly.reduce((x, h) => x + h.ondemand_equivalent_cost, 0)).toBeCloseTo(money(awsFeb, "ListCost", usage), 6);
    expect(new Set(hourly.map((h) => h.hour)).size).toBe(28 * 24);
    expect(hourly.some((h) => h.instance_family !== null)).toBe(true);
  });
});

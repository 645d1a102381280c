/**
 * lib/billing/costQuery.ts on FOCUS rows imported with importFocus, both drivers: grouping
 * (tags included), filters, currencies kept apart, limits and totals, the reports' rounding
 * (a query at a report's grain shows the report's cents), period comparison and its drivers,
 * and parameterised SQL (tag keys and values that try to break out of their quotes).
 */
import { beforeAll, expect, test } from "bun:test";
import { Readable } from "node:stream";
import { importFocus } from "../../lib/billing/focus.ts";
import { comparePeriods, listDimensionValues, precedingPeriod, queryCosts, type CostWindow } from "../../lib/billing/costQuery.ts";
import { ValidationError } from "../../lib/errors.ts";
import { closeBillingPeriod, freezeClosedPeriods } from "../../lib/reports/periods.ts";
import { reportRows } from "../../lib/reports/service.ts";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";

const NOW = new Date("2026-06-17T12:00:00Z");
const APRIL: CostWindow = { from: new Date("2026-04-01T00:00:00Z"), to: new Date("2026-05-01T00:00:00Z") };
const MAY: CostWindow = { from: new Date("2026-05-01T00:00:00Z"), to: new Date("2026-06-01T00:00:00Z") };
const BOTH: CostWindow = { from: APRIL.from, to: MAY.to };

type Row = Record<string, string | number | null>;

/** FOCUS CSV of rows (columns: the union of the rows' keys, over required defaults). */
function csv(rows: Row[]): string {
  const base: Row = {
    ProviderName: "AWS", BillingAccountId: "payer-1", BillingAccountName: "Payer", SubAccountId: "111", SubAccountName: "Prod", BillingCurrency: "USD",
    ChargeCategory: "Usage", ChargeFrequency: "Usage-Based", PricingCategory: "Standard", ServiceName: "EC2", ServiceCategory: "Compute",
    BilledCost: 0, EffectiveCost: 0, ListCost: null, ContractedCost: null, RegionId: null, ResourceId: null, Tags: null,
    CommitmentDiscountId: null, CommitmentDiscountStatus: null, CommitmentDiscountCategory: null, CommitmentDiscountType: null, CommitmentDiscountName: null,
    x_CommitmentStart: null, x_CommitmentEnd: null,
  };
  const full = rows.map((r) => ({ ...base, ...r }));
  const cols = [...new Set(full.flatMap((r) => Object.keys(r)))];
  const cell = (v: string | number | null | undefined) => {
    if (v === null || v === undefined) return "";
    const s = String(v);
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return [cols.join(","), ...full.map((r) => cols.map((c) => cell(r[c])).join(","))].join("\n") + "\n";
}

/** A charge on one day of a month (the billing period is that month). */
function on(day: string, r: Row): Row {
  const [y, m] = day.split("-").map(Number) as [number, number];
  const next = new Date(Date.UTC(y, m, 1)).toISOString().slice(0, 10);
  return {
    BillingPeriodStart: `${day.slice(0, 7)}-01T00:00:00Z`, BillingPeriodEnd: `${next}T00:00:00Z`, ChargePeriodStart: `${day}T00:00:00Z`, ChargePeriodEnd: `${day}T23:00:00Z`,
    ListCost: r.EffectiveCost ?? 0, ContractedCost: r.EffectiveCost ?? 0, ...r,
  };
}
const tags = (t: Record<string, string>) => JSON.stringify(t);
const usage = (day: string, account: string, service: string, resource: string, region: string, cost: number, t: Record<string, string> | null, extra: Row = {}): Row =>
  on(day, { SubAccountId: account, SubAccountName: account === "111" ? "Prod" : "Dev", ServiceName: service, ResourceId: resource, RegionId: region, BilledCost: cost, EffectiveCost: cost, Tags: t ? tags(t) : null, ...extra });
const commitment = (id: string, start: string, end: string): Row => ({
  CommitmentDiscountId: id, CommitmentDiscountName: `Savings plan ${id}`, CommitmentDiscountCategory: "Spend", CommitmentDiscountType: "Compute Savings Plan", x_CommitmentStart: start, x_CommitmentEnd: end,
});
const SP1 = "arn:aws:savingsplans::111:savingsplan/sp-1";
const SP2 = "arn:aws:savingsplans::111:savingsplan/sp-2";
const WEIRD_KEY = `we'ird"key`;
const WEIRD_VALUE = `a'b"c); --`;

/** The fixture: amounts in whole cents except the Lambda thirds (exact 0.3333333333 each) and the EUR half cents. */
const ROWS: Row[] = [
  // April, USD (AWS, payer-1)
  usage("2026-04-10", "111", "EC2", "i-1", "us-east-1", 100, { team: "web", env: "prod" }),
  usage("2026-04-11", "222", "RDS", "db-1", "eu-west-1", 50, { team: "data", env: "dev" }),
  usage("2026-04-12", "111", "EC2", "i-1", "us-east-1", 20, { team: "web", env: "prod" }, { ...commitment(SP1, "2026-01-01T00:00:00Z", "2026-05-20T00:00:00Z"), CommitmentDiscountStatus: "Used", BilledCost: 0, ListCost: 30, PricingCategory: "Committed" }),
  on("2026-04-01", { SubAccountId: "111", ServiceName: "Savings Plans", ChargeCategory: "Purchase", ChargeFrequency: "Recurring", BilledCost: 20, EffectiveCost: 0, ListCost: 20, ...commitment(SP1, "2026-01-01T00:00:00Z", "2026-05-20T00:00:00Z") }),
  // May, USD
  usage("2026-05-10", "111", "EC2", "i-1", "us-east-1", 130, { team: "web", env: "prod" }),
  usage("2026-05-11", "222", "RDS", "db-1", "eu-west-1", 40, { team: "data", env: "dev" }),
  usage("2026-05-12", "222", "S3", "bucket-1", "us-east-1", 10, { team: "data", [WEIRD_KEY]: WEIRD_VALUE }, { ServiceCategory: "Storage" }),
  usage("2026-05-13", "111", "EC2", "i-1", "us-east-1", 15, { team: "web", env: "prod" }, { ...commitment(SP2, "2026-05-05T00:00:00Z", "2029-05-05T00:00:00Z"), CommitmentDiscountStatus: "Used", BilledCost: 0, ListCost: 25, PricingCategory: "Committed" }),
  on("2026-05-05", { SubAccountId: "111", ServiceName: "Savings Plans", ChargeCategory: "Purchase", ChargeFrequency: "Recurring", BilledCost: 15, EffectiveCost: 0, ListCost: 15, ...commitment(SP2, "2026-05-05T00:00:00Z", "2029-05-05T00:00:00Z") }),
  on("2026-05-01", { SubAccountId: "111", ServiceName: "Tax", ServiceCategory: "Other", ChargeCategory: "Tax", ChargeFrequency: "One-Time", BilledCost: 5, EffectiveCost: 5 }),
  ...["fn-a", "fn-b", "fn-c"].map((fn) => usage("2026-05-14", "111", "Lambda", fn, "us-east-1", 0.3333333333, { team: "web", env: "prod" })),
  // May, EUR (Azure, its own billing account): 10.005 + 20.005 = 30.01 exactly.
  ...[10.005, 20.005].map((cost, i) =>
    on(`2026-05-0${i + 3}`, { ProviderName: "Microsoft", BillingAccountId: "eur-ba", BillingAccountName: "EUR enrollment", SubAccountId: "eur-sub", SubAccountName: "EUR subscription", BillingCurrency: "EUR", ServiceName: "Virtual Machines", ResourceId: `vm-${i}`, RegionId: "westeurope", BilledCost: cost, EffectiveCost: cost, Tags: tags({ team: "web" }) }),
  ),
];

const c = (v: number) => Math.round(v * 100);
/** Exact Σ EffectiveCost in cents of the fixture rows (whole-cent rows only) matching `pick`. */
const expected = (pick: (r: Row) => boolean, col = "EffectiveCost") => ROWS.filter(pick).reduce((a, r) => a + c(Number(r[col] ?? 0)), 0);
const inMonth = (m: string) => (r: Row) => String(r.ChargePeriodStart).startsWith(m);
const usd = (r: Row) => (r.BillingCurrency ?? "USD") === "USD";
const wholeCents = (r: Row) => r.ServiceName !== "Lambda";
const tagOf = (r: Row, k: string) => (r.Tags ? (JSON.parse(String(r.Tags)) as Record<string, string>)[k] : undefined);

describeEachDb("cost query (lib)", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });

  beforeAll(async () => {
    const r = await importFocus(t.s.db, t.org.id, Readable.from([csv(ROWS)]), { fileName: "costs.csv", now: NOW });
    expect(r.rows_rejected).toBe(0);
  }, 60_000);

  test("group by a tag: each team's cost, untagged apart, currencies never added", async () => {
    const r = await queryCosts(t.s.db, t.org.id, { window: MAY, groupBy: ["tag:team"] });
    const row = (team: string | null, currency: string) => r.rows.find((x) => x.keys["tag:team"] === team && x.currency === currency);
    expect(c(row("data", "USD")!.effective_cost)).toBe(expected((x) => inMonth("2026-05")(x) && usd(x) && tagOf(x, "team") === "data"));
    // web: whole-cent rows plus the three Lambda thirds (exactly 0.9999999999, shown 1.00).
    expect(c(row("web", "USD")!.effective_cost)).toBe(expected((x) => inMonth("2026-05")(x) && usd(x) && wholeCents(x) && tagOf(x, "team") === "web") + 100);
    expect(c(row(null, "USD")!.effective_cost)).toBe(expected((x) => inMonth("2026-05")(x) && usd(x) && !x.Tags));
    expect(row("web", "EUR")!.effective_cost).toBe(30.01);
    // Totals per currency: the EUR web row is never added to the USD ones.
    const usdTotal = r.totals.find((x) => x.currency === "USD")!;
    const eurTotal = r.totals.find((x) => x.currency === "EUR")!;
    expect(c(usdTotal.effective_cost)).toBe(expected((x) => inMonth("2026-05")(x) && usd(x) && wholeCents(x)) + 100);
    expect(eurTotal).toMatchObject({ effective_cost: 30.01, billed_cost: 30.01, rows: 1 });
    for (const tot of r.totals) {
      const rows = r.rows.filter((x) => x.currency === tot.currency);
      expect(rows.reduce((a, x) => a + c(x.effective_cost), 0)).toBe(c(tot.effective_cost));
      // Each row's effective cost is its on-demand + commitment + other as shown.
      for (const x of rows) expect(c(x.ondemand_cost) + c(x.commitment_cost) + c(x.other_cost)).toBe(c(x.effective_cost));
    }
    expect(r.total_rows).toBe(4);
    expect(r.truncated).toBe(false);
  });

  test("filters: several values of one dimension, null for 'not set', several dimensions at once", async () => {
    const two = await queryCosts(t.s.db, t.org.id, { window: MAY, groupBy: ["service"], filters: { service: ["RDS", "S3"] } });
    expect(two.rows.map((x) => x.keys.service).sort()).toEqual(["RDS", "S3"]);
    expect(c(two.totals[0]!.effective_cost)).toBe(expected((x) => inMonth("2026-05")(x) && (x.ServiceName === "RDS" || x.ServiceName === "S3")));

    const envs = await queryCosts(t.s.db, t.org.id, { window: BOTH, groupBy: ["tag:env", "month"], filters: { "tag:env": ["dev", null], provider: "aws" } });
    expect(envs.totals.map((x) => x.currency)).toEqual(["USD"]);
    expect(new Set(envs.rows.map((x) => x.keys["tag:env"]))).toEqual(new Set(["dev", null]));
    expect(c(envs.totals[0]!.effective_cost)).toBe(expected((x) => usd(x) && (tagOf(x, "env") === "dev" || tagOf(x, "env") === undefined)));

    const combined = await queryCosts(t.s.db, t.org.id, { window: BOTH, filters: { account: "111", charge_category: ["Usage"], region: "us-east-1", month: "2026-05" } });
    expect(c(combined.totals[0]!.effective_cost)).toBe(expected((x) => inMonth("2026-05")(x) && x.SubAccountId === "111" && (x.ChargeCategory ?? "Usage") === "Usage" && x.RegionId === "us-east-1" && wholeCents(x)) + 100);
    const none = await queryCosts(t.s.db, t.org.id, { window: MAY, groupBy: ["service"], filters: { service: "Nothing" } });
    expect(none).toMatchObject({ rows: [], total_rows: 0, truncated: false, totals: [] });
  });

  test("limit: the largest rows, total_rows and totals over every row", async () => {
    const all = await queryCosts(t.s.db, t.org.id, { window: MAY, groupBy: ["resource"], limit: 1000 });
    const two = await queryCosts(t.s.db, t.org.id, { window: MAY, groupBy: ["resource"], limit: 2 });
    expect(two.rows).toHaveLength(2);
    expect(two.total_rows).toBe(all.total_rows);
    expect(all.total_rows).toBe(new Set(ROWS.filter(inMonth("2026-05")).map((x) => `${x.BillingCurrency ?? "USD"}|${x.ResourceId}`)).size);
    expect(two.truncated).toBe(true);
    expect(all.truncated).toBe(false);
    expect(two.totals).toEqual(all.totals);
    // Ranked within each currency (amounts of different currencies are never compared): the
    // limit keeps each currency's largest row in turn, shown by currency.
    const currencies = [...new Set(all.rows.map((x) => x.currency))];
    expect(currencies).toEqual(["EUR", "USD"]);
    expect(two.rows).toEqual(currencies.map((cur) => all.rows.find((x) => x.currency === cur)!));
    expect(two.rows.find((x) => x.currency === "USD")!.keys.resource).toBe("i-1");
    for (let i = 1; i < all.rows.length; i++) {
      const [a, b] = [all.rows[i - 1]!, all.rows[i]!];
      if (a.currency === b.currency) expect(a.effective_cost).toBeGreaterThanOrEqual(b.effective_cost);
      else expect(a.currency < b.currency).toBe(true);
    }
  });

  test("rounding as the reports: invoices exact to the cent, a filter never changes the cents it keeps, report grains give report cents", async () => {
    // Three resources of exactly 0.3333333333: shown 0.34 + 0.33 + 0.33 (the invoice's exact cent), not 3 × 0.33.
    const fns = await queryCosts(t.s.db, t.org.id, { window: MAY, groupBy: ["resource"], filters: { service: "Lambda" } });
    expect(fns.rows.map((x) => x.effective_cost).sort()).toEqual([0.33, 0.33, 0.34]);
    expect(fns.totals[0]!.effective_cost).toBe(1);
    for (const fn of fns.rows) {
      const alone = await queryCosts(t.s.db, t.org.id, { window: MAY, filters: { resource: fn.keys.resource! } });
      expect(alone.totals[0]!.effective_cost).toBe(fn.effective_cost);
    }
    // The EUR invoice: 10.005 + 20.005 = 30.01 exactly (not 10.01 + 20.01): one row takes the cent, the other gives it up.
    const eur = await queryCosts(t.s.db, t.org.id, { window: MAY, groupBy: ["resource"], filters: { billing_account: "eur-ba" } });
    expect(eur.totals).toMatchObject([{ currency: "EUR", effective_cost: 30.01 }]);
    const vm0 = eur.rows.find((x) => x.keys.resource === "vm-0")!.effective_cost;
    const vm1 = eur.rows.find((x) => x.keys.resource === "vm-1")!.effective_cost;
    expect([10, 10.01]).toContain(vm0);
    expect([20, 20.01]).toContain(vm1);
    expect(c(vm0) + c(vm1)).toBe(3001);

    // The same grain as cloud_bill_by_account / cloud_bill_by_resource: the same cents, row by row
    // (the bill by account is produced once the month is closed and frozen).
    for (const p of ["aws", "azure"] as const) await closeBillingPeriod(t.s.db, t.org.id, p, "2026-05", NOW);
    await freezeClosedPeriods(t.s.db, NOW, { orgId: t.org.id });
    const byAccount = await reportRows(t.s.handle, t.org.id, "cloud_bill_by_account", { year: 2026, month: 5 }, NOW);
    const accounts = await queryCosts(t.s.db, t.org.id, { window: MAY, groupBy: ["provider", "account"] });
    expect(accounts.rows).toHaveLength(byAccount.rows.length);
    for (const rep of byAccount.rows) {
      const mine = accounts.rows.find((x) => x.keys.account === rep.account_id && x.currency === rep.billing_currency)!;
      expect([mine.effective_cost, mine.billed_cost, mine.ondemand_cost, mine.commitment_cost, mine.other_cost]).toEqual([rep.total_cost, rep.billed_cost, rep.ondemand_cost, rep.commitment_cost, rep.other_cost] as number[]);
    }
    const byResource = await reportRows(t.s.handle, t.org.id, "cloud_bill_by_resource", { year: 2026, month: 5 }, NOW);
    const resources = await queryCosts(t.s.db, t.org.id, { window: MAY, groupBy: ["account", "resource", "service"], limit: 1000 });
    expect(resources.rows).toHaveLength(byResource.rows.length);
    for (const rep of byResource.rows) {
      const mine = resources.rows.find((x) => x.keys.account === rep.account_id && x.keys.resource === rep.resource_id && x.keys.service === rep.service_name && x.currency === rep.billing_currency)!;
      expect(mine.effective_cost).toBe(rep.total_cost as number);
    }
  });

  test("two payers of one provider: two invoices, by account, day or service alike (the cents of cloud_bill_daily and cloud_bill_by_service)", async () => {
    const org = await t.newOrg("Two payers");
    const day = { BillingPeriodStart: "2026-05-01T00:00:00Z", BillingPeriodEnd: "2026-06-01T00:00:00Z", ChargePeriodStart: "2026-05-03T00:00:00Z", ChargePeriodEnd: "2026-05-04T00:00:00Z" };
    await importFocus(
      t.s.db,
      org.id,
      Readable.from([
        csv([
          { ...day, BillingAccountId: "payer-a", SubAccountId: "a-1", BilledCost: "1.004", EffectiveCost: "1.004", ListCost: "1.004", ContractedCost: "1.004" },
          { ...day, BillingAccountId: "payer-b", SubAccountId: "b-1", BilledCost: "1.004", EffectiveCost: "1.004", ListCost: "1.004", ContractedCost: "1.004" },
        ]),
      ]),
      { now: NOW },
    );
    // Each payer's invoice is exact on its own (1.004 → 1.00), also in the reports without a
    // billing account column: a row spanning both invoices is 1.00 + 1.00, not 2.008 → 2.01.
    const daily = (await reportRows(t.s.handle, org.id, "cloud_bill_daily", { year: "2026", month: "5" }, NOW)).rows;
    expect(daily.map((r) => r.total_cost)).toEqual([2]);
    const byDay = await queryCosts(t.s.db, org.id, { window: MAY, groupBy: ["day"] });
    expect(byDay.rows.map((r) => [r.keys.day, r.effective_cost, r.billed_cost])).toEqual([["2026-05-03", 2, 2]]);
    const byService = await queryCosts(t.s.db, org.id, { window: MAY, groupBy: ["service"] });
    const services = (await reportRows(t.s.handle, org.id, "cloud_bill_by_service", { year: "2026", month: "5" }, NOW)).rows;
    expect(byService.rows.map((r) => r.effective_cost)).toEqual(services.map((r) => r.total_cost as number));
    // Per account: 1.00 + 1.00, the same total.
    const byAccount = await queryCosts(t.s.db, org.id, { window: MAY, groupBy: ["account"] });
    expect(byAccount.rows.map((r) => r.effective_cost)).toEqual([1, 1]);
  });

  test("list_dimension_values: values with their cost per currency, prefix search, tag keys", async () => {
    const regions = await listDimensionValues(t.s.db, t.org.id, { window: MAY, dimension: "region" });
    expect(regions.values.map((v) => v.value)).toEqual(["us-east-1", "eu-west-1", "westeurope", null]);
    expect(regions.values.find((v) => v.value === "westeurope")!.costs).toEqual([{ currency: "EUR", effective_cost: 30.01 }]);
    const total = await queryCosts(t.s.db, t.org.id, { window: MAY });
    expect(regions.totals).toEqual(total.totals.map((x) => ({ currency: x.currency, effective_cost: x.effective_cost })));

    const teams = await listDimensionValues(t.s.db, t.org.id, { window: MAY, dimension: "tag:team", prefix: "W" });
    expect(teams.values).toHaveLength(1);
    expect(teams.values[0]!.value).toBe("web");
    expect(teams.values[0]!.costs.map((x) => x.currency)).toEqual(["USD", "EUR"]);

    const keys = await listDimensionValues(t.s.db, t.org.id, { window: MAY, dimension: "tag_keys" });
    expect(keys.values.map((v) => v.value).sort()).toEqual(["env", "team", WEIRD_KEY].sort());
    expect(keys.totals).toEqual([]);
    const env = keys.values.find((v) => v.value === "env")!;
    expect(env.costs).toEqual([{ currency: "USD", effective_cost: (expected((x) => inMonth("2026-05")(x) && wholeCents(x) && tagOf(x, "env") !== undefined) + 100) / 100 }]);
    const one = await listDimensionValues(t.s.db, t.org.id, { window: MAY, dimension: "service", limit: 1 });
    expect(one).toMatchObject({ total_values: new Set(ROWS.filter(inMonth("2026-05")).map((x) => x.ServiceName)).size, truncated: true });
    expect(one.values[0]!.value).toBe("EC2");
  });

  test("compare periods: totals per currency, drivers per dimension adding up to the change, commitments started and expired", async () => {
    const cmp = await comparePeriods(t.s.db, t.org.id, { baseline: APRIL, current: MAY, top: 2 });
    const april = await queryCosts(t.s.db, t.org.id, { window: APRIL });
    const may = await queryCosts(t.s.db, t.org.id, { window: MAY });
    const totalOf = (r: typeof may, cur: string) => r.totals.find((x) => x.currency === cur)?.effective_cost ?? 0;
    expect(cmp.totals.map((x) => x.currency)).toEqual(["EUR", "USD"]);
    for (const tot of cmp.totals) {
      expect(tot.baseline).toBe(totalOf(april, tot.currency));
      expect(tot.current).toBe(totalOf(may, tot.currency));
      expect(c(tot.change)).toBe(c(tot.current) - c(tot.baseline));
    }
    expect(cmp.totals.find((x) => x.currency === "EUR")).toMatchObject({ baseline: 0, current: 30.01, change: 30.01 });
    for (const d of cmp.drivers) {
      for (const cur of d.by_currency) {
        const change = cmp.totals.find((x) => x.currency === cur.currency)!.change;
        expect(cur.change).toBe(change);
        expect(c(cur.top_change) + c(cur.rest_change)).toBe(c(change));
        const top = d.top.filter((x) => x.currency === cur.currency);
        expect(top.length).toBe(Math.min(2, cur.keys));
        expect(top.reduce((a, x) => a + c(x.change), 0)).toBe(c(cur.top_change));
      }
      // Largest absolute change first.
      const usdTop = d.top.filter((x) => x.currency === "USD");
      expect(Math.abs(usdTop[0]!.change)).toBeGreaterThanOrEqual(Math.abs(usdTop[1]!.change));
    }
    // With every key listed, the drivers themselves add up to the change.
    const all = await comparePeriods(t.s.db, t.org.id, { baseline: APRIL, current: MAY, top: 100 });
    for (const d of all.drivers) {
      const usdRows = d.top.filter((x) => x.currency === "USD");
      expect(usdRows.reduce((a, x) => a + c(x.change), 0)).toBe(c(all.totals.find((x) => x.currency === "USD")!.change));
    }
    const acct111 = all.drivers.find((d) => d.dimension === "account")!.top.find((x) => x.key === "111")!;
    expect(acct111.name).toBe("Prod");
    expect(c(acct111.baseline)).toBe(expected((x) => inMonth("2026-04")(x) && x.SubAccountId === "111"));
    expect(c(acct111.current)).toBe(expected((x) => inMonth("2026-05")(x) && usd(x) && x.SubAccountId === "111" && wholeCents(x)) + 100);
    const sp = all.drivers.find((d) => d.dimension === "commitment")!.top;
    expect(sp.find((x) => x.key === SP2)).toMatchObject({ baseline: 0, current: 15, change: 15 });
    expect(sp.find((x) => x.key === SP1)).toMatchObject({ baseline: 20, current: 0, change: -20 });

    expect(cmp.commitments_started.map((e) => e.commitment.provider_commitment_id)).toEqual([SP2]);
    expect(cmp.commitments_started[0]!.changes).toEqual([{ currency: "USD", baseline: 0, current: 15, change: 15 }]);
    expect(cmp.commitments_expired.map((e) => e.commitment.provider_commitment_id)).toEqual([SP1]);
    // Billed cost: the purchase fees.
    const billed = await comparePeriods(t.s.db, t.org.id, { baseline: APRIL, current: MAY, metric: "billed_cost", top: 100 });
    expect(billed.drivers.find((d) => d.dimension === "commitment")!.top.find((x) => x.key === SP1)).toMatchObject({ baseline: 20, current: 0 });
    expect(precedingPeriod(MAY)).toEqual(APRIL);
    expect(precedingPeriod({ from: new Date("2026-05-10T00:00:00Z"), to: new Date("2026-05-17T00:00:00Z") })).toEqual({ from: new Date("2026-05-03T00:00:00Z"), to: new Date("2026-05-10T00:00:00Z") });
  });

  test("tag keys and values are parameters: quotes and SQL in them are plain text", async () => {
    const weird = await queryCosts(t.s.db, t.org.id, { window: MAY, groupBy: [`tag:${WEIRD_KEY}`], filters: { [`tag:${WEIRD_KEY}`]: WEIRD_VALUE } });
    expect(weird.rows.map((x) => x.keys[`tag:${WEIRD_KEY}`])).toEqual([WEIRD_VALUE]);
    expect(c(weird.totals[0]!.effective_cost)).toBe(1000);
    const attack = `x'); DROP TABLE billing_line_items; --`;
    const r = await queryCosts(t.s.db, t.org.id, { window: MAY, groupBy: [`tag:${attack}`], filters: { "tag:team": [`web' OR '1'='1`, `data") OR true --`] } });
    expect(r).toMatchObject({ rows: [], total_rows: 0, totals: [] });
    const values = await listDimensionValues(t.s.db, t.org.id, { window: MAY, dimension: `tag:${attack}`, prefix: `%' OR 1=1 --` });
    expect(values.total_values).toBe(0);
    // Still there, unchanged.
    const after = await queryCosts(t.s.db, t.org.id, { window: MAY, groupBy: [`tag:${attack}`] });
    expect(after.rows.every((x) => x.keys[`tag:${attack}`] === null)).toBe(true);
    expect(after.totals).toEqual((await queryCosts(t.s.db, t.org.id, { window: MAY })).totals);
  });

  test("bad input: unknown dimensions, empty or long tag keys, too many group_by or values", async () => {
    const bad = [
      () => queryCosts(t.s.db, t.org.id, { window: MAY, groupBy: ["colour"] }),
      () => queryCosts(t.s.db, t.org.id, { window: MAY, groupBy: ["tag:"] }),
      () => queryCosts(t.s.db, t.org.id, { window: MAY, groupBy: [`tag:${"k".repeat(129)}`] }),
      () => queryCosts(t.s.db, t.org.id, { window: MAY, groupBy: ["service", "region", "account", "day"] }),
      () => queryCosts(t.s.db, t.org.id, { window: MAY, groupBy: ["service", "service"] }),
      () => queryCosts(t.s.db, t.org.id, { window: MAY, filters: { "service; DROP": "x" } }),
      () => queryCosts(t.s.db, t.org.id, { window: MAY, filters: { service: Array.from({ length: 51 }, (_, i) => `s${i}`) } }),
      () => queryCosts(t.s.db, t.org.id, { window: MAY, limit: 1001 }),
      () => listDimensionValues(t.s.db, t.org.id, { window: MAY, dimension: "tags" }),
      () => comparePeriods(t.s.db, t.org.id, { baseline: APRIL, current: MAY, top: 0 }),
    ];
    for (const f of bad) await expect(f()).rejects.toBeInstanceOf(ValidationError);
    await expect(queryCosts(t.s.db, t.org.id, { window: MAY, groupBy: ["colour"] })).rejects.toThrow(/provider, billing_account, account/);
    expect((await queryCosts(t.s.db, t.org.id, { window: MAY, groupBy: [`tag:${"k".repeat(128)}`] })).total_rows).toBe(2);
  });
});

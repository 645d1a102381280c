/**
 * `shownSql` (lib/reports/catalog.ts) tested directly: generated exact amounts (10-decimal
 * numerics, credits, exact half-cent ties; several providers, currencies and billing accounts,
 * NULL among them) go through the rounding SQL of a small hand-made report, and the shown cents
 * must keep the three promises of DESIGN §12 / docs "Figures":
 * - every cell is the floor or the ceiling of its exact amount in cents;
 * - every derived total is the sum of the rounded parts shown beside it;
 * - per partition (provider, currency and — when the report shows it — billing account) each
 *   group's total is its exact sum rounded half away from zero, and each column's total the floor
 *   or ceiling of its exact sum.
 * Then the two-payer case through real reports and the HTTP app.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import fc from "fast-check";
import { createTestDatabase, describeEachDb, type TestDatabase } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { partitionOf, shownSql, type FieldDescriptor, type MoneyRounding, type ReportDefinition } from "../../lib/reports/catalog.ts";
import { closeBillingPeriod, freezeClosedPeriods } from "../../lib/reports/periods.ts";
import { focusCsv, getReport, importCsvText } from "./helpers.ts";

const RUNS = Number(process.env.SHOWN_SQL_RUNS ?? 60);

/** Exact amounts are integers of 1e-10 (numeric(30,10)); a cent is 1e8 of them. */
const SCALE = 10n ** 10n;
const CENT = 10n ** 8n;
const fmt = (v: bigint) => {
  const a = v < 0n ? -v : v;
  return `${v < 0n ? "-" : ""}${a / SCALE}.${(a % SCALE).toString().padStart(10, "0")}`;
};
const floorCents = (v: bigint) => (v >= 0n || v % CENT === 0n ? v / CENT : v / CENT - 1n);
const ceilCents = (v: bigint) => (v % CENT === 0n ? v / CENT : floorCents(v) + 1n);
/** Half away from zero, as PostgreSQL's ROUND(numeric). */
const roundCents = (v: bigint) => {
  const a = v < 0n ? -v : v;
  const r = (a * 2n + CENT) / (2n * CENT);
  return v < 0n ? -r : r;
};
/** A shown amount (numeric from the driver, 2 decimals) in whole cents, exactly. */
const shownCents = (v: unknown): bigint => {
  const s = String(v);
  const neg = s.startsWith("-");
  const [int, frac = ""] = s.replace("-", "").split(".");
  expect(frac.replace(/0+$/, "").length, `${s} has more than 2 decimals`).toBeLessThanOrEqual(2);
  const c = BigInt(int!) * 100n + BigInt((frac + "00").slice(0, 2));
  return neg ? -c : c;
};

interface GenRow {
  provider: string;
  currency: string;
  ba: string | null;
  a: bigint;
  b: bigint;
  c: bigint;
  billed: bigint;
}
const MONEY = ["a", "b", "c", "billed"] as const;

const str = (name: string): FieldDescriptor => ({ name, type: "string", description: name });
const num = (name: string): FieldDescriptor => ({ name, type: "number", description: name });
/** a + b − c rounded together (like gross − premiums + rebates), billed alone; total derived. */
const ROUNDING: MoneyRounding = {
  groups: [[{ column: "a", sign: 1 }, { column: "b", sign: 1 }, { column: "c", sign: -1 }], [{ column: "billed", sign: 1 }]],
  derived: [{ column: "total", terms: [{ column: "a", sign: 1 }, { column: "b", sign: 1 }, { column: "c", sign: -1 }] }],
};

/** A tiny report over literal rows: with or without a billing_account_id column. */
function definition(rows: GenRow[], withBillingAccount: boolean): Pick<ReportDefinition, "exactSql" | "output_fields" | "orderBy" | "rounding"> {
  const lit = (s: string | null) => (s === null ? "NULL::text" : `'${s}'::text`);
  const values = rows.map(
    (r, i) => `(${lit(r.provider)}, ${lit(r.currency)}, ${lit(r.ba)}, 'r${String(i).padStart(3, "0")}'::text, ${MONEY.map((m) => `'${fmt(r[m])}'::numeric`).join(", ")})`,
  );
  const cols = ["provider", "billing_currency", ...(withBillingAccount ? ["billing_account_id"] : []), "account_id", "a", "b", "c", "a + b - c AS total", "billed"];
  return {
    exactSql: `SELECT ${cols.join(", ")} FROM (VALUES ${values.join(", ")}) v(provider, billing_currency, billing_account_id, account_id, a, b, c, billed)`,
    output_fields: [str("provider"), str("billing_currency"), ...(withBillingAccount ? [str("billing_account_id")] : []), str("account_id"), num("a"), num("b"), num("c"), num("total"), num("billed")],
    orderBy: ["provider", "billing_currency", "account_id"],
    rounding: ROUNDING,
  };
}

/** Asserts the three promises on the shown rows of `rows`; returns the shown cents per account_id. */
async function checkShown(db: TestDatabase, rows: GenRow[], withBillingAccount: boolean) {
  const def = definition(rows, withBillingAccount);
  const shown = await db.handle.query<Record<string, unknown>>(shownSql(def));
  expect(shown.length).toBe(rows.length);
  const byId = new Map(shown.map((s) => [String(s.account_id), s]));
  const partition = (r: GenRow) => JSON.stringify(withBillingAccount ? [r.provider, r.currency, r.ba] : [r.provider, r.currency]);
  const sums = new Map<string, { exact: Record<string, bigint>; shown: Record<string, bigint> }>();
  const cents = new Map<string, Record<string, bigint>>();
  rows.forEach((r, i) => {
    const id = `r${String(i).padStart(3, "0")}`;
    const s = byId.get(id)!;
    expect(s, id).toBeDefined();
    const c = Object.fromEntries([...MONEY, "total"].map((m) => [m, shownCents(s[m])])) as Record<string, bigint>;
    cents.set(id, c);
    for (const m of MONEY) {
      const ok = c[m] === floorCents(r[m]) || c[m] === ceilCents(r[m]);
      expect(ok, `${id}.${m}: ${c[m]} cents shown for ${fmt(r[m])}`).toBe(true);
    }
    expect(c.total, `${id}: total is the sum of its shown parts`).toBe(c.a! + c.b! - c.c!);
    const key = partition(r);
    const acc = sums.get(key) ?? { exact: { a: 0n, b: 0n, c: 0n, billed: 0n }, shown: { a: 0n, b: 0n, c: 0n, billed: 0n, total: 0n } };
    for (const m of MONEY) acc.exact[m]! += r[m];
    for (const m of [...MONEY, "total"]) acc.shown[m]! += c[m]!;
    sums.set(key, acc);
  });
  for (const [key, { exact, shown: got }] of sums) {
    const group = exact.a! + exact.b! - exact.c!;
    expect(got.total, `${key}: Σ total = exact group sum ${fmt(group)} rounded`).toBe(roundCents(group));
    expect(got.a! + got.b! - got.c!, key).toBe(roundCents(group));
    expect(got.billed, `${key}: Σ billed = exact ${fmt(exact.billed!)} rounded`).toBe(roundCents(exact.billed!));
    for (const m of MONEY) expect(got[m] === floorCents(exact[m]!) || got[m] === ceilCents(exact[m]!), `${key}.${m}: Σ ${got[m]} vs exact ${fmt(exact[m]!)}`).toBe(true);
  }
  return cents;
}

/** Amounts around a few dollars either side of zero; a third are exact ties (x.xx5) or whole cents. */
const arbAmount = fc
  .tuple(fc.integer({ min: -300, max: 300 }), fc.oneof(fc.constant(0n), fc.constant(CENT / 2n), fc.bigInt({ min: 0n, max: CENT - 1n })))
  .map(([c, f]) => BigInt(c) * CENT + f);
const arbRow = fc.record({
  provider: fc.constantFrom("aws", "gcp"),
  currency: fc.constantFrom("USD", "EUR"),
  ba: fc.constantFrom<string | null>("payer-a", "payer-b", null),
  a: arbAmount,
  b: arbAmount,
  c: arbAmount,
  billed: arbAmount,
});
const tie = (n: bigint) => n * CENT + CENT / 2n;
const row = (provider: string, ba: string | null, a: bigint, over: Partial<GenRow> = {}): GenRow => ({ provider, currency: "USD", ba, a, b: 0n, c: 0n, billed: a, ...over });

test("partitionOf: every money report reconciles per invoice (billing account), shown or not", async () => {
  const { REPORTS } = await import("../../lib/reports/catalog.ts");
  const parts = Object.fromEntries(REPORTS.filter((r) => r.rounding).map((r) => [r.report_type, partitionOf(r).join(",")]));
  const invoice = "provider,billing_currency,_invoice";
  expect(parts).toEqual({
    premiums_and_rebates_by_account: invoice,
    premiums_and_rebates_by_child_org: invoice,
    commitment_cost_by_account: invoice,
    commitment_cost_by_service: invoice,
    commitment_cost_daily: invoice,
    cloud_bill_by_account: invoice,
    cloud_bill_by_service: invoice,
    cloud_bill_daily: invoice,
    cloud_bill_by_resource: invoice,
  });
});

describeEachDb("shownSql: cents that add up", (driver) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(driver);
  });
  afterAll(async () => {
    await db?.drop();
  });

  test("two payers of one provider are two invoices: 0.005 each shows 0.01 each (0.01 and 0.00 without the column)", async () => {
    const rows = [row("aws", "payer-a", tie(0n)), row("aws", "payer-b", tie(0n))];
    const per = await checkShown(db, rows, true);
    expect([...per.values()].map((c) => [c.a, c.total, c.billed])).toEqual([[1n, 1n, 1n], [1n, 1n, 1n]]);
    // Without a billing account column the provider's month is one partition: 0.01 in all.
    const one = await checkShown(db, rows, false);
    expect([...one.values()].map((c) => c.total).sort()).toEqual([0n, 1n]);
  });

  test("a NULL billing account is a partition of its own and still gets its adjustment", async () => {
    // Three NULL-payer cells of 0.004 (half up: 0.00 each) must add up to 0.01 = round(0.012).
    const rows = [0, 1, 2].map(() => row("aws", null, 400_000_00n)).concat([row("aws", "payer-a", 400_000_00n)]);
    const per = await checkShown(db, rows, true);
    expect([...per.values()].map((c) => c.a)).toEqual([1n, 0n, 0n, 0n]);
  });

  test("credits: negative ties round away from zero per partition", async () => {
    const rows = [row("gcp", "payer-a", -tie(0n)), row("gcp", "payer-b", -tie(0n)), row("gcp", "payer-b", -tie(0n), { c: tie(1n) })];
    await checkShown(db, rows, true);
    await checkShown(db, rows, false);
  });

  test("an invoice column: rows are rounded per invoice and summed over their invoices; an `own` column's total is its exact total rounded", async () => {
    // acct-1 is billed on two invoices (0.006 each: 0.01 + 0.01); on inv-b, on-demand 0.007 and
    // commitment 0.006 share round(0.013) = 0.01: the commitment (own) keeps round(0.006) = 0.01.
    const shown = await db.handle.query<Record<string, unknown>>(
      shownSql({
        exactSql: `SELECT provider, billing_currency, account_id, a::numeric AS a, b::numeric AS b, (a + b)::numeric AS total, inv AS _inv
          FROM (VALUES ('aws', 'USD', 'acct-1', 0.006, 0, 'inv-a'), ('aws', 'USD', 'acct-1', 0.006, 0, 'inv-b'), ('aws', 'USD', 'acct-2', 0.007, 0.006, 'inv-c'))
          v(provider, billing_currency, account_id, a, b, inv)`,
        output_fields: [str("provider"), str("billing_currency"), str("account_id"), num("a"), num("b"), num("total")],
        orderBy: ["provider", "billing_currency", "account_id"],
        rounding: { groups: [[{ column: "a", sign: 1 }, { column: "b", sign: 1, own: true }]], derived: [{ column: "total", terms: [{ column: "a", sign: 1 }, { column: "b", sign: 1 }] }] },
        invoice: "_inv",
      }) + " ORDER BY account_id",
    );
    expect(shown.map((r) => [r.account_id, shownCents(r.a), shownCents(r.b), shownCents(r.total)])).toEqual([
      ["acct-1", 2n, 0n, 2n],
      ["acct-2", 0n, 1n, 1n],
    ]);
  });

  test("an invoice's total is its exact total rounded even when its own column rounds the other way: the own column takes its other cent", async () => {
    const shownOf = async (values: string) =>
      (
        await db.handle.query<Record<string, unknown>>(
          shownSql({
            exactSql: `SELECT provider, billing_currency, a::numeric AS a, b::numeric AS b, (a + b)::numeric AS total, 'inv' AS _inv
              FROM (VALUES ${values}) v(provider, billing_currency, a, b)`,
            output_fields: [str("provider"), str("billing_currency"), num("a"), num("b"), num("total")],
            orderBy: ["provider", "billing_currency"],
            rounding: { groups: [[{ column: "a", sign: 1 }, { column: "b", sign: 1, own: true }]], derived: [{ column: "total", terms: [{ column: "a", sign: 1 }, { column: "b", sign: 1 }] }] },
            invoice: "_inv",
          }),
        )
      ).map((r) => [shownCents(r.a), shownCents(r.b), shownCents(r.total)]);
    // Credits of 0.02 and a commitment of 0.005: the invoice is -0.015 → -0.02, so the commitment shows 0.00 (its floor).
    expect(await shownOf("('aws', 'USD', -0.02, 0.005)")).toEqual([[-2n, 0n, -2n]]);
    // Usage of 0.02 and a commitment of -0.005: the invoice is 0.015 → 0.02, so the commitment shows 0.00 (its ceiling).
    expect(await shownOf("('aws', 'USD', 0.02, -0.005)")).toEqual([[2n, 0n, 2n]]);
    // The ordinary case: the commitment keeps its own rounding (0.005 → 0.01), usage takes the rest.
    expect(await shownOf("('aws', 'USD', 0.004, 0.005)")).toEqual([[0n, 1n, 1n]]);
  });

  test(
    "generated amounts: cells within a cent, totals from the shown parts, partitions exact to the cent",
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(arbRow, { minLength: 1, maxLength: 14 }), async (rows) => {
          await checkShown(db, rows, true);
          await checkShown(db, rows, false);
        }),
        { numRuns: RUNS, seed: Number(process.env.SHOWN_SQL_SEED ?? 20260612) },
      );
    },
    120_000,
  );
});

describeEachDb("two payers through the real reports", (driver) => {
  const now = new Date("2026-06-10T12:00:00Z");
  const t = useTestApp(driver, { now: () => now });

  test("cloud_bill_by_account and commitment_cost_by_account reconcile per billing account: a billing_account_id filter adds up to that invoice", async () => {
    const org = await t.newOrg("two payers");
    const C = { CommitmentDiscountCategory: "Usage", CommitmentDiscountType: "Reserved Instance", PricingCategory: "Committed", CommitmentDiscountStatus: "Used" };
    await importCsvText(t, org.id, focusCsv([
      { BillingAccountId: "payer-a", SubAccountId: "acct-a", EffectiveCost: "0.005", BilledCost: "0.005", ListCost: "0.005", ContractedCost: "0.005" },
      { BillingAccountId: "payer-b", SubAccountId: "acct-b", EffectiveCost: "0.005", BilledCost: "0.005", ListCost: "0.005", ContractedCost: "0.005" },
      { ...C, CommitmentDiscountId: "ri-a", BillingAccountId: "payer-a", SubAccountId: "acct-c", EffectiveCost: "0.005", BilledCost: "0", ListCost: "0.01", ContractedCost: "0.01" },
      { ...C, CommitmentDiscountId: "ri-b", BillingAccountId: "payer-b", SubAccountId: "acct-d", EffectiveCost: "0.005", BilledCost: "0", ListCost: "0.01", ContractedCost: "0.01" },
    ]));
    await closeBillingPeriod(t.s.db, org.id, "aws", "2023-01", now);
    await freezeClosedPeriods(t.s.db, now, { orgId: org.id });
    const Q = "year=2023&month=1";
    const sum = (rows: Record<string, any>[], c: string) => Math.round(rows.reduce((s, r) => s + r[c] * 100, 0));
    for (const payer of ["payer-a", "payer-b"]) {
      const bill = await getReport(t, org, "cloud_bill_by_account", `${Q}&billing_account_id=${payer}`);
      expect(bill.period_status).toBe("finalized");
      // Each payer's exact Σ EffectiveCost is 0.010 → 0.01; Σ BilledCost 0.005 → 0.01.
      expect([sum(bill.rows, "total_cost"), sum(bill.rows, "billed_cost")]).toEqual([1, 1]);
      const commit = await getReport(t, org, "commitment_cost_by_account", `${Q}&billing_account_id=${payer}`);
      expect(commit.rows.map((r) => r.commitment_cost)).toEqual([0.01]);
    }
    // The provider's rows add up to the sum of its invoices.
    expect(sum((await getReport(t, org, "cloud_bill_by_account", Q)).rows, "total_cost")).toBe(2);
  });
});

import { expect, test } from "bun:test";
import { readFileSync, writeFileSync, mkdtempSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { parse } from "csv-parse/sync";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { Readable } from "node:stream";
import { FocusFileError, FocusImportRejected, importFocus, importFocusFile } from "../../lib/billing/focus.ts";
import { listCommitments, listLinkedAccounts } from "../../lib/billing/queries.ts";
import { listBillingPeriods } from "../../lib/reports/periods.ts";
import { FOCUS_DIR, focusCsv, getReport, importCsvText } from "../reports/helpers.ts";

const SAMPLE = `${FOCUS_DIR}/focus_sample_1000.csv`;
const NOW = new Date("2026-06-10T00:00:00Z");

/** Σ of a column over the sample rows, computed independently of the importer. */
function sampleSum(col: string, keep: (r: Record<string, string>) => boolean) {
  const rows = parse(readFileSync(SAMPLE), { columns: true, bom: true }) as Record<string, string>[];
  return rows.filter(keep).reduce((s, r) => s + Number(r[col]), 0);
}

describeEachDb("FOCUS import", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });
  const sum = async (orgId: string, col = "effective_cost") => Number((await t.s.handle.query<{ s: string }>(`SELECT COALESCE(SUM(${col}), 0) AS s FROM billing_line_items WHERE org_id = $1`, [orgId]))[0]!.s);
  const count = async (orgId: string) => Number((await t.s.handle.query<{ n: string }>(`SELECT count(*) AS n FROM billing_line_items WHERE org_id = $1`, [orgId]))[0]!.n);

  test("the real FinOps sample: all-or-nothing by default, nothing written when rows violate the spec", async () => {
    const org = await t.newOrg();
    const err = await importFocusFile(t.s.db, org.id, SAMPLE).catch((e) => e);
    expect(err).toBeInstanceOf(FocusImportRejected);
    expect(err.rowsRejected).toBe(7);
    expect(err.message).toContain("line 927");
    expect(await count(org.id)).toBe(0);
    expect((await t.s.handle.query(`SELECT 1 FROM billing_imports WHERE org_id = $1`, [org.id])).length).toBe(0);
  }, 30_000);

  test("the real FinOps sample with skip-invalid: 993 rows kept, the 7 Oracle rows reported by line and not summed", async () => {
    const org = await t.newOrg();
    const r = await importFocusFile(t.s.db, org.id, SAMPLE, { skipInvalid: true });
    expect(r.rows_read).toBe(1000);
    expect(r.rows_imported).toBe(993);
    expect(r.rows_rejected).toBe(7);
    expect(r.rejects.map((x) => x.line)).toEqual([927, 928, 943, 946, 949, 950, 952]);
    for (const x of r.rejects) {
      expect(x.errors).toContain('ProviderName "Oracle" is not a supported provider (aws, azure, gcp)');
      expect(x.errors).toContain("ContractedCost must not be null");
    }
    expect(await count(org.id)).toBe(993);
    const valid = (row: Record<string, string>) => row.ProviderName !== "Oracle";
    expect(await sum(org.id)).toBeCloseTo(sampleSum("EffectiveCost", valid), 9);
    expect(await sum(org.id, "billed_cost")).toBeCloseTo(sampleSum("BilledCost", valid), 9);
    // Quirks: NULL strings → null, "YYYY-MM-DD HH:MM:SS" → UTC, "Usage-based" → "Usage-Based".
    const q = await t.s.handle.query<any>(
      `SELECT count(*) FILTER (WHERE charge_class IS NULL) AS null_class, count(DISTINCT charge_frequency) AS freqs,
              min(charge_period_start) AS first, count(*) FILTER (WHERE charge_frequency = 'Usage-based') AS lower_b
       FROM billing_line_items WHERE org_id = $1`,
      [org.id],
    );
    expect(Number(q[0].null_class)).toBe(993);
    // Tags (a JSON column) are stored as JSON objects.
    const tags = await t.s.handle.query<any>(`SELECT count(*) FILTER (WHERE jsonb_typeof(tags) <> 'object') AS bad, count(tags) AS n, max(tags->>'application') AS app FROM billing_line_items WHERE org_id = $1`, [org.id]);
    expect(Number(tags[0].bad)).toBe(0);
    expect(Number(tags[0].n)).toBeGreaterThan(100);
    expect(tags[0].app).toBeString();
    expect(Number(q[0].lower_b)).toBe(0);
    expect(new Date(q[0].first).toISOString()).toBe("2024-09-01T00:00:00.000Z");
    // Linked accounts and their billing accounts are discovered.
    const accounts = await listLinkedAccounts(t.s.db, org.id, "aws");
    expect(accounts.find((a) => a.account_id === "11353890204")).toMatchObject({ name: "Atlas Orion", billing_account_id: "1234567890123", billing_account_name: "SunBird" });
    // The AWS savings plan Used rows become inventory entries.
    const commitments = await listCommitments(t.s.db, org.id, { status: "all" });
    expect(commitments.length).toBe(2);
    expect(commitments.every((c) => c.commitment_type === "compute_savings_plan" && c.category === "Spend")).toBe(true);
    expect((await listBillingPeriods(t.s.db, org.id)).map((p) => [p.provider, p.month, p.status])).toEqual([["aws", "2024-09-01", "open"], ["azure", "2024-09-01", "open"]]);
  }, 30_000);

  test("re-importing the same billing period replaces it: no double counting", async () => {
    const org = await t.newOrg();
    const file = `${FOCUS_DIR}/synthetic_guymano/aws_1_2_cost_and_usage_rows100_seed42.csv`;
    const first = await importFocusFile(t.s.db, org.id, file);
    const total = await sum(org.id);
    // The same file again: its content digest shows it is already there, nothing is written.
    expect(await importFocusFile(t.s.db, org.id, file)).toMatchObject({ unchanged: true, rows_imported: 0, import_id: first.import_id });
    // Other options (another content digest): the period is replaced.
    const second = await importFocusFile(t.s.db, org.id, file, { defaults: { x_Reimport: "yes" } });
    expect(second.rows_replaced).toBe(first.rows_imported);
    expect(await count(org.id)).toBe(100);
    expect(await sum(org.id)).toBe(total);
    // Another billing account's month is left alone.
    await importCsvText(t, org.id, focusCsv([{ BillingAccountId: "other-payer", BillingPeriodStart: "2026-05-01T00:00:00Z", BillingPeriodEnd: "2026-06-01T00:00:00Z", ChargePeriodStart: "2026-05-02T00:00:00Z", ChargePeriodEnd: "2026-05-02T01:00:00Z", BilledCost: "7", EffectiveCost: "7", ListCost: "7", ContractedCost: "7" }]));
    expect(await count(org.id)).toBe(101);
    await importFocusFile(t.s.db, org.id, file);
    expect(await count(org.id)).toBe(101);
    expect(await sum(org.id)).toBeCloseTo(total + 7, 9);
  });

  test("concurrent imports of the same period leave exactly one copy", async () => {
    const org = await t.newOrg();
    const file = `${FOCUS_DIR}/synthetic_guymano/gcp_1_2_cost_and_usage_rows100_seed42.csv`;
    await Promise.all([importFocusFile(t.s.db, org.id, file), importFocusFile(t.s.db, org.id, file), importFocusFile(t.s.db, org.id, file)]);
    expect(await count(org.id)).toBe(100);
  });

  test("gzip, BOM, lower-case headers and 'null' values are read", async () => {
    const org = await t.newOrg();
    const csv = "\uFEFF" + focusCsv([{ BilledCost: "2.5", EffectiveCost: "2.5", ListCost: "2.5", ContractedCost: "2.5", ResourceId: "null", ChargeFrequency: "usage-based" }]).replace("ProviderName", "providername");
    const dir = mkdtempSync(join(tmpdir(), "focus-"));
    writeFileSync(join(dir, "f.csv.gz"), gzipSync(csv));
    const r = await importFocusFile(t.s.db, org.id, join(dir, "f.csv.gz"));
    expect(r.rows_imported).toBe(1);
    const [row] = await t.s.handle.query<any>(`SELECT provider, resource_id, charge_frequency, effective_cost FROM billing_line_items WHERE org_id = $1`, [org.id]);
    expect(row.provider).toBe("aws");
    expect(row.resource_id).toBeNull();
    expect(row.charge_frequency).toBe("Usage-Based");
    expect(Number(row.effective_cost)).toBe(2.5);
  });

  test("tabs, backslashes, line breaks and non-ASCII text are stored exactly, in batches that need COPY escaping and batches that do not", async () => {
    const org = await t.newOrg();
    const tricky = ["tab\there", "back\\slash \\N", "two\nlines", "crlf\r\nend", "naïve – 東京"];
    const csv = focusCsv([
      { ResourceId: "plain-1", BilledCost: "1", EffectiveCost: "1", ListCost: "1", ContractedCost: "1" },
      ...tricky.map((d, i) => ({ ResourceId: `tricky-${i}`, BilledCost: "1", EffectiveCost: "1", ListCost: "1", ContractedCost: "1", ServiceName: d })),
      { ResourceId: "plain-2", BilledCost: "1", EffectiveCost: "1", ListCost: "1", ContractedCost: "1" },
    ]);
    const [head, ...lines] = csv.split(/\n(?=AWS,)/);
    // One chunk per record: the reader hands each its own batch (plain ones and ones to escape).
    const chunks = [`${head}\n`, ...lines.map((l, i) => (i < lines.length - 1 ? `${l}\n` : l))];
    // A default with a tab: every batch is escaped then.
    const r = await importFocus(t.s.db, org.id, Readable.from(chunks), { defaults: { RegionName: "a\tb" } });
    expect(r.rows_imported).toBe(tricky.length + 2);
    const rows = await t.s.handle.query<{ resource_id: string; service_name: string; region_name: string }>(
      `SELECT resource_id, service_name, region_name FROM billing_line_items WHERE org_id = $1 ORDER BY resource_id`,
      [org.id],
    );
    expect(rows.find((x) => x.resource_id === "plain-1")!.service_name).toBe("Compute Service");
    expect(new Set(rows.map((x) => x.region_name))).toEqual(new Set(["a\tb"]));
    for (const [i, d] of tricky.entries()) expect(rows.find((x) => x.resource_id === `tricky-${i}`)!.service_name).toBe(d);
    const other = await t.newOrg();
    const plain = await importFocus(t.s.db, other.id, Readable.from(chunks));
    expect(plain.rows_imported).toBe(tricky.length + 2);
    const stored = await t.s.handle.query<{ service_name: string }>(`SELECT service_name FROM billing_line_items WHERE org_id = $1 AND resource_id LIKE 'tricky-%' ORDER BY resource_id`, [other.id]);
    expect(stored.map((x) => x.service_name)).toEqual(tricky);
  });

  test("spec violations are reported per line; a file without required columns is refused", async () => {
    const org = await t.newOrg();
    const csv = focusCsv([
      { BilledCost: "1", EffectiveCost: "1", ContractedCost: "1", ListCost: "1" },
      { BilledCost: "abc", EffectiveCost: "1", ContractedCost: "1", ListCost: "1" },
      { BilledCost: "1", EffectiveCost: "1", ContractedCost: "1", ListCost: "1", ChargeCategory: "Refund" },
      { BilledCost: "0", EffectiveCost: "1", ContractedCost: "1", ListCost: "1", CommitmentDiscountId: "cd", CommitmentDiscountStatus: null },
      { BilledCost: "1", EffectiveCost: "1", ContractedCost: "1", ListCost: "1", ChargePeriodStart: "2023-01-02T00:00:00Z", ChargePeriodEnd: "2023-01-01T00:00:00Z" },
    ]);
    const r = await importCsvText(t, org.id, csv, { skipInvalid: true });
    expect(r.rows_imported).toBe(1);
    expect(r.rejects).toEqual([
      { line: 3, errors: ['BilledCost is not a decimal number: "abc"'] },
      { line: 4, errors: ['ChargeCategory "Refund" is not one of Usage, Purchase, Tax, Credit, Adjustment'] },
      { line: 5, errors: ["CommitmentDiscountStatus must not be null on a Usage row with a CommitmentDiscountId"] },
      { line: 6, errors: ["ChargePeriodEnd is before ChargePeriodStart"] },
    ]);
    const err = await importCsvText(t, org.id, "BilledCost,EffectiveCost\n1,1\n").catch((e) => e);
    expect(err).toBeInstanceOf(FocusFileError);
    expect(err.message).toContain("ProviderName");
  });

  test("a provider's month with an InvoiceId on every row is closed by the import (any import, file or sync); one uninvoiced row keeps it open", async () => {
    const org = await t.newOrg();
    const row = (provider: string, month: string) => ({ ProviderName: provider, BillingPeriodStart: `${month}-01T00:00:00Z`, BillingPeriodEnd: `${month}-28T00:00:00Z`, ChargePeriodStart: `${month}-02T00:00:00Z`, ChargePeriodEnd: `${month}-02T01:00:00Z`, BilledCost: 1, EffectiveCost: 1, ListCost: 1, ContractedCost: 1 });
    const rows = [row("AWS", "2023-01"), row("AWS", "2023-01"), row("Microsoft", "2023-01"), row("Microsoft", "2023-01"), row("AWS", "2023-02")];
    // AWS January and February invoiced on every row, Azure January not on its second row.
    const invoices = ["INV-1", "INV-1", "INV-9", "", "INV-2"];
    const [head, ...lines] = focusCsv(rows).trimEnd().split("\n");
    const csv = [`${head},InvoiceId`, ...lines.map((l, i) => `${l},${invoices[i]}`)].join("\n") + "\n";
    const r = await importCsvText(t, org.id, csv, { now: NOW });
    expect(r.periods_closed.map((p) => [p.provider, String(p.month).slice(0, 7)]).sort()).toEqual([["aws", "2023-01"], ["aws", "2023-02"]]);
    expect((await listBillingPeriods(t.s.db, org.id)).map((p) => [p.provider, p.month, p.status]).sort()).toEqual([["aws", "2023-01-01", "closed"], ["aws", "2023-02-01", "closed"], ["azure", "2023-01-01", "open"]]);
    // Without the column nothing is closed.
    const other = await t.newOrg();
    expect((await importCsvText(t, other.id, focusCsv(rows), { now: NOW })).periods_closed).toEqual([]);
  });

  test("linked accounts feed the reports' account names", async () => {
    const org = await t.newOrg();
    await importCsvText(t, org.id, focusCsv([{ SubAccountId: "111", SubAccountName: "Payments", BillingPeriodStart: "2026-06-01T00:00:00Z", ChargePeriodStart: "2026-06-02T00:00:00Z", ChargePeriodEnd: "2026-06-02T01:00:00Z", BilledCost: "3", EffectiveCost: "3", ListCost: "3", ContractedCost: "3" }]));
    const rep = await getReport(t, org, "cloud_bill_by_service", "year=2026&month=6");
    expect(rep.rows.map((r) => r.total_cost)).toEqual([3]);
    expect((await listLinkedAccounts(t.s.db, org.id)).map((a) => [a.account_id, a.name])).toEqual([["111", "Payments"]]);
  });
});

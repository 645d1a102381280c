/**
 * The import PostgreSQL parses (lib/billing/focusStaged.ts) is an accelerator of the row-by-row
 * import, never a second reading of FOCUS: the same file gives the same stored rows, summaries,
 * accounts, commitments and periods either way, and any file it cannot take whole — a row the row
 * path rejects or reads otherwise, CSV PostgreSQL reads otherwise — is imported row by row in the
 * same transaction, with each reject's line. The content digest: the same file imported again
 * while its rows are current writes nothing; once a later import replaced one of its periods it
 * is imported again.
 */
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { FocusImportRejected, importFocusFile, type ImportOptions, type ImportResult } from "../../lib/billing/focus.ts";
import { focusCsv } from "../reports/helpers.ts";
import { FieldScreen, ScreenKind } from "../../lib/billing/focusStaged.ts";
import { openDb } from "../../lib/db/index.ts";

const NOW = new Date("2023-03-10T00:00:00Z");
const dir = mkdtempSync(join(tmpdir(), "commitops-staged-"));
process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const fileOf = (text: string | Buffer, ext = ".csv") => {
  const path = join(dir, `f${files++}${ext}`);
  writeFileSync(path, text);
  return path;
};

/** Every column of the org's stored rows (but the ids), in one total order. */
const storedRows = (t: ReturnType<typeof useTestApp>, orgId: string) =>
  t.s.handle.query(
    `SELECT to_jsonb(li) - 'org_id' - 'import_id' AS r FROM billing_line_items li WHERE org_id = $1
     ORDER BY (to_jsonb(li) - 'org_id' - 'import_id')::text`,
    [orgId],
  );
const summaries = (t: ReturnType<typeof useTestApp>, orgId: string) =>
  Promise.all(
    ["billing_cost_summaries", "commitment_usage_summaries"].map((table) =>
      t.s.handle.query(`SELECT (to_jsonb(s) - 'org_id')::text AS r FROM ${table} s WHERE org_id = $1 ORDER BY 1`, [orgId]),
    ),
  );
const tracked = (t: ReturnType<typeof useTestApp>, orgId: string) =>
  Promise.all([
    t.s.handle.query(`SELECT provider, account_id, name, billing_account_id, billing_account_name FROM cloud_accounts WHERE org_id = $1 ORDER BY 1, 2`, [orgId]),
    t.s.handle.query(`SELECT provider, provider_commitment_id, commitment_type, category FROM commitments WHERE org_id = $1 ORDER BY 1, 2`, [orgId]),
    t.s.handle.query(`SELECT provider, month::text, status FROM billing_periods WHERE org_id = $1 ORDER BY 1, 2`, [orgId]),
  ]);
const comparable = (r: ImportResult) => ({ ...r, import_id: null, parsed_by: null });

/** focusCsv's columns and defaults, and the optional columns the edge rows use. */
const OPTIONAL = { Tags: null, SkuPriceDetails: null, x_InstanceType: null, ChargeDescription: null, ChargeClass: null, InvoiceId: null, BillingPeriodStatus: null, x_Note: null };
function edgeCsv(rows: Record<string, string | number | null>[]): string {
  const [head, ...lines] = focusCsv(rows).trimEnd().split("\n");
  const extra = Object.keys(OPTIONAL);
  const cell = (v: string | number | null | undefined) => {
    if (v === null || v === undefined) return "";
    const s = String(v);
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  // focusCsv quotes what needs it and never puts a line break in its own columns' values.
  return [`${head},${extra.join(",")}`, ...lines.map((l, i) => `${l},${extra.map((c) => cell(rows[i]![c])).join(",")}`)].join("\n") + "\n";
}

/** Rows exercising every normalization of the row path: nulls spelled many ways, case, zones, JSON, exponents. */
const EDGE_ROWS: Record<string, string | number | null>[] = [
  { EffectiveCost: "12.5", BilledCost: "+7.", ListCost: "2.5E+1", ContractedCost: ".5", Tags: `{"team":"a","cost-center":"42"}`, SkuPriceDetails: `{"InstanceType":"m5.large","vCPU":2}`, ResourceId: "i-1" },
  { SubAccountId: "acct-2", SubAccountName: "NULL", EffectiveCost: "1e-3", BilledCost: "0.00000000005", ListCost: "-0.5", ContractedCost: "3", ChargeCategory: "usage", ChargeFrequency: "usage-based", PricingCategory: "committed", ChargeClass: "CORRECTION", SkuPriceDetails: "On Demand pricing", x_InstanceType: "c5.xlarge" },
  { SubAccountId: "null", BillingAccountName: "Payer, Inc.", ChargePeriodStart: "2023-01-02 03:00:00", ChargePeriodEnd: "2023-01-02T04:00:00+01:00", EffectiveCost: "3", BilledCost: "3", ListCost: "3", ContractedCost: "3", ServiceName: "  ", Tags: "   ", ChargeDescription: "a \\ backslash\tand tab", ResourceId: "\u00a0" },
  { BillingPeriodStart: "2023-01-01", BillingPeriodEnd: "2023-02-01T00:00:00.000Z", ChargePeriodStart: "2023-01-03T00:00:00.5Z", ChargePeriodEnd: "2023-01-03T01:00:00+0000", EffectiveCost: "4", BilledCost: "0", ListCost: "8", ContractedCost: "6", CommitmentDiscountId: "ri-1", CommitmentDiscountStatus: "used", CommitmentDiscountCategory: "usage", CommitmentDiscountType: "Reserved Instance", SkuPriceDetails: `{"InstanceType":null,"x_InstanceType":"r5.large"}` },
  { ChargeCategory: "Purchase", ChargeFrequency: "Recurring", EffectiveCost: "0", BilledCost: "100", ListCost: "100", ContractedCost: "100", CommitmentDiscountId: "ri-1", CommitmentDiscountCategory: "Usage", CommitmentDiscountType: "Reserved Instance", x_ContractTerm: "one_year", x_FeeRate: "NULL" },
  { ProviderName: "Microsoft Azure", BillingAccountId: "ea-1", SubAccountId: "sub-1", SubAccountName: "Subscription \"quoted\"", BillingCurrency: "EUR", EffectiveCost: "9", BilledCost: "9", ListCost: "9", ContractedCost: "9", ChargeDescription: "multi\nline", SkuPriceDetails: `{"nested":{"a":[1,2]}}`, InvoiceId: "inv-1", x_Note: " " },
  { ProviderName: "google cloud", BillingAccountId: "gba", SubAccountId: "proj", BillingPeriodStart: "2022-12-01T00:00:00Z", BillingPeriodEnd: "2023-01-01T00:00:00Z", ChargePeriodStart: "2022-12-31T00:00:00Z", ChargePeriodEnd: "2022-12-31T01:00:00Z", EffectiveCost: "1", BilledCost: "1", ListCost: "1", ContractedCost: "1", ChargeCategory: "Tax", ChargeFrequency: "One-Time", ServiceName: null, BillingPeriodStatus: "CLOSED", InvoiceId: "g-1", x_Note: "null" },
];

test("the screen finds every field that starts or ends with a blank, and every NULL word, across chunk boundaries, quotes followed", () => {
  const screened = (...chunks: string[]) => {
    const screen = new FieldScreen();
    for (const c of chunks) screen.push(Buffer.from(c));
    screen.end();
    return { blankEdges: screen.blankEdges, nullWords: screen.nullWords };
  };
  expect(screened("a,b c,\"d, e\",\"\"\r\n", "x,,nulls,anull,\"nu,ll\"\n")).toEqual({ blankEdges: false, nullWords: false });
  const cases: [string, "blankEdges" | "nullWords"][] = [
    ...["a, b\n", "a ,b\n", "a,b \n", "a,b \r\n", " a,b\n", "a,\" b\"\n", "a,\"b \"\n", "a,\"\nb\"\n", "a,b\tc\n", "a,b\rc\n", "a,b "].map((t) => [t, "blankEdges"] as [string, "blankEdges"]),
    ...["a,NULL,b\n", "null,a\n", "a,Null\r\n", "a,\"nULL\"\n", "a,null"].map((t) => [t, "nullWords"] as [string, "nullWords"]),
  ];
  for (const [text, flag] of cases) {
    expect([text, screened(text)[flag]]).toEqual([text, true]);
    // The same split at every byte: the screen keeps its state between chunks.
    for (let i = 1; i < text.length; i++) expect([text, i, screened(text.slice(0, i), text.slice(i))[flag]]).toEqual([text, i, true]);
  }
});

test("the screen tells whether every number and timestamp can be cast as it is and which kept columns need JSON escapes, across chunk boundaries, the header aside", () => {
  // Columns: a number, a timestamp, a column kept in extra, one it does not look at.
  const kinds = [ScreenKind.Number, ScreenKind.Timestamp, ScreenKind.Extra, ScreenKind.None];
  const screened = (...chunks: string[]) => {
    const screen = new FieldScreen(kinds);
    for (const c of chunks) screen.push(Buffer.from(c));
    screen.end();
    return { plainNumbers: screen.plainNumbers, plainTimestamps: screen.plainTimestamps, escaped: screen.escaped.has(2) };
  };
  const file = (cells: string[]) => `Cost,Start,x_Note,Other\n1,2026-10-01T00:00:00Z,a,b\n${cells.join(",")}\n`;
  const plain = { plainNumbers: true, plainTimestamps: true, escaped: false };
  // The header is names, not values; the column not looked at may hold anything.
  expect(screened(`"NaN ""x""",24:00,"a\\b",c\n1,2026-10-01T23:59:59Z,plain,"x\\ ""y"""\n`)).toEqual(plain);
  const cases: [string[], Partial<typeof plain>][] = [
    [["12.5", "2026-10-01T00:00:00Z", "a b", "z"], {}],
    [["-1e-3", "", "", ""], {}],
    [["+.5", "2026-12-31T20:00:00Z", '"a, b"', "z"], {}],
    [['"7.25"', '"2026-10-01T00:00:00Z"', '"x"', "z"], {}],
    ...["NaN", "Infinity", "-inf", " 1", "1 ", "1_000", "0x1F", '"1,5"'].map((v) => [[v, "", "", ""], { plainNumbers: false }] as [string[], Partial<typeof plain>]),
    ...["2026-10-01T24:00:00Z", "2026-10-01T23:60:00Z", "2026-10-01T23:00:60Z", "2026-10-01 00:00:00Z", "2026-10-01T00:00:00.5Z", "2026-10-01T00:00:00+00:00", "2026-10-01", "2026-10-01t00:00:00z", "2026-10-01T30:00:00Z", '" 2026-10-01T00:00:00Z"'].map(
      (v) => [["", v, "", ""], { plainTimestamps: false }] as [string[], Partial<typeof plain>],
    ),
    ...['"say ""hi"""', "back\\slash", '"two\nlines"', "tab\there"].map((v) => [["", "", v, ""], { escaped: true }] as [string[], Partial<typeof plain>]),
  ];
  for (const [cells, flags] of cases) {
    const text = file(cells);
    const expected = { ...plain, ...flags };
    expect([cells, screened(text)]).toEqual([cells, expected]);
    for (let i = 1; i < text.length; i++) expect([cells, i, screened(text.slice(0, i), text.slice(i))]).toEqual([cells, i, expected]);
  }
  // The last field of a file without a final line end is screened too.
  expect(screened("Cost,Start,x_Note\n1,2026-10-01T00:00:00Z,\"a\"\"b\"").escaped).toBe(true);
  expect(screened("Cost,Start\n1,2026-10-01T00:00").plainTimestamps).toBe(false);
});

describeEachDb("imports PostgreSQL parses", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });
  const both = async (path: string, opts: ImportOptions = {}) => {
    const staged = await t.newOrg();
    const rowByRow = await t.newOrg();
    const a = await importFocusFile(t.s.db, staged.id, path, { now: NOW, ...opts });
    const b = await importFocusFile(t.s.db, rowByRow.id, path, { now: NOW, ...opts, rowByRow: true });
    return { staged, rowByRow, a, b };
  };
  const expectSameData = async (x: { id: string }, y: { id: string }) => {
    expect(await storedRows(t, x.id)).toEqual(await storedRows(t, y.id));
    expect(await summaries(t, x.id)).toEqual(await summaries(t, y.id));
    expect(await tracked(t, x.id)).toEqual(await tracked(t, y.id));
  };

  test("the same file gives the same rows, summaries, accounts, commitments and periods either way", async () => {
    const csv = edgeCsv(EDGE_ROWS);
    const { staged, rowByRow, a, b } = await both(fileOf(csv));
    expect(a.parsed_by).toBe(driver === "postgres" ? "postgresql" : "row_by_row");
    expect(b.parsed_by).toBe("row_by_row");
    expect(comparable(a)).toEqual(comparable(b));
    expect(a.rows_imported).toBe(EDGE_ROWS.length);
    expect(a.periods).toHaveLength(3);
    // gcp's December by its status, azure's January by an InvoiceId on each of its rows.
    expect(a.periods_closed).toEqual([{ provider: "gcp", month: "2022-12-01" }, { provider: "azure", month: "2023-01-01" }]);
    await expectSameData(staged, rowByRow);
    // The values the row path normalizes, as stored.
    const rows = (await storedRows(t, staged.id)).map((r: any) => r.r);
    const corrected = rows.find((r: any) => r.charge_class === "Correction");
    expect(corrected).toMatchObject({ charge_category: "Usage", charge_frequency: "Usage-Based", pricing_category: "Committed", sub_account_name: null, instance_type: "c5.xlarge" });
    expect(corrected.extra).toEqual({ SkuPriceDetails: "On Demand pricing", x_InstanceType: "c5.xlarge" });
    expect(rows.find((r: any) => r.commitment_discount_status === "Used")).toMatchObject({ instance_type: "r5.large", charge_period_start: "2023-01-03T00:00:00.5+00:00" });
  });

  test("a value of blanks only is null both ways (PostgreSQL still parses the file)", async () => {
    const csv = edgeCsv(EDGE_ROWS).replace("Compute Service", "\t \u00a0").replace("Account One", "\u3000");
    const { staged, rowByRow, a, b } = await both(fileOf(csv));
    expect(a.parsed_by).toBe(driver === "postgres" ? "postgresql" : "row_by_row");
    expect(comparable(a)).toEqual(comparable(b));
    await expectSameData(staged, rowByRow);
    const rows = (await storedRows(t, staged.id)).map((r: any) => r.r);
    expect(rows.filter((r: any) => r.service_name === null)).toHaveLength(3);
    expect(rows.filter((r: any) => r.sub_account_name === "\u3000")).toHaveLength(1);
  });

  test("a file with no NULL word and no blank at a field's edge: the same rows (SQL checks only empty values)", async () => {
    const { staged, rowByRow, a, b } = await both(fileOf(edgeCsv([EDGE_ROWS[0]!, EDGE_ROWS[3]!])));
    expect(a.parsed_by).toBe(driver === "postgres" ? "postgresql" : "row_by_row");
    expect(comparable(a)).toEqual(comparable(b));
    await expectSameData(staged, rowByRow);
  });

  test("numbers, timestamps and kept values PostgreSQL casts as they are (the screen found nothing else): the same rows, escapes and all", async () => {
    const rows: Record<string, string>[] = [
      { EffectiveCost: "12.5", BilledCost: "+7.", ListCost: "2.5E+1", ContractedCost: ".5", ChargePeriodStart: "2023-01-05T23:59:59Z", ChargePeriodEnd: "2023-01-06T00:00:00Z", x_Note: "plain", SkuPriceDetails: `{"InstanceType":"m5.large"}` },
      { EffectiveCost: "-1e-3", BilledCost: "0.00000000005", ListCost: "3", ContractedCost: "3", x_Note: 'say "hi" \\ back', x_FeeRate: "0.25" },
      { EffectiveCost: "4", BilledCost: "4", ListCost: "4", ContractedCost: "4", x_Note: "two\nlines\tand a tab", x_ContractTerm: "one_year" },
    ];
    const { staged, rowByRow, a, b } = await both(fileOf(edgeCsv(rows)));
    expect(a.parsed_by).toBe(driver === "postgres" ? "postgresql" : "row_by_row");
    expect(comparable(a)).toEqual(comparable(b));
    await expectSameData(staged, rowByRow);
    const stored = (await storedRows(t, staged.id)).map((r: any) => r.r);
    expect(stored.map((r: any) => r.extra?.x_Note).sort()).toEqual(["plain", 'say "hi" \\ back', "two\nlines\tand a tab"]);
    expect(stored.find((r: any) => r.extra?.x_Note === "plain")).toMatchObject({ billed_cost: 7, list_cost: 25, contracted_cost: 0.5, charge_period_start: "2023-01-05T23:59:59+00:00", instance_type: "m5.large" });
  });

  test("gzip, a BOM and CRLF line ends: PostgreSQL still parses it, the same as row by row", async () => {
    const csv = "\ufeff" + edgeCsv(EDGE_ROWS.slice(0, 2)).replace(/\n/g, "\r\n");
    const { staged, rowByRow, a, b } = await both(fileOf(gzipSync(Buffer.from(csv)), ".csv.gz"));
    expect(a.parsed_by).toBe(driver === "postgres" ? "postgresql" : "row_by_row");
    expect(comparable(a)).toEqual(comparable(b));
    await expectSameData(staged, rowByRow);
  });

  // Each of these is valid for neither PostgreSQL's CSV nor the SQL rules as they are, or is read
  // otherwise by the row path: the import goes row by row, and gives what the row path gives.
  const fallbacks: [string, (csv: string) => string][] = [
    ["a blank line", (csv) => csv.replace(/\n/, "\n\n")],
    ["NaN, which PostgreSQL's numeric takes", (csv) => csv.replace(",12.5,", ",NaN,")],
    ["a number with blanks around it", (csv) => csv.replace(",12.5,", ", 12.5 ,")],
    ["microseconds (a JS date keeps milliseconds)", (csv) => csv.replace("2023-01-03T00:00:00.5Z", "2023-01-03T00:00:00.123456Z")],
    ["hour 24", (csv) => csv.replace("2023-01-02 03:00:00", "2023-01-02 24:00:00")],
    ["a ragged row", (csv) => csv.replace(/\n([^\n]*)\n/, "\n$1,extra\n")],
    ["a row the spec rejects", (csv) => csv.replace("usage-based", "sometimes")],
    ["a status on a purchase", (csv) => csv.replace(",Purchase,", ",Usage,")],
  ];
  for (const [name, spoil] of fallbacks) {
    test(`${name}: row by row, same outcome`, async () => {
      const csv = spoil(edgeCsv(EDGE_ROWS));
      const path = fileOf(csv);
      const outcome = async (o: { id: string }, opts: ImportOptions) => {
        try {
          return await importFocusFile(t.s.db, o.id, path, { now: NOW, ...opts });
        } catch (e) {
          if (e instanceof FocusImportRejected) return { rejected: e.rowsRejected, rejects: e.rejects };
          throw e;
        }
      };
      const x = await t.newOrg();
      const y = await t.newOrg();
      const a = await outcome(x, {});
      const b = await outcome(y, { rowByRow: true });
      if ("parsed_by" in a) {
        expect(a.parsed_by).toBe("row_by_row");
        expect(comparable(a)).toEqual(comparable(b as ImportResult));
      } else expect(a).toEqual(b as typeof a);
      await expectSameData(x, y);
      // With skip-invalid the valid rows are kept, the rejects listed by line, both ways.
      const [v, w] = [await t.newOrg(), await t.newOrg()];
      const sa = await importFocusFile(t.s.db, v.id, path, { now: NOW, skipInvalid: true });
      const sb = await importFocusFile(t.s.db, w.id, path, { now: NOW, skipInvalid: true, rowByRow: true });
      expect(comparable(sa)).toEqual(comparable(sb));
      await expectSameData(v, w);
    });
  }

  const stagingTables = () => t.s.handle.query<{ name: string }>(`SELECT relname AS name FROM pg_class WHERE relname LIKE 'focus\\_stage\\_%' ORDER BY 1`);

  test("a file cut into many chunks (staged by another session while the import inserts): the same as row by row, and the chunks' tables are gone after", async () => {
    // Quoted line breaks and a kept value to escape in the rows; chunks of ~300 bytes cut after every line or two.
    const csv = edgeCsv([...EDGE_ROWS, ...EDGE_ROWS.slice(0, 3)]);
    const { staged, rowByRow, a, b } = await both(fileOf(csv), { stagingChunkBytes: 300 });
    expect(a.parsed_by).toBe(driver === "postgres" ? "postgresql" : "row_by_row");
    expect(comparable(a)).toEqual(comparable(b));
    await expectSameData(staged, rowByRow);
    // Accounts named by their first row, as the row path names them, across chunks.
    expect(a.accounts_discovered).toBe(b.accounts_discovered);
    if (driver === "postgres") expect(await stagingTables()).toEqual([]);
    // The chunks, seen from another session while the import's transaction is still open.
    if (driver === "postgres") {
      let chunks = 0;
      const again = await t.newOrg();
      await importFocusFile(t.s.db, again.id, fileOf(csv), { now: NOW, stagingChunkBytes: 300, beforeCommit: async () => void (chunks = (await stagingTables()).length) });
      expect(chunks).toBeGreaterThan(5);
      await expectSameData(again, rowByRow);
    }
  });

  test("a row the row path reads otherwise in a later chunk: row by row from the start, the same outcome, no staging table left", async () => {
    const csv = edgeCsv([...EDGE_ROWS, ...EDGE_ROWS.slice(0, 2)]);
    const late = csv.slice(0, csv.lastIndexOf(",12.5,")) + ",NaN," + csv.slice(csv.lastIndexOf(",12.5,") + 6);
    const { staged, rowByRow, a, b } = await both(fileOf(late), { stagingChunkBytes: 300, skipInvalid: true });
    expect(a.parsed_by).toBe("row_by_row");
    expect(comparable(a)).toEqual(comparable(b));
    expect(a.rows_rejected).toBe(1);
    await expectSameData(staged, rowByRow);
    if (driver === "postgres") expect(await stagingTables()).toEqual([]);
  });

  test.skipIf(driver !== "postgres")("a staging table left by a killed import is dropped by a later one once it is six hours old; a recent one is left to its import", async () => {
    // Named by the wall clock (the import's billing `now` is years earlier and must not matter).
    const old = Math.floor(Date.now() / 1000) - 7 * 3600;
    const recent = Math.floor(Date.now() / 1000) - 60;
    await t.s.handle.query(`CREATE UNLOGGED TABLE focus_stage_${old}_dead_0 (c0 text)`);
    await t.s.handle.query(`CREATE UNLOGGED TABLE focus_stage_${recent}_live_0 (c0 text)`);
    const org = await t.newOrg();
    await importFocusFile(t.s.db, org.id, fileOf(edgeCsv(EDGE_ROWS.slice(0, 2))), { now: NOW });
    expect((await stagingTables()).map((r) => r.name)).toEqual([`focus_stage_${recent}_live_0`]);
    await t.s.handle.query(`DROP TABLE focus_stage_${recent}_live_0`);
  });

  test.skipIf(driver !== "postgres")("three imports at once on a two-session pool: one pipelines, the others stage their file whole in their own session; none waits forever for a session another holds", async () => {
    const small = await openDb({ url: t.db.url!, migrate: false, postgres: { poolSize: 2 } });
    try {
      const csv = edgeCsv([...EDGE_ROWS, ...EDGE_ROWS.slice(0, 3)]);
      const orgs = [await t.newOrg(), await t.newOrg(), await t.newOrg()];
      const reference = await t.newOrg();
      await importFocusFile(t.s.db, reference.id, fileOf(csv), { now: NOW, rowByRow: true });
      // Without the cap each would hold one session and wait for a second: this would never end.
      const results = await Promise.all(orgs.map((o) => importFocusFile(small.db, o.id, fileOf(csv), { now: NOW, stagingChunkBytes: 300 })));
      for (const r of results) expect(r.parsed_by).toBe("postgresql");
      for (const o of orgs) await expectSameData(o, reference);
      expect(await stagingTables()).toEqual([]);
    } finally {
      await small.close();
    }
  });

  test("the same file again writes nothing while its rows are current; after another import replaced its period, it is imported again", async () => {
    const org = await t.newOrg();
    const jan = fileOf(edgeCsv(EDGE_ROWS.slice(0, 3)));
    const first = await importFocusFile(t.s.db, org.id, jan, { now: NOW });
    const before = await storedRows(t, org.id);
    const again = await importFocusFile(t.s.db, org.id, jan, { now: NOW });
    expect(again).toMatchObject({ unchanged: true, import_id: first.import_id, rows_unchanged: 3, rows_imported: 0, rows_replaced: 0, parsed_by: null });
    expect(await storedRows(t, org.id)).toEqual(before);
    // Other options shape other rows: not the same content.
    const withDefault = await importFocusFile(t.s.db, org.id, jan, { now: NOW, defaults: { x_Source: "cli" } });
    expect(withDefault.unchanged).toBe(false);
    expect(withDefault.rows_replaced).toBe(3);
    // The first import's period was replaced: its content is imported again (and replaces the other).
    const back = await importFocusFile(t.s.db, org.id, jan, { now: NOW });
    expect(back).toMatchObject({ unchanged: false, rows_imported: 3, rows_replaced: 3 });
    expect(await storedRows(t, org.id)).toEqual(before);
    expect((await importFocusFile(t.s.db, org.id, jan, { now: NOW })).unchanged).toBe(true);
    // Another org's identical file is its own import.
    const other = await t.newOrg();
    expect((await importFocusFile(t.s.db, other.id, jan, { now: NOW })).unchanged).toBe(false);
  });
});

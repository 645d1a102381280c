import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "csv-parse/sync";
import { parquetMetadata, parquetReadObjects, type AsyncBuffer, type FileMetaData, type SchemaElement } from "hyparquet";
import { parquetWriteBuffer } from "hyparquet-writer";
import type { CsvBatch } from "../../lib/billing/csvReader.ts";
import { importFocus, importFocusFile, parseFocusTimestamp, type ImportResult } from "../../lib/billing/focus.ts";
import { asyncBufferFromBytes, decimalText, parquetTable } from "../../lib/connections/parquet.ts";
import { ConnectionFailure, type RecordTable } from "../../lib/connections/source.ts";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { writeFocusParquet } from "../helpers/parquetFixture.ts";

/** The real FinOps Foundation sample (data/focus/README.md): 1000 rows × 44 columns, nulls written as NULL. */
const SAMPLE = join(import.meta.dir, "../../data/focus/focus_sample_1000.csv");
const [HEADER, ...CSV_ROWS] = parse(readFileSync(SAMPLE), { bom: true }) as string[][];
const SAMPLE_HEADER = HEADER!;
// A Parquet export holds real nulls where the CSV sample wrote the text NULL.
const SAMPLE_ROWS = CSV_ROWS.map((r) => r.map((v) => (v === "NULL" ? "" : v)));
const AMOUNT = /(Cost|Quantity|UnitPrice)$/;
const INSTANT = /(Start|End)$/;
// The sample's amounts carry up to 15 decimal places; DECIMAL(38, 15) holds them exactly.
const SAMPLE_DECIMALS = Object.fromEntries(SAMPLE_HEADER.filter((c) => AMOUNT.test(c)).map((c) => [c, { precision: 38, scale: 15 }]));
const sampleParquet = () => writeFocusParquet(SAMPLE_HEADER, SAMPLE_ROWS, { rowGroupSize: 128, decimalColumns: SAMPLE_DECIMALS, mapColumns: ["Tags"] });

async function readAll(table: RecordTable) {
  const batches: CsvBatch[] = [];
  for await (const b of table) batches.push(b);
  const records = batches.flatMap((b) => b.records);
  return { batches, header: records[0]!, rows: records.slice(1), lines: batches.flatMap((b) => b.lines) };
}

const readBytes = (bytes: Uint8Array, rowsPerBatch?: number) => readAll(parquetTable(asyncBufferFromBytes(bytes), { rowsPerBatch }));

/** A decimal without leading or trailing zeros (and no negative zero), to compare values, not scales. */
function normDecimal(s: string): string {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?$/.exec(s);
  if (!m) return s;
  const int = (m[2] ?? "").replace(/^0+/, "") || "0";
  const frac = (m[3] ?? "").replace(/0+$/, "");
  const digits = frac ? `${int}.${frac}` : int;
  return m[1] === "-" && digits !== "0" ? `-${digits}` : digits;
}

/** A FOCUS cell as a value: amounts as exact decimals, timestamps as instants, Tags as JSON. */
function valueOf(column: string, v: string): string {
  if (v === "") return v;
  if (AMOUNT.test(column)) return normDecimal(v);
  if (INSTANT.test(column)) return parseFocusTimestamp(v)!.toISOString();
  if (column === "Tags") return JSON.stringify(JSON.parse(v));
  return v;
}

async function failureOf(file: AsyncBuffer): Promise<unknown> {
  try {
    await readAll(parquetTable(file));
  } catch (e) {
    return e;
  }
  throw new Error("the file was read");
}

describe("Parquet record tables", () => {
  test("the real FOCUS sample written as Parquet reads back as the CSV's values, in bounded batches", async () => {
    const bytes = sampleParquet();
    expect(parquetMetadata(bytes).row_groups.length).toBe(8);
    const { batches, header, rows, lines } = await readBytes(bytes, 100);

    expect(header).toEqual(SAMPLE_HEADER);
    expect(rows.length).toBe(1000);
    expect(lines).toEqual(Array.from({ length: 1001 }, (_, i) => i + 1));
    expect(batches.length).toBe(11);
    for (const b of batches) expect(b.records.length).toBeLessThanOrEqual(100);
    expect(batches.every((b) => b.plain)).toBe(true);

    const asValues = (r: string[]) => r.map((v, c) => valueOf(SAMPLE_HEADER[c]!, v));
    expect(rows.map(asValues)).toEqual(SAMPLE_ROWS.map(asValues));
    // Exact decimal text at the column's scale, ISO 8601 UTC instants, the MAP Tags as JSON.
    const col = (name: string) => SAMPLE_HEADER.indexOf(name);
    expect(SAMPLE_ROWS[0]![col("BilledCost")]).toBe("0.00000080000");
    expect(rows[0]![col("BilledCost")]).toBe("0.000000800000000");
    expect(rows[0]![col("ChargePeriodStart")]).toBe("2024-09-18T22:00:00.000Z");
    for (const r of rows) for (const c of SAMPLE_HEADER.keys()) if (INSTANT.test(SAMPLE_HEADER[c]!) && r[c]) expect(r[c]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const tagged = SAMPLE_ROWS.findIndex((r) => r[col("Tags")]!.startsWith("{"));
    expect(JSON.parse(rows[tagged]![col("Tags")]!)).toEqual(JSON.parse(SAMPLE_ROWS[tagged]![col("Tags")]!));
  });

  test("row groups are read one at a time, in order, and rows come in batches of at most rowsPerBatch records", async () => {
    const header = ["Id", "BilledCost", "ChargePeriodStart"];
    const source = Array.from({ length: 2500 }, (_, i) => [String(i), `${i}.25`, "2024-09-01T00:00:00Z"]);
    const bytes = writeFocusParquet(header, source, { rowGroupSize: 300 });
    const metadata = parquetMetadata(bytes);
    expect(metadata.row_groups.length).toBe(9);

    // Which row groups each read touches (the first read is the footer).
    const groupsRead: number[] = [];
    const file: AsyncBuffer = {
      byteLength: bytes.byteLength,
      slice(start, end) {
        const g = groupAt(metadata, start);
        if (g >= 0 && groupsRead.at(-1) !== g) groupsRead.push(g);
        return bytes.slice(start, end).buffer;
      },
    };
    const batches: CsvBatch[] = [];
    let readBeforeFirstBatch: number[] | undefined;
    for await (const b of parquetTable(file, { rowsPerBatch: 128 })) {
      readBeforeFirstBatch ??= [...groupsRead];
      batches.push(b);
    }
    expect(readBeforeFirstBatch).toEqual([0]);
    expect(groupsRead).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(batches.length).toBe(Math.ceil(2501 / 128));
    for (const b of batches) expect(b.records.length).toBeLessThanOrEqual(128);
    const records = batches.flatMap((b) => b.records);
    expect(records.slice(1).map((r) => r[0])).toEqual(source.map((r) => r[0]));
    expect(records.slice(1).map((r) => r[1])).toEqual(source.map((r) => `${r[1]}00000000`));
    expect(batches.flatMap((b) => b.lines)).toEqual(Array.from({ length: 2501 }, (_, i) => i + 1));
  });

  test("DECIMAL columns are exact on INT32, INT64 and FIXED_LEN_BYTE_ARRAY, where a float is not", async () => {
    const columns = {
      TenthCost: { precision: 9, scale: 1, values: ["0.3", "-0.7", "0", "12345678.9"], expected: ["0.3", "-0.7", "0.0", "12345678.9"] },
      SmallQuantity: { precision: 9, scale: 4, values: ["-1.2345", "0.005", "99999.9999", "-99999.9999"], expected: ["-1.2345", "0.0050", "99999.9999", "-99999.9999"] },
      MicroCost: { precision: 18, scale: 6, values: ["123456789012.345678", "-0.000001", "0.1", "-999999999999.999999"], expected: ["123456789012.345678", "-0.000001", "0.100000", "-999999999999.999999"] },
      BilledCost: {
        precision: 38,
        scale: 10,
        values: ["123456789012.3456789012", "-9999999999999999999999999999.9999999999", "-0.0000000001", "0"],
        expected: ["123456789012.3456789012", "-9999999999999999999999999999.9999999999", "-0.0000000001", "0.0000000000"],
      },
      // Around 2^47 and 2^48: the sign extension and the switch from number to bigint arithmetic.
      UnitQuantity: { precision: 38, scale: 0, values: ["281474976710655", "-281474976710656", "281474976710656", "-140737488355329"], expected: ["281474976710655", "-281474976710656", "281474976710656", "-140737488355329"] },
      ListUnitPrice: { precision: 20, scale: 3, values: ["-128", "127.999", "0.005", "-0.129"], expected: ["-128.000", "127.999", "0.005", "-0.129"] },
    };
    const header = Object.keys(columns);
    const specs = Object.values(columns);
    const rows = specs[0]!.values.map((_, r) => specs.map((c) => c.values[r]!));
    const bytes = writeFocusParquet(header, rows, { decimalColumns: columns, rowGroupSize: 2 });
    const types = Object.fromEntries(parquetMetadata(bytes).schema.slice(1).map((e) => [e.name, e.type]));
    expect(types).toEqual({ TenthCost: "INT32", SmallQuantity: "INT32", MicroCost: "INT64", BilledCost: "FIXED_LEN_BYTE_ARRAY", UnitQuantity: "FIXED_LEN_BYTE_ARRAY", ListUnitPrice: "FIXED_LEN_BYTE_ARRAY" });

    const read = await readBytes(bytes);
    expect(read.rows).toEqual(specs[0]!.values.map((_, r) => specs.map((c) => c.expected[r]!)));
    // What hyparquet makes of the same file on its own: floats.
    const floats = await parquetReadObjects({ file: asyncBufferFromBytes(bytes) });
    expect(floats[0]!.TenthCost).toBe(0.30000000000000004);
    expect(String(floats[0]!.BilledCost)).not.toBe("123456789012.3456789012");
  });

  test("decimalText formats an unscaled integer at its scale", () => {
    expect(decimalText(-12345n, 4)).toBe("-1.2345");
    expect(decimalText(5, 3)).toBe("0.005");
    expect(decimalText(-5, 3)).toBe("-0.005");
    expect(decimalText(0n, 2)).toBe("0.00");
    expect(decimalText(7, 0)).toBe("7");
    expect(decimalText(-7n, -2)).toBe("-700");
    expect(decimalText(10n ** 38n - 1n, 10)).toBe("9999999999999999999999999999.9999999999");
  });

  test("nulls of every column type are empty fields", async () => {
    const header = ["BilledCost", "MicroCost", "EffectiveCost", "ChargePeriodStart", "Tags", "ServiceName"];
    const bytes = writeFocusParquet(
      header,
      [
        ["", "", "", "", "", ""],
        ["1.5", "2", "3.25", "2024-09-01 00:00:00", '{"env": "prod"}', "EC2"],
        ["", "-2", "", "", "", "S3"],
      ],
      { decimalColumns: { BilledCost: { precision: 38, scale: 10 }, MicroCost: { precision: 18, scale: 6 }, EffectiveCost: { precision: 9, scale: 2 } }, mapColumns: ["Tags"], timestampUnit: "MILLIS" },
    );
    expect((await readBytes(bytes)).rows).toEqual([
      ["", "", "", "", "", ""],
      ["1.5000000000", "2.000000", "3.25", "2024-09-01T00:00:00.000Z", '{"env":"prod"}', "EC2"],
      ["", "-2.000000", "", "", "", "S3"],
    ]);
  });

  test("other Parquet types read as a CSV export writes them", async () => {
    const schema: SchemaElement[] = [
      { name: "root", num_children: 12 },
      { name: "Flag", type: "BOOLEAN", repetition_type: "OPTIONAL" },
      { name: "Count", type: "INT32", repetition_type: "OPTIONAL" },
      { name: "Big", type: "INT64", repetition_type: "OPTIONAL" },
      { name: "Rate", type: "DOUBLE", repetition_type: "OPTIONAL" },
      { name: "Ratio", type: "FLOAT", repetition_type: "OPTIONAL" },
      { name: "Day", type: "INT32", converted_type: "DATE", repetition_type: "OPTIONAL" },
      { name: "At", type: "INT64", converted_type: "TIMESTAMP_MILLIS", repetition_type: "OPTIONAL" },
      { name: "AtNanos", type: "INT64", logical_type: { type: "TIMESTAMP", isAdjustedToUTC: true, unit: "NANOS" }, repetition_type: "OPTIONAL" },
      { name: "Hash", type: "FIXED_LEN_BYTE_ARRAY", type_length: 4, repetition_type: "OPTIONAL" },
      { name: "Details", type: "BYTE_ARRAY", converted_type: "JSON", repetition_type: "OPTIONAL" },
      { name: "Labels", converted_type: "LIST", repetition_type: "OPTIONAL", num_children: 1 },
      { name: "list", repetition_type: "REPEATED", num_children: 1 },
      { name: "element", type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "OPTIONAL" },
      { name: "Usage", converted_type: "MAP", repetition_type: "OPTIONAL", num_children: 1 },
      { name: "key_value", repetition_type: "REPEATED", num_children: 2 },
      { name: "key", type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "REQUIRED" },
      { name: "value", type: "INT64", repetition_type: "OPTIONAL" },
    ];
    const columnData = [
      { name: "Flag", data: [true, false, null] },
      { name: "Count", data: [42, -7, null] },
      { name: "Big", data: [9007199254740993n, -1n, null] },
      { name: "Rate", data: [0.1, 1e21, null] },
      { name: "Ratio", data: [0.1, -2.5, null] },
      { name: "Day", data: [new Date("2024-09-30T00:00:00Z"), new Date("1969-12-31T00:00:00Z"), null] },
      { name: "At", data: [new Date("2024-09-01T12:34:56.789Z"), new Date(0), null] },
      { name: "AtNanos", data: [1725194096789123456n, 0n, null] },
      { name: "Hash", data: [new Uint8Array([1, 2, 3, 4]), new Uint8Array([255, 0, 0, 1]), null] },
      { name: "Details", data: [{ InstanceType: "m5.large", vCPU: 2 }, [], null] },
      { name: "Labels", data: [["a", "b\tc"], [], null] },
      { name: "Usage", data: [{ hours: 9007199254740993n }, {}, null] },
    ];
    const bytes = new Uint8Array(parquetWriteBuffer({ columnData, schema }));
    const { header, rows, batches } = await readBytes(bytes);
    expect(header).toEqual(["Flag", "Count", "Big", "Rate", "Ratio", "Day", "At", "AtNanos", "Hash", "Details", "Labels", "Usage"]);
    expect(rows).toEqual([
      ["true", "42", "9007199254740993", "0.1", "0.1", "2024-09-30", "2024-09-01T12:34:56.789Z", "2024-09-01T12:34:56.789Z", "AQIDBA==", '{"InstanceType":"m5.large","vCPU":2}', '["a","b\\tc"]', '{"hours":"9007199254740993"}'],
      ["false", "-7", "-1", "1e+21", "-2.5", "1969-12-31", "1970-01-01T00:00:00.000Z", "1970-01-01T00:00:00.000Z", "/wAAAQ==", "[]", "[]", "{}"],
      ["", "", "", "", "", "", "", "", "", "", "", ""],
    ]);
    // The JSON escape of the tab holds a backslash: the batch needs COPY escaping.
    expect(batches[0]!.plain).toBe(false);
  });

  test("plain tells batches with a backslash, tab or line break from those without", async () => {
    const cells = ["tab\there", "back\\slash", "two\nlines", "cr\rhere", "ordinary"];
    const bytes = writeFocusParquet(["ServiceName"], cells.map((c) => [c]));
    const { batches } = await readBytes(bytes, 1);
    expect(batches.map((b) => [b.records[0]![0], b.plain])).toEqual([["ServiceName", true], ...cells.map((c) => [c, c === "ordinary"])]);
  });

  test.each(["UNCOMPRESSED", "GZIP", "BROTLI", "ZSTD"] as const)("a %s file reads like a SNAPPY one", async (codec) => {
    const rows = SAMPLE_ROWS.slice(0, 300);
    const bytes = writeFocusParquet(SAMPLE_HEADER, rows, { decimalColumns: SAMPLE_DECIMALS, codec, rowGroupSize: 100 });
    expect(parquetMetadata(bytes).row_groups[0]!.columns[0]!.meta_data!.codec).toBe(codec);
    const snappy = writeFocusParquet(SAMPLE_HEADER, rows, { decimalColumns: SAMPLE_DECIMALS, rowGroupSize: 100 });
    expect((await readBytes(bytes)).rows).toEqual((await readBytes(snappy)).rows);
  });

  describe("a file that is not readable Parquet is a format failure", () => {
    const bytes = writeFocusParquet(["Id", "BilledCost"], Array.from({ length: 50 }, (_, i) => [String(i), `${i}.5`]), { rowGroupSize: 20 });
    const corrupt = bytes.slice();
    corrupt.fill(0xff, 4, 40); // the first page header

    test.each([
      ["cut in half", bytes.slice(0, bytes.length >> 1), /truncated or corrupt: its footer cannot be read/],
      ["missing its last byte", bytes.slice(0, -1), /truncated or corrupt/],
      ["a few bytes", bytes.slice(0, 6), /not Parquet: 6 bytes is too short/],
      ["CSV", new TextEncoder().encode(readFileSync(SAMPLE, "utf8").slice(0, 2000)), /not Parquet: it does not start with the Parquet magic bytes/],
      ["a damaged page", corrupt, /corrupt: row group 1 of 3 cannot be read/],
    ])("%s", async (_, file, message) => {
      const e = await failureOf(asyncBufferFromBytes(file));
      expect(e).toBeInstanceOf(ConnectionFailure);
      expect((e as ConnectionFailure).cause).toBe("format");
      expect((e as ConnectionFailure).message).toMatch(message);
    });

    test("a failure to read the file itself passes through as it is", async () => {
      const lost = new ConnectionFailure("unreachable", "The storage account did not answer.");
      for (const failingRead of [1, 2]) {
        let reads = 0;
        const file: AsyncBuffer = {
          byteLength: bytes.byteLength,
          slice: async (start, end) => {
            if (++reads === failingRead) throw lost;
            return bytes.slice(start, end).buffer;
          },
        };
        expect(await failureOf(file)).toBe(lost);
      }
    });
  });
});

/** The row group whose column chunks hold byte `offset` (-1: the footer or outside any). */
function groupAt(metadata: FileMetaData, offset: number): number {
  return metadata.row_groups.findIndex((g) =>
    g.columns.some((c) => {
      const m = c.meta_data!;
      const start = Number(m.dictionary_page_offset ?? m.data_page_offset);
      return offset >= start && offset < start + Number(m.total_compressed_size);
    }),
  );
}

/** A stored row with amounts compared as values (a CSV and a Parquet export print other scales). */
function comparable(row: Record<string, unknown>, drop: string[]): string {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) {
    if (drop.includes(k)) continue;
    if (v instanceof Date) out[k] = v.toISOString();
    else if (typeof v === "string") out[k] = normDecimal(v);
    else if (k === "extra" && v) out[k] = Object.fromEntries(Object.entries(v).map(([x, y]) => [x, typeof y === "string" ? normDecimal(y) : y]));
    else out[k] = v;
  }
  return JSON.stringify(out);
}

describeEachDb("Parquet FOCUS import", (driver) => {
  const t = useTestApp(driver, { now: () => new Date("2026-06-10T00:00:00Z") });
  const rowsOf = async (table: string, orgId: string, drop: string[]) =>
    (await t.s.handle.query<Record<string, unknown>>(`SELECT * FROM ${table} WHERE org_id = $1`, [orgId])).map((r) => comparable(r, ["org_id", ...drop])).sort();
  const outcome = (r: ImportResult) => ({ ...r, import_id: undefined, file_name: undefined });

  test("the sample as Parquet imports exactly as the sample CSV does", async () => {
    const fromCsvOrg = await t.newOrg();
    const fromParquetOrg = await t.newOrg();
    const csv = await importFocusFile(t.s.db, fromCsvOrg.id, SAMPLE, { skipInvalid: true });
    const records = parquetTable(asyncBufferFromBytes(sampleParquet()), { rowsPerBatch: 150 });
    const parquet = await importFocus(t.s.db, fromParquetOrg.id, { records }, { skipInvalid: true, fileName: "focus.parquet" });

    expect(parquet.rows_imported).toBe(993);
    expect(parquet.rejects.map((r) => r.line)).toEqual([927, 928, 943, 946, 949, 950, 952]);
    expect(outcome(parquet)).toEqual(outcome(csv));
    const items = await rowsOf("billing_line_items", fromParquetOrg.id, ["import_id"]);
    expect(items.length).toBe(993);
    expect(items).toEqual(await rowsOf("billing_line_items", fromCsvOrg.id, ["import_id"]));
    expect(await rowsOf("billing_cost_summaries", fromParquetOrg.id, [])).toEqual(await rowsOf("billing_cost_summaries", fromCsvOrg.id, []));
  }, 60_000);
});

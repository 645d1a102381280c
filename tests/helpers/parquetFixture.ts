/**
 * FOCUS rows (CSV-like strings) as a Parquet file shaped like an AWS Data Exports FOCUS export:
 * amounts as DECIMAL, timestamps as UTC TIMESTAMP, empty cells as nulls, other columns UTF8.
 */
import type { SchemaElement } from "hyparquet";
import { parquetWriteBuffer } from "hyparquet-writer";
import { brotliCompressSync, gzipSync, zstdCompressSync } from "node:zlib";
import { parseFocusTimestamp } from "../../lib/billing/focusRow.ts";

export interface FocusParquetOptions {
  /** Rows per row group (default hyparquet-writer's: 1000, then 100 000). */
  rowGroupSize?: number;
  /** DECIMAL columns (default: every column ending in Cost, Quantity or UnitPrice, as DECIMAL(38, 10)). */
  decimalColumns?: Record<string, { precision: number; scale: number }>;
  /** TIMESTAMP columns (default: every column ending in Start or End). */
  timestampColumns?: string[];
  timestampUnit?: "MILLIS" | "MICROS";
  /** Columns of JSON objects written as MAP<STRING, STRING>, as AWS writes Tags. */
  mapColumns?: string[];
  codec?: "SNAPPY" | "UNCOMPRESSED" | "GZIP" | "BROTLI" | "ZSTD";
}

const AMOUNT = /(Cost|Quantity|UnitPrice)$/;
const INSTANT = /(Start|End)$/;

/** Codecs hyparquet-writer lacks, from node:zlib. */
const COMPRESSORS = { GZIP: gzipSync, BROTLI: brotliCompressSync, ZSTD: zstdCompressSync };

export function writeFocusParquet(header: string[], rows: string[][], opts: FocusParquetOptions = {}): Uint8Array {
  const decimals = opts.decimalColumns ?? Object.fromEntries(header.filter((c) => AMOUNT.test(c)).map((c) => [c, { precision: 38, scale: 10 }]));
  const timestamps = new Set(opts.timestampColumns ?? header.filter((c) => INSTANT.test(c)));
  const maps = new Set(opts.mapColumns ?? []);
  const unit = opts.timestampUnit ?? "MICROS";
  const schema: SchemaElement[] = [{ name: "root", num_children: header.length }];
  const columnData = header.map((name, i) => {
    const cells = rows.map((r) => (r[i] === undefined || r[i] === "" ? null : r[i]!));
    const decimal = decimals[name];
    if (decimal) {
      schema.push(decimalElement(name, decimal.precision, decimal.scale));
      return { name, data: cells.map((v) => v && unscaled(v, decimal.precision, decimal.scale, name)) };
    }
    if (timestamps.has(name)) {
      schema.push({ name, type: "INT64", repetition_type: "OPTIONAL", converted_type: `TIMESTAMP_${unit}`, logical_type: { type: "TIMESTAMP", isAdjustedToUTC: true, unit } });
      return { name, data: cells.map((v) => v && instant(v, unit, name)) };
    }
    if (maps.has(name)) {
      schema.push(
        { name, repetition_type: "OPTIONAL", converted_type: "MAP", num_children: 1 },
        { name: "key_value", repetition_type: "REPEATED", num_children: 2 },
        { name: "key", type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "REQUIRED" },
        { name: "value", type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "OPTIONAL" },
      );
      return { name, data: cells.map((v) => v && stringMap(v, name)) };
    }
    schema.push({ name, type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "OPTIONAL" });
    return { name, data: cells };
  });
  const buffer = parquetWriteBuffer({ columnData, schema, codec: opts.codec ?? "SNAPPY", compressors: COMPRESSORS, rowGroupSize: opts.rowGroupSize });
  return new Uint8Array(buffer);
}

/** DECIMAL on the smallest physical type the Parquet spec allows for the precision (as Spark and AWS write it). */
function decimalElement(name: string, precision: number, scale: number): SchemaElement {
  const decimal = { name, repetition_type: "OPTIONAL", converted_type: "DECIMAL", scale, precision, logical_type: { type: "DECIMAL", scale, precision } } as const;
  if (precision <= 9) return { ...decimal, type: "INT32" };
  if (precision <= 18) return { ...decimal, type: "INT64" };
  let bytes = 1;
  while (2n ** BigInt(8 * bytes - 1) <= 10n ** BigInt(precision)) bytes++;
  return { ...decimal, type: "FIXED_LEN_BYTE_ARRAY", type_length: bytes };
}

/** The unscaled integer of a decimal text at `scale`; refuses what the column cannot hold exactly. */
function unscaled(text: string, precision: number, scale: number, column = "value"): bigint {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?$/.exec(text.trim());
  if (!m || !(m[2] || m[3])) throw new Error(`${column}: ${JSON.stringify(text)} is not a decimal number`);
  const fraction = (m[3] ?? "").replace(/0+$/, "");
  if (fraction.length > scale) throw new Error(`${column}: ${text} has more than ${scale} decimal places`);
  const digits = BigInt((m[2] || "0") + fraction.padEnd(scale, "0"));
  if (digits >= 10n ** BigInt(precision)) throw new Error(`${column}: ${text} does not fit DECIMAL(${precision}, ${scale})`);
  return m[1] === "-" ? -digits : digits;
}

function instant(text: string, unit: "MILLIS" | "MICROS", column: string): bigint {
  const date = parseFocusTimestamp(text);
  if (!date) throw new Error(`${column}: ${JSON.stringify(text)} is not a timestamp`);
  return BigInt(date.getTime()) * (unit === "MICROS" ? 1000n : 1n);
}

function stringMap(text: string, column: string): Record<string, string | null> {
  const parsed: unknown = JSON.parse(text);
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error(`${column}: ${text} is not a JSON object`);
  return Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, v === null || typeof v === "string" ? v : JSON.stringify(v)]));
}

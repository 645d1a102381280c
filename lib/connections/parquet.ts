/**
 * A Parquet export file (AWS Data Exports and Azure cost exports write FOCUS as Parquet) as a
 * record table: one row group in memory at a time, every value as the text a CSV export of the
 * same data holds, so the rows go through the same FOCUS import as a CSV file.
 */
import { parquetMetadataAsync, parquetRead, parquetSchema } from "hyparquet";
import type { AsyncBuffer, ColumnData, FileMetaData, ParquetParsers, SchemaTree } from "hyparquet";
import { compressors } from "hyparquet-compressors";
import type { CsvBatch } from "../billing/csvReader.ts";
import { ConnectionFailure, type RecordTable } from "./source.ts";

export type { AsyncBuffer };

const ROWS_PER_BATCH = 5000;

/** A file held in memory as an AsyncBuffer (tests, small downloads). */
export function asyncBufferFromBytes(bytes: Uint8Array): AsyncBuffer {
  return {
    byteLength: bytes.byteLength,
    // Uint8Array's slice copies; a Node Buffer's would be a view into a shared pool.
    slice: (start, end) => Uint8Array.prototype.slice.call(bytes, start, end).buffer,
  };
}

/**
 * The rows of a Parquet file, header first (its top-level column names in schema order), in
 * batches of at most `rowsPerBatch` records. Throws ConnectionFailure("format") when the file
 * is not Parquet or cannot be decoded; errors of `file` itself (network) pass through as they are.
 */
export function parquetTable(file: AsyncBuffer, opts: { rowsPerBatch?: number } = {}): RecordTable {
  const rowsPerBatch = Math.max(1, opts.rowsPerBatch ?? ROWS_PER_BATCH);
  return {
    async *[Symbol.asyncIterator]() {
      const { columns, metadata } = await readLayout(file);
      const header = columns.map((c) => c.name);
      let batch: CsvBatch = { records: [header], lines: [1], plain: header.every(isPlain) };
      let row = 0;
      for (const [g, group] of metadata.row_groups.entries()) {
        const groupRows = Number(group.num_rows);
        const values = await readRowGroup(file, metadata, g, row, groupRows, columns);
        for (const end = row + groupRows; row < end; row++) {
          if (batch.records.length >= rowsPerBatch) {
            yield batch;
            batch = { records: [], lines: [], plain: true };
          }
          const record = new Array<string>(columns.length);
          for (let c = 0; c < columns.length; c++) {
            const column = columns[c]!;
            const text = column.cell(values[c]!.at(row));
            if (batch.plain && column.mayNeedEscape && !isPlain(text)) batch.plain = false;
            record[c] = text;
          }
          batch.records.push(record);
          batch.lines.push(row + 2);
        }
      }
      if (batch.records.length) yield batch;
    },
  };
}

/** A top-level column: its name and how its values become CSV text. */
interface Column {
  name: string;
  cell: (v: unknown) => string;
  /** Its text may hold a backslash, tab or line break (numbers and instants never do). */
  mayNeedEscape: boolean;
}

const NOT_PLAIN = /[\\\t\r\n]/;
const isPlain = (s: string) => !NOT_PLAIN.test(s);

const utf8 = new TextDecoder();
/** Timestamps and dates as text straight from the stored integers (no Date per value). */
const PARSERS: Partial<ParquetParsers> = {
  timestampFromMilliseconds: (ms) => isoInstant(Number(ms), ms),
  timestampFromMicroseconds: (us) => isoInstant(Number(BigInt(us) / 1000n), us),
  timestampFromNanoseconds: (ns) => isoInstant(Number(BigInt(ns) / 1_000_000n), ns),
  dateFromDays: (days) => isoInstant(days * 86_400_000, days).slice(0, 10),
  // JSON columns (e.g. Tags) keep the exporter's text rather than a re-serialisation.
  jsonFromBytes: (bytes) => bytes && utf8.decode(bytes),
};

/** ISO 8601 UTC; a value out of Date's range stays the stored number, for the import to reject. */
function isoInstant(ms: number, stored: unknown): string {
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? String(stored) : d.toISOString();
}

/**
 * The columns of a file, and its metadata with the DECIMAL annotation taken off top-level
 * INT32 / INT64 / FIXED_LEN_BYTE_ARRAY decimals: hyparquet's convert() scales a DECIMAL into a
 * float (not exact money) only when converted_type is DECIMAL; without it the column decodes to
 * the raw unscaled integer (number, bigint, or big-endian two's-complement bytes, since utf8
 * decoding applies to BYTE_ARRAY only), which `decimalText` formats exactly. BYTE_ARRAY and
 * nested decimals (inside a struct, list or map) keep hyparquet's float conversion.
 */
function layoutOf(metadata: FileMetaData): { columns: Column[]; metadata: FileMetaData } {
  const schema = metadata.schema.slice();
  const columns = parquetSchema(metadata).children.map((node: SchemaTree): Column => {
    const e = node.element;
    const scale = exactDecimalScale(node);
    if (scale !== undefined) {
      schema[metadata.schema.indexOf(e)] = { ...e, converted_type: undefined, logical_type: undefined };
      return { name: e.name, cell: (v) => (v == null ? "" : decimalText(unscaledOf(v as number | bigint | Uint8Array), scale)), mayNeedEscape: false };
    }
    if (e.type === "FLOAT" && !node.children.length) return { name: e.name, cell: (v) => (typeof v === "number" ? float32Text(v) : text(v)), mayNeedEscape: false };
    const numeric = !node.children.length && (e.type === "INT32" || e.type === "INT64" || e.type === "DOUBLE" || e.type === "BOOLEAN");
    return { name: e.name, cell: text, mayNeedEscape: !numeric };
  });
  return { columns, metadata: { ...metadata, schema } };
}

/** The scale of a top-level decimal read exactly, undefined for any other column. */
function exactDecimalScale({ element: e, children }: SchemaTree): number | undefined {
  const decimal = e.converted_type === "DECIMAL" || e.logical_type?.type === "DECIMAL";
  if (!decimal || children.length || e.repetition_type === "REPEATED") return undefined;
  if (e.type !== "INT32" && e.type !== "INT64" && e.type !== "FIXED_LEN_BYTE_ARRAY") return undefined;
  return (e.logical_type?.type === "DECIMAL" ? e.logical_type.scale : e.scale) ?? 0;
}

/**
 * An unscaled DECIMAL as stored: INT32 (number), INT64 (bigint) or big-endian two's complement
 * bytes, the latter as a number when they hold at most 48 bits (most amounts: cheaper than BigInt).
 */
function unscaledOf(v: number | bigint | Uint8Array): number | bigint {
  if (typeof v !== "object") return v;
  const negative = v.length > 0 && v[0]! >= 0x80;
  // Leading sign-extension bytes do not change the value: v = (rest as unsigned) - 256^rest.length when negative.
  let i = 0;
  while (i < v.length - 1 && v[i] === (negative ? 0xff : 0)) i++;
  const rest = v.length - i;
  if (rest <= 6) {
    let n = 0;
    for (; i < v.length; i++) n = n * 256 + v[i]!;
    return negative ? n - 256 ** rest : n;
  }
  let n = 0n;
  for (; i < v.length; i++) n = (n << 8n) | BigInt(v[i]!);
  return negative ? n - (1n << BigInt(rest * 8)) : n;
}

/** The exact decimal text of unscaled × 10^-scale, with all `scale` digits (as a CSV export of the column). */
export function decimalText(unscaled: number | bigint, scale: number): string {
  let digits = String(unscaled);
  const sign = digits[0] === "-" ? "-" : "";
  if (sign) digits = digits.slice(1);
  if (scale <= 0) return digits === "0" ? digits : sign + digits + "0".repeat(-scale);
  if (digits.length <= scale) digits = "0".repeat(scale + 1 - digits.length) + digits;
  const point = digits.length - scale;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

/** The shortest text that reads back as the same 32-bit float (String() would show its double expansion). */
function float32Text(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  for (let p = 1; p < 9; p++) {
    const shortest = Number(v.toPrecision(p));
    if (Math.fround(shortest) === v) return String(shortest);
  }
  return String(v);
}

/** A decoded value as CSV text: nulls empty, binary base64, structures (maps, lists, structs) JSON. */
function text(v: unknown): string {
  switch (typeof v) {
    case "string":
      return v;
    case "undefined":
      return "";
    case "object":
      if (v === null) return "";
      if (v instanceof Date) return isoInstant(v.getTime(), v);
      if (v instanceof Uint8Array) return base64(v);
      return JSON.stringify(v, jsonValue);
    default:
      return String(v);
  }
}

function jsonValue(_key: string, v: unknown): unknown {
  if (typeof v === "bigint") return String(v);
  if (v instanceof Uint8Array) return base64(v);
  return v;
}

const base64 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");

/** The values of one column of a row group, in row order across its pages. */
class ColumnValues {
  private next = 0;
  constructor(private readonly chunks: ColumnData[]) {}

  /** The value of a row (file position); rows are asked for in increasing order. */
  at(row: number): unknown {
    let chunk = this.chunks[this.next]!;
    while (row >= chunk.rowEnd) chunk = this.chunks[++this.next]!;
    return chunk.columnData[row - chunk.rowStart];
  }

  /** The chunks cover rows [start, end) without a gap. */
  covers(start: number, end: number): boolean {
    let at = start;
    for (const c of this.chunks) {
      if (c.rowStart !== at) return false;
      at = c.rowEnd;
    }
    return at >= end;
  }
}

/** Marks a failure of the file's own reads, so it is not mistaken for a format problem. */
class ReadError {
  constructor(readonly error: unknown) {}
}

/** `file` for hyparquet, its read errors marked as ReadError. */
function passingReadErrors(file: AsyncBuffer): AsyncBuffer {
  const fail = (e: unknown): never => {
    throw new ReadError(e);
  };
  return {
    byteLength: file.byteLength,
    slice(start, end) {
      try {
        const bytes = file.slice(start, end);
        return bytes instanceof Promise ? bytes.catch(fail) : bytes;
      } catch (e) {
        return fail(e);
      }
    },
  };
}

const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** The file's columns and the metadata to read it with (layoutOf), or why it is not readable Parquet. */
async function readLayout(file: AsyncBuffer): Promise<ReturnType<typeof layoutOf>> {
  if (file.byteLength < 12) throw new ConnectionFailure("format", `The file is not Parquet: ${file.byteLength} bytes is too short for a Parquet file.`);
  try {
    return layoutOf(await parquetMetadataAsync(passingReadErrors(file)));
  } catch (e) {
    if (e instanceof ReadError) throw e.error;
    const head = new Uint8Array(await file.slice(0, 4));
    if (String.fromCharCode(...head) !== "PAR1") throw new ConnectionFailure("format", "The file is not Parquet: it does not start with the Parquet magic bytes (PAR1).");
    throw new ConnectionFailure("format", `The Parquet file is truncated or corrupt: its footer cannot be read (${messageOf(e)}).`);
  }
}

/** The values of every column of row group `g` (rows [start, start + rows) of the file). */
async function readRowGroup(file: AsyncBuffer, metadata: FileMetaData, g: number, start: number, rows: number, columns: Column[]): Promise<ColumnValues[]> {
  const chunks = new Map<string, ColumnData[]>(columns.map((c) => [c.name, []]));
  const where = `row group ${g + 1} of ${metadata.row_groups.length}`;
  try {
    await parquetRead({ file: passingReadErrors(file), metadata, rowStart: start, rowEnd: start + rows, compressors, parsers: PARSERS, onChunk: (chunk) => chunks.get(chunk.columnName)?.push(chunk) });
  } catch (e) {
    if (e instanceof ReadError) throw e.error;
    throw new ConnectionFailure("format", `The Parquet file is corrupt: ${where} cannot be read (${messageOf(e)}).`);
  }
  return columns.map(({ name }) => {
    const values = new ColumnValues(chunks.get(name)!.sort((a, b) => a.rowStart - b.rowStart));
    if (!values.covers(start, start + rows)) throw new ConnectionFailure("format", `The Parquet file is corrupt: column ${name} of ${where} does not hold its ${rows} rows.`);
    return values;
  });
}

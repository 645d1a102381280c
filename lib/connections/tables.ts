/**
 * Export files as record tables: CSV (gzip by magic bytes) through the importer's own CSV reader,
 * and the tables of a period joined into one record stream with one header, so a period of
 * many files is one import (one transaction).
 */
import { createGunzip } from "node:zlib";
import { Readable } from "node:stream";
import { readCsvBatches, type CsvBatch } from "../billing/csvReader.ts";
import { ConnectionFailure, type RecordTable } from "./source.ts";

/** A CSV file's bytes (plain or gzip, told apart by the gzip magic bytes) as a record table. */
export function csvTable(bytes: AsyncIterable<Uint8Array>): RecordTable {
  return {
    async *[Symbol.asyncIterator]() {
      const it = bytes[Symbol.asyncIterator]();
      const first = await it.next();
      if (first.done) return;
      const head = first.value;
      async function* rest() {
        yield head;
        for (;;) {
          const n = await it.next();
          if (n.done) return;
          yield n.value;
        }
      }
      const gzip = head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b;
      const text: AsyncIterable<Uint8Array> = gzip ? Readable.from(rest(), { objectMode: false }).pipe(createGunzip()) : rest();
      yield* readCsvBatches(text);
    },
  };
}

/**
 * The tables of one period as one stream of batches under the first table's header. A later
 * file with the same columns in another order is re-ordered; one with other columns is refused
 * (its rows would be read under the wrong names).
 */
export async function* joinTables(tables: AsyncIterable<RecordTable>): AsyncGenerator<CsvBatch> {
  let header: string[] | null = null;
  for await (const table of tables) {
    // undefined: this table's header not seen yet; null: its columns are the first table's, in order.
    let order: number[] | null | undefined;
    for await (const batch of table) {
      if (!header) {
        header = batch.records[0]!;
        order = null;
        yield batch;
        continue;
      }
      let { records, lines } = batch;
      if (order === undefined) {
        order = reorder(header, records[0]!);
        records = records.slice(1);
        lines = lines.slice(1);
      }
      if (order) records = records.map((r) => order!.map((i) => r[i] ?? ""));
      if (records.length) yield { records, lines, plain: batch.plain };
    }
  }
}

/** Positions in `own` of each column of `header`, null when identical; refused when the columns differ. */
function reorder(header: string[], own: string[]): number[] | null {
  if (own.length === header.length && own.every((c, i) => c === header[i])) return null;
  const at = new Map(own.map((c, i) => [c, i]));
  const missing = header.filter((c) => !at.has(c));
  const extra = own.filter((c) => !header.includes(c));
  if (missing.length || extra.length) {
    throw new ConnectionFailure("format", `The files of one billing period have different columns (${[...missing, ...extra].slice(0, 5).join(", ")}).`);
  }
  return header.map((c) => at.get(c)!);
}

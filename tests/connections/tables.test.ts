import { expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import type { CsvBatch } from "../../lib/billing/csvReader.ts";
import { csvTable, joinTables } from "../../lib/connections/tables.ts";
import { ConnectionFailure, type RecordTable } from "../../lib/connections/source.ts";

const bytes = (text: string | Uint8Array) => ({
  async *[Symbol.asyncIterator]() {
    yield typeof text === "string" ? new TextEncoder().encode(text) : text;
  },
});
async function* tablesOf(...tables: RecordTable[]) {
  yield* tables;
}
async function all(batches: AsyncIterable<CsvBatch>) {
  const records: string[][] = [];
  const lines: number[] = [];
  for await (const b of batches) {
    records.push(...b.records);
    lines.push(...b.lines);
  }
  return { records, lines };
}

test("the files of a period join under the first file's header; a later file's columns are put in that order", async () => {
  const joined = await all(joinTables(tablesOf(csvTable(bytes("A,B,C\n1,2,3\n")), csvTable(bytes(gzipSync("C,A,B\n6,4,5\n9,7,8\n"))))));
  expect(joined.records).toEqual([["A", "B", "C"], ["1", "2", "3"], ["4", "5", "6"], ["7", "8", "9"]]);
  // Line numbers stay those of each row in its own file (the header is line 1).
  expect(joined.lines).toEqual([1, 2, 2, 3]);
});

test("a later file with other columns is refused as format (its rows would be read under the wrong names)", async () => {
  const e = await all(joinTables(tablesOf(csvTable(bytes("A,B\n1,2\n")), csvTable(bytes("A,X\n3,4\n"))))).catch((x) => x);
  expect(e).toBeInstanceOf(ConnectionFailure);
  expect(e.cause).toBe("format");
  expect(e.message).toContain("B");
  expect(e.message).toContain("X");
});

test("an empty file adds nothing; gzip is told by its magic bytes, not its name", async () => {
  const joined = await all(joinTables(tablesOf(csvTable(bytes("")), csvTable(bytes(gzipSync("A\n1\n"))))));
  expect(joined.records).toEqual([["A"], ["1"]]);
});

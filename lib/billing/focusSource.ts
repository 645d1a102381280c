/**
 * The batches of an import, in file order: the file's header read and checked, then each batch
 * of records validated and encoded (FocusImportState) as the input arrives.
 */
import { CsvSyntaxError, readCsvBatches, type CsvBatch } from "./csvReader.ts";
import { CANONICAL, layoutOf, REQUIRED_HEADERS } from "./focusRow.ts";
import { FocusImportState, type BatchOutcome } from "./importState.ts";

/** The file is not what an import can read (not CSV, no header, missing columns). */
export class FocusFileError extends Error {}

/** A readable table whose header lacks FOCUS's required columns: another format (e.g. a legacy CUR). */
export class NotFocusError extends FocusFileError {}

export interface FocusSource {
  /** Set once the header was read (null for an empty file). */
  header: string[] | null;
  state: FocusImportState | null;
  outcomes(): AsyncGenerator<BatchOutcome>;
}

interface SourceOptions {
  defaults: Record<string, string>;
  orgId: string;
  importId: string;
  skipInvalid: boolean;
}

function csvError(e: unknown): unknown {
  return e instanceof CsvSyntaxError ? new FocusFileError(`The file is not valid CSV: ${e.message}.`) : e;
}

/** The canonical header of a file, or why it cannot be imported. */
export function headerOf(fields: string[], defaults: Record<string, string>): string[] {
  const header = fields.map((h) => {
    const name = h.trim();
    return CANONICAL.get(name.toLowerCase()) ?? name;
  });
  const present = new Set(header);
  const missing = REQUIRED_HEADERS.filter((c) => !present.has(c) && defaults[c] === undefined);
  if (missing.length) throw new NotFocusError(`The file is missing required FOCUS column(s): ${missing.join(", ")}.`);
  return header;
}

/** Records already split into fields (Parquet, query results), the first record the header. */
export interface FocusRecords {
  records: AsyncIterable<CsvBatch>;
}

export function focusSource(input: AsyncIterable<string | Uint8Array> | FocusRecords, o: SourceOptions): FocusSource {
  const source: FocusSource = {
    header: null,
    state: null,
    async *outcomes() {
      const batches = ("records" in input ? input.records : readCsvBatches(input))[Symbol.asyncIterator]();
      for (;;) {
        let next: IteratorResult<CsvBatch>;
        try {
          next = await batches.next();
        } catch (e) {
          throw csvError(e);
        }
        if (next.done) return;
        const batch = next.value;
        let from = 0;
        if (!source.state) {
          source.header = headerOf(batch.records[0]!, o.defaults);
          source.state = new FocusImportState(source.header, layoutOf(source.header, o.defaults, o));
          from = 1;
        }
        yield source.state.addBatch(batch, from, o.skipInvalid);
      }
    },
  };
  return source;
}

/**
 * A streaming RFC 4180 CSV reader for large billing files: quoted fields ("" escapes, embedded
 * line breaks), CRLF/LF/CR line ends, a leading BOM, blank lines skipped, and the 1-based line
 * number where each record starts (for error reports). It exists because csv-parse runs at a
 * few MB/s under Bun, which made it the bottleneck of FOCUS imports; memory stays bounded by
 * the input chunk size plus one record. Records come in batches, one per input chunk (an
 * await per record costs more than parsing it).
 */
export interface CsvBatch {
  /** Fields of each record, in file order. */
  records: string[][];
  /** Line of the file where each record starts (header = 1). */
  lines: number[];
  /** No field of the batch holds a backslash, a tab or a line break (COPY text needs no escaping). */
  plain: boolean;
}

const QUOTE = 34;
const COMMA = 44;
const LF = 10;
const CR = 13;

interface CsvParser {
  /** Appends decoded text. */
  push(text: string): void;
  /** The records complete in what was pushed (all of it when `final`); the rest stays for later. */
  parse(final: boolean): CsvBatch;
  /** The line the next record starts on. */
  readonly line: number;
}

/** The parser under readCsvBatches. */
function csvParser(firstLine = 1): CsvParser {
  let buf = "";
  let line = firstLine;
  const parse = (final: boolean): CsvBatch => {
    const records: string[][] = [];
    const lines: number[] = [];
    let plain = true;
    let pos = 0;
    const n = buf.length;
    const next = (ch: string, from: number) => {
      const i = buf.indexOf(ch, from);
      return i === -1 ? n : i;
    };
    let lfPos = -1;
    let crPos = -1;
    outer: while (pos < n) {
      const startLine = line;
      let breaks = 0;
      const fields: string[] = [];
      let p = pos;
      for (;;) {
        if (p >= n) {
          if (!final) break outer;
          fields.push("");
          break;
        }
        let c = buf.charCodeAt(p);
        if (c === QUOTE) {
          let value = "";
          let from = p + 1;
          for (;;) {
            const q = buf.indexOf('"', from);
            if (q < 0) {
              if (!final) break outer;
              throw new CsvSyntaxError("unterminated quoted field starting on line", startLine, startLine);
            }
            if (q + 1 < n && buf.charCodeAt(q + 1) === QUOTE) {
              value += buf.slice(from, q + 1);
              from = q + 2;
              continue;
            }
            if (q + 1 >= n && !final) break outer;
            value += buf.slice(from, q);
            p = q + 1;
            break;
          }
          for (let i = value.indexOf("\n"); i >= 0; i = value.indexOf("\n", i + 1)) breaks++;
          if (breaks > 0 || value.indexOf("\r") >= 0) plain = false;
          fields.push(value);
          c = p < n ? buf.charCodeAt(p) : -1;
        } else {
          // Native searches for the next comma / line end (much faster than a char loop);
          // the next LF and CR positions are kept for the whole buffer, not searched per field.
          if (lfPos < p) lfPos = next("\n", p);
          if (crPos < p) crPos = next("\r", p);
          let e = buf.indexOf(",", p);
          if (e === -1) e = n;
          if (lfPos < e) e = lfPos;
          if (crPos < e) e = crPos;
          if (e >= n && !final) break outer;
          fields.push(buf.slice(p, e));
          p = e;
          c = p < n ? buf.charCodeAt(p) : -1;
        }
        if (c === COMMA) {
          p++;
          continue;
        }
        if (c === CR) {
          if (p + 1 >= n && !final) break outer;
          p += p + 1 < n && buf.charCodeAt(p + 1) === LF ? 2 : 1;
        } else if (c === LF) p++;
        else if (c !== -1) {
          throw new CsvSyntaxError("unexpected character after a quoted field on line", startLine + breaks, startLine);
        }
        breaks++;
        break;
      }
      pos = p;
      line = startLine + breaks;
      if (!(fields.length === 1 && fields[0] === "")) {
        records.push(fields);
        lines.push(startLine);
      }
    }
    if (plain && pos > 0) {
      const bs = buf.indexOf("\\");
      const tab = buf.indexOf("\t");
      if ((bs >= 0 && bs < pos) || (tab >= 0 && tab < pos)) plain = false;
    }
    buf = buf.slice(pos);
    return { records, lines, plain };
  };
  return {
    push(text) {
      buf += text;
    },
    parse,
    get line() {
      return line;
    },
  };
}

export async function* readCsvBatches(input: AsyncIterable<string | Uint8Array>): AsyncGenerator<CsvBatch> {
  const decoder = new TextDecoder("utf-8");
  const parser = csvParser();
  let first = true;
  let pending = false;
  for await (const chunk of input) {
    let text = typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
    if (first && text.length) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      first = false;
    }
    parser.push(text);
    pending = true;
    const batch = parser.parse(false);
    if (batch.records.length) yield batch;
  }
  parser.push(decoder.decode());
  if (pending) {
    const batch = parser.parse(true);
    if (batch.records.length) yield batch;
  }
}

/**
 * A copy of a field that no longer shares memory with the chunk it was read from. Fields are
 * substrings of the reader's buffer, and a substring keeps its whole buffer alive (about 1 MB):
 * every field kept beyond its row (cache keys, per-account state) must go through here, or a
 * few thousand of them hold hundreds of MB.
 */
export function detach<T extends string | null>(field: T): T {
  // Not `(" " + s).slice(1)`: JSC answers a slice that falls within one fiber of a rope with a
  // substring of that fiber, i.e. of the same buffer. Parsing a JSON string builds a new one.
  return (field === null ? null : JSON.parse(JSON.stringify(field))) as T;
}

export class CsvSyntaxError extends Error {
  /** `reason` ends with the word "line": the message is it followed by `at`; `line`: where the record starts. */
  constructor(readonly reason: string, readonly at: number, readonly line: number) {
    super(`${reason} ${at}`);
  }
}

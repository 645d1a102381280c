/**
 * Bulk writes with COPY FROM STDIN for either driver: the counterpart of DatabaseHandle.copyOut,
 * but inside a transaction the caller already holds (the FOCUS import's).
 */
import type { Tx } from "./types.ts";

/** Where COPY text lines go: fed in order, ended once, or aborted (nothing kept). */
export interface CopySink {
  /** COPY text lines (without line ends), in order. */
  write(lines: string[]): Promise<void>;
  /** Raw COPY input (e.g. a CSV file as it is), in order: the streaming driver only. */
  writeBytes?(bytes: Uint8Array): Promise<void>;
  end(): Promise<void>;
  abort(e: unknown): Promise<void>;
}

/**
 * COPY lines as UTF-8 into one reused buffer: a fresh string and buffer per batch made the
 * import spend more time faulting in new memory than encoding rows. The bytes are valid until
 * the next call.
 */
class CopyLineEncoder {
  private buf = Buffer.allocUnsafe(4 << 20);

  encode(lines: string[]): Buffer {
    let at = 0;
    for (const line of lines) {
      // UTF-8 takes at most 3 bytes per UTF-16 unit; grow before a line could not fit.
      if (this.buf.length - at < line.length * 3 + 1) {
        const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, at + line.length * 3 + 1));
        this.buf.copy(bigger, 0, 0, at);
        this.buf = bigger;
      }
      at += this.buf.write(line, at);
      this.buf[at++] = 10;
    }
    return this.buf.subarray(0, at);
  }
}

/** Sessions the pool under `db` may hold at once (postgres.js's `max`; 1 when unknown, as PGlite's one). */
export function poolSessions(db: unknown): number {
  const max = (db as any)?.$client?.options?.max;
  return typeof max === "number" && max > 0 ? max : 1;
}

/** The transaction's driver streams one COPY of any length (postgres.js): raw bytes can go to the server as they are. */
export function copyInStreams(tx: Tx): boolean {
  return typeof (tx as any)?.session?.client?.unsafe === "function";
}

/** PGlite takes COPY input as one blob per statement: rows per statement. */
const PGLITE_COPY_BYTES = 8 << 20;

/**
 * `COPY … FROM STDIN` (text format) inside the caller's drizzle transaction, reaching the driver
 * client under it: postgres.js streams one COPY for everything written (each write waits for the
 * socket, so the server's pace bounds memory); PGlite runs one COPY FROM '/dev/blob' per 8 MB.
 */
export function openCopyIn(tx: Tx, copySql: string): CopySink {
  const client = (tx as any)?.session?.client;
  if (client && typeof client.unsafe === "function") {
    let writable: import("node:stream").Writable | null = null;
    const encoder = new CopyLineEncoder();
    let failed: unknown = null;
    /** Rejects when the server ends the COPY with an error (a constraint, a cancel): a pending write never completes then. */
    let serverFailure: Promise<never> = new Promise(() => {});
    const open = async () => {
      const query = client.unsafe(copySql);
      serverFailure = Promise.resolve(query).then(
        () => new Promise<never>(() => {}),
        (e: unknown) => {
          failed ??= e;
          throw e;
        },
      );
      serverFailure.catch(() => {});
      const w: import("node:stream").Writable = await query.writable();
      w.on("error", (e) => (failed ??= e));
      return w;
    };
    /** Waits for the socket to take the chunk, so the server's pace bounds what this process holds. */
    const send = async (chunk: Uint8Array) => {
      writable ??= await open();
      if (failed) throw failed;
      const w = writable;
      await Promise.race([new Promise<void>((resolve, reject) => w.write(chunk, (e) => (e ? reject(e) : resolve()))), serverFailure]);
    };
    return {
      async write(lines) {
        writable ??= await open();
        // The encoder's buffer is reused: postgres.js frames (copies) a chunk as it is written,
        // which is at once when nothing is queued before it; otherwise it is copied here.
        const bytes = encoder.encode(lines);
        await send(writable.writableLength > 0 ? Buffer.from(bytes) : bytes);
      },
      writeBytes: send,
      async end() {
        if (!writable) return;
        const w = writable;
        await Promise.race([
          new Promise<void>((resolve, reject) => {
            w.once("error", reject);
            w.end(() => resolve());
          }),
          serverFailure,
        ]);
        if (failed) throw failed;
      },
      async abort(e) {
        if (!writable || writable.destroyed) return;
        const w = writable;
        await new Promise<void>((resolve) => {
          w.once("close", resolve);
          w.destroy(e instanceof Error ? e : new Error(String(e)));
        });
      },
    };
  }
  if (client && typeof client.query === "function") {
    let pending = "";
    const flush = async () => {
      if (!pending) return;
      const blob = new Blob([pending]);
      pending = "";
      await client.query(copySql.replace("FROM STDIN", "FROM '/dev/blob'"), [], { blob });
    };
    return {
      async write(lines) {
        if (lines.length) pending += lines.join("\n") + "\n";
        if (pending.length >= PGLITE_COPY_BYTES) await flush();
      },
      end: flush,
      async abort() {
        pending = "";
      },
    };
  }
  throw new Error("openCopyIn: the database driver offers no COPY");
}

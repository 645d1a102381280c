import { createReadStream, createWriteStream, type WriteStream } from "node:fs";
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { OfferInput, SkuInput } from "../model.ts";
import type { CatalogSink } from "./types.ts";

/**
 * A feed read to disk before it is applied: the download and parse (minutes for a large AWS
 * offer file) happen outside any transaction, memory stays bounded (rows go to two NDJSON files),
 * and the transaction that applies the feed lasts only as long as the database writes.
 */
const PREFIX = "commitops-refresh-";

export class FeedSpool implements CatalogSink {
  /** The first write error of either file (disk full, …): every later write and close rejects with it. */
  private failure: Error | null = null;

  private constructor(
    readonly dir: string,
    private readonly skuOut: WriteStream,
    private readonly offerOut: WriteStream,
  ) {
    // One permanent handler per file: an error with nobody waiting must not crash the process.
    for (const out of [skuOut, offerOut]) out.on("error", (e) => (this.failure ??= e));
  }

  skuCount = 0;
  offerCount = 0;

  static async open(parent = tmpdir()): Promise<FeedSpool> {
    const dir = await mkdtemp(join(parent, PREFIX));
    return new FeedSpool(dir, createWriteStream(join(dir, "skus.ndjson")), createWriteStream(join(dir, "offers.ndjson")));
  }

  /** Removes spools left by a process killed mid-refresh (older than `olderThanMs`). */
  static async sweep(olderThanMs: number, parent = tmpdir()): Promise<void> {
    const names = await readdir(parent).catch(() => [] as string[]);
    for (const name of names) {
      if (!name.startsWith(PREFIX)) continue;
      const path = join(parent, name);
      const st = await stat(path).catch(() => null);
      if (st && Date.now() - st.mtimeMs > olderThanMs) await rm(path, { recursive: true, force: true }).catch(() => {});
    }
  }

  private write(out: WriteStream, row: unknown): void | Promise<void> {
    if (this.failure) throw new Error(`the refresh spool could not be written (${(this.failure as NodeJS.ErrnoException).code ?? this.failure.name})`);
    if (out.write(JSON.stringify(row) + "\n")) return;
    return new Promise((resolve, reject) => {
      const done = (e?: Error) => {
        out.off("drain", onDrain);
        out.off("error", onError);
        out.off("close", onClose);
        if (e) reject(new Error(`the refresh spool could not be written (${(e as NodeJS.ErrnoException).code ?? e.name})`));
        else resolve();
      };
      const onDrain = () => done();
      const onError = (e: Error) => done(e);
      const onClose = () => done(this.failure ?? new Error("closed"));
      out.on("drain", onDrain);
      out.on("error", onError);
      out.on("close", onClose);
    });
  }

  sku(s: SkuInput) {
    this.skuCount++;
    return this.write(this.skuOut, s);
  }

  offer(o: OfferInput) {
    this.offerCount++;
    return this.write(this.offerOut, o);
  }

  /** Flushes both files; call before reading them back. Rejects if any write failed. */
  async close(): Promise<void> {
    const end = (out: WriteStream) => new Promise<void>((resolve) => (out.closed || out.destroyed ? resolve() : out.end(() => resolve())));
    await Promise.all([end(this.skuOut), end(this.offerOut)]);
    if (this.failure) throw new Error(`the refresh spool could not be written (${(this.failure as NodeJS.ErrnoException).code ?? this.failure.name})`);
  }

  private async *lines<T>(file: string): AsyncGenerator<T> {
    const rl = createInterface({ input: createReadStream(join(this.dir, file), { highWaterMark: 256 * 1024 }), crlfDelay: Infinity });
    for await (const line of rl) if (line) yield JSON.parse(line) as T;
  }

  skus(): AsyncGenerator<SkuInput> {
    return this.lines<SkuInput>("skus.ndjson");
  }

  offers(): AsyncGenerator<OfferInput> {
    return this.lines<OfferInput>("offers.ndjson");
  }

  async discard(): Promise<void> {
    this.skuOut.destroy();
    this.offerOut.destroy();
    await rm(this.dir, { recursive: true, force: true });
  }
}

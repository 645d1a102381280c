import { collectGarbageHint } from "../../adapters/gc.ts";
import { JSONParser } from "@streamparser/json";
import { AwsOfferMapping } from "../importers.ts";
import type { OfferInput, SkuInput } from "../model.ts";
import { RefreshSourceError, type CatalogSink } from "./types.ts";

/** What a streamed offer file said about itself, and what it gave the sink. */
export interface AwsOfferFileSummary {
  offerCode: string;
  version: string | null;
  /** The publication date (YYYY-MM-DD), when the file says. */
  publishedAt: string | null;
  skus: number;
  offers: number;
}

export interface AwsOfferStreamOptions {
  /** The offer code the index announced: the file must agree, and it stands in when the file does not say. */
  offerCode?: string;
  /** The version the index announced (used when the file does not say). */
  version?: string | null;
  signal?: AbortSignal;
}

type Row = { sku: SkuInput } | { offer: OfferInput };

/**
 * Reads one AWS Price List region offer file (hundreds of MB for EC2) from a byte stream into
 * the sink without holding the document: products arrive first and only those that become SKUs
 * are kept, as small descriptors; a SKU is emitted when its OnDemand term arrives, its reserved
 * terms become offers as they arrive, and products without any term are emitted at the end with
 * no on-demand tiers. Memory grows with the number of SKUs kept, not with the file.
 *
 * The same mapping as `awsOfferFileBatch` (lib/catalog/importers.ts): both give the same SKUs
 * and provider offers for the same file. Failures (broken download, truncated or invalid JSON,
 * terms before products) are RefreshSourceError.
 */
export async function streamAwsOfferFile(body: ReadableStream<Uint8Array>, sink: CatalogSink, opts: AwsOfferStreamOptions = {}): Promise<AwsOfferFileSummary> {
  const header: { offerCode?: string; version?: string; publicationDate?: string } = {};
  let mapping: AwsOfferMapping | null = null;
  let termsSeen = false;
  /** Kept products whose SKU was given to the sink (the rest are emitted at the end). */
  const emitted = new Set<string>();
  const queue: Row[] = [];
  let skus = 0;
  let offers = 0;

  const mappingFor = (): AwsOfferMapping => {
    if (mapping) return mapping;
    const offerCode = header.offerCode ?? opts.offerCode;
    if (!offerCode) throw new RefreshSourceError("AWS offer file names no offerCode before its products", false);
    if (opts.offerCode && header.offerCode && header.offerCode !== opts.offerCode) throw new RefreshSourceError(`AWS offer file is for ${header.offerCode}, expected ${opts.offerCode}`, false);
    mapping = new AwsOfferMapping({ offerCode, version: header.version ?? opts.version ?? null, publicationDate: header.publicationDate ?? null });
    return mapping;
  };
  const emitSku = (m: AwsOfferMapping, awsSku: string, onDemand: Record<string, any> | undefined) => {
    const s = m.sku(awsSku, onDemand);
    if (!s) return;
    emitted.add(awsSku);
    queue.push({ sku: s });
  };

  const parser = new JSONParser({
    paths: ["$.offerCode", "$.version", "$.publicationDate", "$.products.*", "$.terms.*.*"],
    keepStack: false,
  });
  parser.onValue = ({ value, key, stack }) => {
    const section = stack[1]?.key;
    if (stack.length === 1) {
      if (typeof value === "string" && (key === "offerCode" || key === "version" || key === "publicationDate")) header[key] = value;
      return;
    }
    if (section === "products") {
      if (termsSeen) throw new RefreshSourceError("AWS offer file lists products after terms: it cannot be read as a stream", false);
      mappingFor().addProduct(String(key), value);
      return;
    }
    if (section !== "terms") return;
    const termType = stack[2]?.key;
    const awsSku = String(key);
    if (!termsSeen) {
      termsSeen = true;
      if (!mapping) throw new RefreshSourceError("AWS offer file lists terms before products: it cannot be read as a stream", false);
    }
    const m = mapping!;
    if (!m.has(awsSku)) return;
    if (termType === "OnDemand") {
      if (emitted.has(awsSku)) throw new RefreshSourceError(`AWS offer file lists the OnDemand term of ${awsSku} after its Reserved terms`, false);
      emitSku(m, awsSku, value as Record<string, any>);
    } else if (termType === "Reserved") {
      const offers = m.reservedOffers(awsSku, value as Record<string, any>);
      if (!offers.length) return;
      // SKUs before the offers that price them: a product with no OnDemand term so far has none.
      if (!emitted.has(awsSku)) emitSku(m, awsSku, undefined);
      for (const o of offers) queue.push({ offer: o });
    }
  };

  const flush = async () => {
    for (const row of queue) {
      if ("sku" in row) {
        skus++;
        const r = sink.sku(row.sku);
        if (r) await r;
      } else {
        offers++;
        const r = sink.offer(row.offer);
        if (r) await r;
      }
    }
    queue.length = 0;
  };

  try {
    let offset = 0;
    for await (const chunk of priceFileChunks(body, "AWS offer file", opts.signal)) {
      write(parser, chunk, "AWS offer file", offset);
      offset += chunk.length;
      await flush();
    }
    // The parser ends by itself with the document's closing brace; a body that stops short is truncated.
    if (!parser.isEnded) throw new RefreshSourceError("AWS offer file ends before its JSON does (truncated download?)", true);
    const m = mappingFor();
    for (const awsSku of m.keptSkus()) if (!emitted.has(awsSku)) emitSku(m, awsSku, undefined);
    await flush();
    return { offerCode: m.offerCode, version: header.version ?? opts.version ?? null, publishedAt: header.publicationDate ? m.asOf : null, skus, offers };
  } finally {
    // Stops the download when reading ends early (an error, an abort); a no-op after the last chunk.
    body.cancel().catch(() => {});
  }
}

/** Input bytes between two full collections while a price file is parsed. */
const COLLECT_EVERY_BYTES = 2 * 1024 * 1024;

/**
 * The chunks of a price file's body; a broken download or an abort is a retryable
 * RefreshSourceError. The body stays locked by nobody afterwards, so the caller can cancel it.
 */
export async function* priceFileChunks(body: ReadableStream<Uint8Array>, what: string, signal?: AbortSignal): AsyncGenerator<Uint8Array> {
  const reader = body.getReader();
  // The parser builds (and drops) an object per value: hundreds of MB of garbage per file, which
  // the collector otherwise lets the resident size grow with before it runs. A full collection
  // every few MB of input costs ~1 s per 200 MB file and keeps the peak flat.
  let offset = 0;
  let collectedAt = 0;
  try {
    for (;;) {
      if (signal?.aborted) throw new RefreshSourceError(`${what}: read aborted`, true);
      let chunk;
      try {
        chunk = await reader.read();
      } catch {
        throw new RefreshSourceError(`${what}: download broke off after ${offset} bytes`, true);
      }
      if (chunk.done) return;
      offset += chunk.value.length;
      yield chunk.value;
      if (offset - collectedAt >= COLLECT_EVERY_BYTES) {
        collectedAt = offset;
        collectGarbageHint();
      }
    }
  } finally {
    reader.releaseLock();
  }
}

/**
 * Feeds bytes (starting at byte `offset` of the file) to the parser; what it cannot parse is a
 * RefreshSourceError naming at most where (the parser's own message quotes the file's bytes,
 * which may be anything a proxy or a mirror sent). Errors of the mapping pass as they are.
 */
export function write(parser: JSONParser, bytes: Uint8Array, what: string, offset: number): void {
  try {
    parser.write(bytes);
  } catch (e) {
    if (e instanceof RefreshSourceError) throw e;
    const at = /absolute position "(\d+)"/.exec(e instanceof Error ? e.message : "");
    throw new RefreshSourceError(`${what} is not valid JSON (${at ? `at byte ${at[1]}` : `in the bytes from ${offset}`})`, false);
  }
}

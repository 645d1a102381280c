import { createReadStream } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { RefreshSourceError } from "./types.ts";

/** A fetched price document: its body as a byte stream, and its ETag. */
export interface PriceDocument {
  status: 200 | 304;
  etag: string | null;
  body: ReadableStream<Uint8Array> | null;
  /** Reads the whole body as JSON (small documents: indexes, API pages). */
  json(): Promise<any>;
}

const USER_AGENT = "commitops-catalog-refresh";
/** Index documents and API pages larger than this are refused (offer files stream, never via json()). */
const MAX_JSON_BYTES = 64 * 1024 * 1024;

async function readJson(body: ReadableStream<Uint8Array> | null, url: string): Promise<any> {
  if (!body) throw new RefreshSourceError(`${safeUrl(url)}: empty answer`, true);
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body as any as AsyncIterable<Uint8Array>) {
    size += chunk.length;
    if (size > MAX_JSON_BYTES) throw new RefreshSourceError(`${safeUrl(url)}: document larger than ${MAX_JSON_BYTES} bytes`, false);
    parts.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(parts).toString("utf8"));
  } catch {
    throw new RefreshSourceError(`${safeUrl(url)}: not valid JSON`, false);
  }
}

/** The URL without its query (API keys travel in the query string and must never be logged). */
export function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin === "null" ? u.protocol + "//" : u.origin}${u.pathname}`;
  } catch {
    return "(invalid URL)";
  }
}

/**
 * GETs a price document over http(s), or reads it from disk for a `file:` URL (offline
 * refresh). With `etag`, asks If-None-Match and answers status 304 when unchanged. Failures
 * are RefreshSourceError: network errors, 429 and 5xx retryable, other statuses not.
 */
export async function fetchPriceDocument(url: string, opts: { etag?: string | null; signal?: AbortSignal; timeoutMs?: number } = {}): Promise<PriceDocument> {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new RefreshSourceError(`invalid price source URL`, false);
  }
  if (u.protocol === "file:") {
    const path = decodeURIComponent(u.pathname);
    try {
      const st = await stat(path);
      const etag = `"${st.size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}"`;
      if (opts.etag && opts.etag === etag) return { status: 304, etag, body: null, json: async () => null };
      const body = Readable.toWeb(createReadStream(path, { highWaterMark: 256 * 1024 })) as unknown as ReadableStream<Uint8Array>;
      return { status: 200, etag, body, json: () => readJson(body, url) };
    } catch (e) {
      throw new RefreshSourceError(`${path}: cannot read (${(e as NodeJS.ErrnoException).code ?? "error"})`, false);
    }
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new RefreshSourceError(`unsupported price source scheme ${u.protocol}`, false);
  const timeout = AbortSignal.timeout(opts.timeoutMs ?? 120_000);
  let res: Response;
  try {
    res = await fetch(u, {
      headers: { "user-agent": USER_AGENT, accept: "application/json", ...(opts.etag ? { "if-none-match": opts.etag } : {}) },
      signal: opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout,
      redirect: "follow",
    });
  } catch (e) {
    throw new RefreshSourceError(`${safeUrl(url)}: unreachable (${(e as Error).name === "TimeoutError" ? "timed out" : "connection failed"})`, true);
  }
  if (res.status === 304) {
    await res.body?.cancel().catch(() => {});
    return { status: 304, etag: res.headers.get("etag") ?? opts.etag ?? null, body: null, json: async () => null };
  }
  if (!res.ok) {
    await res.body?.cancel().catch(() => {});
    throw new RefreshSourceError(`${safeUrl(url)}: HTTP ${res.status}`, res.status === 429 || res.status >= 500);
  }
  const body = res.body;
  return { status: 200, etag: res.headers.get("etag"), body, json: () => readJson(body, url) };
}

/** The saved API pages of an offline refresh (`DIR/azure/*.json`, `DIR/gcp/*.json`), in name order. */
export async function offlinePageFiles(folder: string): Promise<string[]> {
  try {
    return (await readdir(folder))
      .filter((f) => f.endsWith(".json"))
      .sort()
      .map((f) => join(folder, f));
  } catch (e) {
    throw new RefreshSourceError(`${folder}: cannot read (${(e as NodeJS.ErrnoException).code ?? "error"})`, false);
  }
}

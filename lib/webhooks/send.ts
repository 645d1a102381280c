/**
 * One POST to a receiver, bounded whatever the receiver does: an overall deadline (connect
 * included), no redirects (a 3xx is an answer, and a failure), at most MAX_READ_BYTES of the
 * response read before the socket is destroyed, and a short excerpt kept for the delivery log.
 * A receiver that hangs, drips, redirects or streams 100 MB back costs this request at most its
 * deadline, and nothing else waits on it (each endpoint is served on its own).
 */
import http from "node:http";
import https from "node:https";
import type { Egress } from "../egress.ts";
import { NonPublicHostError } from "../hosts.ts";

export const SEND_TIMEOUT_MS = 10_000;
/** The most of a response that is read; the rest is never received (the socket is destroyed). */
export const MAX_READ_BYTES = 64 * 1024;
/** The most of a response that is kept (the delivery log's excerpt). */
export const MAX_EXCERPT_BYTES = 1024;

export interface SendResult {
  /** The receiver's status, when it answered at all. */
  statusCode: number | null;
  /** A 2xx. */
  ok: boolean;
  latencyMs: number;
  /** The first bytes of the response (≤ 1 KB, text), for the delivery log only: never logged. */
  excerpt: string | null;
  /** Why it did not succeed, safe to store and show: never the URL or the response. */
  error: string | null;
}

/** Text of at most `max` bytes, cut at a character boundary, without the characters a text column refuses. */
function excerptOf(bytes: Buffer, max: number): string | null {
  if (!bytes.length) return null;
  let text = bytes.subarray(0, max).toString("utf8");
  // A character cut in two at the limit decodes to U+FFFD at the end: drop it.
  if (bytes.length > max) text = text.replace(/\uFFFD$/, "");
  return text.replace(/\u0000/g, "");
}

/** Why a request failed, in words that name neither the URL nor the receiver's answer. */
export function failureText(e: unknown, timeoutMs: number): string {
  if (e instanceof NonPublicHostError) return "refused: the host is not at a public address";
  const err = e as { code?: string; name?: string; message?: string };
  switch (err?.code) {
    case "ETIMEDOUT_DELIVERY":
      return `timed out after ${timeoutMs} ms`;
    case "ETIMEDOUT":
      return "connect timed out";
    case "ECONNREFUSED":
      return "connection refused";
    case "ECONNRESET":
    case "EPIPE":
      return "connection reset by the receiver";
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return "host not found";
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return "host unreachable";
  }
  if (typeof err?.code === "string" && /^(ERR_TLS|CERT_|UNABLE_TO|DEPTH_ZERO|SELF_SIGNED|ERR_SSL)/.test(err.code)) return `TLS error (${err.code})`;
  return `request failed${typeof err?.code === "string" && /^[A-Z0-9_]{1,40}$/.test(err.code) ? ` (${err.code})` : ""}`;
}

/** POSTs `body` to `url` over the egress's checked agents; never throws. */
export function postBounded(egress: Egress, url: string, headers: Record<string, string>, body: string, timeoutMs = SEND_TIMEOUT_MS): Promise<SendResult> {
  const started = performance.now();
  const payload = Buffer.from(body, "utf8");
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    let statusCode: number | null = null;
    const chunks: Buffer[] = [];
    let read = 0;
    const finish = (error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const ok = error === null && statusCode !== null && statusCode >= 200 && statusCode < 300;
      const why = error ?? (ok ? null : statusCode !== null && statusCode >= 300 && statusCode < 400 ? `HTTP ${statusCode} (redirects are not followed)` : `HTTP ${statusCode}`);
      resolve({ statusCode, ok, latencyMs: Math.max(0, Math.round(performance.now() - started)), excerpt: excerptOf(Buffer.concat(chunks), MAX_EXCERPT_BYTES), error: why });
    };
    let request: http.ClientRequest;
    const timer = setTimeout(() => {
      // With the status known, the answer stands: only its body was slow.
      const answered = statusCode !== null;
      request?.destroy(Object.assign(new Error("delivery timed out"), { code: "ETIMEDOUT_DELIVERY" }));
      finish(answered ? null : failureText({ code: "ETIMEDOUT_DELIVERY" }, timeoutMs));
    }, timeoutMs);
    try {
      const u = new URL(url);
      request = (u.protocol === "https:" ? https : http).request(
        u,
        { method: "POST", agent: egress.agentFor(u), headers: { ...headers, "content-length": String(payload.length) } },
        (res) => {
          statusCode = res.statusCode ?? null;
          const done = () => {
            finish(null);
            // The rest of a large answer is never read: the socket goes, not back to the pool.
            if (!res.complete) res.destroy();
          };
          res.on("data", (chunk: Buffer) => {
            if (settled) return;
            const room = MAX_READ_BYTES - read;
            if (room <= 0) return done();
            const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
            if (read < MAX_EXCERPT_BYTES) chunks.push(part.subarray(0, MAX_EXCERPT_BYTES - read));
            read += part.length;
            if (read >= MAX_READ_BYTES) done();
          });
          res.on("end", () => finish(null));
          res.on("error", () => finish(null));
          res.on("aborted", () => finish(null));
        },
      );
      request.on("error", (e) => finish(statusCode !== null ? null : failureText(e, timeoutMs)));
      request.end(payload);
    } catch (e) {
      finish(failureText(e, timeoutMs));
    }
  });
}

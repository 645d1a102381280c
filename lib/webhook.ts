/**
 * Delivery of one outbox row to a customer's webhook (support tickets, purchases): a JSON POST
 * with the row's idempotency key, no redirects, a timeout, and an error text that never holds the
 * URL's credentials or the receiver's body. The outboxes decide what to send and when to retry.
 */

const BASE_BACKOFF_MS = 5_000;
const MAX_BACKOFF_MS = 60 * 60_000;

/** Delay before attempt `attempts + 1` after `attempts` failures: 5 s, 10 s, 20 s … capped at 1 h. */
export function backoffMs(attempts: number): number {
  return Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** Math.max(0, Math.min(attempts - 1, 20)));
}

/** Where a URL points, without credentials or query (for logs and stored errors). */
export function safeTarget(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return "(invalid url)";
  }
}

/** POSTs `payload`; null when the receiver answered 2xx, else why not (safe to store and log). */
export async function postWebhook(url: string, payload: unknown, opts: { idempotencyKey: string; userAgent: string; attempt: number; timeoutMs: number }): Promise<string | null> {
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "idempotency-key": opts.idempotencyKey,
        "user-agent": opts.userAgent,
        "x-commitops-delivery-attempt": String(opts.attempt),
      },
      body: JSON.stringify(payload),
      signal: AbortSignal.timeout(opts.timeoutMs),
      redirect: "manual",
    });
    await res.body?.cancel().catch(() => {});
    return res.status >= 200 && res.status < 300 ? null : `HTTP ${res.status}`;
  } catch (e) {
    return e instanceof Error && e.name === "TimeoutError" ? `timed out after ${opts.timeoutMs} ms` : `request failed: ${e instanceof Error ? e.name : "error"}`;
  }
}

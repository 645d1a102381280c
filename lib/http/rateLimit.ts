import { TooManyRequestsError } from "../errors.ts";

/** What a client is told on every Beta response (`RateLimit-*`, IETF draft "RateLimit header fields"). */
export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Seconds until the current window ends. */
  resetSeconds: number;
}

export function rateLimitHeaders(r: RateLimitState): Record<string, string> {
  return { "ratelimit-limit": String(r.limit), "ratelimit-remaining": String(r.remaining), "ratelimit-reset": String(r.resetSeconds) };
}

/**
 * Per-credential request limit of the Beta API: a sliding pair of one-minute windows kept in
 * process memory. With several replicas each enforces it on its own share of the traffic (the
 * limit protects the service, it is not a billing quota), so no database round trip is spent.
 */
export class RateLimiter {
  private windows = new Map<string, { start: number; count: number; previous: number }>();

  constructor(private readonly perMinute: number, private readonly now: () => number = Date.now) {}

  /** Requests allowed per credential and minute (0: the limit is off). */
  get limit(): number {
    return this.perMinute;
  }

  /**
   * Counts `cost` requests of `key` at once (an MCP JSON-RPC batch counts each of its messages),
   * all or none: allowed only when that many single requests in a row would each be allowed.
   * Returns the remaining allowance, or throws 429 with Retry-After (counting nothing) when over
   * the limit. A limit of 0 disables it (no state, no headers).
   */
  check(key: string, cost = 1): RateLimitState | null {
    return this.decide(key, cost, true);
  }

  /**
   * 429 when not even one more request of `key` would pass; counts nothing. For a caller that
   * learns a request's cost only after reading its body: refuse early, then `check` the cost.
   */
  peek(key: string): RateLimitState | null {
    return this.decide(key, 1, false);
  }

  private decide(key: string, cost: number, count: boolean): RateLimitState | null {
    if (this.perMinute <= 0) return null;
    const t = this.now();
    const minute = Math.floor(t / 60_000) * 60_000;
    let w = this.windows.get(key);
    if (!w || w.start < minute - 60_000) w = { start: minute, count: 0, previous: 0 };
    else if (w.start < minute) w = { start: minute, count: 0, previous: w.count };
    const weight = 1 - (t - minute) / 60_000;
    const estimated = w.previous * weight + w.count;
    const resetSeconds = Math.max(1, Math.ceil((minute + 60_000 - t) / 1000));
    // The last of `cost` requests in a row sees the estimate raised by the `cost - 1` before it
    // (summed as that request's own check would: the same decision to the last bit).
    if (w.previous * weight + (w.count + cost - 1) >= this.perMinute) {
      this.windows.set(key, w);
      const retry = secondsUntilAllowed(Math.max(1, this.perMinute - cost + 1), w, minute, t);
      throw new TooManyRequestsError(retry, rateLimitHeaders({ limit: this.perMinute, remaining: 0, resetSeconds: retry }));
    }
    const counted = count ? cost : 0;
    w.count += counted;
    this.windows.set(key, w);
    if (this.windows.size > 100_000) this.windows.clear();
    return { limit: this.perMinute, remaining: Math.max(0, Math.floor(this.perMinute - estimated - counted)), resetSeconds };
  }
}

/**
 * When the sliding estimate (previous window's count, weighted by what is left of it, plus this
 * window's count) next drops below the limit: later in this window as the previous one fades
 * out, else in the next window as this one does. Whole seconds, at least 1, never early.
 */
function secondsUntilAllowed(limit: number, w: { count: number; previous: number }, minute: number, t: number): number {
  let at: number;
  if (w.count < limit && w.previous > 0) at = minute + 60_000 * (1 - (limit - w.count) / w.previous);
  else at = minute + 60_000 + 60_000 * Math.max(0, 1 - limit / Math.max(w.count, 1));
  // At `at` itself the estimate equals the limit (still refused): the first whole second after it.
  return Math.max(1, Math.floor((at - t) / 1000) + 1);
}

/** The per-credential sliding-window limiter (lib/http/rateLimit.ts) on a clock of its own. */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { RateLimiter } from "../../lib/http/rateLimit.ts";
import { TooManyRequestsError } from "../../lib/errors.ts";

function attempt(limiter: RateLimiter): { ok: true; remaining: number } | { ok: false; retry: number; reset: string | undefined } {
  try {
    return { ok: true, remaining: limiter.check("k")!.remaining };
  } catch (e) {
    if (!(e instanceof TooManyRequestsError)) throw e;
    const headers = (e as any).headers as Record<string, string>;
    return { ok: false, retry: Number(headers["Retry-After"] ?? headers["retry-after"]), reset: headers["ratelimit-reset"] };
  }
}

describe("rate limit: Retry-After says when a request passes again", () => {
  test("a burst at the end of a minute, then the next minute: the wait follows the sliding estimate", () => {
    let now = 0;
    const limiter = new RateLimiter(10, () => now);
    now = 59_000;
    for (let i = 0; i < 10; i++) expect(attempt(limiter).ok).toBe(true);
    const first = attempt(limiter);
    // At 60.000 s the previous minute's 10 still weigh 10: the first second that passes ends at 61 s.
    expect(first).toMatchObject({ ok: false, retry: 2, reset: "2" });
    now = 60_000;
    expect(attempt(limiter).ok).toBe(false);
    now = 60_050; // the previous minute's 10 now weigh 9.99
    expect(attempt(limiter)).toEqual({ ok: true, remaining: 0 });
    now = 60_100;
    const second = attempt(limiter);
    // 10 × (1 − x/60) + 1 < 10 once x > 6 s: not the 60 s a fixed window would say.
    expect(second).toMatchObject({ ok: false, retry: 6 });
    now = 60_000 + 5_900;
    expect(attempt(limiter).ok).toBe(false);
    now = 60_100 + 6_000;
    expect(attempt(limiter).ok).toBe(true);
  });

  test("property: waiting Retry-After seconds is always enough, and never more than a second too long", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 30 }), fc.array(fc.integer({ min: 0, max: 3_000 }), { minLength: 1, maxLength: 200 }), (limit, gaps) => {
        let now = 1_000_000;
        const limiter = new RateLimiter(limit, () => now);
        for (const gap of gaps) {
          now += gap;
          const r = attempt(limiter);
          if (r.ok) continue;
          expect(r.retry).toBeGreaterThanOrEqual(1);
          const refused = now;
          // One second short of the wait (when there is a second to take off): still refused.
          if (r.retry > 1) {
            now = refused + (r.retry - 1) * 1000 - 1;
            expect(attempt(limiter).ok).toBe(false);
          }
          now = refused + r.retry * 1000;
          expect(attempt(limiter).ok).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });

  test("a cost of n (an MCP batch) passes exactly when n single requests in a row would, counts all or nothing, and its Retry-After is enough", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 30 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 3_000 }), fc.integer({ min: 1, max: 30 })), { minLength: 1, maxLength: 100 }),
        (limit, steps) => {
          let now = 1_000_000;
          const batched = new RateLimiter(limit, () => now);
          const single = new RateLimiter(limit, () => now);
          for (const [gap, n] of steps) {
            now += gap;
            const cost = Math.min(n, limit);
            let passed: boolean;
            try {
              batched.check("k", cost);
              passed = true;
            } catch (e) {
              if (!(e instanceof TooManyRequestsError)) throw e;
              passed = false;
              const retry = Number((e as any).headers["Retry-After"]);
              expect(retry).toBeGreaterThanOrEqual(1);
              // The same batch passes after Retry-After seconds (probed on a copy of the state).
              const probe = new RateLimiter(limit, () => now + retry * 1000);
              (probe as any).windows = structuredClone((batched as any).windows);
              expect(() => probe.check("k", cost)).not.toThrow();
            }
            // The single-request limiter in step: the same decision, then the same count.
            let singlesPassed = true;
            const before = structuredClone((single as any).windows);
            for (let i = 0; i < cost; i++) {
              if (!attemptOk(single)) {
                singlesPassed = false;
                break;
              }
            }
            expect(passed).toBe(singlesPassed);
            if (!passed) (single as any).windows = before;
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

function attemptOk(limiter: RateLimiter): boolean {
  try {
    limiter.check("k");
    return true;
  } catch (e) {
    if (!(e instanceof TooManyRequestsError)) throw e;
    return false;
  }
}

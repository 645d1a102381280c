/** A small closed-loop HTTP load generator: `concurrency` workers for `seconds`, latency percentiles. */
export interface LoadResult {
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

export async function load(url: string, init: RequestInit, opts: { concurrency: number; seconds: number; expectStatus?: number }): Promise<LoadResult> {
  const latencies: number[] = [];
  let errors = 0;
  const end = performance.now() + opts.seconds * 1000;
  const worker = async () => {
    while (performance.now() < end) {
      const t0 = performance.now();
      try {
        const r = await fetch(url, init);
        await r.arrayBuffer();
        if (r.status !== (opts.expectStatus ?? 200)) errors++;
      } catch {
        errors++;
      }
      latencies.push(performance.now() - t0);
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: opts.concurrency }, worker));
  const elapsed = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? 0;
  return { requests: latencies.length, rps: latencies.length / elapsed, p50: pct(0.5), p99: pct(0.99), errors };
}

export const fmt = (n: number, d = 1) => n.toFixed(d);

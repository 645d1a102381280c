import { addDaysIso, type DailyPoint } from "../../lib/mcp/forecast.ts";

/** Deterministic PRNG (mulberry32) so generated series are reproducible. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Daily cloud spend: level + slope·t, weekends × weekendFactor, multiplicative Gaussian noise
 * (std = noise). `future(n)` gives the noise-free continuation for scoring forecasts.
 */
export function generatedSpend(o: { seed: number; days: number; level: number; slopePerDay: number; weekendFactor: number; noise: number; start?: string }) {
  const r = rng(o.seed);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
  const start = o.start ?? "2026-01-05";
  const truth = (t: number): DailyPoint => {
    const date = addDaysIso(start, t);
    const dow = new Date(`${date}T00:00:00Z`).getUTCDay();
    return { date, value: (o.level + o.slopePerDay * t) * (dow === 0 || dow === 6 ? o.weekendFactor : 1) };
  };
  const history = Array.from({ length: o.days }, (_, t) => {
    const p = truth(t);
    return { date: p.date, value: Math.max(0, p.value * (1 + o.noise * gauss())) };
  });
  return { history, future: (n: number) => Array.from({ length: n }, (_, i) => truth(o.days + i)) };
}

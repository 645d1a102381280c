import { addDaysIso, type DailyPoint } from "../../lib/mcp/forecast.ts";
import { rng } from "../../lib/billing/generator.ts";

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

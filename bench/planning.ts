/**
 * Plan sizing benchmark: 90 days of hourly usage over N commitment groups (default 2,000),
 * three contract options per group, an upfront budget to fit.
 *   npx bun bench/planning.ts [groups] [days]      (or PLANNING_BENCH_GROUPS / PLANNING_BENCH_DAYS)
 * Compares, in the same run, the quantile optimizer (lib/planning/optimize.ts) with a naive
 * brute force (every whole amount from 0 to the peak, each simulated hour by hour), and reports
 * the savings of the naive rules "cover the average" and "cover the minimum".
 */
import { sizeCommitments, type PlanningGroup, type UnitQuote } from "../lib/planning/optimize.ts";

const groups = Number(process.argv[2] ?? process.env.PLANNING_BENCH_GROUPS ?? 2000);
const days = Number(process.argv[3] ?? process.env.PLANNING_BENCH_DAYS ?? 90);
const hours = days * 24;

let seed = 42;
const rand = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);

const quote = (term: string, pay: string, effective: number, upfront: number): UnitQuote => ({
  offerId: `${term}/${pay}`,
  commitmentType: "reserved_instance",
  contractTerm: term,
  paymentOption: pay,
  effectiveHourlyRate: effective,
  ondemandHourlyRate: 0.1,
  upfrontPerUnit: upfront,
  durationSeconds: term === "three_year" ? 94_608_000 : 31_536_000,
  feeRate: 0,
  lockInDays: 365,
  spendBased: false,
});
const QUOTES = [quote("one_year", "no_upfront", 0.062, 0), quote("one_year", "all_upfront", 0.058, 508.08), quote("three_year", "all_upfront", 0.04, 1051.2)];

function makeGroups(): PlanningGroup[] {
  const out: PlanningGroup[] = [];
  for (let g = 0; g < groups; g++) {
    const base = 1 + Math.floor(rand() * 20);
    const peak = Math.floor(rand() * 30);
    const shape = g % 4;
    const usage = new Float64Array(hours);
    for (let h = 0; h < hours; h++) {
      const hod = h % 24;
      const dow = Math.floor(h / 24) % 7;
      let u = base;
      if (shape === 1) u += peak * (0.5 - 0.5 * Math.cos((2 * Math.PI * hod) / 24));
      else if (shape === 2) u += dow < 5 && hod >= 9 && hod < 18 ? peak : 0;
      else if (shape === 3) u += peak * (1 - h / hours);
      usage[h] = Math.max(0, Math.round(u + (rand() - 0.5) * 4));
    }
    out.push({ key: `g${String(g).padStart(5, "0")}`, usage, quotes: QUOTES });
  }
  return out;
}

function simulate(usage: Float64Array, q: UnitQuote, a: number): number {
  let covered = 0;
  for (let h = 0; h < usage.length; h++) covered += usage[h]! < a ? usage[h]! : a;
  return ((q.ondemandHourlyRate * covered - q.effectiveHourlyRate * a * usage.length) * 730) / usage.length;
}

/** Naive: for each group and option try every whole amount 0..peak (hour-by-hour simulation). */
function bruteForce(gs: PlanningGroup[]): number {
  let total = 0;
  for (const g of gs) {
    let peak = 0;
    for (const u of g.usage) if (u > peak) peak = u;
    let best = 0;
    for (const q of g.quotes.filter((x) => x.upfrontPerUnit === 0)) for (let a = 0; a <= peak; a++) best = Math.max(best, simulate(g.usage, q, a));
    total += best;
  }
  return total;
}

function rule(gs: PlanningGroup[], pick: (u: Float64Array) => number): number {
  let total = 0;
  for (const g of gs) total += Math.max(0, simulate(g.usage, QUOTES[0]!, pick(g.usage)));
  return total;
}

function time<T>(fn: () => T): { ms: number; result: T } {
  const t0 = performance.now();
  const result = fn();
  return { ms: performance.now() - t0, result };
}

const data = makeGroups();
console.log(`planning bench: ${groups} groups × ${hours} hourly values (${((groups * hours) / 1e6).toFixed(2)} M), ${QUOTES.length} options each`);
sizeCommitments(data.slice(0, 10), 0); // warm-up
const opt = time(() => sizeCommitments(data, 0));
const budget = groups * 750;
const withBudget = time(() => sizeCommitments(data, budget));
console.log(`optimizer (quantile, no upfront):    ${opt.ms.toFixed(0)} ms  → $${opt.result.monthlyNetSavings.toFixed(2)}/month net savings`);
console.log(`optimizer (upfront budget $${budget.toFixed(0)}): ${withBudget.ms.toFixed(0)} ms  → $${withBudget.result.monthlyNetSavings.toFixed(2)}/month, upfront $${withBudget.result.totalUpfront.toFixed(2)}`);
const brute = time(() => bruteForce(data));
console.log(`baseline brute force (no upfront):   ${brute.ms.toFixed(0)} ms  → $${brute.result.toFixed(2)}/month  (speed-up ×${(brute.ms / opt.ms).toFixed(1)})`);
if (Math.abs(brute.result - opt.result.monthlyNetSavings) > 1e-6 * Math.max(1, brute.result)) {
  console.error(`MISMATCH: optimizer ${opt.result.monthlyNetSavings} vs brute force ${brute.result}`);
  process.exitCode = 1;
}
const avg = rule(data, (u) => Math.round(u.reduce((a, b) => a + b, 0) / u.length));
const min = rule(data, (u) => Math.min(...u));
console.log(`naive rule "cover the average":       $${avg.toFixed(2)}/month`);
console.log(`naive rule "cover the minimum":       $${min.toFixed(2)}/month`);
console.log(`target: < 1000 ms for 2,000 groups × 90 days on 2 cores → ${opt.ms < 1000 ? "met" : "NOT met"} at this size`);

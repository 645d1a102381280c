// Spend anomalies (lib/billing/anomalies.ts): the detector's false-positive rate and recall on
// generated daily-spend series with injected anomalies. Seconds, no database.
//
// Series (175 days = 25 weeks; the first 112 are the history the method reads, the last 63 are
// scored), ANOMALY_SERIES of each kind clean and as many with injections:
// - periodic: level 20-20,000 a day, weekend factor 0.4-1.0, Gaussian multiplicative noise 2-10 %;
// - trending: the same with a linear trend of -0.4 %..+1 % of the starting level a day, noise 2-8 %;
// - noisy: noise 15-30 % with heavy tails (Student t, 4 degrees of freedom, scaled to that σ);
// - sparse: zero-heavy, spend on 20-60 % of days (lognormal amounts ±30 %), typical amount 0.05-500.
// σ-equivalent of a day: the generator's noise σ at that day (cv × noise-free value); for sparse
// series the standard deviation of the series' days. Injected series get 2 anomalies in
// different weeks of the scored days: spikes (+m σ) or drops (-m σ, only where the day stays ≥ 0),
// m ∈ {3, 5, 8}. Injections smaller than the money floor (min impact) are reported apart: the
// floor hides them by design.
// Measured: false-positive rate = flagged days / scored days of the series WITHOUT injections;
// precision = flagged injected days / flagged days of the series with injections; recall by m.
// Methods: the chosen one (lib/billing/anomalies.ts) at several k, the same without the level
// correction and with residuals in money (not relative to the day's size), and a naive 28-day
// rolling median + MAD without the day-of-week pattern.
// Env: ANOMALY_SERIES (300 per kind and arm). Usage: bun bench/anomalies.ts
import { rng } from "../lib/billing/generator.ts";
import { addDaysIso, ANOMALY_DEFAULTS, scoreSeries, type AnomalyParams, type DailyValue } from "../lib/billing/anomalies.ts";

const SERIES = Number(process.env.ANOMALY_SERIES ?? 300);
const DAYS = 175;
const HISTORY = 112;
const START = "2026-01-05"; // a Monday
const FROM = addDaysIso(START, HISTORY);
const TO = addDaysIso(START, DAYS);
const LAST = addDaysIso(START, DAYS - 1);
const SIZES = [3, 5, 8] as const;
type Kind = "periodic" | "trending" | "noisy" | "sparse";
const KINDS: Kind[] = ["periodic", "trending", "noisy", "sparse"];

interface Injection {
  index: number;
  size: number;
  direction: "spike" | "drop";
  amount: number;
}
interface Series {
  kind: Kind;
  points: DailyValue[];
  injections: Injection[];
}

function generate(kind: Kind, seed: number, inject: boolean): Series {
  const r = rng(seed * 7919 + KINDS.indexOf(kind) * 104_729 + (inject ? 1 : 0));
  const gauss = () => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
  const studentT4 = () => {
    const z = gauss();
    let chi = 0;
    for (let i = 0; i < 4; i++) chi += gauss() ** 2;
    return z / Math.sqrt(chi / 4) / Math.SQRT2; // t(4) has variance 2: scaled to σ = 1
  };
  const logUniform = (a: number, b: number) => Math.exp(Math.log(a) + r() * (Math.log(b) - Math.log(a)));
  const values: number[] = [];
  const sigma: number[] = [];
  if (kind === "sparse") {
    const p = 0.2 + 0.4 * r();
    const amount = logUniform(0.05, 500);
    for (let t = 0; t < DAYS; t++) values.push(r() < p ? amount * Math.exp(0.3 * gauss()) : 0);
    const mean = values.reduce((a, b) => a + b, 0) / DAYS;
    const sd = Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / DAYS);
    for (let t = 0; t < DAYS; t++) sigma.push(sd);
  } else {
    const level = logUniform(20, 20_000);
    const weekend = 0.4 + 0.6 * r();
    const cv = kind === "periodic" ? 0.02 + 0.08 * r() : kind === "trending" ? 0.02 + 0.06 * r() : 0.15 + 0.15 * r();
    const slope = kind === "trending" ? (-0.004 + 0.014 * r()) * level : 0;
    for (let t = 0; t < DAYS; t++) {
      const dow = new Date(`${addDaysIso(START, t)}T00:00:00Z`).getUTCDay();
      const truth = Math.max(0, (level + slope * t) * (dow === 0 || dow === 6 ? weekend : 1));
      const noise = kind === "noisy" ? studentT4() : gauss();
      values.push(Math.max(0, truth * (1 + cv * noise)));
      sigma.push(cv * truth);
    }
  }
  const injections: Injection[] = [];
  if (inject) {
    const weeks = Array.from({ length: 9 }, (_, i) => i);
    for (let n = 0; n < 2; n++) {
      const w = weeks.splice(Math.floor(r() * weeks.length), 1)[0]!;
      const index = HISTORY + w * 7 + Math.floor(r() * 7);
      const size = SIZES[Math.floor(r() * SIZES.length)]!;
      const amount = size * sigma[index]!;
      const direction = kind !== "sparse" && r() < 0.4 && values[index]! - amount >= 0 ? "drop" : "spike";
      values[index] = values[index]! + (direction === "spike" ? amount : -amount);
      injections.push({ index, size, direction, amount });
    }
  }
  return { kind, points: values.map((value, t) => ({ date: addDaysIso(START, t), value })), injections };
}

/** The naive alternative: 28-day rolling median and 1.4826 × MAD, no day-of-week pattern. */
function naiveFlags(points: DailyValue[], k: number, minImpact: number): Set<string> {
  const flagged = new Set<string>();
  const v = points.map((p) => p.value);
  const med = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    const m = s.length >> 1;
    return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
  };
  for (let i = HISTORY; i < v.length; i++) {
    const w = v.slice(i - 28, i);
    const m = med(w);
    const spread = Math.max(1.4826 * med(w.map((x) => Math.abs(x - m))), 0.02 * Math.abs(m), ANOMALY_DEFAULTS.absFloor);
    if (Math.abs(v[i]! - m) >= k * spread && Math.abs(v[i]! - m) >= minImpact) flagged.add(points[i]!.date);
  }
  return flagged;
}

interface Tally {
  cleanDays: number;
  cleanFlags: number;
  injFlags: number;
  injTrue: number;
  hit: Record<number, [number, number]>;
  drops: [number, number];
  belowFloor: number;
}
const newTally = (): Tally => ({ cleanDays: 0, cleanFlags: 0, injFlags: 0, injTrue: 0, hit: { 3: [0, 0], 5: [0, 0], 8: [0, 0] }, drops: [0, 0], belowFloor: 0 });

function evaluate(all: Series[], flags: (s: Series) => Set<string>, minImpact: number): Record<Kind | "all", Tally> {
  const out = Object.fromEntries([...KINDS, "all"].map((k) => [k, newTally()])) as Record<Kind | "all", Tally>;
  for (const s of all) {
    const f = flags(s);
    for (const t of [out[s.kind], out.all]) {
      if (!s.injections.length) {
        t.cleanDays += 63;
        t.cleanFlags += f.size;
        continue;
      }
      t.injFlags += f.size;
      for (const inj of s.injections) {
        const hit = f.has(s.points[inj.index]!.date);
        if (hit) t.injTrue++;
        if (inj.amount < minImpact) {
          t.belowFloor++;
          continue;
        }
        t.hit[inj.size]![1]++;
        if (hit) t.hit[inj.size]![0]++;
        if (inj.direction === "drop") {
          t.drops[1]++;
          if (hit) t.drops[0]++;
        }
      }
    }
  }
  return out;
}

const t0 = performance.now();
const all: Series[] = [];
for (const kind of KINDS) for (let seed = 1; seed <= SERIES; seed++) all.push(generate(kind, seed, false), generate(kind, seed, true));
const genMs = performance.now() - t0;

const pct = (a: number, b: number) => (b ? `${((100 * a) / b).toFixed(2)} %` : "–");
const minImpact = ANOMALY_DEFAULTS.minImpact;
/** Scores every series once per parameter set; thresholds k are applied afterwards. */
function scoreAll(params: Partial<AnomalyParams>) {
  return new Map(all.map((s) => [s, scoreSeries(s.points, { from: FROM, to: TO, completeThrough: LAST }, { ...params, k: 0 }).days]));
}
const flagsAt = (scored: ReturnType<typeof scoreAll>, k: number) => (s: Series) => {
  const days = scored.get(s)!;
  return new Set(days.filter((d) => Math.abs(d.score) >= k && Math.abs(d.impact) >= minImpact).map((d) => d.date));
};
const t1 = performance.now();
const chosenScores = scoreAll({});
const noLevel = scoreAll({ levelCorrection: false });
const inMoney = scoreAll({ relative: false });
const scoredDays = [...chosenScores.values()].reduce((a, d) => a + d.length, 0) * 3;
const variants: { name: string; flags: (s: Series) => Set<string> }[] = [
  { name: `chosen: weekday median + level correction, relative residuals, k = ${ANOMALY_DEFAULTS.k}`, flags: flagsAt(chosenScores, ANOMALY_DEFAULTS.k) },
  ...[2.5, 3, 3.25, 4].map((k) => ({ name: `same method, k = ${k}`, flags: flagsAt(chosenScores, k) })),
  { name: `without the level correction, k = ${ANOMALY_DEFAULTS.k}`, flags: flagsAt(noLevel, ANOMALY_DEFAULTS.k) },
  { name: `residuals in money (not relative to the day's size), k = ${ANOMALY_DEFAULTS.k}`, flags: flagsAt(inMoney, ANOMALY_DEFAULTS.k) },
  { name: `naive: 28-day rolling median + MAD, no weekday pattern, k = ${ANOMALY_DEFAULTS.k}`, flags: (s) => naiveFlags(s.points, ANOMALY_DEFAULTS.k, minImpact) },
];
const results = variants.map((v) => ({ v, res: evaluate(all, v.flags, minImpact) }));
const scoreMs = performance.now() - t1;

console.log(`\n### Spend anomalies: ${all.length} generated series (${SERIES} per kind, clean and with injections), 63 scored days each, min impact ${minImpact}\n`);
console.log("| method | false-positive rate (clean days) | precision | recall 3σ | recall 5σ | recall 8σ | recall of drops |");
console.log("|---|---:|---:|---:|---:|---:|---:|");
for (const { v, res } of results) {
  const a = res.all;
  console.log(`| ${v.name} | ${pct(a.cleanFlags, a.cleanDays)} | ${pct(a.injTrue, a.injFlags)} | ${pct(...a.hit[3]!)} | ${pct(...a.hit[5]!)} | ${pct(...a.hit[8]!)} | ${pct(...a.drops)} |`);
}
const chosen = results[0]!.res;
console.log(`\n#### Chosen parameters (k = ${ANOMALY_DEFAULTS.k}) by kind of series\n`);
console.log("| series | clean days | false-positive rate | precision | recall 3σ | recall 5σ | recall 8σ | injections below the money floor |");
console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
for (const k of [...KINDS, "all"] as const) {
  const a = chosen[k];
  console.log(`| ${k} | ${a.cleanDays} | ${pct(a.cleanFlags, a.cleanDays)} | ${pct(a.injTrue, a.injFlags)} | ${pct(...a.hit[3]!)} | ${pct(...a.hit[5]!)} | ${pct(...a.hit[8]!)} | ${a.belowFloor} |`);
}
console.log(`\nGenerated in ${genMs.toFixed(0)} ms; ${scoredDays} series-days scored (3 parameter sets) and evaluated in ${scoreMs.toFixed(0)} ms.`);

// Back-test of the spend forecast (lib/mcp/forecast.ts) against seasonal naive, on generated
// daily spend, over many cut points ("today"s), as forecast_spend runs it: history = the complete
// days of the HISTORY days before today (never today), forecast from today on.
//
// Series (FORECAST_BENCH_SERIES per kind, seeded, 2025-10-06 → 240 days; each series its own level
// and weekday pattern with weekends at 55–85 % of weekdays):
//   periodic  the weekday pattern, repeated exactly;
//   trending  the pattern × a growth of +3…+8 % per month (compounded daily);
//   noisy     the pattern × (1 + 15 % Gaussian noise);
//   one-off   the pattern + a monthly charge on the 1st (tax, support: 20 % of a weekday).
// Cut points: every day from day 120 to day 210 of each series. At each cut:
//   - horizon errors over the next HORIZON days: WAPE = Σ|f − a| ÷ Σa, MAPE = mean |f − a| ÷ a,
//     total error = (Σf − Σa) ÷ Σa (mean of the signed values);
//   - month end: the cut's month projected as the actual of its complete days + the forecast of
//     the rest (today included) vs the true month total: bias = mean signed error, and the mean
//     absolute error.
// Models: the forecast on complete days (what forecast_spend does); seasonal naive (repeat the
// last complete week); and the forecast with today's partial day (billed until 12:00) counted as
// a complete day (the behaviour before issue 15: history and month actual include it, the
// forecast starts tomorrow).
//
// Usage: bun bench/forecast.ts   (FORECAST_BENCH_SERIES=20, a few seconds)
import { rng } from "../lib/billing/generator.ts";
import { addDaysIso, forecastSpend, lastDayOfMonth, monthEnd, predict, seasonalNaive, type DailyPoint } from "../lib/mcp/forecast.ts";

const SERIES = Number(process.env.FORECAST_BENCH_SERIES ?? 20);
const START = "2025-10-06";
const LENGTH = 240;
const HISTORY = 90;
const HORIZON = 28;
const CUTS = { first: 120, last: 210 };
const TODAY_BILLED = 0.5;

const dow = (d: string) => new Date(`${d}T00:00:00Z`).getUTCDay();
type Kind = "periodic" | "trending" | "noisy" | "one-off";
const KINDS: Kind[] = ["periodic", "trending", "noisy", "one-off"];

function series(kind: Kind, seed: number): DailyPoint[] {
  const r = rng(seed * 7919 + KINDS.indexOf(kind));
  const gauss = () => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
  const level = 500 + 2500 * r();
  const weekend = 0.55 + 0.3 * r();
  const week = Array.from({ length: 7 }, (_, d) => (d === 0 || d === 6 ? weekend : 1) * level * (0.95 + 0.1 * r()));
  const growth = 0.03 + 0.05 * r();
  return Array.from({ length: LENGTH }, (_, t) => {
    const date = addDaysIso(START, t);
    let v = week[dow(date)]!;
    if (kind === "trending") v *= (1 + growth) ** (t / 30);
    if (kind === "noisy") v = Math.max(0, v * (1 + 0.15 * gauss()));
    if (kind === "one-off" && date.endsWith("-01")) v += 0.2 * level;
    return { date, value: Math.round(v * 100) / 100 };
  });
}

type Forecaster = (from: string, days: number) => DailyPoint[];
interface Scores {
  wape: number[];
  mape: number[];
  total: number[];
  monthBias: number[];
}
const empty = (): Scores => ({ wape: [], mape: [], total: [], monthBias: [] });

function score(s: Scores, actual: DailyPoint[], forecast: DailyPoint[], monthActual: DailyPoint[], monthRest: DailyPoint[], monthTruth: number) {
  const a = actual.reduce((x, p) => x + p.value, 0);
  s.wape.push(actual.reduce((x, p, i) => x + Math.abs(forecast[i]!.value - p.value), 0) / a);
  const pos = actual.map((p, i) => [p.value, forecast[i]!.value] as const).filter(([y]) => y > 0);
  s.mape.push(pos.reduce((x, [y, f]) => x + Math.abs(f - y) / y, 0) / pos.length);
  s.total.push((forecast.reduce((x, p) => x + p.value, 0) - a) / a);
  s.monthBias.push([...monthActual, ...monthRest].reduce((x, p) => x + p.value, 0) / monthTruth - 1);
}

const t0 = performance.now();
const results = new Map<string, Scores>();
const get = (k: string) => results.get(k) ?? (results.set(k, empty()), results.get(k)!);
let cutsRun = 0;
for (const kind of KINDS) {
  for (let seed = 1; seed <= SERIES; seed++) {
    const s = series(kind, seed);
    for (let cut = CUTS.first; cut <= CUTS.last; cut++) {
      cutsRun++;
      const today = s[cut]!.date;
      const month = today.slice(0, 7);
      const monthTruth = s.filter((p) => p.date.startsWith(month)).reduce((x, p) => x + p.value, 0);
      const history = s.slice(cut - HISTORY, cut);
      const actual = s.slice(cut, cut + HORIZON);
      const daysLeft = Math.round((Date.parse(`${lastDayOfMonth(month)}T00:00:00Z`) - Date.parse(`${today}T00:00:00Z`)) / 86_400_000) + 1;

      // The forecast on complete days (forecast_spend).
      const f = forecastSpend(history, Math.max(HORIZON, daysLeft), { through: addDaysIso(today, -1) });
      const model: Forecaster = (from, n) => predict(f.model, from, n);
      const me = monthEnd(f.series, model, month, addDaysIso(today, -1));
      score(get(`${kind}|trend + weekday profile, complete days`), actual, model(today, HORIZON), me.actual, me.remaining, monthTruth);

      // Seasonal naive on the same complete days.
      const naive: Forecaster = (from, n) => seasonalNaive(history, from, n);
      const mn = monthEnd(history, naive, month, addDaysIso(today, -1));
      score(get(`${kind}|seasonal naive (last complete week)`), actual, naive(today, HORIZON), mn.actual, mn.remaining, monthTruth);

      // Before the fix: today's half-billed day in the history as a complete day.
      const withToday = [...history.slice(1), { date: today, value: s[cut]!.value * TODAY_BILLED }];
      const g = forecastSpend(withToday, Math.max(HORIZON, daysLeft));
      const old: Forecaster = (from, n) => predict(g.model, from, n);
      const mo = monthEnd(g.series, old, month, today);
      score(get(`${kind}|trend + weekday, today's partial day counted (before)`), s.slice(cut + 1, cut + 1 + HORIZON), old(addDaysIso(today, 1), HORIZON), mo.actual, mo.remaining, monthTruth);
    }
  }
}
const ms = performance.now() - t0;

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const pct = (x: number) => `${x >= 0 ? "" : "−"}${Math.abs(x * 100).toFixed(2)} %`;
console.log(`### Spend forecast back-test (bun bench/forecast.ts)\n`);
console.log(
  `${SERIES} series per kind × ${CUTS.last - CUTS.first + 1} cut points (${cutsRun} forecasts per model), ${HISTORY} days of history before each cut, ${HORIZON}-day horizon; month end = the cut's month. ${ms.toFixed(0)} ms.\n`,
);
console.log("| series | model | WAPE | MAPE | total error (mean) | month-end bias | month-end abs. error |");
console.log("|---|---|---|---|---|---|---|");
for (const [k, s] of results) {
  const [kind, model] = k.split("|");
  console.log(`| ${kind} | ${model} | ${pct(mean(s.wape))} | ${pct(mean(s.mape))} | ${pct(mean(s.total))} | ${pct(mean(s.monthBias))} | ${pct(mean(s.monthBias.map(Math.abs)))} |`);
}

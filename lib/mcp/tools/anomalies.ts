/** Unusual daily spend per account or service (lib/billing/anomalyScan.ts: lib/billing/anomalies.ts over lib/billing/dailySpend.ts). */
import * as z from "zod";
import { ANOMALY_DEFAULTS, ANOMALY_METHOD, MEASURED } from "../../billing/anomalies.ts";
import { scanSpendAnomalies } from "../../billing/anomalyScan.ts";
import { defineTool, isoDate, moneyText, providerEnum, totalsByCurrency } from "./common.ts";

const anomaly = z.object({
  provider: z.string(),
  currency: z.string(),
  key: z.string().nullable(),
  name: z.string().nullable(),
  date: z.string(),
  weekday: z.string(),
  expected: z.number(),
  actual: z.number(),
  impact: z.number(),
  spread: z.number(),
  score: z.number(),
  direction: z.enum(["spike", "drop"]),
});

export const detectAnomaliesTool = defineTool({
  name: "detect_spend_anomalies",
  title: "Spend anomalies",
  description:
    "Finds days whose amortized spend (effective cost) of one linked account or one service was unusually high (spike) or low (drop) compared with its own recent days, per currency. Use it for 'did anything unusual happen to our spend', 'which account/service spiked', 'why did yesterday cost more'. " +
    "Each anomaly gives provider, currency, the account id (with its name) or service name, the date, the expected and actual spend of that day, the impact (actual − expected, as shown), the spread (typical daily deviation of that series) and the score (impact / spread), largest |impact| first within each currency. " +
    "Method: expected = median of the same weekday over the previous 8 weeks plus a level correction; an anomaly needs |impact| ≥ 3.5 spreads and ≥ min_impact. Only complete days are scored (never today, nor a trailing day the billing data does not cover to midnight); a series is scored from its 29th day. The result also states the method, its parameters and the false-positive rate measured on generated series. Money in the billing currency, to cents; currencies are never added.",
  scopes: [],
  input: {
    dimension: z.enum(["account", "service"]).default("account").describe("Series per linked account (account id, else billing account) or per service (FOCUS ServiceName)."),
    provider: providerEnum.optional().describe("Only this cloud provider."),
    start_date: isoDate.optional().describe("First day scored (YYYY-MM-DD, UTC, inclusive). Default: 30 days before end_date."),
    end_date: isoDate.optional().describe("Day after the last day scored (YYYY-MM-DD, exclusive; at most today). Default: the day after the last complete day of billing data."),
    direction: z.enum(["spike", "drop", "both"]).default("both").describe("Only spikes (spend above expected), only drops, or both."),
    min_impact: z.number().min(0).max(1_000_000_000).default(ANOMALY_DEFAULTS.minImpact).describe("Smallest |actual − expected| reported, in the billing currency of each series (default 1)."),
    limit: z.number().int().min(1).max(500).default(50).describe("Maximum anomalies returned per currency (largest |impact| first); totals count them all."),
  },
  output: {
    method: z.string(),
    parameters: z.object({ k: z.number(), baseline_weeks: z.number().int(), residual_days: z.number().int(), spread_floor_relative: z.number(), spread_floor_absolute: z.number(), min_impact: z.number() }),
    measured: z.object({ false_positive_rate: z.number(), precision: z.number(), recall_3_sigma: z.number(), recall_5_sigma: z.number(), recall_8_sigma: z.number(), source: z.string() }),
    window: z.object({ start_date: z.string(), end_date: z.string() }),
    dimension: z.string(),
    complete_through: z.array(z.object({ provider: z.string(), billing_account_id: z.string(), date: z.string().nullable() })),
    scored: z.object({ series: z.number().int(), days: z.number().int(), days_without_enough_history: z.number().int() }),
    totals: z.array(z.object({ currency: z.string(), anomalies: z.number().int(), spike_impact: z.number(), drop_impact: z.number() })),
    total_count: z.number().int(),
    returned_count: z.number().int(),
    truncated: z.boolean(),
    anomalies: z.array(anomaly),
  },
  async run(ctx, a) {
    const scan = await scanSpendAnomalies(ctx.s.db, ctx.orgId, ctx.now, { dimension: a.dimension, provider: a.provider, start: a.start_date, end: a.end_date, direction: a.direction, minImpact: a.min_impact });
    const { found, complete, scoredSeries, scoredDays, unscored } = scan;
    const { start_date: from, end_date: end } = scan.window;
    found.sort((x, y) => x.currency.localeCompare(y.currency) || Math.abs(y.impact) - Math.abs(x.impact) || x.date.localeCompare(y.date) || x.provider.localeCompare(y.provider) || (x.key ?? "").localeCompare(y.key ?? ""));
    const perCurrency = new Map<string, number>();
    const kept = found.filter((f) => {
      const n = (perCurrency.get(f.currency) ?? 0) + 1;
      perCurrency.set(f.currency, n);
      return n <= a.limit;
    });
    const totals = totalsByCurrency(
      found.map((f) => ({ currency: f.currency, spike_impact: f.impact > 0 ? f.impact : 0, drop_impact: f.impact < 0 ? f.impact : 0 })),
      ["spike_impact", "drop_impact"],
    ).map((t) => ({ currency: t.currency, anomalies: perCurrency.get(t.currency) ?? 0, spike_impact: t.spike_impact, drop_impact: t.drop_impact }));

    const top = kept[0];
    return {
      structured: {
        method: ANOMALY_METHOD,
        parameters: {
          k: ANOMALY_DEFAULTS.k,
          baseline_weeks: ANOMALY_DEFAULTS.weeks,
          residual_days: ANOMALY_DEFAULTS.residualDays,
          spread_floor_relative: ANOMALY_DEFAULTS.relFloor,
          spread_floor_absolute: ANOMALY_DEFAULTS.absFloor,
          min_impact: a.min_impact,
        },
        measured: { ...MEASURED },
        window: { start_date: from, end_date: end },
        dimension: a.dimension,
        complete_through: complete,
        scored: { series: scoredSeries, days: scoredDays, days_without_enough_history: unscored },
        totals,
        total_count: found.length,
        returned_count: kept.length,
        truncated: kept.length < found.length,
        anomalies: kept,
      },
      summary: found.length
        ? `${found.length} unusual day(s) of spend by ${a.dimension} between ${from} and ${end} (exclusive): spikes ${moneyText(totals, "spike_impact")}; drops ${moneyText(totals, "drop_impact")}. Largest: ${top!.date} ${top!.provider} ${top!.name ?? top!.key ?? "(none)"} ${top!.currency} ${top!.actual} vs expected ${top!.expected} (${top!.direction} ${top!.impact}).`
        : `No unusual day of spend by ${a.dimension} between ${from} and ${end} (exclusive) among ${scoredSeries} series (${scoredDays} days scored; expected false-positive rate ${(MEASURED.false_positive_rate * 100).toFixed(2)}% of days).`,
    };
  },
});

export const anomalyTools = [detectAnomaliesTool];

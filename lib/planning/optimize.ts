import { commitmentFinancials, grossDiscount, HOURS_PER_MONTH } from "../pricing/index.ts";
/**
 * Sizing commitments on an hourly usage history (pure; no database).
 *
 * For one commitment group (usage that one option can cover, in units per hour: instances of a
 * SKU) and one option costing c per unit-hour (recurring + amortized upfront) against an
 * on-demand price p per unit-hour, buying `a` units over T hours of history u_1…u_T saves
 *
 *   gross(a) = p·Σ_h min(u_h, a) − c·a·T
 *
 * gross is concave and piecewise linear in a, with slope p·#{h : u_h > a} − c·T. The slope
 * stays positive while the fraction of hours with usage above a exceeds c/p = 1 − d (d the
 * option's discount vs on-demand), so the optimum is the usage quantile at level d: with the
 * usage sorted ascending, a* = u_(⌈d·T⌉) (a* = 0 when d ≤ 0), i.e. P(u ≥ a*) ≈ 1 − d.
 * The service premium of insured offers is a fraction f of positive gross savings, so
 * net = (1 − f)·gross there and the argmax is the same. tests/planning verifies it against
 * a brute-force search.
 */

export interface UnitQuote {
  offerId: string;
  offerOrgId?: string;
  leaseMenuItemId?: string;
  commitmentType: string;
  contractTerm: string;
  paymentOption: string;
  /** Recurring + amortized upfront, per unit-hour (from lib/pricing). */
  effectiveHourlyRate: number;
  /** On-demand price per unit-hour (from lib/pricing). */
  ondemandHourlyRate: number;
  /** Recurring part of the rate per unit-hour (what the provider bills hourly). */
  recurringHourlyRate?: number;
  /** One-time upfront per unit for the whole term. */
  upfrontPerUnit: number;
  durationSeconds: number;
  feeRate: number;
  lockInDays: number;
  /** Spend-based types (savings plans, spend CUDs) commit to $/hour: amount = units × effective rate. */
  spendBased: boolean;
}

export interface PlanningGroup {
  key: string;
  region?: string | null;
  instanceType?: string | null;
  /** Eligible usage per hour (units), oldest first. */
  usage: Float64Array;
  /** Units per hour already covered by active commitments (a constant or per hour). */
  coverage?: number | Float64Array;
  quotes: UnitQuote[];
}

export interface SizedOption {
  groupKey: string;
  region: string | null;
  instanceType: string | null;
  quote: UnitQuote;
  /** Units covered per hour (instances). */
  units: number;
  /** Purchase amount: units, or $/hour for spend-based types. */
  amount: number;
  upfrontCost: number;
  /** Over the lookback, per month of 730 h. */
  monthlyCoveredOndemand: number;
  monthlyCloudCost: number;
  monthlyPremium: number;
  monthlyCost: number;
  monthlyGrossSavings: number;
  monthlyNetSavings: number;
  expectedCoverage: number;
  expectedUtilization: number;
}


/** A group's usage sorted ascending with prefix sums: Σ min(u, a) in O(log T). */
export class UsageProfile {
  readonly sorted: Float64Array;
  readonly prefix: Float64Array;
  readonly total: number;
  readonly eligibleTotal: number;
  constructor(uncovered: Float64Array, eligibleTotal: number) {
    this.sorted = Float64Array.from(uncovered).sort();
    this.prefix = new Float64Array(this.sorted.length + 1);
    for (let i = 0; i < this.sorted.length; i++) this.prefix[i + 1] = this.prefix[i]! + this.sorted[i]!;
    this.total = this.prefix[this.sorted.length]!;
    this.eligibleTotal = eligibleTotal;
  }
  get hours(): number {
    return this.sorted.length;
  }
  /** Σ_h min(u_h, a). */
  coveredUnits(a: number): number {
    const s = this.sorted;
    let lo = 0;
    let hi = s.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (s[mid]! < a) lo = mid + 1;
      else hi = mid;
    }
    return this.prefix[lo]! + a * (s.length - lo);
  }
}

/** Uncovered usage per hour: usage minus active coverage, never negative. */
export function uncoveredUsage(g: PlanningGroup): Float64Array {
  const out = new Float64Array(g.usage.length);
  const cov = g.coverage ?? 0;
  for (let h = 0; h < g.usage.length; h++) {
    const c = typeof cov === "number" ? cov : cov[h] ?? 0;
    const v = g.usage[h]! - c;
    out[h] = v > 0 ? v : 0;
  }
  return out;
}

/** Gross discount of a quote: the usage quantile at which one more unit stops paying for itself. */
export function discountOf(q: UnitQuote): number {
  return grossDiscount(q.effectiveHourlyRate, q.ondemandHourlyRate);
}

/** The financials of buying `units` of `q` against `profile`, per month of 730 hours. */
export function evaluateUnits(g: { key: string; region?: string | null; instanceType?: string | null }, profile: UsageProfile, q: UnitQuote, units: number): SizedOption {
  const T = profile.hours || 1;
  const perMonth = HOURS_PER_MONTH / T;
  const coveredUnits = units > 0 ? profile.coveredUnits(units) : 0;
  const monthlyCoveredOndemand = q.ondemandHourlyRate * coveredUnits * perMonth;
  const monthlyCloudCost = q.effectiveHourlyRate * units * HOURS_PER_MONTH;
  const { gross, premium, net, total } = commitmentFinancials(monthlyCoveredOndemand, monthlyCloudCost, q.feeRate);
  return {
    groupKey: g.key,
    region: g.region ?? null,
    instanceType: g.instanceType ?? null,
    quote: q,
    units,
    amount: q.spendBased ? units * q.effectiveHourlyRate : units,
    upfrontCost: q.upfrontPerUnit * units,
    monthlyCoveredOndemand,
    monthlyCloudCost,
    monthlyPremium: premium,
    monthlyCost: total,
    monthlyGrossSavings: gross,
    monthlyNetSavings: net,
    expectedCoverage: profile.eligibleTotal > 0 ? coveredUnits / profile.eligibleTotal : 0,
    expectedUtilization: units > 0 ? coveredUnits / (units * T) : 0,
  };
}

/**
 * The savings-maximizing number of units of `q` (the usage quantile at the discount rate).
 * Resource commitments come in whole units: the concave optimum is at the floor or ceiling.
 */
export function optimalUnits(profile: UsageProfile, q: UnitQuote): number {
  const T = profile.hours;
  const d = discountOf(q);
  if (T === 0 || d <= 0) return 0;
  const k = Math.ceil(d * T - 1e-9);
  const a = k <= 0 ? 0 : profile.sorted[Math.min(k, T) - 1]!;
  if (q.spendBased || Number.isInteger(a)) return a;
  const lo = Math.floor(a);
  const hi = lo + 1;
  const gain = (x: number) => q.ondemandHourlyRate * profile.coveredUnits(x) - q.effectiveHourlyRate * x * T;
  return gain(hi) > gain(lo) ? hi : lo;
}

/**
 * What-if knobs of sizing (none by default: a stored plan is sized without them).
 * `coverageTarget` (0–1): at most this share of each group's eligible usage ends up covered,
 * active commitments included; each option's savings-maximizing amount is capped at it (gross
 * savings are concave in the amount, so the cap is the best amount below the optimum).
 */
export interface SizingOptions {
  coverageTarget?: number;
}

/**
 * The largest amount of `q` that keeps the group's coverage within `target`: the new commitment
 * may cover target·eligible − (already covered) unit-hours; Σ min(u, a) is inverted on the
 * sorted usage. Whole units for resource types (rounded down). Infinity: no cap.
 */
export function unitsWithinCoverage(profile: UsageProfile, q: UnitQuote, target: number | undefined): number {
  if (target === undefined) return Infinity;
  const allowed = target * profile.eligibleTotal - (profile.eligibleTotal - profile.total);
  if (allowed >= profile.total - 1e-9) return Infinity;
  if (allowed <= 0) return 0;
  const s = profile.sorted;
  const n = s.length;
  // The first sorted value whose coverage exceeds the allowance: the cap lies at or below it,
  // where Σ min(u, a) = prefix[i] + a·(n − i).
  let lo = 0;
  let hi = n - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (profile.coveredUnits(s[mid]!) > allowed) hi = mid;
    else lo = mid + 1;
  }
  const a = Math.max(0, (allowed - profile.prefix[lo]!) / (n - lo));
  return q.spendBased ? a : Math.floor(a + 1e-9);
}

/** Best option of one group among `quotes` (highest monthly net savings), or null if none saves. */
export function bestOption(g: PlanningGroup, profile: UsageProfile, quotes: UnitQuote[], opts: SizingOptions = {}): SizedOption | null {
  let best: SizedOption | null = null;
  for (const q of quotes) {
    const units = Math.min(optimalUnits(profile, q), unitsWithinCoverage(profile, q, opts.coverageTarget));
    if (units <= 0) continue;
    const o = evaluateUnits(g, profile, q, units);
    if (o.monthlyNetSavings > 1e-9 && (!best || o.monthlyNetSavings > best.monthlyNetSavings)) best = o;
  }
  return best;
}

/** Largest purchasable units of `q` whose upfront fits `budget` (whole units for resource types). */
function unitsWithinBudget(q: UnitQuote, budget: number, max: number): number {
  if (q.upfrontPerUnit <= 0) return max;
  const u = budget / q.upfrontPerUnit;
  const capped = Math.min(max, q.spendBased ? u : Math.floor(u + 1e-9));
  return capped > 0 ? capped : 0;
}

/**
 * Why sizing bought nothing for a group (surfaced by the planning tools as a plan's
 * no-purchase reasons, lib/planning/reasons.ts):
 * - `no_eligible_usage`: the group's hours hold no usage at all;
 * - `no_discount`: every allowed option costs as much as on-demand or more;
 * - `covered_by_active_commitments`: the usage alone would buy, but what active commitments leave uncovered does not;
 * - `usage_below_one_unit`: the steady usage is below one whole unit of a resource commitment;
 * - `usage_too_intermittent`: usage runs in too few hours for a commitment to pay for itself;
 * - `upfront_budget_exhausted`: only upfront options save, and the upfront budget went to groups saving more per dollar.
 */
export type SizingSkipReason = "no_eligible_usage" | "no_discount" | "covered_by_active_commitments" | "usage_below_one_unit" | "usage_too_intermittent" | "upfront_budget_exhausted";

export interface SkippedGroup {
  groupKey: string;
  reason: SizingSkipReason;
  /** Share of the group's eligible usage already covered by active commitments (0-1). */
  coveredShare: number;
  /** The best gross discount among the group's allowed options (0-1; ≤ 0: none cheaper than on-demand). */
  bestDiscount: number;
}

export interface SizingResult {
  items: SizedOption[];
  totalUpfront: number;
  monthlyNetSavings: number;
  monthlyCost: number;
  /**
   * The groups with allowed options that got no item, and why (a group whose only obstacle is
   * the coverage target of SizingOptions is not listed: it is held back on purpose).
   */
  skipped: SkippedGroup[];
  /** The sized groups' eligible usage at on-demand prices, per month of 730 h (over the lookback). */
  eligibleMonthlyOndemand: number;
  /** The part of it active commitments already cover. */
  activeCoveredMonthlyOndemand: number;
}

/** The (continuous) usage quantile at a quote's discount level: what optimalUnits rounds to whole units. */
function quantileAtDiscount(profile: UsageProfile, q: UnitQuote): number {
  const T = profile.hours;
  const d = discountOf(q);
  if (T === 0 || d <= 0) return 0;
  const k = Math.ceil(d * T - 1e-9);
  return k <= 0 ? 0 : profile.sorted[Math.min(k, T) - 1]!;
}

/** Why bestOption found nothing for a group (see SizingSkipReason), with the same rules it applies. */
function whyNothing(g: PlanningGroup, profile: UsageProfile): SizingSkipReason {
  if (!(profile.eligibleTotal > 0)) return "no_eligible_usage";
  if (g.quotes.every((q) => discountOf(q) <= 0)) return "no_discount";
  const covered = profile.total < profile.eligibleTotal - 1e-9;
  // The usage without the active commitments' coverage: had it bought, the coverage is why not.
  const raw = covered ? new UsageProfile(g.usage, profile.eligibleTotal) : profile;
  if (covered && bestOption(g, raw, g.quotes)) return "covered_by_active_commitments";
  if (g.quotes.some((q) => !q.spendBased && discountOf(q) > 0 && quantileAtDiscount(raw, q) > 0 && optimalUnits(raw, q) === 0)) return "usage_below_one_unit";
  return "usage_too_intermittent";
}

function skippedGroup(g: PlanningGroup, profile: UsageProfile, reason: SizingSkipReason): SkippedGroup {
  const eligible = profile.eligibleTotal;
  return {
    groupKey: g.key,
    reason,
    coveredShare: eligible > 0 ? Math.min(1, Math.max(0, (eligible - profile.total) / eligible)) : 0,
    bestDiscount: g.quotes.reduce((m, q) => Math.max(m, discountOf(q)), -Infinity),
  };
}

/**
 * Sizes every group, then fits the upfront budget: each group's best no-upfront choice is the
 * fallback, and upgrades to an upfront option are taken by net monthly savings gained per
 * upfront dollar, the last one shrunk to the remaining budget when that still beats the fallback.
 */
export function sizeCommitments(groups: PlanningGroup[], maxUpfrontCost: number, opts: SizingOptions = {}): SizingResult {
  const chosen: SizedOption[] = [];
  const skipped: SkippedGroup[] = [];
  const upgrades: { base: SizedOption | null; best: SizedOption; profile: UsageProfile; group: PlanningGroup; ratio: number }[] = [];
  let eligibleMonthlyOndemand = 0;
  let activeCoveredMonthlyOndemand = 0;
  for (const g of groups) {
    if (!g.quotes.length) continue;
    const uncovered = uncoveredUsage(g);
    let eligible = 0;
    for (let h = 0; h < g.usage.length; h++) eligible += g.usage[h]!;
    const profile = new UsageProfile(uncovered, eligible);
    const odPerMonth = (g.quotes[0]!.ondemandHourlyRate * HOURS_PER_MONTH) / (profile.hours || 1);
    eligibleMonthlyOndemand += eligible * odPerMonth;
    activeCoveredMonthlyOndemand += Math.max(0, eligible - profile.total) * odPerMonth;
    const best = bestOption(g, profile, g.quotes, opts);
    if (!best) {
      if (opts.coverageTarget === undefined || !bestOption(g, profile, g.quotes)) skipped.push(skippedGroup(g, profile, whyNothing(g, profile)));
      continue;
    }
    if (best.upfrontCost <= 0) {
      chosen.push(best);
      continue;
    }
    const base = bestOption(g, profile, g.quotes.filter((q) => q.upfrontPerUnit <= 0), opts);
    const gain = best.monthlyNetSavings - (base?.monthlyNetSavings ?? 0);
    upgrades.push({ base, best, profile, group: g, ratio: gain / best.upfrontCost });
  }
  upgrades.sort((a, b) => b.ratio - a.ratio || a.best.groupKey.localeCompare(b.best.groupKey));
  let remaining = Math.max(0, maxUpfrontCost);
  for (const u of upgrades) {
    if (u.best.upfrontCost <= remaining + 1e-9) {
      chosen.push(u.best);
      remaining -= u.best.upfrontCost;
      continue;
    }
    // Budget left for part of it: buy what fits of the upfront option and cover the usage
    // above it with the best no-upfront option, sized on that residual usage.
    const units = unitsWithinBudget(u.best.quote, remaining, u.best.units);
    const partial = units > 0 ? evaluateUnits(u.group, u.profile, u.best.quote, units) : null;
    let topUp: SizedOption | null = null;
    if (partial) {
      const residual = new Float64Array(u.profile.sorted.length);
      for (let h = 0; h < residual.length; h++) residual[h] = Math.max(0, u.profile.sorted[h]! - units);
      const rp = new UsageProfile(residual, u.profile.eligibleTotal);
      topUp = bestOption(u.group, rp, u.group.quotes.filter((q) => q.upfrontPerUnit <= 0), opts);
    }
    const mixed = (partial?.monthlyNetSavings ?? 0) + (topUp?.monthlyNetSavings ?? 0);
    if (partial && mixed > (u.base?.monthlyNetSavings ?? 0) && partial.upfrontCost <= remaining + 1e-9) {
      chosen.push(partial);
      if (topUp) chosen.push(topUp);
      remaining -= partial.upfrontCost;
    } else if (u.base) chosen.push(u.base);
    else skipped.push(skippedGroup(u.group, u.profile, "upfront_budget_exhausted"));
  }
  chosen.sort((a, b) => a.groupKey.localeCompare(b.groupKey) || b.upfrontCost - a.upfrontCost);
  let totalUpfront = 0;
  let monthlyNetSavings = 0;
  let monthlyCost = 0;
  for (const c of chosen) {
    totalUpfront += c.upfrontCost;
    monthlyNetSavings += c.monthlyNetSavings;
    monthlyCost += c.monthlyCost;
  }
  skipped.sort((a, b) => a.groupKey.localeCompare(b.groupKey));
  return { items: chosen, totalUpfront, monthlyNetSavings, monthlyCost, skipped, eligibleMonthlyOndemand, activeCoveredMonthlyOndemand };
}

/**
 * Plan generation (DESIGN §9): the segment's hourly usage over the lookback, minus the coverage
 * of active commitments (those in renewal_commitment_ids count as expiring), sized per group
 * and contract spec by lib/planning/optimize.ts with prices from lib/pricing, then fitted to
 * the upfront budget. Plans and their items are stored with a status.
 */
import { and, eq } from "drizzle-orm";
import type { DbOrTx } from "../db/index.ts";
import { commitmentPlanItems, commitmentPlans, commitments } from "../db/schema/index.ts";
import type { Segment } from "../segments/service.ts";
import type { TemplateConfiguration } from "../templates/service.ts";
import { SPEND_BASED_TYPES, type ContractSpec, type Provider } from "../templates/enums.ts";
import { sizeCommitments, type PlanningGroup, type SizingOptions, type SizingResult, type SizingSkipReason, type UnitQuote } from "./optimize.ts";
import { groupQuotes } from "./quotes.ts";
import { familyOf, segmentHourlyUsage } from "./usage.ts";
import { queryRows } from "../billing/sql.ts";

const HOUR = 3_600_000;

/**
 * Why a usage group got no item: sizing's reasons (lib/planning/optimize.ts SizingSkipReason)
 * plus those decided before sizing: `no_catalog_offer` (the catalog has no priced SKU with a
 * commitment offer for the group's instance family and region) and `no_offer_for_contract_specs`
 * (it has offers, none of the template's contract specs).
 */
export type NoPurchaseReason = SizingSkipReason | "no_catalog_offer" | "no_offer_for_contract_specs";

export interface UnplannedGroup {
  groupKey: string;
  region: string;
  instanceFamily: string;
  /** The family's reference SKU (null when the catalog has none). */
  instanceType: string | null;
  reason: NoPurchaseReason;
  /** `no_offer_for_contract_specs`: the specs the catalog does offer for the reference SKU. */
  offeredSpecs: string[] | null;
  /** Sizing reasons: the share of the usage active commitments cover, the best allowed discount. */
  coveredShare: number | null;
  bestDiscount: number | null;
}

export interface GeneratedPlan {
  provider: Provider;
  usageFrom: Date;
  usageTo: Date;
  /** Usage groups with at least one allowed option (what sizing analysed). */
  groupCount: number;
  /** Usage groups (region × instance family) with eligible usage in the window. */
  usageGroupCount: number;
  /** The end of the provider's latest billed usage hour (null: none in the last two months). */
  latestUsageAt: Date | null;
  /** Every usage group without an item, and why (by group key). */
  unplanned: UnplannedGroup[];
  sizing: SizingResult;
}

interface ActiveCommitment {
  commitmentType: string;
  contractTerm: string | null;
  paymentOption: string | null;
  region: string | null;
  instanceType: string | null;
  instanceFamily: string | null;
  amount: number;
}

async function activeCommitments(db: DbOrTx, orgId: string, provider: Provider, now: Date, renewing: Set<string>): Promise<ActiveCommitment[]> {
  const rows = await db.select().from(commitments).where(and(eq(commitments.orgId, orgId), eq(commitments.provider, provider)));
  return rows
    .filter((c) => !renewing.has(c.id) && c.providerState !== "retired" && (!c.startsAt || c.startsAt <= now) && (!c.endsAt || c.endsAt > now) && Number(c.amount ?? 0) > 0)
    .map((c) => ({ commitmentType: c.commitmentType, contractTerm: c.contractTerm, paymentOption: c.paymentOption, region: c.region, instanceType: c.instanceType, instanceFamily: c.instanceFamily, amount: Number(c.amount) }));
}

async function latestUsageEnd(db: DbOrTx, orgId: string, provider: Provider, now: Date): Promise<Date | null> {
  const [r] = await queryRows<{ e: string | Date | null }>(
    db,
    // Only the last two months count: usage that stopped earlier is no reason to size on stale data.
    `SELECT max(charge_period_end) AS e FROM billing_line_items
     WHERE org_id = $1::uuid AND billing_period >= (date_trunc('month', $3::timestamptz) - interval '2 months')::date
       AND provider = $2 AND charge_category = 'Usage' AND charge_period_start < $3::timestamptz`,
    [orgId, provider, now.toISOString()],
  );
  return r?.e ? new Date(r.e) : null;
}

/** `opts`: what-if knobs of sizing (lib/planning/preview.ts); stored plans are generated without them. */
/**
 * What one plan generation reads from the database, kept by a caller that sizes the same
 * template several ways (a preview of up to 10 settings reads the usage once, not per setting).
 */
export interface PlanInputs {
  usage?: Promise<{ usageFrom: Date; usageTo: Date; latest: Date | null; usage: Awaited<ReturnType<typeof segmentHourlyUsage>>; active: Awaited<ReturnType<typeof activeCommitments>> }>;
}

export async function generatePlan(db: DbOrTx, orgId: string, segment: Segment, config: TemplateConfiguration, now: Date, opts: SizingOptions = {}, inputs: PlanInputs = {}): Promise<GeneratedPlan> {
  // Billing data lands hours or days late: the window ends at the last hour with usage, so
  // the not-yet-billed hours do not read as idle ones.
  const provider = segment.provider;
  inputs.usage ??= (async () => {
    const latest = await latestUsageEnd(db, orgId, provider, now);
    const usageTo = new Date(Math.floor(Math.min(now.getTime(), latest?.getTime() ?? now.getTime()) / HOUR) * HOUR);
    const usageFrom = new Date(usageTo.getTime() - config.lookback_days * 24 * HOUR);
    const usage = await segmentHourlyUsage(db, orgId, { provider, from: usageFrom, to: usageTo, filters: segment.filters, resourceIds: config.resource_ids });
    const active = await activeCommitments(db, orgId, provider, now, new Set(config.renewal_commitment_ids.map((x) => x.toLowerCase())));
    return { latest, usageFrom, usageTo, usage, active };
  })();
  const { latest, usageFrom, usageTo, usage, active } = await inputs.usage;
  // Quotes for the template's specs (what may be bought) plus those of the active spend-based
  // commitments (to value what they already cover at their own discount).
  const ownSpecs = active
    .filter((c) => SPEND_BASED_TYPES.has(c.commitmentType) && c.contractTerm && c.paymentOption)
    .map((c) => ({ commitment_type: c.commitmentType, contract_term: c.contractTerm, payment_option: c.paymentOption }) as ContractSpec);
  const allowed = new Set(config.contract_specs.map((c) => `${c.commitment_type}/${c.contract_term}/${c.payment_option}`));
  const refs = await groupQuotes(db, orgId, provider, usage, [...config.contract_specs, ...ownSpecs]);
  const buyable = (q: UnitQuote) => allowed.has(`${q.commitmentType}/${q.contractTerm}/${q.paymentOption}`);

  const groups: (PlanningGroup & { meanCost: number; refOd: number; allQuotes: UnitQuote[] })[] = [];
  const unplanned: UnplannedGroup[] = [];
  for (const u of usage) {
    const ref = refs.get(u.key);
    const quotes = ref?.quotes.filter(buyable) ?? [];
    if (!ref || !quotes.length) {
      unplanned.push({
        groupKey: u.key,
        region: u.region,
        instanceFamily: u.instanceFamily,
        instanceType: ref?.instanceType ?? null,
        reason: ref ? "no_offer_for_contract_specs" : "no_catalog_offer",
        offeredSpecs: ref ? ref.offeredSpecs : null,
        coveredShare: null,
        bestDiscount: null,
      });
      continue;
    }
    const units = new Float64Array(u.hourlyCost.length);
    let sum = 0;
    for (let h = 0; h < units.length; h++) {
      units[h] = u.hourlyCost[h]! / ref.ondemandHourlyRate;
      sum += u.hourlyCost[h]!;
    }
    // Resource commitments of this family and region cover their normalized size.
    let coverage = 0;
    for (const c of active) {
      if (SPEND_BASED_TYPES.has(c.commitmentType)) continue;
      const fam = c.instanceFamily ?? (c.instanceType ? familyOf(provider, c.instanceType) : null);
      if (fam !== u.instanceFamily || (c.region && c.region !== u.region)) continue;
      const rate = (c.instanceType && ref.ratesByInstanceType.get(c.instanceType)) || ref.ondemandHourlyRate;
      coverage += (c.amount * rate) / ref.ondemandHourlyRate;
    }
    groups.push({ key: u.key, region: u.region, instanceType: ref.instanceType, usage: units, coverage, quotes, allQuotes: ref.quotes, meanCost: sum / Math.max(1, units.length), refOd: ref.ondemandHourlyRate });
  }
  // Spend-based commitments ($/hour) float across groups: their on-demand equivalent
  // (amount / (1 − discount)) is spread over the groups they may cover by average usage.
  for (const c of active.filter((x) => SPEND_BASED_TYPES.has(x.commitmentType))) {
    const eligible = groups.filter((g) => !c.region || g.region === c.region);
    const total = eligible.reduce((a, g) => a + g.meanCost, 0);
    if (total <= 0) continue;
    for (const g of eligible) {
      // The commitment's own rate (same type, term and payment), else its type's, else any
      // spend-based rate; with none at all its $/hour count at face value (never over-stated).
      const q =
        g.allQuotes.find((x) => x.commitmentType === c.commitmentType && x.contractTerm === c.contractTerm && x.paymentOption === c.paymentOption) ??
        g.allQuotes.find((x) => x.commitmentType === c.commitmentType) ??
        g.allQuotes.find((x) => x.spendBased);
      const factor = q && q.ondemandHourlyRate > 0 ? q.effectiveHourlyRate / q.ondemandHourlyRate : 1;
      const odDollars = (c.amount / (factor > 0 ? factor : 1)) * (g.meanCost / total);
      g.coverage = (g.coverage as number) + odDollars / g.refOd;
    }
  }
  const sizing = sizeCommitments(groups, config.max_upfront_cost, opts);
  const byKey = new Map(groups.map((g) => [g.key, g]));
  const usageByKey = new Map(usage.map((u) => [u.key, u]));
  for (const k of sizing.skipped) {
    const u = usageByKey.get(k.groupKey)!;
    unplanned.push({
      groupKey: k.groupKey,
      region: u.region,
      instanceFamily: u.instanceFamily,
      instanceType: byKey.get(k.groupKey)?.instanceType ?? null,
      reason: k.reason,
      offeredSpecs: null,
      coveredShare: k.coveredShare,
      bestDiscount: k.bestDiscount,
    });
  }
  unplanned.sort((a, b) => a.groupKey.localeCompare(b.groupKey));
  return { provider, usageFrom, usageTo, groupCount: groups.length, usageGroupCount: usage.length, latestUsageAt: latest, unplanned, sizing };
}

export type PlanStatus = "generated" | "purchased" | "not_purchased";

/** Stores a plan and its items (call inside the caller's transaction). */
export async function savePlan(
  tx: DbOrTx,
  p: {
    orgId: string;
    segmentId: string | null;
    templateId: string | null;
    executionDate: string | null;
    status: PlanStatus;
    statusReason: string | null;
    lookbackDays: number;
    maxUpfrontCost: number;
    costEstimateId?: string | null;
    plan: GeneratedPlan;
  },
): Promise<string> {
  const s = p.plan.sizing;
  const [row] = await tx
    .insert(commitmentPlans)
    .values({
      orgId: p.orgId,
      provider: p.plan.provider,
      segmentId: p.segmentId,
      templateId: p.templateId,
      costEstimateId: p.costEstimateId ?? null,
      executionDate: p.executionDate,
      status: p.status,
      statusReason: p.statusReason,
      lookbackDays: p.lookbackDays,
      usageFrom: p.plan.usageFrom,
      usageTo: p.plan.usageTo,
      totalUpfrontCost: String(s.totalUpfront),
      monthlyCost: String(s.monthlyCost),
      monthlyNetSavings: String(s.monthlyNetSavings),
      maxUpfrontCost: String(p.maxUpfrontCost),
    })
    .returning({ id: commitmentPlans.id });
  if (s.items.length) {
    await tx.insert(commitmentPlanItems).values(
      s.items.map((i) => ({
        planId: row!.id,
        orgId: p.orgId,
        groupKey: i.groupKey,
        offerId: i.quote.offerId,
        leaseMenuItemId: i.quote.leaseMenuItemId ?? null,
        commitmentType: i.quote.commitmentType,
        contractTerm: i.quote.contractTerm,
        paymentOption: i.quote.paymentOption,
        region: i.region,
        instanceType: i.instanceType,
        units: String(i.units),
        amount: String(i.amount),
        upfrontCost: String(i.upfrontCost),
        monthlyCost: String(i.monthlyCost),
        monthlyNetSavings: String(i.monthlyNetSavings),
        expectedCoverage: String(Math.min(1, i.expectedCoverage)),
        expectedUtilization: String(Math.min(1, i.expectedUtilization)),
        durationSeconds: i.quote.durationSeconds,
        feeRate: String(i.quote.feeRate),
        lockInDays: i.quote.lockInDays,
      })),
    );
  }
  return row!.id;
}

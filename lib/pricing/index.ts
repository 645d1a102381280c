/**
 * The money model (DESIGN §7): the only place pricing formulas live. Pure: no database, no
 * request context. The REST estimates, the MCP tools and plan generation all call it; the
 * inputs come from `loadPricingInputs` (lib/catalog/pricingInputs.ts) or are built by hand.
 *
 * Shapes returned are the API's (snake_case CommitmentOption and pricing line entries), at full
 * precision: responses show them through ./display.ts (money at the edge, DESIGN §12).
 */

export const HOURS_PER_MONTH = 730;
/** Seconds in an average month (730 h): amortizes an upfront over its duration. */
export const SECONDS_PER_MONTH = 2_628_000;

/**
 * `v` rounded to `decimals`, half away from zero, on the decimal the double stands for: 0.145 →
 * 0.15 and -0.125 → -0.13, as PostgreSQL's ROUND rounds the reports' numeric sums (a bare
 * `Math.round(v * 100)` sees 0.145 as 14.4999… and rounds -0.125 toward zero). Never -0.
 */
export function roundDecimal(v: number, decimals: number): number {
  const scale = 10 ** decimals;
  const scaled = Number((Math.abs(v) * scale).toPrecision(15));
  return (Math.sign(v) * Math.round(scaled)) / scale + 0;
}

/** Money at the edge (DESIGN §12): rounded to cents. */
export const cents = (v: number | null | undefined): number => roundDecimal(v ?? 0, 2);
export const centsOrNull = (v: number | null | undefined): number | null => (v === null || v === undefined ? null : cents(v));

/** The share of a spend commitment's term paid at purchase: all upfront all of it, partial upfront half (AWS savings plans), no upfront none. */
export function spendUpfrontShare(paymentOption: string): number {
  return paymentOption === "all_upfront" ? 1 : paymentOption === "partial_upfront" ? 0.5 : 0;
}

/** A spend commitment of `hourly` $/h over `hours`, split into what is paid upfront and per hour, in exact decimals (catalog prices). */
export function spendCommitmentSplit(hourly: number, hours: number, paymentOption: string): { upfront: number; hourly: number } {
  const share = spendUpfrontShare(paymentOption);
  return { upfront: exactSum([[hourly, hours * share]]), hourly: exactSum([[hourly, 1 - share]]) };
}

/**
 * What a spend commitment of `hourly` $/h costs over `seconds`, as an order shows it: the upfront
 * in cents, the hourly part to 6 decimals (spendCommitmentSplit, rounded).
 */
export function spendCommitmentPayments(hourly: number, seconds: number, paymentOption: string): { upfront: number; hourly: number } {
  const split = spendCommitmentSplit(hourly, seconds / 3600, paymentOption);
  return { upfront: cents(split.upfront), hourly: paymentOption === "partial_upfront" ? roundDecimal(split.hourly, 6) : split.hourly };
}

export type { Provider } from "../providers.ts";
import { exactSum } from "./decimal.ts";
import type { Provider } from "../providers.ts";
import { isStale, oldestDay, type Freshness } from "../catalog/freshness.ts";
export type { Freshness } from "../catalog/freshness.ts";
export type QuantityBasis = "resource_count" | "usage_hours" | "usage_quantity";
export const QUANTITY_BASES: QuantityBasis[] = ["resource_count", "usage_hours", "usage_quantity"];

export const LINE_STATUSES = ["ok", "selection_unavailable", "sku_unavailable", "no_commitment_options"] as const;
export type LineStatus = (typeof LINE_STATUSES)[number];

/** The SKU as the money model needs it. */
export interface PricingSku {
  id: string;
  orgId: string;
  provider: Provider;
  providerSkuId: string;
  displayName: string;
  usageUnit: string;
  isAvailable: boolean;
}

/** On-demand tier: `unitPrice` per usage unit for the usage in [startQuantity, endQuantity). */
export interface PriceTier {
  startQuantity: number;
  endQuantity: number | null;
  unitPrice: number;
}

export interface PricingOffer {
  id: string;
  orgId: string;
  provider: Provider;
  commitmentType: string;
  contractTerm: string;
  paymentOption: string;
  offeringClass: string | null;
  planType: string | null;
  durationSeconds: number;
  region: string | null;
  instanceType: string | null;
  instanceFamily: string | null;
  productDescription: string | null;
  displayName: string;
  guaranteedDisplayName: string | null;
  isFlexible: boolean;
  /** Service premium as a fraction of positive gross savings (insured offers; 0 otherwise). */
  feeRate: number;
  /** Days the customer is bound: the term for native offers, 30 / 365 for `_gris`. */
  lockInDays: number;
  isInsured: boolean;
}

/** One offer's price for one SKU, per unit (one instance running all the time). */
export interface LeaseRate {
  leaseMenuItemId: string;
  offer: PricingOffer;
  /** Recurring charge per instance-hour covered. */
  recurringHourlyRate: number;
  /** One-time charge per instance for the whole duration. */
  upfrontCost: number;
}

/** Everything needed to price lines of one SKU. Only available offers/leases are included. */
export interface SkuPricingInputs {
  sku: PricingSku;
  tiers: PriceTier[];
  leases: LeaseRate[];
  /**
   * The oldest day (YYYY-MM-DD) the SKU's price and its leases' prices were confirmed current
   * (lib/catalog/freshness.ts); null when none is known (e.g. inputs built by hand).
   */
  pricesAsOf: string | null;
}

/** The six fields that identify a chosen CommitmentOption (rule 10). */
export interface CommitmentSelection {
  commitment_type: string;
  contract_term: string;
  payment_option: string;
  lease_menu_item_id: string;
  offer_id: string;
  offer_org_id: string;
}

export interface PricingLine {
  id: string;
  catalogSkuId: string;
  quantity: number;
  quantityBasis: QuantityBasis;
  isEnabled: boolean;
  selected: CommitmentSelection | null;
}

export interface PricingOptions {
  /** Keep only the options of each SKU's most flexible commitment type (rule 6). */
  onlyMostFlexibleCommitmentType?: boolean;
  /** Include the per-line `commitment_options` grid (rule 5). */
  includeOptions?: boolean;
  /** The clock and PRICE_STALE_DAYS `priceEstimate` decides `stale` with (without it: not stale). */
  freshness?: Freshness;
}

export interface CommitmentOption {
  offer_id: string;
  offer_org_id: string;
  lease_menu_item_id: string;
  selected_amount: number;
  commitment_type: string;
  contract_term: string;
  payment_option: string;
  discount_rate: number;
  breakeven_days: number;
  commitment_upfront_cost: number;
  offer: {
    id: string;
    provider: Provider;
    type: string;
    region: string | null;
    duration_seconds: number;
    instance_type: string | null;
    instance_family: string | null;
    offering_class: string | null;
    payment_option: string;
    plan_type: string | null;
    product_description: string | null;
    display_name: string;
    guaranteed_display_name: string | null;
    is_flexible: boolean;
  };
  commitment_financials_monthly_rate: {
    commitment_cost: {
      total: number;
      breakdown: {
        cloud_provider_cost: { total: number; breakdown: { recurring: number; amortized_upfront: number } };
        service_premium: number;
      };
    };
    commitment_savings: { net: number; gross: number };
    covered_ondemand_cost: number;
  };
}

export interface LinePricing {
  line_item_id: string;
  status: LineStatus;
  detail: string;
  /** The oldest day its SKU's and commitment options' prices were confirmed current; null when the line has no price. */
  prices_as_of: string | null;
  ondemand_monthly_cost: number;
  /** What the line costs per month: the matched option's commitment cost, else on-demand. */
  estimated_monthly_cost: number;
  monthly_net_savings: number;
  matched_commitment_option: CommitmentOption | null;
  commitment_options?: CommitmentOption[];
}

export interface PricingTotals {
  ondemand_monthly_cost: number;
  estimated_monthly_cost: number;
  monthly_net_savings: number;
  commitment_upfront_cost: number;
}

export interface EstimatePricing {
  line_items: LinePricing[];
  totals: PricingTotals;
  /** The oldest `prices_as_of` of the lines; null when no line has a price. */
  prices_as_of: string | null;
  /** prices_as_of is more than PRICE_STALE_DAYS days old. */
  stale: boolean;
}

/** Usage of a line in the SKU's usage unit (hours for hour-priced SKUs). */
export function lineUsage(quantity: number, basis: QuantityBasis): number {
  return basis === "resource_count" ? quantity * HOURS_PER_MONTH : quantity;
}

/** On-demand monthly cost of `usage` units priced through `tiers` (tiers apply within a line). */
export function ondemandCost(tiers: PriceTier[], usage: number): number {
  let cost = 0;
  for (const t of tiers) {
    const end = t.endQuantity ?? Infinity;
    const inTier = Math.min(usage, end) - t.startQuantity;
    if (inTier > 0) cost += inTier * t.unitPrice;
  }
  return cost;
}

/** The on-demand hourly price of one instance (the first tier's price; tiers of compute SKUs are flat). */
export function ondemandHourlyRate(tiers: PriceTier[]): number {
  return tiers.length ? ondemandCost(tiers, HOURS_PER_MONTH) / HOURS_PER_MONTH : 0;
}

/** Savings plans and spend CUDs commit to $/hour; the others to a number of resources. */
export function commitsToSpend(commitmentType: string): boolean {
  return /savings_plan$/.test(commitmentType) || commitmentType === "spend_cud";
}

/**
 * Flexibility rank (lower = more flexible), DESIGN §5: aws compute SP > EC2 instance SP >
 * database SP > RI convertible > RI standard; azure savings plan > reservation; gcp spend CUD >
 * resource CUD.
 */
export function flexibilityRank(commitmentType: string, offeringClass: string | null): number {
  switch (commitmentType) {
    case "compute_savings_plan":
    case "savings_plan":
    case "spend_cud":
      return 0;
    case "ec2_instance_savings_plan":
      return 1;
    case "database_savings_plan":
      return 2;
    case "reserved_instance":
      return offeringClass === "convertible" ? 3 : 4;
    case "reservation":
    case "resource_cud":
      return 4;
    default:
      return 9;
  }
}

const TERM_ORDER: Record<string, number> = { thirty_day_gris: 0, one_year_gris: 1, one_year: 2, three_year: 3 };
const PAYMENT_ORDER: Record<string, number> = { no_upfront: 0, partial_upfront: 1, all_upfront: 2 };

/**
 * Per-unit economics of one offer for one SKU, for plan generation: what one instance-hour of
 * coverage costs and saves at 100 % use.
 */
export interface OfferUnitEconomics {
  leaseMenuItemId: string;
  offerId: string;
  offerOrgId: string;
  commitmentType: string;
  contractTerm: string;
  paymentOption: string;
  recurringHourlyRate: number;
  upfrontCost: number;
  durationSeconds: number;
  lockInDays: number;
  feeRate: number;
  ondemandHourlyRate: number;
  /** recurring + upfront amortized per hour (the cloud provider's effective hourly rate). */
  effectiveHourlyRate: number;
  /** Net discount vs on-demand at full use, after the service premium. */
  discountRate: number;
}

export function offerUnitEconomics(inputs: SkuPricingInputs, lease: LeaseRate): OfferUnitEconomics {
  const od = ondemandHourlyRate(inputs.tiers);
  const o = evaluateOption(inputs, lease, 1, "resource_count");
  return {
    leaseMenuItemId: lease.leaseMenuItemId,
    offerId: lease.offer.id,
    offerOrgId: lease.offer.orgId,
    commitmentType: lease.offer.commitmentType,
    contractTerm: lease.offer.contractTerm,
    paymentOption: lease.offer.paymentOption,
    recurringHourlyRate: lease.recurringHourlyRate,
    upfrontCost: lease.upfrontCost,
    durationSeconds: lease.offer.durationSeconds,
    lockInDays: lease.offer.lockInDays,
    feeRate: lease.offer.feeRate,
    ondemandHourlyRate: od,
    effectiveHourlyRate: effectiveHourlyRate(lease),
    discountRate: o.discount_rate,
  };
}

export function effectiveHourlyRate(lease: LeaseRate): number {
  return amortizedHourlyRate(lease.recurringHourlyRate, lease.upfrontCost, lease.offer.durationSeconds);
}

/** Recurring $/hour plus the upfront spread evenly over the term: what a commitment costs per hour. */
export function amortizedHourlyRate(recurringHourly: number, upfront: number, durationSeconds: number): number {
  return recurringHourly + (durationSeconds > 0 ? (upfront * 3600) / durationSeconds : 0);
}

/**
 * DESIGN §7 from a month's covered on-demand cost and the provider's cost of the commitment:
 * gross savings, the insured product's premium (fee rate × positive gross), net savings and
 * the commitment's total monthly cost. Plan sizing uses it too.
 */
export function commitmentFinancials(coveredOndemand: number, cloudProviderCost: number, feeRate: number) {
  const gross = coveredOndemand - cloudProviderCost;
  const premium = feeRate * Math.max(gross, 0);
  return { gross, premium, net: gross - premium, total: cloudProviderCost + premium };
}

/** The gross discount of an hourly commitment rate against the on-demand rate (0 when unpriced). */
export function grossDiscount(effectiveHourly: number, ondemandHourly: number): number {
  return ondemandHourly > 0 ? 1 - effectiveHourly / ondemandHourly : 0;
}

/**
 * One CommitmentOption for a line of `quantity` (`basis`) of the SKU fully covered by `lease`.
 */
export function evaluateOption(inputs: SkuPricingInputs, lease: LeaseRate, quantity: number, basis: QuantityBasis): CommitmentOption {
  const usage = lineUsage(quantity, basis);
  const covered = ondemandCost(inputs.tiers, usage);
  // Instances running all month that the usage amounts to (commitments cover hour-priced usage).
  const units = usage / HOURS_PER_MONTH;
  const offer = lease.offer;
  const recurring = lease.recurringHourlyRate * HOURS_PER_MONTH * units;
  const amortizedUpfront = ((lease.upfrontCost * SECONDS_PER_MONTH) / offer.durationSeconds) * units;
  const cloudProviderCost = recurring + amortizedUpfront;
  const { gross, premium, net, total } = commitmentFinancials(covered, cloudProviderCost, offer.feeRate);
  const selectedAmount = commitsToSpend(offer.commitmentType) ? effectiveHourlyRate(lease) * units : units;
  return {
    offer_id: offer.id,
    offer_org_id: offer.orgId,
    lease_menu_item_id: lease.leaseMenuItemId,
    selected_amount: selectedAmount,
    commitment_type: offer.commitmentType,
    contract_term: offer.contractTerm,
    payment_option: offer.paymentOption,
    discount_rate: covered > 0 ? net / covered : 0,
    breakeven_days: covered > 0 ? (total / covered) * offer.lockInDays : 0,
    commitment_upfront_cost: lease.upfrontCost * units,
    offer: {
      id: offer.id,
      provider: offer.provider,
      type: offer.commitmentType,
      region: offer.region,
      duration_seconds: offer.durationSeconds,
      instance_type: offer.instanceType,
      instance_family: offer.instanceFamily,
      offering_class: offer.offeringClass,
      payment_option: offer.paymentOption,
      plan_type: offer.planType,
      product_description: offer.productDescription,
      display_name: offer.displayName,
      guaranteed_display_name: offer.guaranteedDisplayName,
      is_flexible: offer.isFlexible,
    },
    commitment_financials_monthly_rate: {
      commitment_cost: {
        total,
        breakdown: {
          cloud_provider_cost: { total: cloudProviderCost, breakdown: { recurring, amortized_upfront: amortizedUpfront } },
          service_premium: premium,
        },
      },
      commitment_savings: { net, gross },
      covered_ondemand_cost: covered,
    },
  };
}

/** The leases applicable to a SKU, limited to its most flexible commitment type when asked. */
export function applicableLeases(inputs: SkuPricingInputs, onlyMostFlexible = false): LeaseRate[] {
  let leases = inputs.leases;
  if (onlyMostFlexible && leases.length) {
    const best = Math.min(...leases.map((l) => flexibilityRank(l.offer.commitmentType, l.offer.offeringClass)));
    leases = leases.filter((l) => flexibilityRank(l.offer.commitmentType, l.offer.offeringClass) === best);
  }
  return [...leases].sort(
    (a, b) =>
      flexibilityRank(a.offer.commitmentType, a.offer.offeringClass) - flexibilityRank(b.offer.commitmentType, b.offer.offeringClass) ||
      a.offer.commitmentType.localeCompare(b.offer.commitmentType) ||
      (TERM_ORDER[a.offer.contractTerm] ?? 9) - (TERM_ORDER[b.offer.contractTerm] ?? 9) ||
      (PAYMENT_ORDER[a.offer.paymentOption] ?? 9) - (PAYMENT_ORDER[b.offer.paymentOption] ?? 9) ||
      a.leaseMenuItemId.localeCompare(b.leaseMenuItemId),
  );
}

/** Every applicable CommitmentOption of a line (its options grid). */
export function commitmentOptions(inputs: SkuPricingInputs, quantity: number, basis: QuantityBasis, opts: PricingOptions = {}): CommitmentOption[] {
  return applicableLeases(inputs, opts.onlyMostFlexibleCommitmentType).map((l) => evaluateOption(inputs, l, quantity, basis));
}

/**
 * The current lease a stored selection re-matches: the same lease menu item if still offered
 * for this SKU, else the same offer for this SKU, else null (`selection_unavailable`).
 * The re-match ignores only_most_flexible_commitment_type (that flag filters the grid only).
 */
export function rematchSelection(inputs: SkuPricingInputs, selection: CommitmentSelection): LeaseRate | null {
  return (
    inputs.leases.find((l) => l.leaseMenuItemId === selection.lease_menu_item_id) ??
    inputs.leases.find((l) => l.offer.id === selection.offer_id && l.offer.orgId === selection.offer_org_id) ??
    null
  );
}

/** For choosing an option (rule 10): the lease whose six identifying fields all equal `selection`. */
export function findExactOption(inputs: SkuPricingInputs | undefined, selection: CommitmentSelection): LeaseRate | null {
  if (!inputs || !inputs.sku.isAvailable) return null;
  return (
    inputs.leases.find(
      (l) =>
        l.leaseMenuItemId === selection.lease_menu_item_id &&
        l.offer.id === selection.offer_id &&
        l.offer.orgId === selection.offer_org_id &&
        l.offer.commitmentType === selection.commitment_type &&
        l.offer.contractTerm === selection.contract_term &&
        l.offer.paymentOption === selection.payment_option,
    ) ?? null
  );
}

/**
 * Prices one line. Depends only on the line and its SKU's inputs (rule 7); a disabled line is
 * priced the same (it is only left out of the totals).
 */
export function priceLine(inputs: SkuPricingInputs | undefined, line: PricingLine, opts: PricingOptions = {}): LinePricing {
  const base = { line_item_id: line.id };
  if (!inputs || !inputs.sku.isAvailable || inputs.tiers.length === 0) {
    const why = !inputs || !inputs.sku.isAvailable ? "The catalog SKU has been withdrawn by the provider; it costs nothing until replaced." : "The catalog has no on-demand list price for this SKU; it is not priced.";
    return {
      ...base,
      status: "sku_unavailable",
      detail: why,
      prices_as_of: null,
      ondemand_monthly_cost: 0,
      estimated_monthly_cost: 0,
      monthly_net_savings: 0,
      matched_commitment_option: null,
      ...(opts.includeOptions ? { commitment_options: [] } : {}),
    };
  }
  const ondemand = ondemandCost(inputs.tiers, lineUsage(line.quantity, line.quantityBasis));
  const grid = opts.includeOptions ? commitmentOptions(inputs, line.quantity, line.quantityBasis, opts) : undefined;
  let status: LineStatus = "ok";
  let detail = "Priced on-demand.";
  let matched: CommitmentOption | null = null;
  if (line.selected) {
    const lease = rematchSelection(inputs, line.selected);
    if (lease) {
      matched = evaluateOption(inputs, lease, line.quantity, line.quantityBasis);
      detail = `Priced under ${lease.offer.displayName}.`;
    } else {
      status = "selection_unavailable";
      detail = "The selected commitment option is no longer offered for this SKU; the line is priced on-demand. Choose a current option.";
    }
  } else if (inputs.leases.length === 0) {
    status = "no_commitment_options";
    detail = "Priced on-demand; the catalog has no commitment option for this SKU.";
  }
  const estimated = matched ? matched.commitment_financials_monthly_rate.commitment_cost.total : ondemand;
  return {
    ...base,
    status,
    detail,
    prices_as_of: inputs.pricesAsOf,
    ondemand_monthly_cost: ondemand,
    estimated_monthly_cost: estimated,
    monthly_net_savings: matched ? matched.commitment_financials_monthly_rate.commitment_savings.net : 0,
    matched_commitment_option: matched,
    ...(grid ? { commitment_options: grid } : {}),
  };
}

/** Totals over the enabled lines (DESIGN §7). */
export function pricingTotals(lines: PricingLine[], priced: LinePricing[]): PricingTotals {
  const totals: PricingTotals = { ondemand_monthly_cost: 0, estimated_monthly_cost: 0, monthly_net_savings: 0, commitment_upfront_cost: 0 };
  priced.forEach((p, i) => {
    if (!lines[i]!.isEnabled) return;
    totals.ondemand_monthly_cost += p.ondemand_monthly_cost;
    totals.estimated_monthly_cost += p.estimated_monthly_cost;
    if (p.matched_commitment_option) {
      totals.monthly_net_savings += p.matched_commitment_option.commitment_financials_monthly_rate.commitment_savings.net;
      totals.commitment_upfront_cost += p.matched_commitment_option.commitment_upfront_cost;
    }
  });
  return totals;
}

/**
 * Prices every line of an estimate (each on its own), the totals over the enabled ones, and how
 * fresh the prices are: the oldest line's `prices_as_of`, `stale` past `opts.freshness`.
 */
export function priceEstimate(lines: PricingLine[], inputsBySkuId: Map<string, SkuPricingInputs>, opts: PricingOptions = {}): EstimatePricing {
  const priced = lines.map((l) => priceLine(inputsBySkuId.get(l.catalogSkuId), l, opts));
  const pricesAsOf = oldestDay(priced.map((p) => p.prices_as_of));
  return { line_items: priced, totals: pricingTotals(lines, priced), prices_as_of: pricesAsOf, stale: opts.freshness ? isStale(pricesAsOf, opts.freshness) : false };
}

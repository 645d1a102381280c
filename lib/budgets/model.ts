/**
 * What a budget is, in the API's words: its filter (the cost it counts, as GET /costs filters
 * it), its thresholds, the limits of each field, and the check of what the schema cannot say
 * (cents, one threshold per percent and basis).
 */
import type { CostFilters } from "../billing/costQuery.ts";
import { TAG_KEY_MAX } from "../billing/costQuery.ts";
import type { Provider } from "../billing/sql.ts";
import { ValidationError, type FieldErrors } from "../errors.ts";

export const MAX_BUDGETS_PER_ORG = 100;
export const NAME_MAX = 200;
export const MAX_THRESHOLDS = 10;
export const PERCENT_MIN = 1;
export const PERCENT_MAX = 1000;
/** The largest monthly amount (numeric(17,2) holds it with room). */
export const AMOUNT_MAX = 1_000_000_000_000;
export const FILTER_VALUE_MAX = 256;
export { TAG_KEY_MAX };
export const BASES = ["actual", "forecast"] as const;
export type Basis = (typeof BASES)[number];

export interface BudgetFilter {
  provider?: Provider;
  billing_account_id?: string;
  /** The cost explorer's `account`: the linked account (SubAccountId), else the billing account. */
  account_id?: string;
  service?: string;
  tag?: { key: string; value: string };
}

export interface Threshold {
  percent: number;
  basis: Basis;
}

export interface BudgetInput {
  name: string;
  amount: number;
  currency: string;
  filter?: BudgetFilter | null;
  thresholds: Threshold[];
}

export type BudgetPatch = Partial<BudgetInput>;

/** The filter as the cost explorer's filters (GET /costs params): the same rows, the same cents. */
export function costFiltersOf(f: BudgetFilter): CostFilters {
  const out: CostFilters = {};
  if (f.provider !== undefined) out.provider = [f.provider];
  if (f.billing_account_id !== undefined) out.billing_account = [f.billing_account_id];
  if (f.account_id !== undefined) out.account = [f.account_id];
  if (f.service !== undefined) out.service = [f.service];
  if (f.tag !== undefined) out[`tag:${f.tag.key}`] = [f.tag.value];
  return out;
}

/** A filter with its fields in one order (stored and shown so). */
export function normalizedFilter(f: BudgetFilter | null | undefined): BudgetFilter {
  if (!f) return {};
  const out: BudgetFilter = {};
  if (f.provider !== undefined) out.provider = f.provider;
  if (f.billing_account_id !== undefined) out.billing_account_id = f.billing_account_id;
  if (f.account_id !== undefined) out.account_id = f.account_id;
  if (f.service !== undefined) out.service = f.service;
  if (f.tag !== undefined) out.tag = { key: f.tag.key, value: f.tag.value };
  return out;
}

/** Whole cents: an amount with more than two decimals is refused, never rounded silently. */
export const isCents = (v: number) => Number.isFinite(v) && Number(v.toFixed(2)) === v;

/**
 * What the body schema cannot check: the amount in cents, one threshold per (percent, basis).
 * Thresholds come back sorted (actual first, then by percent).
 */
export function checkedThresholds(thresholds: Threshold[]): Threshold[] {
  const seen = new Map<string, number>();
  const errors: FieldErrors = {};
  thresholds.forEach((th, i) => {
    const key = `${th.basis}:${th.percent}`;
    if (seen.has(key)) errors[`thresholds.${i}`] = [`repeats thresholds.${seen.get(key)} (${th.percent}% of ${th.basis}): each percent and basis once`];
    else seen.set(key, i);
  });
  if (Object.keys(errors).length) throw new ValidationError("Each threshold (percent and basis) may be given once.", errors);
  return [...thresholds].map((th) => ({ percent: th.percent, basis: th.basis })).sort((a, b) => BASES.indexOf(a.basis) - BASES.indexOf(b.basis) || a.percent - b.percent);
}

export function checkedAmount(amount: number): number {
  if (!isCents(amount)) throw new ValidationError("amount is money in the budget's currency: at most two decimals (whole cents).", { amount: ["must have at most 2 decimals (whole cents)"] });
  return amount;
}

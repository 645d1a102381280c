/** Enums of templates and plans (DESIGN §5). */
export { PROVIDERS, type Provider } from "../providers.ts";
import type { Provider } from "../providers.ts";

export const CONTRACT_TERMS = ["one_year", "three_year", "thirty_day_gris", "one_year_gris"] as const;
export type ContractTerm = (typeof CONTRACT_TERMS)[number];

export const PAYMENT_OPTIONS = ["no_upfront", "partial_upfront", "all_upfront"] as const;
export type PaymentOption = (typeof PAYMENT_OPTIONS)[number];

export const SCHEDULES = ["daily", "weekly", "monthly"] as const;
export type Schedule = (typeof SCHEDULES)[number];

/** Commitment types per provider, most flexible first (DESIGN §5). */
export const COMMITMENT_TYPES: Record<Provider, readonly string[]> = {
  aws: ["compute_savings_plan", "ec2_instance_savings_plan", "database_savings_plan", "reserved_instance"],
  azure: ["savings_plan", "reservation"],
  gcp: ["spend_cud", "resource_cud"],
};
export const ALL_COMMITMENT_TYPES = [...new Set(Object.values(COMMITMENT_TYPES).flat())];

/** Spend-based types commit to $/hour; the others to a resource count. */
export const SPEND_BASED_TYPES = new Set(["compute_savings_plan", "ec2_instance_savings_plan", "database_savings_plan", "savings_plan", "spend_cud"]);

/** Insured terms: the service buys 3-year no-upfront and guarantees buyback after the lock-in. */
export const INSURED_TERMS = new Set(["thirty_day_gris", "one_year_gris"]);

export interface ContractSpec {
  commitment_type: string;
  contract_term: ContractTerm;
  payment_option: PaymentOption;
}

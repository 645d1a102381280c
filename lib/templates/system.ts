import { sql } from "drizzle-orm";
import type { DbOrTx } from "../db/index.ts";
import { commitmentPlanTemplates } from "../db/schema/index.ts";
import { COMMITMENT_TYPES, type ContractSpec, type Provider } from "./enums.ts";

export type SystemKind = "recommended" | "balanced" | "high_savings";

interface SystemTemplateDef {
  kind: SystemKind;
  name: string;
  description: string;
  sortOrder: number;
  maxUpfrontCost: number;
  lookbackDays: number;
  specs(provider: Provider): ContractSpec[];
}

const everyType = (provider: Provider, term: ContractSpec["contract_term"], payments: ContractSpec["payment_option"][]): ContractSpec[] =>
  COMMITMENT_TYPES[provider].flatMap((t) => payments.map((p) => ({ commitment_type: t, contract_term: term, payment_option: p })));

/**
 * The three built-in templates of every segment (DESIGN §9). They differ by contract_specs:
 * Recommended = insured 30-day lock-in, no upfront; Balanced = 1-year no upfront; High Savings =
 * 3-year all/partial upfront. High Savings' upfront cap is effectively unlimited (its config is
 * immutable); custom templates set their own.
 */
export const SYSTEM_TEMPLATES: SystemTemplateDef[] = [
  {
    kind: "recommended",
    name: "Recommended",
    description: "Insured commitments with a 30-day lock-in and no upfront payment: most of the savings, lowest risk.",
    sortOrder: 0,
    maxUpfrontCost: 0,
    lookbackDays: 30,
    specs: (p) => everyType(p, "thirty_day_gris", ["no_upfront"]),
  },
  {
    kind: "balanced",
    name: "Balanced",
    description: "1-year commitments with no upfront payment.",
    sortOrder: 1,
    maxUpfrontCost: 0,
    lookbackDays: 60,
    specs: (p) => everyType(p, "one_year", ["no_upfront"]),
  },
  {
    kind: "high_savings",
    name: "High Savings",
    description: "3-year commitments paid all or partly upfront: the deepest discounts, the longest lock-in.",
    sortOrder: 2,
    maxUpfrontCost: 1_000_000_000,
    lookbackDays: 90,
    specs: (p) => everyType(p, "three_year", ["all_upfront", "partial_upfront"]),
  },
];

/** Creates the segment's system templates if missing (race-safe: unique per segment and kind). */
export async function ensureSystemTemplates(tx: DbOrTx, seg: { id: string; orgId: string; provider: Provider }): Promise<void> {
  await tx
    .insert(commitmentPlanTemplates)
    .values(
      SYSTEM_TEMPLATES.map((d) => ({
        orgId: seg.orgId,
        segmentId: seg.id,
        provider: seg.provider,
        name: d.name,
        description: d.description,
        isSystemGenerated: true,
        systemKind: d.kind,
        sortOrder: d.sortOrder,
        maxUpfrontCost: String(d.maxUpfrontCost),
        lookbackDays: d.lookbackDays,
        contractSpecs: d.specs(seg.provider),
        resourceIds: [],
        renewalCommitmentIds: [],
      })),
    )
    .onConflictDoNothing({ target: [commitmentPlanTemplates.segmentId, commitmentPlanTemplates.systemKind], where: sql`system_kind IS NOT NULL` });
}

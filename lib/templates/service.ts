import { and, asc, eq, inArray, sql } from "drizzle-orm";
import type { DbOrTx } from "../db/index.ts";
import { commitmentPlanTemplates, commitments } from "../db/schema/index.ts";
import { BadRequestError, ConflictError, NotFoundError, ValidationError, type FieldErrors } from "../errors.ts";
import { checkVersion, withVersion, type ExpectedVersions } from "../versions.ts";
import { ensureProviderSegment, getSegment, type Segment } from "../segments/service.ts";
import { COMMITMENT_TYPES, INSURED_TERMS, type ContractSpec, type Provider, type Schedule } from "./enums.ts";
import { isValidDate, nextExecutionDate, utcDate } from "./schedule.ts";

export interface TemplateConfiguration {
  max_upfront_cost: number;
  lookback_days: number;
  contract_specs: ContractSpec[];
  resource_ids: string[];
  renewal_commitment_ids: string[];
}

export interface AutoPurchaseInput {
  schedule: Schedule;
  min_monthly_savings: number;
  enabled: boolean;
  start_date: string;
  end_date: string | null;
  /** Purchases wait for an admin's approval (null: whenever the provider's purchasing connection really buys, i.e. is not dry-run). */
  require_approval: boolean | null;
  /** Orders whose total upfront (USD) is at most this are approved without a person (null: never). */
  auto_approve_max_upfront: number | null;
}

export interface AutoPurchaseView extends AutoPurchaseInput {
  next_execution_date: string | null;
  last_executed_at: string | null;
}

export interface TemplateView {
  id: string;
  name: string;
  description: string | null;
  segment_id: string;
  provider: Provider;
  created_at: string;
  updated_at: string;
  is_system_generated: boolean;
  configuration: TemplateConfiguration;
  auto_purchase: AutoPurchaseView | null;
}

export type TemplateRow = typeof commitmentPlanTemplates.$inferSelect;

export const CONFIGURATION_DEFAULTS = { max_upfront_cost: 0, lookback_days: 30, resource_ids: [] as string[], renewal_commitment_ids: [] as string[] };

/** Fixed key order (and lower-case ids) so configurations compare by value. */
export function normalizeConfiguration(c: TemplateConfiguration): TemplateConfiguration {
  return {
    max_upfront_cost: c.max_upfront_cost,
    lookback_days: c.lookback_days,
    contract_specs: c.contract_specs.map((x) => ({ commitment_type: x.commitment_type, contract_term: x.contract_term, payment_option: x.payment_option })),
    resource_ids: [...c.resource_ids],
    renewal_commitment_ids: c.renewal_commitment_ids.map((x) => x.toLowerCase()),
  };
}

export function configurationOf(row: TemplateRow): TemplateConfiguration {
  return normalizeConfiguration({
    max_upfront_cost: Number(row.maxUpfrontCost),
    lookback_days: row.lookbackDays,
    contract_specs: row.contractSpecs as ContractSpec[],
    resource_ids: row.resourceIds as string[],
    renewal_commitment_ids: row.renewalCommitmentIds as string[],
  });
}

export function autoPurchaseOf(row: TemplateRow): AutoPurchaseInput | null {
  if (!row.schedule || !row.startDate) return null;
  return {
    schedule: row.schedule,
    min_monthly_savings: Number(row.minMonthlySavings ?? 0),
    enabled: row.autoPurchaseEnabled ?? false,
    start_date: row.startDate,
    end_date: row.endDate ?? null,
    require_approval: row.requireApproval ?? null,
    auto_approve_max_upfront: row.autoApproveMaxUpfront === null ? null : Number(row.autoApproveMaxUpfront),
  };
}

export function templateView(row: TemplateRow, now: Date): TemplateView {
  const ap = autoPurchaseOf(row);
  return withVersion({
    id: row.id,
    name: row.name,
    description: row.description ?? null,
    segment_id: row.segmentId,
    provider: row.provider,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    is_system_generated: row.isSystemGenerated,
    configuration: configurationOf(row),
    auto_purchase: ap && {
      ...ap,
      next_execution_date: nextExecutionDate(ap, utcDate(now), row.lastExecutionDate ?? null, row.scheduleSetOn ?? null),
      last_executed_at: row.lastExecutedAt ? row.lastExecutedAt.toISOString() : null,
    },
  }, row.version);
}

/** Body checks TypeBox cannot express: types per provider, date order, ids of this org. */
async function validateTemplate(db: DbOrTx, orgId: string, provider: Provider, config: TemplateConfiguration, ap: AutoPurchaseInput | null): Promise<void> {
  const errors: FieldErrors = {};
  const add = (k: string, m: string) => (errors[k] ??= []).push(m);
  const types = COMMITMENT_TYPES[provider];
  const seen = new Set<string>();
  config.contract_specs.forEach((spec, i) => {
    const at = `configuration.contract_specs.${i}`;
    if (!types.includes(spec.commitment_type)) add(`${at}.commitment_type`, `must be one of ${types.map((t) => `\`${t}\``).join(", ")} for ${provider}`);
    if (INSURED_TERMS.has(spec.contract_term) && spec.payment_option !== "no_upfront") add(`${at}.payment_option`, `insured terms (${spec.contract_term}) are sold with \`no_upfront\` only`);
    const key = `${spec.commitment_type}/${spec.contract_term}/${spec.payment_option}`;
    if (seen.has(key)) add(at, "duplicates an earlier contract spec");
    seen.add(key);
  });
  if (config.contract_specs.length === 0) add("configuration.contract_specs", "must list at least one contract spec");
  if (config.renewal_commitment_ids.length) {
    const found = await db
      .select({ id: commitments.id })
      .from(commitments)
      .where(and(eq(commitments.orgId, orgId), eq(commitments.provider, provider), inArray(commitments.id, config.renewal_commitment_ids)));
    const ok = new Set(found.map((r) => r.id));
    config.renewal_commitment_ids.forEach((id, i) => {
      if (!ok.has(id)) add(`configuration.renewal_commitment_ids.${i}`, `is not a ${provider} commitment of this organization`);
    });
  }
  if (ap) {
    if (!isValidDate(ap.start_date)) add("auto_purchase.start_date", "must be a calendar date YYYY-MM-DD");
    if (ap.end_date !== null && !isValidDate(ap.end_date)) add("auto_purchase.end_date", "must be a calendar date YYYY-MM-DD or null");
    if (isValidDate(ap.start_date) && ap.end_date && isValidDate(ap.end_date) && ap.start_date > ap.end_date) add("auto_purchase.end_date", "must be on or after start_date");
  }
  if (Object.keys(errors).length) {
    const first = Object.entries(errors)[0]!;
    throw new ValidationError(`The template is invalid: ${first[0]} ${first[1][0]}.`, errors);
  }
}

function completeAutoPurchase(base: AutoPurchaseInput | null, patch: Partial<AutoPurchaseInput>): AutoPurchaseInput {
  const merged = { ...(base ?? { min_monthly_savings: 0, enabled: false, end_date: null, require_approval: null, auto_approve_max_upfront: null }), ...stripReadOnly(patch) } as Partial<AutoPurchaseInput>;
  const errors: FieldErrors = {};
  if (merged.schedule === undefined) errors["auto_purchase.schedule"] = ["is required"];
  if (merged.start_date === undefined) errors["auto_purchase.start_date"] = ["is required"];
  if (Object.keys(errors).length) throw new ValidationError("auto_purchase needs at least `schedule` and `start_date`.", errors);
  return {
    schedule: merged.schedule!,
    start_date: merged.start_date!,
    end_date: merged.end_date ?? null,
    min_monthly_savings: merged.min_monthly_savings ?? 0,
    enabled: merged.enabled ?? false,
    require_approval: merged.require_approval ?? null,
    auto_approve_max_upfront: merged.auto_approve_max_upfront ?? null,
  };
}

/** next_execution_date and last_executed_at are read-only: a GET→PUT round trip may echo them. */
function stripReadOnly<T extends object>(o: T): T {
  const { next_execution_date, last_executed_at, ...rest } = o as any;
  return rest;
}

function autoPurchaseColumns(ap: AutoPurchaseInput | null, scheduleSetOn: string | null) {
  return {
    scheduleSetOn: ap ? scheduleSetOn : null,
    schedule: ap?.schedule ?? null,
    minMonthlySavings: ap ? String(ap.min_monthly_savings) : null,
    autoPurchaseEnabled: ap ? ap.enabled : null,
    requireApproval: ap?.require_approval ?? null,
    autoApproveMaxUpfront: ap?.auto_approve_max_upfront == null ? null : String(ap.auto_approve_max_upfront),
    startDate: ap?.start_date ?? null,
    endDate: ap?.end_date ?? null,
  };
}

function configurationColumns(c: TemplateConfiguration) {
  return {
    maxUpfrontCost: String(c.max_upfront_cost),
    lookbackDays: c.lookback_days,
    contractSpecs: c.contract_specs,
    resourceIds: c.resource_ids,
    renewalCommitmentIds: c.renewal_commitment_ids,
  };
}

/** The segment a request names (of this org and provider), or the provider-resources default. */
async function resolveSegment(db: DbOrTx, orgId: string, provider: Provider, segmentId: string | undefined | null, where: "query" | "body"): Promise<Segment> {
  if (!segmentId) return ensureProviderSegment(db, orgId, provider);
  const seg = await getSegment(db, orgId, segmentId);
  if (seg.provider !== provider) {
    const msg = `segment ${segmentId} is a ${seg.provider} segment, not ${provider}.`;
    if (where === "query") throw new BadRequestError(msg, { segment_id: [`is a ${seg.provider} segment`] });
    throw new ValidationError(msg, { segment_id: [`is a ${seg.provider} segment`] });
  }
  return seg;
}

export async function listTemplates(db: DbOrTx, orgId: string, provider: Provider, segmentId: string | undefined, now: Date): Promise<TemplateView[]> {
  const seg = await resolveSegment(db, orgId, provider, segmentId, "query");
  const rows = await db
    .select()
    .from(commitmentPlanTemplates)
    .where(and(eq(commitmentPlanTemplates.orgId, orgId), eq(commitmentPlanTemplates.segmentId, seg.id)))
    .orderBy(asc(commitmentPlanTemplates.sortOrder), asc(commitmentPlanTemplates.createdAt), asc(commitmentPlanTemplates.id));
  return rows.map((r) => templateView(r, now));
}

export interface CreateTemplateInput {
  provider: Provider;
  segment_id?: string | null;
  name: string;
  description?: string | null;
  configuration: Partial<TemplateConfiguration> & { contract_specs: ContractSpec[] };
  auto_purchase?: Partial<AutoPurchaseInput> | null;
}

export async function createTemplate(db: DbOrTx, orgId: string, input: CreateTemplateInput, now: Date): Promise<TemplateView> {
  return db.transaction(async (tx) => {
    const seg = await resolveSegment(tx, orgId, input.provider, input.segment_id, "body");
    const config = normalizeConfiguration({ ...CONFIGURATION_DEFAULTS, ...input.configuration });
    const ap = input.auto_purchase ? completeAutoPurchase(null, input.auto_purchase) : null;
    await validateTemplate(tx, orgId, input.provider, config, ap);
    const [row] = await tx
      .insert(commitmentPlanTemplates)
      .values({
        orgId,
        segmentId: seg.id,
        provider: input.provider,
        name: input.name,
        description: input.description ?? null,
        isSystemGenerated: false,
        ...configurationColumns(config),
        ...autoPurchaseColumns(ap, utcDate(now)),
      })
      .returning();
    return templateView(row!, now);
  });
}

async function loadTemplate(db: DbOrTx, orgId: string, id: string, forUpdate = false): Promise<TemplateRow> {
  const q = db.select().from(commitmentPlanTemplates).where(and(eq(commitmentPlanTemplates.orgId, orgId), eq(commitmentPlanTemplates.id, id))).limit(1);
  const [row] = forUpdate ? await q.for("update") : await q;
  if (!row) throw new NotFoundError("No such commitment plan template in this organization.");
  return row;
}

/** The names of the org's templates among `ids` (unknown ids and another org's are left out). */
export async function templateNamesOf(db: DbOrTx, orgId: string, ids: (string | null)[]): Promise<Map<string, string>> {
  const wanted = [...new Set(ids.filter((x): x is string => !!x))];
  if (!wanted.length) return new Map();
  const rows = await db
    .select({ id: commitmentPlanTemplates.id, name: commitmentPlanTemplates.name })
    .from(commitmentPlanTemplates)
    .where(and(eq(commitmentPlanTemplates.orgId, orgId), inArray(commitmentPlanTemplates.id, wanted)));
  return new Map(rows.map((r) => [r.id, r.name]));
}

export async function getTemplate(db: DbOrTx, orgId: string, id: string, now: Date): Promise<TemplateView> {
  return templateView(await loadTemplate(db, orgId, id), now);
}

export interface UpdateTemplateInput {
  name?: string;
  description?: string | null;
  configuration?: Partial<TemplateConfiguration>;
  auto_purchase?: Partial<AutoPurchaseInput> | null;
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Merge-semantic update (rules 2–5): only keys present are applied; `configuration` and
 * `auto_purchase` objects merge key by key into the current ones; `auto_purchase: null` clears
 * the schedule and `description: null` the description. On a system template anything but
 * auto_purchase that would change is refused with 409 and nothing is written.
 */
export async function updateTemplate(db: DbOrTx, orgId: string, id: string, input: UpdateTemplateInput, now: Date, ifMatch?: ExpectedVersions): Promise<TemplateView> {
  return db.transaction(async (tx) => {
    const row = await loadTemplate(tx, orgId, id, true);
    checkVersion(row.version, ifMatch);
    const current = configurationOf(row);
    const name = input.name ?? row.name;
    const description = input.description === undefined ? row.description : input.description;
    const config: TemplateConfiguration = input.configuration ? normalizeConfiguration({ ...current, ...input.configuration }) : current;
    const currentAp = autoPurchaseOf(row);
    const ap = input.auto_purchase === undefined ? currentAp : input.auto_purchase === null ? null : completeAutoPurchase(currentAp, input.auto_purchase);
    if (row.isSystemGenerated) {
      const changed = [name !== row.name && "name", description !== row.description && "description", !sameJson(config, current) && "configuration"].filter(Boolean) as string[];
      if (changed.length) {
        throw new ConflictError(
          `This template is system-generated: only its auto_purchase schedule may change (refused: ${changed.join(", ")}).`,
          "system_template_immutable",
        );
      }
    }
    await validateTemplate(tx, orgId, row.provider, config, ap);
    // A changed schedule only runs slots from today on; toggling enabled or the threshold keeps it.
    const sameSlots = ap && currentAp && ap.schedule === currentAp.schedule && ap.start_date === currentAp.start_date && ap.end_date === currentAp.end_date;
    const scheduleSetOn = sameSlots ? (row.scheduleSetOn ?? null) : utcDate(now);
    const [updated] = await tx
      .update(commitmentPlanTemplates)
      .set({ name, description, ...configurationColumns(config), ...autoPurchaseColumns(ap, scheduleSetOn), updatedAt: now, version: sql`${commitmentPlanTemplates.version} + 1` })
      .where(eq(commitmentPlanTemplates.id, row.id))
      .returning();
    return templateView(updated!, now);
  });
}

/** Rule 6: a system template cannot be deleted. Plans and purchases keep their rows. */
export async function deleteTemplate(db: DbOrTx, orgId: string, id: string, ifMatch?: ExpectedVersions): Promise<void> {
  await db.transaction(async (tx) => {
    const row = await loadTemplate(tx, orgId, id, true);
    checkVersion(row.version, ifMatch);
    if (row.isSystemGenerated) throw new ConflictError("This template is system-generated and cannot be deleted.", "system_template_immutable");
    await tx.delete(commitmentPlanTemplates).where(eq(commitmentPlanTemplates.id, row.id));
  });
}

import { t, type Static } from "elysia";
import { PageQueryFields } from "../../../../../../lib/http/paging.ts";
import { Kind, Type, TypeRegistry } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { ValidationError } from "../../../../../../lib/errors.ts";
import { fieldErrorsOf } from "../../../../../../lib/http/validation.ts";
import { NullableText, NullableTextEnum, Text, TextEnum } from "../../../../../../lib/http/text.ts";
import { ALL_COMMITMENT_TYPES, CONTRACT_TERMS, PAYMENT_OPTIONS, PROVIDERS, SCHEDULES } from "../../../../../../lib/templates/enums.ts";
import { component, nullable } from "../../../../../../lib/http/openapiComponents.ts";

const UUID_PATTERN = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";
const DATE_PATTERN = "^\\d{4}-\\d{2}-\\d{2}$";
const Uuid = (o: object = {}) => t.String({ pattern: UUID_PATTERN, ...o });
const DateString = (o: object = {}) => t.String({ pattern: DATE_PATTERN, description: "YYYY-MM-DD (UTC)", ...o });

export const ContractSpec = t.Object(
  {
    commitment_type: TextEnum(ALL_COMMITMENT_TYPES as unknown as readonly string[], { description: "Per provider (DESIGN §5)" }),
    contract_term: TextEnum(CONTRACT_TERMS),
    payment_option: TextEnum(PAYMENT_OPTIONS),
  },
  { additionalProperties: false },
);

const configurationFields = {
  max_upfront_cost: t.Number({ minimum: 0, maximum: 1e15, description: "Upfront budget of one generated plan (USD)" }),
  lookback_days: t.Integer({ minimum: 1, maximum: 365, description: "Days of hourly usage the plan is sized on" }),
  contract_specs: t.Array(ContractSpec, { minItems: 1, maxItems: 50 }),
  resource_ids: t.Array(Text({ minLength: 1, maxLength: 1024 }), { maxItems: 1000, description: "Restrict planning to these resources (empty = all)" }),
  renewal_commitment_ids: t.Array(Uuid(), { maxItems: 1000, description: "Commitments to treat as expiring (the plan renews them)" }),
};

export const ConfigurationCreate = t.Object(
  {
    contract_specs: configurationFields.contract_specs,
    max_upfront_cost: t.Optional(configurationFields.max_upfront_cost),
    lookback_days: t.Optional(configurationFields.lookback_days),
    resource_ids: t.Optional(configurationFields.resource_ids),
    renewal_commitment_ids: t.Optional(configurationFields.renewal_commitment_ids),
  },
  { additionalProperties: false },
);

export const ConfigurationPatch = t.Object(
  {
    contract_specs: t.Optional(configurationFields.contract_specs),
    max_upfront_cost: t.Optional(configurationFields.max_upfront_cost),
    lookback_days: t.Optional(configurationFields.lookback_days),
    resource_ids: t.Optional(configurationFields.resource_ids),
    renewal_commitment_ids: t.Optional(configurationFields.renewal_commitment_ids),
  },
  { additionalProperties: false },
);

/** Partial on purpose: on PUT it merges into the current schedule; a new schedule needs schedule + start_date. */
export const AutoPurchaseBody = t.Object(
  {
    schedule: t.Optional(TextEnum(SCHEDULES)),
    min_monthly_savings: t.Optional(t.Number({ minimum: 0, maximum: 1e15, description: "Buy only when the plan's monthly net savings reach this (USD)" })),
    enabled: t.Optional(t.Boolean({ description: "false: regenerate plans on the schedule without buying" })),
    start_date: t.Optional(DateString()),
    end_date: t.Optional(t.Union([DateString(), t.Null()])),
    require_approval: t.Optional(
      t.Union([t.Boolean(), t.Null()], { description: "Purchases wait for an admin's POST /purchases/{id}/approve. null (default): required whenever the provider's purchasing connection really buys (is not dry-run)" }),
    ),
    auto_approve_max_upfront: t.Optional(t.Union([t.Number({ minimum: 0, maximum: 1e15 }), t.Null()], { description: "Orders whose total upfront (USD) is at most this are approved without a person; null: never" })),
    next_execution_date: t.Optional(t.Union([DateString(), t.Null()], { description: "Read-only; ignored" })),
    last_executed_at: t.Optional(t.Union([t.String({ maxLength: 64 }), t.Null()], { description: "Read-only; ignored" })),
  },
  { additionalProperties: false },
);

/**
 * `auto_purchase` is "object or null". A TypeBox union reports any problem inside it as one
 * error on `auto_purchase`; this kind lets it through the route validation (the published
 * schema is the same anyOf) and `checkAutoPurchase` reports field by field
 * (`auto_purchase.start_date`, …).
 */
const PASS_THROUGH_KIND = "PlanningNullableObject";
if (!TypeRegistry.Has(PASS_THROUGH_KIND)) TypeRegistry.Set(PASS_THROUGH_KIND, () => true);
const NullableAutoPurchase = Type.Unsafe<Static<typeof AutoPurchaseBody> | null>({ anyOf: [AutoPurchaseBody, { type: "null" }], [Kind]: PASS_THROUGH_KIND });

export function checkAutoPurchase(value: unknown): void {
  if (value === undefined || value === null) return;
  const errors = fieldErrorsOf({ all: [...Value.Errors(AutoPurchaseBody, value)] });
  const fields = Object.entries(errors).map(([k, v]) => [k === "(root)" ? "auto_purchase" : `auto_purchase.${k}`, v] as const);
  if (!fields.length) return;
  throw new ValidationError(`The request body is invalid: ${fields.map(([k, v]) => `${k} ${v[0]}`).join("; ")}.`, Object.fromEntries(fields));
}

export const CreateBody = t.Object(
  {
    provider: TextEnum(PROVIDERS),
    segment_id: t.Optional(t.Union([Uuid(), t.Null()])),
    name: Text({ minLength: 1, maxLength: 255 }),
    description: t.Optional(NullableText({ maxLength: 2000 })),
    configuration: ConfigurationCreate,
    auto_purchase: t.Optional(NullableAutoPurchase),
  },
  { additionalProperties: false },
);

export const UpdateBody = t.Object(
  {
    name: t.Optional(Text({ minLength: 1, maxLength: 255 })),
    description: t.Optional(NullableText({ maxLength: 2000 })),
    configuration: t.Optional(ConfigurationPatch),
    auto_purchase: t.Optional(NullableAutoPurchase),
  },
  { additionalProperties: false },
);

export const ListQuery = t.Object({ provider: TextEnum(PROVIDERS), segment_id: t.Optional(Uuid()), ...PageQueryFields });
export const IdParams = t.Object({ org_id: t.String(), template_id: Uuid() });
export { NullableTextEnum };

// Responses (DESIGN §12).
const Instant = () => t.String({ format: "date-time" });

export const TemplateContractSpec = component(
  "ContractSpec",
  t.Object({
    commitment_type: TextEnum(ALL_COMMITMENT_TYPES as readonly string[], { description: "Per provider (DESIGN §5)" }),
    contract_term: TextEnum(CONTRACT_TERMS),
    payment_option: TextEnum(PAYMENT_OPTIONS),
  }),
);

export const TemplateConfiguration = component(
  "TemplateConfiguration",
  t.Object({
    max_upfront_cost: t.Number({ description: "Upfront budget of one generated plan (USD)" }),
    lookback_days: t.Integer({ description: "Days of hourly usage the plan is sized on" }),
    contract_specs: t.Array(TemplateContractSpec),
    resource_ids: t.Array(t.String(), { description: "Planning is restricted to these resources (empty = all)" }),
    renewal_commitment_ids: t.Array(t.String({ format: "uuid" }), { description: "Commitments treated as expiring (the plan renews them)" }),
  }),
);

export const AutoPurchase = component(
  "AutoPurchase",
  t.Object({
    schedule: TextEnum(SCHEDULES),
    min_monthly_savings: t.Number({ description: "Buy only when the plan's monthly net savings reach this (USD)" }),
    enabled: t.Boolean({ description: "false: plans are regenerated on the schedule without buying" }),
    start_date: t.String({ format: "date" }),
    end_date: t.Union([t.String({ format: "date" }), t.Null()]),
    require_approval: t.Union([t.Boolean(), t.Null()], { description: "Purchases wait for an admin's approval; null: whenever the provider's purchasing connection really buys" }),
    auto_approve_max_upfront: t.Union([t.Number(), t.Null()], { description: "Orders whose total upfront (USD) is at most this are approved without a person; null: never" }),
    next_execution_date: t.Union([t.String({ format: "date" }), t.Null()], { description: "null when the schedule has ended" }),
    last_executed_at: t.Union([Instant(), t.Null()]),
  }),
);

export const CommitmentPlanTemplate = component(
  "CommitmentPlanTemplate",
  t.Object({
    id: t.String({ format: "uuid" }),
    name: t.String(),
    description: t.Union([t.String(), t.Null()]),
    segment_id: t.String({ format: "uuid" }),
    provider: TextEnum(PROVIDERS),
    created_at: Instant(),
    updated_at: Instant(),
    is_system_generated: t.Boolean({ description: "The built-in Recommended, Balanced and High Savings templates: only auto_purchase may change" }),
    configuration: TemplateConfiguration,
    auto_purchase: nullable(AutoPurchase, "null: not on a schedule"),
  }),
);

import { t, type Static } from "elysia";
import { PageQueryFields } from "../../../../../../lib/http/paging.ts";
import { Type } from "@sinclair/typebox";
import { NullableText, NullableTextEnum, Text, TextEnum } from "../../../../../../lib/http/text.ts";
import { component, nullable } from "../../../../../../lib/http/openapiComponents.ts";
import { DEFAULT_ESTIMATE_NAME } from "../../../../../../lib/estimates/service.ts";
import { PROVIDERS } from "../../../../../../lib/providers.ts";
import { LINE_STATUSES, QUANTITY_BASES } from "../../../../../../lib/pricing/index.ts";
import { ALL_COMMITMENT_TYPES, CONTRACT_TERMS, PAYMENT_OPTIONS } from "../../../../../../lib/templates/enums.ts";

export const Provider = t.Union([t.Literal("aws"), t.Literal("azure"), t.Literal("gcp")]);
export const QuantityBasis = t.Union([t.Literal("resource_count"), t.Literal("usage_hours"), t.Literal("usage_quantity")]);
/** Spec: minimum 0. The upper bound keeps every cost finite (no Infinity in a JSON number). */
export const Quantity = t.Number({ minimum: 0, maximum: 1e12 });
export const Label = NullableText({ maxLength: 255 });
export const Name = Text({ minLength: 1, maxLength: 255 });
/** No length limit in the spec; still must be storable text (no NUL, no lone surrogate). */
export const Description = NullableText({ maxLength: 4000 });
const Short = () => Text({ minLength: 1, maxLength: 100 });

/** The six identifying fields of a CommitmentOption (rule 10); other fields of a copied entry are ignored. */
export const Selection = t.Object({
  commitment_type: Short(),
  contract_term: Short(),
  payment_option: Short(),
  lease_menu_item_id: t.String({ format: "uuid" }),
  offer_id: t.String({ format: "uuid" }),
  offer_org_id: Short(),
});

export const LineItemInput = t.Object(
  {
    catalog_sku_id: t.String({ format: "uuid" }),
    catalog_sku_org_id: Short(),
    quantity: t.Optional(Quantity),
    quantity_basis: t.Optional(QuantityBasis),
    label: t.Optional(Label),
    is_enabled: t.Optional(t.Boolean()),
    selected_commitment_option: t.Optional(t.Union([Selection, t.Null()])),
  },
  { additionalProperties: false },
);

export const CreateEstimateBody = t.Object(
  {
    provider: Provider,
    name: t.Optional(Text({ minLength: 1, maxLength: 255, default: DEFAULT_ESTIMATE_NAME })),
    description: t.Optional(NullableText({ maxLength: 4000, default: null })),
    source_draft_id: t.Optional(t.Union([t.String({ format: "uuid" }), t.Null()], { default: null, description: "Creation is idempotent per draft id (SPEC rule 1)" })),
    line_items: t.Optional(t.Array(LineItemInput, { maxItems: 5000 })),
  },
  { additionalProperties: false },
);

export const PatchEstimateBody = t.Object({ name: t.Optional(Name), description: t.Optional(Description) }, { additionalProperties: false });

export const AddLinesBody = t.Object({ line_items: t.Array(LineItemInput, { maxItems: 5000 }) }, { additionalProperties: false });

export const PatchLineBody = t.Object(
  {
    quantity: t.Optional(Quantity),
    quantity_basis: t.Optional(QuantityBasis),
    label: t.Optional(Label),
    is_enabled: t.Optional(t.Boolean()),
    selected_commitment_option: t.Optional(t.Union([Selection, t.Null()])),
  },
  { additionalProperties: false },
);

export const EstimateQuery = t.Object({
  only_most_flexible_commitment_type: t.Optional(t.Boolean({ default: false })),
  include_pricing: t.Optional(t.Boolean({ default: true })),
  include_options: t.Optional(t.Boolean({ default: false })),
});

export const LineQuery = t.Object({ only_most_flexible_commitment_type: t.Optional(t.Boolean({ default: false })) });
export const ListQuery = t.Object({ provider: Provider, ...PageQueryFields });

// Responses (DESIGN §12). Enums of fields the service types as plain strings stay `string` to
// TypeScript; the published schema and the runtime check still hold the value set.
const Uuid = () => t.String({ format: "uuid" });
const Instant = () => t.String({ format: "date-time" });
const NullableString = () => t.Union([t.String(), t.Null()]);
const Money = (description?: string) => t.Number(description ? { description } : {});
const ProviderEnum = () => TextEnum(PROVIDERS);
const CommitmentType = () => TextEnum(ALL_COMMITMENT_TYPES as readonly string[], { description: "Per provider (DESIGN §5)" });
const ContractTerm = () => TextEnum(CONTRACT_TERMS as readonly string[]);
const PaymentOption = () => TextEnum(PAYMENT_OPTIONS as readonly string[]);

/** The SKU descriptor of a line (also the base of a catalog search hit). */
export const catalogSkuDescriptorFields = () => ({
  catalog_sku_org_id: t.String({ description: "`public`, or the organization id of a custom-priced SKU" }),
  catalog_sku_id: Uuid(),
  provider: TextEnum(PROVIDERS as readonly string[]),
  provider_sku_id: t.String(),
  display_name: t.String(),
  instance_type: t.String(),
  service: t.String(),
  provider_service: t.String(),
  region_code: t.String(),
  operating_system: t.String(),
  database_engine: t.String(),
  cache_engine: t.String(),
  usage_type: t.String(),
});

export const CatalogSkuDescriptor = component(
  "CatalogSkuDescriptor",
  t.Object(catalogSkuDescriptorFields(), { description: "The catalog SKU as snapshotted into the line when it was added" }),
);

export const SelectedCommitmentOption = component(
  "SelectedCommitmentOption",
  t.Object(
    {
      commitment_type: CommitmentType(),
      contract_term: ContractTerm(),
      payment_option: PaymentOption(),
      lease_menu_item_id: Uuid(),
      offer_id: Uuid(),
      offer_org_id: t.String(),
    },
    { description: "The six identifying fields of the chosen CommitmentOption" },
  ),
);

export const LineItem = component(
  "LineItem",
  t.Object({
    id: Uuid(),
    catalog_sku: CatalogSkuDescriptor,
    usage_unit: NullableString(),
    label: NullableString(),
    quantity: t.Number({ minimum: 0 }),
    quantity_basis: TextEnum(QUANTITY_BASES),
    is_enabled: t.Boolean({ description: "false: priced per line but left out of the totals and of plan generation" }),
    selected_commitment_option: nullable(SelectedCommitmentOption, "null: on-demand"),
    created_at: Instant(),
    updated_at: Instant(),
  }),
);

export const CommitmentOffer = component(
  "CommitmentOffer",
  t.Object({
    id: Uuid(),
    provider: ProviderEnum(),
    type: CommitmentType(),
    region: NullableString(),
    duration_seconds: t.Integer(),
    instance_type: NullableString(),
    instance_family: NullableString(),
    offering_class: NullableTextEnum(["standard", "convertible"] as readonly string[], { description: "Reserved instances only" }),
    payment_option: PaymentOption(),
    plan_type: NullableString(),
    product_description: NullableString(),
    display_name: t.String(),
    guaranteed_display_name: NullableString(),
    is_flexible: t.Boolean(),
  }),
);

export const CommitmentFinancials = component(
  "CommitmentFinancials",
  t.Object(
    {
      commitment_cost: t.Object({
        total: Money("cloud_provider_cost.total + service_premium"),
        breakdown: t.Object({
          cloud_provider_cost: t.Object({
            total: Money("recurring + amortized_upfront"),
            breakdown: t.Object({ recurring: Money(), amortized_upfront: Money() }),
          }),
          service_premium: Money("Insured (`_gris`) offers' fee on positive gross savings; 0 for native offers"),
        }),
      }),
      commitment_savings: t.Object({ net: Money("gross − service_premium"), gross: Money("covered_ondemand_cost − cloud_provider_cost.total") }),
      covered_ondemand_cost: Money("On-demand cost of the usage the option covers"),
    },
    { description: "Monthly rates of the option for the line (DESIGN §7)" },
  ),
);

export const CommitmentOption = component(
  "CommitmentOption",
  t.Object({
    offer_id: Uuid(),
    offer_org_id: t.String(),
    lease_menu_item_id: Uuid(),
    selected_amount: t.Number({ description: "Resource count (RI, reservation, resource CUD) or $/hour commitment (savings plan, spend CUD)" }),
    commitment_type: CommitmentType(),
    contract_term: ContractTerm(),
    payment_option: PaymentOption(),
    discount_rate: t.Number({ description: "net savings / covered on-demand cost" }),
    breakeven_days: t.Number(),
    commitment_upfront_cost: Money("One-time; never part of the monthly rates"),
    offer: CommitmentOffer,
    commitment_financials_monthly_rate: CommitmentFinancials,
  }),
);

/** A day (UTC) prices were last confirmed current: a live feed's last refresh check, else the price's own as_of. */
const PricesAsOf = (description: string) => t.Union([t.String({ format: "date" }), t.Null()], { description });

const pricingLineFields = {
  line_item_id: Uuid(),
  status: TextEnum(LINE_STATUSES),
  detail: t.String(),
  prices_as_of: PricesAsOf(
    "The oldest day (YYYY-MM-DD, UTC) on which the line's prices were confirmed current: its SKU's on-demand price and every commitment option the SKU offers. A price from a refreshed feed counts from the feed's last refresh check (changed or not); any other price (bundled snapshot, manual import) from its own as_of. null when the line has no price (sku_unavailable).",
  ),
  ondemand_monthly_cost: Money(),
  estimated_monthly_cost: Money("The matched option's commitment cost, else on-demand"),
  monthly_net_savings: Money(),
  matched_commitment_option: nullable(CommitmentOption, "The stored selection re-matched to a current option; null: on-demand"),
};

export const PricingLine = component(
  "PricingLine",
  t.Object({
    ...pricingLineFields,
    commitment_options: t.Optional(t.Array(CommitmentOption, { description: "Only with include_options=true" })),
  }),
);

/**
 * lib/estimates types the grid as optional (its pricing line type is shared with the estimate
 * read); on the single-line read it is always there, and the document says so.
 */
export const PricingLineWithOptions = component(
  "PricingLineWithOptions",
  Type.Unsafe<Static<typeof PricingLine> & { stale: boolean }>(
    t.Object({
      ...pricingLineFields,
      stale: t.Boolean({ description: "true when the line's prices_as_of is more than PRICE_STALE_DAYS (default 35) whole days before today (UTC); false when prices_as_of is null." }),
      commitment_options: t.Array(CommitmentOption, { description: "The line's full options grid" }),
    }),
  ),
);

export const PricingTotals = component(
  "PricingTotals",
  t.Object(
    {
      ondemand_monthly_cost: Money(),
      estimated_monthly_cost: Money(),
      monthly_net_savings: Money(),
      commitment_upfront_cost: Money(),
    },
    { description: "Over the enabled lines" },
  ),
);

export const Pricing = component(
  "Pricing",
  t.Object(
    {
      line_items: t.Array(PricingLine),
      totals: PricingTotals,
      prices_as_of: PricesAsOf("The oldest prices_as_of of the lines (YYYY-MM-DD, UTC): how current the prices behind this pricing are. null when no line has a price."),
      stale: t.Boolean({ description: "true when prices_as_of is more than PRICE_STALE_DAYS (default 35) whole days before today (UTC): the catalog needs a `catalog refresh`. false when prices_as_of is null." }),
    },
    { description: "Computed live on every read, never stored" },
  ),
);

export const CostEstimate = component(
  "CostEstimate",
  t.Object({
    id: Uuid(),
    provider: ProviderEnum(),
    name: t.String(),
    description: NullableString(),
    source_draft_id: t.Union([Uuid(), t.Null()]),
    created_at: Instant(),
    updated_at: Instant(),
    line_items: t.Array(LineItem),
    pricing: nullable(Pricing, "null with include_pricing=false"),
  }),
);

export const CostEstimateSummary = component(
  "CostEstimateSummary",
  t.Object({
    id: Uuid(),
    provider: ProviderEnum(),
    name: t.String(),
    description: NullableString(),
    line_count: t.Integer({ minimum: 0 }),
    created_at: Instant(),
    updated_at: Instant(),
  }),
);

export const LineItemWithPricing = component("LineItemWithPricing", t.Object({ line_item: LineItem, pricing: PricingLineWithOptions }));

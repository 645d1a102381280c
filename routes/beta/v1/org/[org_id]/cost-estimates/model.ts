import { t } from "elysia";
import { NullableText, Text } from "../../../../../../lib/http/text.ts";

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
    name: t.Optional(Name),
    description: t.Optional(Description),
    source_draft_id: t.Optional(t.Union([t.String({ format: "uuid" }), t.Null()])),
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
export const ListQuery = t.Object({ provider: Provider });

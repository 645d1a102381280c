import { t } from "elysia";
import { component } from "../../../../../../lib/http/openapiComponents.ts";
import { catalogSkuDescriptorFields } from "../cost-estimates/model.ts";

export const CatalogSku = component(
  "CatalogSku",
  t.Object({
    ...catalogSkuDescriptorFields(),
    instance_family: t.String(),
    usage_unit: t.String({ description: "Unit of usage_quantity lines (hours for hour-priced SKUs)" }),
    is_available: t.Boolean({ description: "false: withdrawn by the provider" }),
    source: t.String({ description: "Where the price comes from" }),
    as_of: t.String({ description: "Date of the price source" }),
  }),
);

import { t } from "elysia";
import { component } from "../../../../../lib/http/openapiComponents.ts";

export const Organization = component(
  "Organization",
  t.Object({
    id: t.String({ format: "uuid" }),
    name: t.String(),
    parent_id: t.Union([t.String({ format: "uuid" }), t.Null()], { description: "The partner organization of a child organization" }),
    created_at: t.String({ format: "date-time" }),
  }),
);

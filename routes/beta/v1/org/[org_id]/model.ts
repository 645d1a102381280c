import { t } from "elysia";
import { component } from "../../../../../lib/http/openapiComponents.ts";

export const Organization = component(
  "Organization",
  t.Object({
    id: t.String({ format: "uuid" }),
    name: t.String(),
    parent_id: t.Union([t.String({ format: "uuid" }), t.Null()], { description: "The partner organization of a child organization" }),
    created_at: t.String({ format: "date-time" }),
    role: t.Union([t.String({ enum: ["viewer", "member", "admin"] }), t.Null()], {
      description: "The caller's role here (what their credential may do is its scopes ∩ this role's); null for an API key made by the CLI (no user)",
    }),
    child_orgs: t.Array(t.Object({ id: t.String({ format: "uuid" }), name: t.String() }), { description: "The child organizations, by name" }),
  }),
);

import { t } from "elysia";
import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { createEstimate, deleteEstimate, getEstimate, listEstimates, patchEstimate } from "../../../../../../lib/estimates/service.ts";
import { CreateEstimateBody, EstimateQuery, ListQuery, PatchEstimateBody } from "./model.ts";

const IdParams = t.Object({ org_id: t.String(), estimate_id: t.String({ format: "uuid" }) });
const tags = ["Cost estimates"];
const security = [{ bearer: [] }];

/** Cost estimates: saved baskets of catalog SKUs priced live (SPEC "Cost estimates"). */
export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix)
    .get(
      "",
      async ({ principal, query }) => {
        return listEstimates(s.db, principal.orgId, query.provider);
      },
      { scope: "estimates:read", query: ListQuery, detail: { tags, security, summary: "List cost estimates of a provider, most recently updated first" } },
    )
    .post(
      "",
      async ({ principal, body }) => {
        return createEstimate(s.db, principal.orgId, body);
      },
      { scope: "estimates:write", body: CreateEstimateBody, detail: { tags, security, summary: "Create a cost estimate (idempotent per source_draft_id)" } },
    )
    .get(
      "/:estimate_id",
      async ({ principal, params, query }) => {
        return getEstimate(s.db, principal.orgId, params.estimate_id, {
          includePricing: query.include_pricing ?? true,
          includeOptions: query.include_options ?? false,
          onlyMostFlexibleCommitmentType: query.only_most_flexible_commitment_type ?? false,
        });
      },
      { scope: "estimates:read", params: IdParams, query: EstimateQuery, detail: { tags, security, summary: "A cost estimate, priced live" } },
    )
    .patch(
      "/:estimate_id",
      async ({ principal, params, body }) => {
        return patchEstimate(s.db, principal.orgId, params.estimate_id, body);
      },
      { scope: "estimates:write", params: IdParams, body: PatchEstimateBody, detail: { tags, security, summary: "Rename or re-describe a cost estimate" } },
    )
    .delete(
      "/:estimate_id",
      async ({ principal, params, set }) => {
        await deleteEstimate(s.db, principal.orgId, params.estimate_id, s.now());
        set.status = 204;
        return null;
      },
      { scope: "estimates:write", params: IdParams, detail: { tags, security, summary: "Delete a cost estimate (soft delete; releases its source_draft_id)" } },
    ),
);

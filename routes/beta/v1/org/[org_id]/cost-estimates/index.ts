import { t } from "elysia";
import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { pagedList } from "../../../../../../lib/http/paging.ts";
import { expectedVersions, withEtag } from "../../../../../../lib/http/etag.ts";
import { createEstimate, deleteEstimate, getEstimate, listEstimatesPage, patchEstimate } from "../../../../../../lib/estimates/service.ts";
import { CostEstimate, CostEstimateSummary, CreateEstimateBody, EstimateQuery, ListQuery, PatchEstimateBody } from "./model.ts";
import { NO_CONTENT } from "../../../../../../lib/http/openapiComponents.ts";
import { freshnessOf } from "../../../../../../lib/catalog/freshness.ts";

const IdParams = t.Object({ org_id: t.String(), estimate_id: t.String({ format: "uuid" }) });
const tags = ["Cost estimates"];
/** Cost estimates: saved baskets of catalog SKUs priced live (SPEC "Cost estimates"). */
export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix)
    .get(
      "",
      async (ctx) => pagedList(ctx, s.config.publicUrl, (p) => listEstimatesPage(s.db, ctx.principal.orgId, ctx.query.provider, p)),
      { scope: "estimates:read", query: ListQuery, response: { 200: t.Array(CostEstimateSummary) }, detail: { tags, summary: "List cost estimates of a provider, most recently updated first" } },
    )
    .post(
      "",
      async ({ principal, body, request, set }) => {
        return withEtag({ request, set }, await createEstimate(s.db, principal.orgId, body, { freshness: freshnessOf(s) }));
      },
      { scope: "estimates:write", body: CreateEstimateBody, response: { 200: CostEstimate }, detail: { tags, summary: "Create a cost estimate (idempotent per source_draft_id)" } },
    )
    .get(
      "/:estimate_id",
      async ({ principal, params, query, request, set }) => {
        const estimate = await getEstimate(
          s.db,
          principal.orgId,
          params.estimate_id,
          query.include_pricing === false
            ? { includePricing: false }
            : { includeOptions: query.include_options ?? false, onlyMostFlexibleCommitmentType: query.only_most_flexible_commitment_type ?? false, freshness: freshnessOf(s) },
        );
        return withEtag({ request, set }, estimate);
      },
      { scope: "estimates:read", params: IdParams, query: EstimateQuery, response: { 200: CostEstimate }, detail: { tags, summary: "A cost estimate, priced live" } },
    )
    .patch(
      "/:estimate_id",
      async ({ principal, params, body, request, set }) => {
        return withEtag({ request, set }, await patchEstimate(s.db, principal.orgId, params.estimate_id, body, { freshness: freshnessOf(s) }, expectedVersions(request.headers)));
      },
      { scope: "estimates:write", params: IdParams, body: PatchEstimateBody, response: { 200: CostEstimate }, detail: { tags, summary: "Rename or re-describe a cost estimate" } },
    )
    .delete(
      "/:estimate_id",
      async ({ principal, params, set, request }) => {
        await deleteEstimate(s.db, principal.orgId, params.estimate_id, s.now(), expectedVersions(request.headers));
        set.status = 204;
        return null;
      },
      { scope: "estimates:write", params: IdParams, detail: { tags, responses: NO_CONTENT, summary: "Delete a cost estimate (soft delete; releases its source_draft_id)" } },
    ),
);

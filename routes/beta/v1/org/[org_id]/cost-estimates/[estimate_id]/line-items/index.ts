import { t } from "elysia";
import { defineRoutes, orgRoutes } from "../../../../../../../../lib/http/orgRoutes.ts";
import { expectedVersions, withEtag } from "../../../../../../../../lib/http/etag.ts";
import { addLines, deleteLine, getLine, patchLine } from "../../../../../../../../lib/estimates/service.ts";
import { AddLinesBody, CostEstimate, LineItem, LineItemWithPricing, LineQuery, PatchLineBody } from "../../model.ts";
import { NO_CONTENT } from "../../../../../../../../lib/http/openapiComponents.ts";
import { freshnessOf } from "../../../../../../../../lib/catalog/freshness.ts";

const EstimateParams = t.Object({ org_id: t.String(), estimate_id: t.String({ format: "uuid" }) });
const LineParams = t.Object({ org_id: t.String(), estimate_id: t.String({ format: "uuid" }), line_item_id: t.String({ format: "uuid" }) });
const tags = ["Cost estimates"];
/** Line items of a cost estimate. */
export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix)
    .post(
      "",
      async ({ principal, params, body, request, set }) => {
        return withEtag({ request, set }, await addLines(s.db, principal.orgId, params.estimate_id, body.line_items, { freshness: freshnessOf(s) }, expectedVersions(request.headers)));
      },
      { scope: "estimates:write", params: EstimateParams, body: AddLinesBody, response: { 200: CostEstimate }, detail: { tags, summary: "Add line items; returns the estimate" } },
    )
    .get(
      "/:line_item_id",
      async ({ principal, params, query, request, set }) => {
        const line = await getLine(s.db, principal.orgId, params.estimate_id, params.line_item_id, {
          onlyMostFlexibleCommitmentType: query.only_most_flexible_commitment_type ?? false,
          freshness: freshnessOf(s),
        });
        return withEtag({ request, set }, line);
      },
      { scope: "estimates:read", params: LineParams, query: LineQuery, response: { 200: LineItemWithPricing }, detail: { tags, summary: "One line item with its full commitment options grid" } },
    )
    .patch(
      "/:line_item_id",
      async ({ principal, params, body, request, set }) => {
        return withEtag({ request, set }, await patchLine(s.db, principal.orgId, params.estimate_id, params.line_item_id, body, expectedVersions(request.headers)));
      },
      { scope: "estimates:write", params: LineParams, body: PatchLineBody, response: { 200: LineItem }, detail: { tags, summary: "Update a line item (merge semantics)" } },
    )
    .delete(
      "/:line_item_id",
      async ({ principal, params, set, request }) => {
        await deleteLine(s.db, principal.orgId, params.estimate_id, params.line_item_id, expectedVersions(request.headers));
        set.status = 204;
        return null;
      },
      { scope: "estimates:write", params: LineParams, detail: { tags, responses: NO_CONTENT, summary: "Remove a line item" } },
    ),
);

import { t } from "elysia";
import { defineRoutes, orgRoutes } from "../../../../../../../../lib/http/orgRoutes.ts";
import { addLines, deleteLine, getLine, patchLine } from "../../../../../../../../lib/estimates/service.ts";
import { AddLinesBody, LineQuery, PatchLineBody } from "../../model.ts";

const EstimateParams = t.Object({ org_id: t.String(), estimate_id: t.String({ format: "uuid" }) });
const LineParams = t.Object({ org_id: t.String(), estimate_id: t.String({ format: "uuid" }), line_item_id: t.String({ format: "uuid" }) });
const tags = ["Cost estimates"];
const security = [{ bearer: [] }];

/** Line items of a cost estimate. */
export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix)
    .post(
      "",
      async ({ principal, params, body }) => {
        return addLines(s.db, principal.orgId, params.estimate_id, body.line_items);
      },
      { scope: "estimates:write", params: EstimateParams, body: AddLinesBody, detail: { tags, security, summary: "Add line items; returns the estimate" } },
    )
    .get(
      "/:line_item_id",
      async ({ principal, params, query }) => {
        return getLine(s.db, principal.orgId, params.estimate_id, params.line_item_id, {
          onlyMostFlexibleCommitmentType: query.only_most_flexible_commitment_type ?? false,
        });
      },
      { scope: "estimates:read", params: LineParams, query: LineQuery, detail: { tags, security, summary: "One line item with its full commitment options grid" } },
    )
    .patch(
      "/:line_item_id",
      async ({ principal, params, body }) => {
        return patchLine(s.db, principal.orgId, params.estimate_id, params.line_item_id, body);
      },
      { scope: "estimates:write", params: LineParams, body: PatchLineBody, detail: { tags, security, summary: "Update a line item (merge semantics)" } },
    )
    .delete(
      "/:line_item_id",
      async ({ principal, params, set }) => {
        await deleteLine(s.db, principal.orgId, params.estimate_id, params.line_item_id);
        set.status = 204;
        return null;
      },
      { scope: "estimates:write", params: LineParams, detail: { tags, security, summary: "Remove a line item" } },
    ),
);

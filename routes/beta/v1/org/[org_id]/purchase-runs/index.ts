import { t } from "elysia";
import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { pagedList } from "../../../../../../lib/http/paging.ts";
import { pageRuns } from "../../../../../../lib/purchasing/runs.ts";
import { ListRunsQuery, PurchaseRun } from "./model.ts";

/** Auto-purchase runs (one per template and execution date): read only, over lib/purchasing. */
export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix).get(
    "",
    async (ctx) => pagedList(ctx, s.config.publicUrl, (p) => pageRuns(s.db, ctx.principal.orgId, { templateId: ctx.query.template_id, status: ctx.query.status }, p)),
    {
      scope: "purchases:read",
      query: ListRunsQuery,
      response: { 200: t.Array(PurchaseRun) },
      detail: { tags: ["Purchases"], summary: "Auto-purchase runs, latest execution date first: what each scheduled slot did, with its plan and purchase" },
    },
  ),
);

import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { pageOfArray, pagedList } from "../../../../../../lib/http/paging.ts";
import { expectedVersions, withEtag } from "../../../../../../lib/http/etag.ts";
import { createTemplate, deleteTemplate, getTemplate, listTemplates, updateTemplate } from "../../../../../../lib/templates/service.ts";
import { t } from "elysia";
import { checkAutoPurchase, CommitmentPlanTemplate, CreateBody, IdParams, ListQuery, UpdateBody } from "./model.ts";
import { NO_CONTENT } from "../../../../../../lib/http/openapiComponents.ts";

const tags = ["Commitment plan templates"];
/** Commitment plan templates (SPEC rules 1–7): thin handlers over lib/templates. */
export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix)
    .get(
      "",
      async (ctx) =>
        pagedList(ctx, s.config.publicUrl, async (p) => pageOfArray(await listTemplates(s.db, ctx.principal.orgId, ctx.query.provider, ctx.query.segment_id?.toLowerCase(), s.now()), p)),
      { scope: "templates:read", query: ListQuery, response: { 200: t.Array(CommitmentPlanTemplate) }, detail: { tags, summary: "Templates of one segment (default: the provider-resources segment)" } },
    )
    .post(
      "",
      async ({ principal, body, request, set }) => {
        checkAutoPurchase(body.auto_purchase);
        return withEtag({ request, set }, await createTemplate(s.db, principal.orgId, { ...body, segment_id: body.segment_id?.toLowerCase() } as any, s.now()));
      },
      { scope: "templates:write", body: CreateBody, response: { 200: CommitmentPlanTemplate }, detail: { tags, summary: "Create a template (optionally on an auto-purchase schedule)" } },
    )
    .get(
      "/:template_id",
      async ({ principal, params, request, set }) => {
        return withEtag({ request, set }, await getTemplate(s.db, principal.orgId, params.template_id.toLowerCase(), s.now()));
      },
      { scope: "templates:read", params: IdParams, response: { 200: CommitmentPlanTemplate }, detail: { tags, summary: "One template" } },
    )
    .put(
      "/:template_id",
      async ({ principal, params, body, request, set }) => {
        checkAutoPurchase(body.auto_purchase);
        return withEtag({ request, set }, await updateTemplate(s.db, principal.orgId, params.template_id.toLowerCase(), body as any, s.now(), expectedVersions(request.headers)));
      },
      {
        scope: "templates:write",
        params: IdParams,
        body: UpdateBody,
        response: { 200: CommitmentPlanTemplate },
        detail: { tags, summary: "Merge-update a template (system templates: auto_purchase only)" },
      },
    )
    .delete(
      "/:template_id",
      async ({ principal, params, set, request }) => {
        await deleteTemplate(s.db, principal.orgId, params.template_id.toLowerCase(), expectedVersions(request.headers));
        set.status = 204;
        return new Response(null, { status: 204 });
      },
      { scope: "templates:write", params: IdParams, detail: { tags, responses: NO_CONTENT, summary: "Delete a custom template (system templates: 409)" } },
    ),
);

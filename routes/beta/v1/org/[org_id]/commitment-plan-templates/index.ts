import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { createTemplate, deleteTemplate, getTemplate, listTemplates, updateTemplate } from "../../../../../../lib/templates/service.ts";
import { checkAutoPurchase, CreateBody, IdParams, ListQuery, UpdateBody } from "./model.ts";

const tags = ["Commitment plan templates"];
const security: { [name: string]: string[] }[] = [{ bearer: [] }, { apiKey: [] }];

/** Commitment plan templates (SPEC rules 1–7): thin handlers over lib/templates. */
export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix)
    .get(
      "",
      async ({ principal, query }) => {
        return listTemplates(s.db, principal.orgId, query.provider, query.segment_id?.toLowerCase(), s.now());
      },
      { scope: "templates:read", query: ListQuery, detail: { tags, security, summary: "Templates of one segment (default: the provider-resources segment)" } },
    )
    .post(
      "",
      async ({ principal, body }) => {
        checkAutoPurchase(body.auto_purchase);
        return createTemplate(s.db, principal.orgId, { ...body, segment_id: body.segment_id?.toLowerCase() } as any, s.now());
      },
      { scope: "templates:write", body: CreateBody, detail: { tags, security, summary: "Create a template (optionally on an auto-purchase schedule)" } },
    )
    .get(
      "/:template_id",
      async ({ principal, params }) => {
        return getTemplate(s.db, principal.orgId, params.template_id.toLowerCase(), s.now());
      },
      { scope: "templates:read", params: IdParams, detail: { tags, security, summary: "One template" } },
    )
    .put(
      "/:template_id",
      async ({ principal, params, body }) => {
        checkAutoPurchase(body.auto_purchase);
        return updateTemplate(s.db, principal.orgId, params.template_id.toLowerCase(), body as any, s.now());
      },
      {
        scope: "templates:write",
        params: IdParams,
        body: UpdateBody,
        detail: { tags, security, summary: "Merge-update a template (system templates: auto_purchase only)" },
      },
    )
    .delete(
      "/:template_id",
      async ({ principal, params, set }) => {
        await deleteTemplate(s.db, principal.orgId, params.template_id.toLowerCase());
        set.status = 204;
        return new Response(null, { status: 204 });
      },
      { scope: "templates:write", params: IdParams, detail: { tags, security, summary: "Delete a custom template (system templates: 409)" } },
    ),
);

import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { requireScope } from "../../../../../../lib/auth/guard.ts";
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
        requireScope(principal, "templates:read");
        return listTemplates(s.db, principal.orgId, query.provider, query.segment_id?.toLowerCase(), s.now());
      },
      { query: ListQuery, detail: { tags, security, summary: "Templates of one segment (default: the provider-resources segment)" } },
    )
    .post(
      "",
      async ({ principal, body }) => {
        requireScope(principal, "templates:write");
        checkAutoPurchase(body.auto_purchase);
        return createTemplate(s.db, principal.orgId, { ...body, segment_id: body.segment_id?.toLowerCase() } as any, s.now());
      },
      { body: CreateBody, detail: { tags, security, summary: "Create a template (optionally on an auto-purchase schedule)" } },
    )
    .get(
      "/:template_id",
      async ({ principal, params }) => {
        requireScope(principal, "templates:read");
        return getTemplate(s.db, principal.orgId, params.template_id.toLowerCase(), s.now());
      },
      { params: IdParams, detail: { tags, security, summary: "One template" } },
    )
    .put(
      "/:template_id",
      async ({ principal, params, body }) => {
        requireScope(principal, "templates:write");
        checkAutoPurchase(body.auto_purchase);
        return updateTemplate(s.db, principal.orgId, params.template_id.toLowerCase(), body as any, s.now());
      },
      {
        params: IdParams,
        body: UpdateBody,
        detail: { tags, security, summary: "Merge-update a template (system templates: auto_purchase only)" },
      },
    )
    .delete(
      "/:template_id",
      async ({ principal, params, set }) => {
        requireScope(principal, "templates:write");
        await deleteTemplate(s.db, principal.orgId, params.template_id.toLowerCase());
        set.status = 204;
        return new Response(null, { status: 204 });
      },
      { params: IdParams, detail: { tags, security, summary: "Delete a custom template (system templates: 409)" } },
    ),
);

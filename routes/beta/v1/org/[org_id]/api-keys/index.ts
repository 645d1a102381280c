import { t } from "elysia";
import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { pageOfArray, pagedList } from "../../../../../../lib/http/paging.ts";
import { createOrgApiKey, listOrgApiKeys, revokeOrgApiKey } from "../../../../../../lib/auth/apiKeyAdmin.ts";
import { ApiKeyView, CreateApiKeyBody, CreatedApiKeyView, ListQuery } from "./model.ts";
import { NO_CONTENT } from "../../../../../../lib/http/openapiComponents.ts";

const tags = ["API keys"];

export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix)
    .get("", async (ctx) => pagedList(ctx, s.config.publicUrl, async (p) => pageOfArray(await listOrgApiKeys(s.db, ctx.principal, ctx.query.include_revoked ?? false), p)), {
      scope: "admin",
      query: ListQuery,
      response: { 200: t.Array(ApiKeyView) },
      detail: { tags, summary: "List the organization's API keys (never the secrets)" },
    })
    .post("", ({ principal, body }) => createOrgApiKey(s.db, principal, body), {
      scope: "admin",
      body: CreateApiKeyBody,
      response: { 200: CreatedApiKeyView },
      detail: { tags, summary: "Create an API key; the secret is shown once" },
    })
    .delete(
      "/:key_id",
      async ({ principal, params, set }) => {
        await revokeOrgApiKey(s.db, principal, params.key_id);
        set.status = 204;
      },
      {
        scope: "admin",
        params: t.Object({ org_id: t.String(), key_id: t.String({ format: "uuid" }) }),
        detail: { tags, responses: NO_CONTENT, summary: "Revoke an API key" },
      },
    ),
);

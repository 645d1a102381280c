import { t } from "elysia";
import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { pageOfArray, pagedList, PageQueryFields } from "../../../../../../lib/http/paging.ts";
import { connectionFreshness } from "../../../../../../lib/connections/freshness.ts";
import { BillingDataFreshness } from "./model.ts";

export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix).get("", async (ctx) => pagedList(ctx, s.config.publicUrl, async (p) => pageOfArray(await connectionFreshness(s.db, ctx.principal.orgId), p)), {
    scope: "reports:read",
    query: t.Object(PageQueryFields),
    response: { 200: t.Array(BillingDataFreshness) },
    detail: {
      tags: ["Billing connections"],
      summary: "How current the billing data is: each billing connection's status, last successful sync, newest imported month and last failure's cause (readable with reports:read: no settings, no error message)",
    },
  }),
);

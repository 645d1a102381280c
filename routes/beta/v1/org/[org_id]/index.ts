import { defineRoutes, orgRoutes } from "../../../../../lib/http/orgRoutes.ts";
import { readOrganization } from "../../../../../lib/orgs/service.ts";
import { Organization } from "./model.ts";

/** The caller's organization: any valid credential of the org may read it. */
export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix).get("", async ({ principal }) => readOrganization(s.handle, principal.orgId), {
    scope: "any",
    response: { 200: Organization },
    detail: { tags: ["Organization"], summary: "The organization of the path" },
  }),
);

import { defineRoutes, orgRoutes } from "../../../../../lib/http/orgRoutes.ts";
import { readOrganization } from "../../../../../lib/orgs/service.ts";
import { Organization } from "./model.ts";

/** The caller's organization, the caller's role in it and its child organizations: any valid credential of the org may read it. */
export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix).get("", async ({ principal }) => readOrganization(s.handle, principal.orgId, principal.userId), {
    scope: "any",
    response: { 200: Organization },
    detail: {
      tags: ["Organization"],
      summary: "The organization of the path",
      description:
        "With `role`, the role of the calling credential's user in this organization (null for an API key made by the CLI, which belongs to no user), and `child_orgs`, the organizations whose parent this one is (a credential is for one organization: a child's data needs a credential of that child).",
    },
  }),
);

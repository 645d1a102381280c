import { t } from "elysia";
import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { pagedList } from "../../../../../../lib/http/paging.ts";
import { NO_CONTENT } from "../../../../../../lib/http/openapiComponents.ts";
import { addMemberByEmail, changeMemberRole, pageMembers, removeMember } from "../../../../../../lib/orgs/members.ts";
import { AddMemberBody, ChangeMemberBody, ListMembersQuery, Member, MemberParams } from "./model.ts";

const tags = ["Members"];

/**
 * The organization's members and their roles (the console's Settings page), over lib/orgs/members.
 * Admin only, reads included: the list shows every member's email.
 */
export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix)
    .get("", async (ctx) => pagedList(ctx, s.config.publicUrl, (p) => pageMembers(s.db, ctx.principal.orgId, p)), {
      scope: "admin",
      query: ListMembersQuery,
      response: { 200: t.Array(Member) },
      detail: { tags, summary: "List the organization's members and their roles, oldest first" },
    })
    .post(
      "",
      async ({ principal, body, set }) => {
        const { member } = await addMemberByEmail(s.db, principal.orgId, body);
        set.status = 201;
        set.headers["location"] = `${prefix.replace(":org_id", principal.orgId)}/${member.user_id}`;
        return member;
      },
      {
        scope: "admin",
        body: AddMemberBody,
        response: { 201: Member },
        detail: {
          tags,
          summary: "Add a user to the organization by email",
          description:
            "Adds the user with this email (case-insensitive) with the given role; an unknown email becomes a new user without a password, who signs in by single sign-on or once an administrator sets a password. 201 with the member and its `Location`. 409 `already_member` when the user is already a member (change the role with PATCH). Honours `Idempotency-Key`.",
        },
      },
    )
    .patch("/:user_id", ({ principal, params, body }) => changeMemberRole(s.db, principal.orgId, params.user_id.toLowerCase(), body.role), {
      scope: "admin",
      params: MemberParams,
      body: ChangeMemberBody,
      response: { 200: Member },
      detail: {
        tags,
        summary: "Change a member's role",
        description:
          "Takes effect on the member's next request: their OAuth tokens and API keys hold their own scopes ∩ the new role's. 409 `last_admin` when this would leave the organization without an admin. 404 for a user who is not a member of this organization.",
      },
    })
    .delete(
      "/:user_id",
      async ({ principal, params, set }) => {
        await removeMember(s.db, principal.orgId, params.user_id.toLowerCase());
        set.status = 204;
      },
      {
        scope: "admin",
        params: MemberParams,
        detail: {
          tags,
          responses: NO_CONTENT,
          summary: "Remove a member from the organization",
          description:
            "The member's OAuth tokens, console sessions and API keys for this organization are refused from their next request on (the user account stays). 409 `last_admin` for the organization's last admin. 404 for a user who is not a member of this organization.",
        },
      },
    ),
);

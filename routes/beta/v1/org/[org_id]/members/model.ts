import { t } from "elysia";
import { component } from "../../../../../../lib/http/openapiComponents.ts";
import { PageQueryFields } from "../../../../../../lib/http/paging.ts";
import { Text, TextEnum } from "../../../../../../lib/http/text.ts";
import { MEMBER_ROLES } from "../../../../../../lib/orgs/members.ts";

export const MemberParams = t.Object({ org_id: t.String(), user_id: t.String({ format: "uuid" }) });
export const ListMembersQuery = t.Object({ ...PageQueryFields }, { additionalProperties: false });

const RoleField = TextEnum(MEMBER_ROLES, { description: "`viewer`, `member` or `admin` (what each may do: the scopes of DESIGN §3)" });

export const AddMemberBody = t.Object(
  {
    email: Text({ minLength: 3, maxLength: 320, description: "The user's email; an unknown address becomes a new user without a password (signs in by single sign-on, or once an administrator sets a password)" }),
    role: RoleField,
  },
  { additionalProperties: false },
);

export const ChangeMemberBody = t.Object({ role: RoleField }, { additionalProperties: false });

export const Member = component(
  "Member",
  t.Object({
    user_id: t.String({ format: "uuid" }),
    email: t.String(),
    name: t.Union([t.String(), t.Null()]),
    role: t.String({ enum: [...MEMBER_ROLES] }),
    created_at: t.String({ format: "date-time", description: "When the user became a member" }),
  }),
);

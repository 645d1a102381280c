/** Account management: the organization, its child organizations and its linked cloud accounts. */
import * as z from "zod";
import { listLinkedAccounts } from "../../billing/queries.ts";
import { childOrganizations, getOrganization } from "../../orgs/service.ts";
import { defineTool, providerEnum } from "./common.ts";

const org = z.looseObject({ id: z.string(), name: z.string(), parent_id: z.string().nullable(), created_at: z.string() });

export const linkedAccountsTool = defineTool({
  name: "list_linked_accounts",
  title: "Linked cloud accounts",
  description:
    "The organization's linked cloud accounts (AWS accounts, Azure subscriptions, GCP projects) discovered from its billing data, with their billing account and the child organization their costs are attributed to.",
  scopes: [],
  input: {
    provider: providerEnum.optional().describe("Only this cloud provider."),
  },
  output: {
    count: z.number().int(),
    by_provider: z.record(z.string(), z.number().int()),
    accounts: z.array(
      z.looseObject({
        provider: z.string(),
        account_id: z.string(),
        name: z.string().nullable(),
        billing_account_id: z.string().nullable(),
        billing_account_name: z.string().nullable(),
        child_org_id: z.string().nullable(),
        first_seen_at: z.string(),
      }),
    ),
  },
  async run(ctx, a) {
    const accounts = await listLinkedAccounts(ctx.s.db, ctx.orgId, a.provider);
    const byProvider: Record<string, number> = {};
    for (const x of accounts) byProvider[x.provider] = (byProvider[x.provider] ?? 0) + 1;
    return {
      structured: { count: accounts.length, by_provider: byProvider, accounts: accounts.map((x) => ({ ...x })) },
      summary: accounts.length ? `${accounts.length} linked account(s): ${Object.entries(byProvider).map(([p, n]) => `${p} ${n}`).join(", ")}.` : "No linked accounts yet: no billing data has been imported.",
    };
  },
});

export const organizationTool = defineTool({
  name: "get_organization",
  title: "Organization and access",
  description:
    "The organization this connection reads (name, parent, child organizations) and the permissions (scopes) granted to this connection. When a tool or data seems missing, the scopes explain it: sign out in the client and authenticate again with an account that has the needed role.",
  scopes: [],
  input: {},
  output: {
    organization: org,
    child_organizations: z.array(org),
    access: z.object({ credential: z.enum(["api_key", "oauth"]), scopes: z.array(z.string()) }),
  },
  async run(ctx) {
    const o = await getOrganization(ctx.s.db, ctx.orgId);
    const children = await childOrganizations(ctx.s.db, ctx.orgId);
    return {
      structured: { organization: { ...o }, child_organizations: children.map((c) => ({ ...c })), access: { credential: ctx.principal.kind, scopes: [...ctx.principal.scopes] } },
      summary: `Organization ${o.name} (${o.id})${children.length ? ` with ${children.length} child organization(s)` : ""}; scopes: ${ctx.principal.scopes.join(", ")}.`,
    };
  },
});

export const accountTools = [linkedAccountsTool, organizationTool];

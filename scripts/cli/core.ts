import { createOrganization, createUser, addMember, findUserByEmail, isUuid, listApiKeys } from "../../lib/orgs/service.ts";
import { createApiKey, revokeApiKey } from "../../lib/auth/apiKeys.ts";
import { seedDemo } from "../../lib/demo/seed.ts";
import { CliError, type CliCommand } from "./types.ts";
import { requiredOption, uuidOption } from "./args.ts";

const required = requiredOption;

export const coreCommands: CliCommand[] = [
  {
    group: "org",
    name: "create",
    summary: "Create an organization and an admin API key holding every scope",
    usage: "org create --name NAME [--parent ORG_ID] [--json]",
    options: { name: { type: "string" }, parent: { type: "string" } },
    async run(s, v) {
      return s.db.transaction(async (tx) => {
        const org = await createOrganization(tx, { name: required(v, "name"), parentId: v.parent ?? null });
        const key = await createApiKey(tx, { orgId: org.id, name: "admin key" });
        return { org_id: org.id, name: org.name, parent_id: org.parent_id, api_key: key.key };
      });
    },
    human: (r) => `Organization ${r.name} created: ${r.org_id}\nAdmin API key (shown once): ${r.api_key}`,
  },
  {
    group: "user",
    name: "create",
    summary: "Create a user who signs in with email and password",
    usage: "user create --email EMAIL --password PASSWORD [--name NAME] [--json]",
    options: { email: { type: "string" }, password: { type: "string" }, name: { type: "string" } },
    async run(s, v) {
      const u = await createUser(s.db, { email: required(v, "email"), password: required(v, "password"), name: v.name, emailVerified: true });
      return { user_id: u.id, email: u.email };
    },
    human: (r) => `User ${r.email} created: ${r.user_id}`,
  },
  {
    group: "member",
    name: "add",
    summary: "Give a user a role (viewer, member, admin) in an organization",
    usage: "member add --org ORG_ID --user EMAIL_OR_ID --role viewer|member|admin [--json]",
    options: { org: { type: "string" }, user: { type: "string" }, role: { type: "string" } },
    async run(s, v) {
      const org = uuidOption(v, "org");
      const who = required(v, "user");
      const user = isUuid(who) ? { id: who } : await findUserByEmail(s.db, who);
      if (!user) throw new CliError(`no user ${who}`);
      await addMember(s.db, { orgId: org, userId: user.id, role: required(v, "role") as any });
      return { org_id: org, user_id: user.id, role: v.role };
    },
    human: (r) => `User ${r.user_id} is now ${r.role} of ${r.org_id}`,
  },
  {
    group: "apikey",
    name: "create",
    summary: "Create an org API key (shown once)",
    usage: "apikey create --org ORG_ID [--scopes reports:read,estimates:write] [--name NAME] [--json]",
    options: { org: { type: "string" }, scopes: { type: "string" }, name: { type: "string" } },
    async run(s, v) {
      const org = uuidOption(v, "org");
      const scopes = v.scopes ? String(v.scopes).split(",").map((x) => x.trim()).filter(Boolean) : undefined;
      const k = await createApiKey(s.db, { orgId: org, scopes, name: v.name });
      return { key_id: k.id, api_key: k.key, scopes: k.scopes };
    },
    human: (r) => `API key ${r.key_id} (shown once): ${r.api_key}\nScopes: ${r.scopes.join(", ")}`,
  },
  {
    group: "apikey",
    name: "revoke",
    summary: "Revoke an API key by id",
    usage: "apikey revoke --id KEY_ID [--json]",
    options: { id: { type: "string" } },
    async run(s, v) {
      const id = uuidOption(v, "id", "a key id");
      await revokeApiKey(s.db, id);
      return { key_id: id, revoked: true };
    },
    human: (r) => `API key ${r.key_id} revoked`,
  },
  {
    group: "apikey",
    name: "list",
    summary: "List an organization's API keys (prefixes only)",
    usage: "apikey list --org ORG_ID [--json]",
    options: { org: { type: "string" } },
    async run(s, v) {
      const org = uuidOption(v, "org");
      return (await listApiKeys(s.db, org)).map((k) => ({ key_id: k.id, name: k.name, prefix: k.prefix, scopes: k.scopes, revoked: !!k.revokedAt }));
    },
    human: (rows: any[]) => rows.map((k) => `${k.key_id}  ${k.prefix}…  ${k.revoked ? "revoked" : "active"}  ${k.scopes.join(",")}`).join("\n"),
  },
  {
    group: "demo",
    name: "seed",
    summary: "Create the demo organization and its data (idempotent)",
    usage: "demo seed [--json]",
    options: {},
    async run(s) {
      const r = await seedDemo(s);
      return { org_id: r.orgId, created: r.created, api_key: r.apiKey ?? null };
    },
    human: (r) => `Demo org ${r.org_id}${r.created ? ` created; API key (shown once): ${r.api_key}` : " already existed"}`,
  },
];

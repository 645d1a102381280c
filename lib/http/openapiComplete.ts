/**
 * The last step of `/openapi.json`: what a linter (Redocly's recommended rules, Spectral's `oas`)
 * and a generated client need beyond the routes' own schemas — a root-level security (so `/docs`
 * offers a key field) and `security: []` on the public operations, the 413 every operation may
 * answer and the 415 of every JSON body, the OAuth endpoints' own errors, declared tags, a
 * description on every operation, the license and the contact.
 */
import { addTransportErrors } from "./openapiErrors.ts";

const METHODS = ["get", "post", "put", "patch", "delete"];

/** Operations anyone may call: no credential (their own protocol authenticates them, if anything does). */
const PUBLIC_PATHS = [/^\/healthz$/, /^\/readyz$/, /^\/oauth\//, /^\/\.well-known\//];

const TAG_DESCRIPTIONS: Record<string, string> = {
  "API keys": "The organization's API keys: create, list, revoke.",
  "Allocation reports": "Cost allocation reports by month, as JSON pages or whole-month CSV downloads.",
  "Assistant (MCP)": "The Model Context Protocol server the AI assistant calls (OAuth bearer tokens).",
  "Billing connections": "Connections to the providers' billing exports (AWS Data Exports, Azure cost exports, BigQuery FOCUS), synced on a schedule.",
  Budgets: "Monthly budgets with thresholds, and their state.",
  Catalog: "The price catalog: SKUs and their commitment offers.",
  "Commitment plan templates": "Rules the planner and the auto-purchase schedule follow.",
  "Commitment plans": "Generated plans: which commitments to buy, what they cost and save.",
  Commitments: "Reserved instances, savings plans and committed use discounts, with their cost and savings.",
  "Cost estimates": "What-if baskets of SKUs priced under every commitment option.",
  Costs: "Cost explorer queries over the billing data.",
  Events: "The organization's event log (also delivered to webhooks, Slack and email).",
  Members: "Who belongs to the organization, with which role.",
  Notifications: "Who is told what, by email.",
  OAuth: "The OAuth 2.1 authorization server of the assistant's clients (RFC 6749, 7009, 7591).",
  Operations: "Liveness and readiness of a replica.",
  Organization: "The organization itself and its settings.",
  Purchases: "Commitment purchases at the providers: their approval and their story.",
  "Purchasing connections": "Credentials that let commitops buy commitments at a provider (dry run until made live).",
  Segments: "Named subsets of the billing data the planner works on.",
  Support: "Support tickets, bug reports and feature requests.",
  "Webhook endpoints": "Where the organization's events are delivered, signed, with their delivery log.",
};

const OAUTH_ERROR = {
  "application/json": {
    schema: {
      type: "object",
      required: ["error"],
      properties: { error: { type: "string", description: "RFC 6749 §5.2 error code" }, error_description: { type: "string" } },
    },
  },
};
const HTML_ERROR = { "text/html": { schema: { type: "string", description: "A page that says what went wrong" } } };

export interface DocumentContact {
  /** The service's public URL (its operator's support lives in its console). */
  publicUrl: string;
}

export function completeDocument(doc: any, opts: DocumentContact): any {
  doc.info = {
    ...doc.info,
    contact: { name: "commitops support", url: `${opts.publicUrl}/app/support` },
    license: { name: "Proprietary", url: `${opts.publicUrl}/docs` },
  };
  doc.security = [{ bearer: [] }, { apiKey: [] }];
  const used = new Set<string>();
  for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
    for (const [method, op] of Object.entries<any>(item)) {
      if (!op || typeof op !== "object" || !METHODS.includes(method)) continue;
      if (PUBLIC_PATHS.some((p) => p.test(path))) op.security = [];
      // The Beta operations have theirs already (with their headers); the others here.
      addTransportErrors(op);
      if (path === "/oauth/token" || path === "/oauth/register" || path === "/oauth/revoke") {
        op.responses["400"] ??= { description: "The request is invalid (RFC 6749 §5.2, RFC 7591 §3.2.2)", content: OAUTH_ERROR };
        if (path !== "/oauth/register") op.responses["401"] ??= { description: "Client authentication failed (invalid_client)", content: OAUTH_ERROR };
      }
      if (path.startsWith("/oauth/authorize") || path.startsWith("/oauth/logout") || path === "/oauth/upstream/callback") {
        op.responses["400"] ??= { description: "The request cannot continue the sign-in", content: HTML_ERROR };
        op.responses["403"] ??= { description: "A failed security check (CSRF), or a sign-in the provider refused", content: HTML_ERROR };
      }
      if (!op.description) op.description = op.summary ? `${op.summary}.` : `${method.toUpperCase()} ${path}`;
      for (const t of op.tags ?? []) used.add(t);
    }
  }
  const declared = new Map<string, any>((doc.tags ?? []).map((t: any) => [t.name, t]));
  for (const name of [...used].sort()) if (!declared.has(name)) declared.set(name, { name, description: TAG_DESCRIPTIONS[name] ?? name });
  doc.tags = [...declared.values()];
  return doc;
}

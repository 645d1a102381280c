/**
 * Real resources for the fuzz suite (tests/foundation/fuzz.test.ts), created through the HTTP
 * API of a real server so fuzzed requests get past the 404 of an unknown id: catalog SKUs, cost
 * estimates with line items, custom and system commitment-plan templates, a stored plan, a support ticket, API
 * keys of several scopes, an OAuth client, a signed-in browser session, an OAuth access token,
 * FOCUS billing data for the reports and the MCP tool list.
 *
 * Resources come in two kinds: `stable` ids that every non-DELETE request may use, and
 * `disposable` pools that only DELETE requests use (so a fuzzed DELETE never removes what the
 * other operations need).
 */
import { join } from "node:path";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { importFocusFile } from "../../lib/billing/focus.ts";
import { generatePlan, savePlan } from "../../lib/planning/generate.ts";
import { getSegment } from "../../lib/segments/service.ts";
import { getTemplate } from "../../lib/templates/service.ts";
import { emitEvent } from "../../lib/events/emit.ts";
import type { TestContext } from "./app.ts";
import { FORM, Jar, REDIRECT, REST_RESOURCE, csrfFrom, form, makeUser, pkce } from "../oauth/helpers.ts";

export interface FuzzKeys {
  /** All scopes (the org's main key). */
  full: string;
  /** reports:read only. */
  reportsOnly: string;
  /** templates:read + estimates:read. */
  readOnly: string;
  /** A key of another organization (→ 403 on our paths). */
  foreign: string;
  /** An OAuth access token of a member of the org, for the Beta API (resource /beta/v1). */
  oauth: string | null;
}

export interface FuzzFixtures {
  base: string;
  orgId: string;
  otherOrgId: string;
  keys: FuzzKeys;
  /** Ids a request may use, by path parameter name. */
  stable: {
    estimate_id: string[];
    /** line_item_id values of stable.estimate_id[0]. */
    line_item_id: string[];
    template_id: string[];
    system_template_id: string[];
    report_type: string[];
    ticket_key: string[];
    key_id: string[];
    catalog_sku_id: string[];
    segment_id: string[];
    connection_id: string[];
    /** No purchase exists in the fuzz org: a well-formed id that answers 404 after every check. */
    purchase_id: string[];
    /** A stored commitment plan of the org (generated from a system template, as a run stores it). */
    plan_id: string[];
    /** A (non-admin) member of the org. */
    user_id: string[];
    /** A budget of the org. */
    budget_id: string[];
    /** A webhook endpoint of the org (at a name that never resolves) and a delivery of it. */
    endpoint_id: string[];
    delivery_id: string[];
    /** An event of the org. */
    event_id: string[];
  };
  /** Pools only DELETE requests draw from; each entry is one deletable thing. */
  disposable: {
    estimate_id: string[];
    /** [estimate_id, line_item_id] pairs. */
    line_item: [string, string][];
    template_id: string[];
    key_id: string[];
    connection_id: string[];
    user_id: string[];
    budget_id: string[];
    endpoint_id: string[];
  };
  /** Query parameters each report declares (from GET /allocation-reports). */
  reportParams: Record<string, { name: string; type?: string; values?: string[] }[]>;
  /** Public AWS catalog SKUs (the generator's line items use these, with provider aws). */
  awsSkuIds: string[];
  oauth: { clientId: string; redirectUri: string; cookie: Record<string, string>; csrf: string; authorizeQuery: string; refreshToken: string | null };
  /** MCP tools (name + JSON Schema of the arguments) from tools/list. */
  mcpTools: { name: string; inputSchema: any }[];
}

const SPEC_EXAMPLES = join(import.meta.dir, "../../data/focus/spec_examples");

async function call(base: string, method: string, path: string, key: string | null, body?: unknown, headers: Record<string, string> = {}) {
  const h: Record<string, string> = { ...headers };
  if (key) h.authorization = `Bearer ${key}`;
  if (body !== undefined) h["content-type"] ??= "application/json";
  const r = await fetch(base + path, { method, headers: h, body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body), redirect: "manual" });
  const text = await r.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: r.status, json, text, headers: r.headers };
}

async function ok(base: string, method: string, path: string, key: string | null, body?: unknown, headers?: Record<string, string>) {
  const r = await call(base, method, path, key, body, headers);
  if (r.status >= 300) throw new Error(`fuzz setup: ${method} ${path} → ${r.status} ${r.text.slice(0, 400)}`);
  return r;
}

/** Creates everything the fuzz cases reference, through `base` (the real server) where possible. */
export async function createFuzzFixtures(t: TestContext, base: string): Promise<FuzzFixtures> {
  const org = t.org;
  const P = `/beta/v1/org/${org.id}`;
  const other = await t.newOrg("Fuzz other org");
  const reportsOnly = (await createApiKey(t.s.db, { orgId: org.id, name: "fuzz reports", scopes: ["reports:read"] })).key;
  const readOnly = (await createApiKey(t.s.db, { orgId: org.id, name: "fuzz read-only", scopes: ["templates:read", "estimates:read"] })).key;

  // Catalog SKUs (the search seeds the public catalog on first use).
  const skus: Record<string, string[]> = {};
  for (const provider of ["aws", "azure", "gcp"]) {
    const r = await ok(base, "GET", `${P}/catalog-skus?provider=${provider}&page_size=4`, org.key);
    skus[provider] = (r.json as any[]).map((x) => x.catalog_sku_id ?? x.id);
  }
  const line = (id: string) => ({ catalog_sku_id: id, catalog_sku_org_id: "public", quantity: 2 });

  async function estimate(provider: string, name: string) {
    const r = await ok(base, "POST", `${P}/cost-estimates`, org.key, { provider, name, description: "fuzz", line_items: skus[provider]!.slice(0, 2).map(line) });
    return { id: r.json.id as string, lines: (r.json.line_items as any[]).map((l) => l.id as string) };
  }
  const stableEstimates = [await estimate("aws", "Fuzz AWS"), await estimate("gcp", "Fuzz GCP")];
  const disposableEstimates = [await estimate("aws", "Fuzz disposable 1"), await estimate("azure", "Fuzz disposable 2")];
  const lineHolder = await estimate("aws", "Fuzz line holder");
  const moreLines = await ok(base, "POST", `${P}/cost-estimates/${lineHolder.id}/line-items`, org.key, { line_items: skus.aws!.map(line) });
  const lineHolderLines = (moreLines.json.line_items as any[]).map((l) => l.id as string);

  // Templates: the system ones of each provider's default segment plus custom ones.
  const systemTemplates: string[] = [];
  const segments = new Set<string>();
  for (const provider of ["aws", "azure", "gcp"]) {
    const r = await ok(base, "GET", `${P}/commitment-plan-templates?provider=${provider}`, org.key);
    for (const tpl of r.json as any[]) {
      if (tpl.is_system_generated) systemTemplates.push(tpl.id);
      if (tpl.segment_id) segments.add(tpl.segment_id);
    }
  }
  async function template(name: string) {
    const r = await ok(base, "POST", `${P}/commitment-plan-templates`, org.key, {
      provider: "aws",
      name,
      description: "fuzz",
      configuration: { contract_specs: [{ commitment_type: "compute_savings_plan", contract_term: "one_year", payment_option: "no_upfront" }] },
      auto_purchase: null,
    });
    if (r.json.segment_id) segments.add(r.json.segment_id);
    return r.json.id as string;
  }
  const customTemplates = [await template("Fuzz custom 1"), await template("Fuzz custom 2")];
  const disposableTemplates = [await template("Fuzz disposable 1"), await template("Fuzz disposable 2"), await template("Fuzz disposable 3")];

  // Allocation reports with billing data (a FOCUS spec example) so the report SQL runs.
  await importFocusFile(t.s.db, org.id, `${SPEC_EXAMPLES}/commitment_discount_usage_scenario_3.csv`, {
    defaults: { ProviderName: "AWS", BillingAccountId: "ba-1", SubAccountId: "acct-1", SubAccountName: "Account One", BillingCurrency: "USD" },
  });
  const reports = (await ok(base, "GET", `${P}/allocation-reports`, org.key)).json as any[];
  const reportParams: FuzzFixtures["reportParams"] = {};
  for (const d of reports) {
    const params = (d.params ?? d.parameters ?? d.query_params ?? []) as any[];
    reportParams[d.report_type ?? d.type ?? d.id] = params.map((p) => ({ name: p.name, type: p.type, values: p.allowed_values ?? p.values ?? p.enum }));
  }

  // A support ticket to read back.
  const ticket = await ok(base, "POST", `${P}/support/bug-reports`, org.key, {
    summary: "Fuzz ticket",
    user_verbatim: "fuzz",
    what_happened: "fuzz",
    steps_to_reproduce: "fuzz",
    expected_behavior: "fuzz",
  });
  const ticketKey = ticket.json.ticket_key ?? ticket.json.key ?? ticket.json.ticket?.key;

  // A stored commitment plan (GET /commitment-plans/{plan_id}), generated and saved as an auto-purchase run does.
  const planTemplate = await getTemplate(t.s.db, org.id, systemTemplates[0]!, t.s.now());
  const planSegment = await getSegment(t.s.db, org.id, planTemplate.segment_id);
  const generated = await generatePlan(t.s.db, org.id, planSegment, planTemplate.configuration, t.s.now());
  const planId = await savePlan(t.s.db, {
    orgId: org.id,
    segmentId: planSegment.id,
    templateId: planTemplate.id,
    executionDate: null,
    status: "generated",
    statusReason: null,
    lookbackDays: planTemplate.configuration.lookback_days,
    maxUpfrontCost: planTemplate.configuration.max_upfront_cost,
    plan: generated,
  });

  // API keys: one to list, several to revoke.
  const keyIds: string[] = [];
  for (let i = 0; i < 4; i++) keyIds.push((await ok(base, "POST", `${P}/api-keys`, org.key, { name: `fuzz disposable ${i}`, scopes: ["reports:read"] })).json.id);

  // Members: one to read and change, several to remove.
  const memberIds: string[] = [];
  for (let i = 0; i < 4; i++) memberIds.push((await ok(base, "POST", `${P}/members`, org.key, { email: `fuzz.member.${i}@example.com`, role: "viewer" })).json.user_id);

  // Billing connections: an S3 export behind a name that never resolves (a test or sync fails fast as unreachable).
  const connectionIds: string[] = [];
  for (let i = 0; i < 5; i++) {
    const body = { name: `fuzz connection ${i}`, kind: "aws_data_exports", config: { bucket: "fuzz-billing", export_name: "focus", region: "us-east-1", access_key_id: "AKIAFUZZFUZZFUZZFUZZ", endpoint_url: "https://s3.fuzz.invalid" }, secrets: { secret_access_key: "fuzz-secret" } };
    connectionIds.push((await ok(base, "POST", `${P}/billing-connections`, org.key, body)).json.id);
  }

  // Budgets: one to read and change, several to delete.
  const budgetIds: string[] = [];
  for (let i = 0; i < 5; i++)
    budgetIds.push((await ok(base, "POST", `${P}/budgets`, org.key, { name: `fuzz budget ${i}`, amount: 100, currency: "USD", thresholds: [{ percent: 80, basis: "actual" }] })).json.id);

  // Webhook endpoints at a name that never resolves (a test message or delivery fails fast): one with a delivery to read, several to delete.
  const endpointIds: string[] = [];
  for (let i = 0; i < 5; i++) endpointIds.push((await ok(base, "POST", `${P}/webhook-endpoints`, org.key, { url: "https://hooks.fuzz.invalid/commitops", event_types: ["*"] })).json.id);
  const event = await t.s.db.transaction((tx) => emitEvent(tx, { orgId: org.id, type: "support.ticket_created", occurredAt: new Date(), data: {} }));
  const deliveryIds = (await t.s.handle.query<{ id: string }>("SELECT id FROM webhook_deliveries WHERE endpoint_id = $1", [endpointIds[0]])).map((r) => r.id);

  // OAuth: a registered client, a browser with a sign-in cookie and CSRF token, a signed-in
  // member, an access token for the Beta API and a refresh token.
  const client = (await ok(base, "POST", "/oauth/register", null, { client_name: "Fuzz client", redirect_uris: [REDIRECT] })).json;
  const user = await makeUser(t, [{ orgId: org.id, role: "admin" }]);
  const jar = new Jar();
  const { verifier, challenge } = pkce();
  const authorizeQuery = form({ response_type: "code", client_id: client.client_id, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: "S256", state: "fuzz", resource: REST_RESOURCE });
  let page = await fetch(`${base}/oauth/authorize?${authorizeQuery}`, { redirect: "manual" });
  jar.store(page);
  let csrf = csrfFrom(await page.text());
  const login = await fetch(`${base}/oauth/authorize`, {
    method: "POST",
    redirect: "manual",
    headers: { ...FORM, ...jar.header() },
    body: `${authorizeQuery}&${form({ action: "login", csrf_token: csrf, email: user.email, password: user.password })}`,
  });
  jar.store(login);
  page = await fetch(`${base}/oauth/authorize?${authorizeQuery}`, { headers: jar.header(), redirect: "manual" });
  csrf = csrfFrom(await page.text());
  const approve = await fetch(`${base}/oauth/authorize`, {
    method: "POST",
    redirect: "manual",
    headers: { ...FORM, ...jar.header() },
    body: `${authorizeQuery}&${form({ action: "approve", csrf_token: csrf, org_id: org.id })}`,
  });
  const code = new URL(approve.headers.get("location") ?? "http://x/").searchParams.get("code");
  let accessToken: string | null = null;
  let refreshToken: string | null = null;
  if (code) {
    const tok = await call(base, "POST", "/oauth/token", null, form({ grant_type: "authorization_code", client_id: client.client_id, code, redirect_uri: REDIRECT, code_verifier: verifier, resource: REST_RESOURCE }), FORM);
    accessToken = tok.json?.access_token ?? null;
    refreshToken = tok.json?.refresh_token ?? null;
  }

  // MCP tools and their argument schemas.
  const mcpHeaders = { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18" };
  const tools = await ok(base, "POST", "/mcp", org.key, { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }, mcpHeaders);
  const mcpTools = ((tools.json?.result?.tools ?? []) as any[]).map((x) => ({ name: x.name as string, inputSchema: x.inputSchema ?? {} }));

  return {
    base,
    orgId: org.id,
    otherOrgId: other.id,
    keys: { full: org.key, reportsOnly, readOnly, foreign: other.key, oauth: accessToken },
    stable: {
      estimate_id: stableEstimates.map((e) => e.id),
      line_item_id: stableEstimates[0]!.lines,
      template_id: [...customTemplates, ...systemTemplates],
      system_template_id: systemTemplates,
      report_type: Object.keys(reportParams),
      ticket_key: ticketKey ? [ticketKey] : [],
      key_id: keyIds.slice(0, 1),
      catalog_sku_id: Object.values(skus).flat(),
      segment_id: [...segments],
      connection_id: connectionIds.slice(0, 1),
      purchase_id: [crypto.randomUUID()],
      plan_id: [planId],
      user_id: memberIds.slice(0, 1),
      budget_id: budgetIds.slice(0, 1),
      endpoint_id: endpointIds.slice(0, 1),
      delivery_id: deliveryIds,
      event_id: [event!.id],
    },
    disposable: {
      estimate_id: disposableEstimates.map((e) => e.id),
      line_item: lineHolderLines.map((l) => [lineHolder.id, l] as [string, string]),
      template_id: [...disposableTemplates, ...systemTemplates.slice(0, 1)],
      key_id: keyIds.slice(1),
      connection_id: connectionIds.slice(1),
      user_id: memberIds.slice(1),
      budget_id: budgetIds.slice(1),
      endpoint_id: endpointIds.slice(1),
    },
    reportParams,
    awsSkuIds: skus.aws!,
    oauth: { clientId: client.client_id, redirectUri: REDIRECT, cookie: jar.header(), csrf, authorizeQuery, refreshToken },
    mcpTools,
  };
}

/**
 * The fuzz suite's HTTP side: the operations of the app's /openapi.json (with the inputs of the
 * OAuth and MCP endpoints, which the document lists without schemas), fast-check arbitraries of
 * requests for each, sending them to a real server, and the checks every answer must pass.
 *
 * A case is a valid-looking request (real org, real resource ids, a body generated from the
 * operation's schema, an all-scopes key) with exactly ONE change along one dimension — a path
 * parameter, the query, the body (typed mutation or raw text), the content type, a header or the
 * credential — so a failure names the one thing that broke the service.
 */
import fc from "fast-check";
import {
  applyFormMutation,
  applyJsonMutation,
  applyRawMutation,
  compact,
  formMutationArb,
  formText,
  fromSchema,
  isPlainObject,
  isValidJson,
  jsonDepth,
  jsonMutationArb,
  rawMutationArb,
  toFormEntries,
  toJsonText,
  type Hints,
  type JsonLike,
} from "./fuzzJson.ts";
import type { FuzzFixtures } from "./fuzzFixtures.ts";

// ---------------------------------------------------------------------------------------------
// Operations

export type Family = "beta" | "ops" | "mcp" | "oauth-api" | "oauth-browser";

export interface Operation {
  /** "PATCH /beta/v1/org/{org_id}/cost-estimates/{estimate_id}" */
  key: string;
  method: string;
  path: string;
  family: Family;
  pathParams: { name: string; schema: any }[];
  /** An object schema of the query parameters. */
  query: { properties: Record<string, any>; required: string[] };
  body?: { kind: "json" | "form"; schema: any };
  /** The scope the operation needs (Beta API, MCP); "all" = a key with every scope; "any" = any credential. */
  scope?: string;
}

export const JSON_LIMIT_DEPTH = 32;

function familyOf(path: string): Family {
  if (path.startsWith("/beta/")) return "beta";
  if (path === "/mcp") return "mcp";
  if (/^\/oauth\/(register|token|revoke)$/.test(path)) return "oauth-api";
  if (path.startsWith("/oauth/")) return "oauth-browser";
  return "ops";
}

/** Required scope per Beta operation (DESIGN §3), for a document without `x-required-scope`. */
export function scopeOf(method: string, path: string): string | undefined {
  const p = path.replace("/beta/v1/org/{org_id}", "");
  if (path === "/mcp") return "assistant:read";
  if (!path.startsWith("/beta/")) return undefined;
  if (p === "") return "any";
  if (p.startsWith("/api-keys")) return "all";
  if (p.startsWith("/allocation-reports")) return "reports:read";
  if (p.startsWith("/costs")) return "reports:read";
  if (p.startsWith("/commitments") || p.startsWith("/commitment-summary") || p.startsWith("/billing-data-freshness")) return "reports:read";
  if (p.startsWith("/members")) return "all";
  if (p === "/commitment-plans/preview") return "templates:read";
  if (p.startsWith("/catalog-skus")) return "estimates:read";
  if (p.startsWith("/support")) return "support:write";
  const write = method !== "GET";
  if (p.startsWith("/commitment-plan-templates")) return write ? "templates:write" : "templates:read";
  if (p.startsWith("/segments") || p.startsWith("/commitment-plans")) return write ? "templates:write" : "templates:read";
  if (p.startsWith("/cost-estimates")) return write ? "estimates:write" : "estimates:read";
  if (p.startsWith("/billing-connections") || p.startsWith("/purchasing-connections")) return write ? "connections:write" : "connections:read";
  if (p.startsWith("/purchases") || p.startsWith("/purchase-runs")) return write ? "purchases:write" : "purchases:read";
  if (p.startsWith("/budgets")) return write ? "budgets:write" : "budgets:read";
  if (p.startsWith("/webhook-endpoints")) return "webhooks:write";
  if (p.startsWith("/notification-preferences") || p.startsWith("/events")) return "events:read";
  return undefined;
}

const S = (extra: object = {}) => ({ type: "string", ...extra });

/** Inputs of the operations the document lists without parameters or body (they parse the raw request). */
function extraInputs(fx: FuzzFixtures): Record<string, Partial<Pick<Operation, "query" | "body">>> {
  const authorizeParams = Object.fromEntries(new URLSearchParams(fx.oauth.authorizeQuery));
  const authorizeProps = Object.fromEntries(Object.keys(authorizeParams).map((k) => [k, S({ enum: [authorizeParams[k]] })]));
  const scopeEnum = ["reports:read", "assistant:read", "reports:read assistant:read", "root:everything", ""];
  return {
    "GET /oauth/authorize": { query: { properties: { ...authorizeProps, scope: S({ enum: scopeEnum }) }, required: Object.keys(authorizeParams) } },
    "POST /oauth/authorize": {
      body: {
        kind: "form",
        schema: {
          type: "object",
          required: [...Object.keys(authorizeParams), "csrf_token", "action"],
          properties: {
            ...authorizeProps,
            csrf_token: S({ enum: [fx.oauth.csrf] }),
            action: S({ enum: ["login", "approve", "deny", "upstream", ""] }),
            email: S({ maxLength: 40 }),
            password: S({ maxLength: 20 }),
            org_id: S({ enum: [fx.orgId, fx.otherOrgId, "not-a-uuid"] }),
          },
        },
      },
    },
    "GET /oauth/logout": {},
    "POST /oauth/logout": {
      body: { kind: "form", schema: { type: "object", required: ["csrf_token"], properties: { csrf_token: S({ enum: [fx.oauth.csrf] }), continue: S({ enum: [fx.oauth.authorizeQuery, "", "a=b"] }) } } },
    },
    "GET /oauth/upstream/callback": { query: { properties: { code: S(), state: S(), error: S({ enum: ["access_denied", "server_error"] }), error_description: S() }, required: [] } },
    "POST /oauth/register": {
      body: {
        kind: "json",
        schema: {
          type: "object",
          required: ["redirect_uris"],
          properties: {
            redirect_uris: { type: "array", minItems: 1, maxItems: 3, items: S({ enum: [fx.oauth.redirectUri, "https://client.example/cb", "http://evil.example/cb", "javascript:alert(1)", "http://localhost/cb#x", "urn:x"] }) },
            client_name: S({ maxLength: 30 }),
            grant_types: { type: "array", items: S({ enum: ["authorization_code", "refresh_token", "client_credentials", "implicit"] }) },
            response_types: { type: "array", items: S({ enum: ["code", "token"] }) },
            token_endpoint_auth_method: S({ enum: ["none", "client_secret_basic", "client_secret_post", "private_key_jwt"] }),
            scope: S({ enum: scopeEnum }),
            client_uri: S({ enum: ["https://client.example", "ftp://x", "not a url"] }),
            logo_uri: S(),
            contacts: { type: "array", items: S() },
            software_id: S(),
          },
        },
      },
    },
    "POST /oauth/token": {
      body: {
        kind: "form",
        schema: {
          type: "object",
          required: ["grant_type", "client_id"],
          properties: {
            grant_type: S({ enum: ["authorization_code", "refresh_token", "client_credentials", "password", ""] }),
            client_id: S({ enum: [fx.oauth.clientId, "cid_unknown", ""] }),
            code: S(),
            redirect_uri: S({ enum: [fx.oauth.redirectUri, "https://elsewhere.example/cb"] }),
            code_verifier: S({ minLength: 0, maxLength: 24 }),
            refresh_token: S({ enum: [fx.oauth.refreshToken ?? "cor_none", "cor_garbage", ""] }),
            scope: S({ enum: scopeEnum }),
            resource: S({ enum: [`${"http://localhost"}/beta/v1`, "http://localhost/mcp", "https://evil.example/"] }),
          },
        },
      },
    },
    "POST /oauth/revoke": {
      body: {
        kind: "form",
        schema: {
          type: "object",
          required: ["token", "client_id"],
          properties: {
            token: S({ enum: ["cor_garbage", "cot_garbage", ""] }),
            token_type_hint: S({ enum: ["access_token", "refresh_token", "id_token"] }),
            client_id: S({ enum: [fx.oauth.clientId, "cid_unknown"] }),
          },
        },
      },
    },
    "POST /mcp": { body: { kind: "json", schema: mcpEnvelopeSchema(fx) } },
  };
}

/** JSON-RPC requests of the MCP server: mostly tools/call with arguments from the tool's own schema. */
function mcpEnvelopeSchema(fx: FuzzFixtures) {
  const calls = fx.mcpTools.map((tool) => ({
    type: "object",
    required: ["jsonrpc", "id", "method", "params"],
    properties: {
      jsonrpc: { enum: ["2.0"] },
      id: { type: "integer", minimum: 1, maximum: 1000 },
      method: { enum: ["tools/call"] },
      params: { type: "object", required: ["name", "arguments"], properties: { name: { enum: [tool.name] }, arguments: { type: "object", ...tool.inputSchema } } },
    },
  }));
  const other = {
    type: "object",
    required: ["jsonrpc", "id", "method"],
    properties: {
      jsonrpc: { enum: ["2.0", "1.0"] },
      id: { type: ["integer", "string", "null"], maximum: 1000 },
      method: { enum: ["tools/list", "initialize", "ping", "resources/list", "prompts/list", "notifications/initialized", "x/unknown"] },
      params: { type: "object", properties: { protocolVersion: { enum: ["2025-06-18", "2024-11-05", "1999-01-01"] }, capabilities: { type: "object", properties: {} }, clientInfo: { type: "object", required: ["name", "version"], properties: { name: S(), version: S() } } } },
    },
  };
  return { anyOf: [...calls, ...calls, other] };
}

/** The operations of the document, with their inputs. */
export function operationsOf(doc: any, fx: FuzzFixtures): Operation[] {
  const extra = extraInputs(fx);
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
    for (const [m, op] of Object.entries<any>(item)) {
      if (!["get", "post", "put", "patch", "delete"].includes(m)) continue;
      const method = m.toUpperCase();
      const key = `${method} ${path}`;
      const params: any[] = op.parameters ?? [];
      const query = { properties: {} as Record<string, any>, required: [] as string[] };
      for (const p of params.filter((x) => x.in === "query")) {
        query.properties[p.name] = p.schema ?? {};
        if (p.required) query.required.push(p.name);
      }
      const jsonBody = op.requestBody?.content?.["application/json"]?.schema;
      const o: Operation = {
        key,
        method,
        path,
        family: familyOf(path),
        pathParams: params.filter((x) => x.in === "path").map((x) => ({ name: x.name, schema: x.schema ?? {} })),
        query,
        body: jsonBody ? { kind: "json", schema: jsonBody } : undefined,
        // The document's `x-required-scope` when it has one ("admin" = every scope), else DESIGN §3.
        scope: op["x-required-scope"] === "admin" ? "all" : (op["x-required-scope"] ?? scopeOf(method, path)),
      };
      const e = extra[key];
      if (e?.query) o.query = { properties: { ...o.query.properties, ...e.query.properties }, required: [...new Set([...o.query.required, ...e.query.required])] };
      if (e?.body && !o.body) o.body = e.body;
      ops.push(o);
    }
  }
  return ops;
}

// ---------------------------------------------------------------------------------------------
// Cases

export type AuthKind = "full" | "none" | "garbage" | "malformed header" | "foreign org key" | "reports:read key" | "read-only key" | "x-api-key header" | "oauth token";

export interface FuzzCase {
  op: Operation;
  url: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  auth: AuthKind;
  dimension: "none" | "path" | "query" | "body" | "raw body" | "content type" | "header" | "auth";
  /** What was changed, in words. */
  mutation: string;
  /** Statuses DESIGN prescribes for this particular change, when it does. */
  expect?: { statuses: number[]; why: string };
  /** Text a response may legitimately echo (markers found in it are not leaks). */
  requestText: string;
  /** A prototype-named key added at the top level of a closed body: the 422 must name it. */
  unknownKey?: string;
}

export function bodyBytes(body: string | Uint8Array | undefined): number {
  if (body === undefined) return 0;
  return typeof body === "string" ? Buffer.byteLength(body) : body.byteLength;
}

/** A request as a report shows it: method, URL, headers (secrets cut) and the body with long runs folded. */
export function describeCase(c: FuzzCase): string {
  const headers = Object.entries(c.headers)
    .map(([k, v]) => `${k}: ${/authorization|x-api-key|cookie/i.test(k) ? v.slice(0, 14) + "…" : compact(v, 120)}`)
    .join("; ");
  const body = c.body === undefined ? "(none)" : typeof c.body === "string" ? compact(c.body, 500) : `bytes ${compact(new TextDecoder().decode(c.body), 300)}`;
  return [
    `${c.op.method} ${compact(c.url, 400)}`,
    `  change: [${c.dimension}] ${c.mutation}; credential: ${c.auth}`,
    `  headers: ${headers || "(none)"}`,
    `  body (${bodyBytes(c.body)} bytes): ${body}`,
  ].join("\n");
}

/** Malformed path parameter values; `routable: false` ones may not reach the route at all. */
const BAD_PATH_VALUES: { value: string; routable: boolean }[] = [
  { value: "not-a-uuid", routable: true },
  { value: "%00", routable: true },
  { value: "%ZZ", routable: true },
  { value: "%ED%A0%80", routable: true },
  { value: "%C3%A9t%C3%A9", routable: true },
  { value: "x".repeat(5000), routable: true },
  { value: "constructor", routable: true },
  { value: "__proto__", routable: true },
  { value: "toString", routable: true },
  { value: "hasOwnProperty", routable: true },
  { value: "null", routable: true },
  { value: "-1", routable: true },
  { value: "1e308", routable: true },
  { value: "00000000-0000-0000-0000-000000000000", routable: true },
  { value: "%0A%0D", routable: true },
  { value: "%20", routable: true },
  { value: "'%20OR%201=1--", routable: true },
  { value: "..", routable: false },
  { value: "a%2Fb", routable: false },
  { value: "", routable: false },
];

/** Variants of a route's path: the router must answer 404/405 or the route itself, never worse. */
const ROUTE_SHAPES: [string, (path: string) => string][] = [
  ["trailing slash", (p) => `${p}/`],
  ["doubled slashes", (p) => p.replace(/\//g, "//")],
  ["upper-case path", (p) => p.toUpperCase()],
  ["extension .json", (p) => `${p}.json`],
  ["matrix parameter ;x=1", (p) => `${p};x=1`],
  ["encoded dot segment /%2e", (p) => `${p}/%2e`],
  ["encoded traversal /..%2f..%2fhealthz", (p) => `${p}/..%2f..%2fhealthz`],
  ["encoded slash in the path", (p) => p.replace(/(.)\/([^/]*)$/, "$1%2F$2")],
  ["trailing %00", (p) => `${p}%00`],
  ["extra segment", (p) => `${p}/extra`],
  ["backslash", (p) => p.replace(/(.)\/([^/]*)$/, "$1\\$2")],
];

const CONTENT_TYPES = [
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data",
  "multipart/form-data; boundary=fuzz",
  "application/xml",
  "application/octet-stream",
  "(none)",
  "application/json; charset=utf-16",
  "application/json; charset=latin1",
  "APPLICATION/JSON",
  "application/merge-patch+json",
  "application/json, text/plain",
  "text/json",
  ";",
];

const HEADER_CHANGES: [string, string][] = [
  ["idempotency-key", "x".repeat(300)],
  ["idempotency-key", ""],
  ["idempotency-key", "a b\tc"],
  ["if-match", '"garbage"'],
  ["if-match", "*"],
  ["if-match", 'W/"x", "y"'],
  ["if-none-match", "*"],
  ["if-none-match", '"x"'],
  ["accept", "text/csv"],
  ["accept", "application/xml"],
  ["accept", "*/*;q=0"],
  ["accept", "garbage/;;"],
  ["x-request-id", "r".repeat(400)],
  ["content-encoding", "gzip"],
  ["content-encoding", "br"],
  ["origin", "http://evil.example"],
  ["x-forwarded-for", "not-an-ip, 999.1.1.1"],
  ["cookie", "commitops_login=garbage; __proto__=x"],
  ["range", "bytes=0-1"],
  ["mcp-protocol-version", "1999-01-01"],
];

function authHeaders(fx: FuzzFixtures, auth: AuthKind): Record<string, string> {
  switch (auth) {
    case "full":
      return { authorization: `Bearer ${fx.keys.full}` };
    case "none":
      return {};
    case "garbage":
      return { authorization: "Bearer co_garbagegarbagegarbagegarbagegarbage" };
    case "malformed header":
      return { authorization: "Basic Zm9vOmJhcg==, Bearer" };
    case "foreign org key":
      return { authorization: `Bearer ${fx.keys.foreign}` };
    case "reports:read key":
      return { authorization: `Bearer ${fx.keys.reportsOnly}` };
    case "read-only key":
      return { authorization: `Bearer ${fx.keys.readOnly}` };
    case "x-api-key header":
      return { "x-api-key": fx.keys.full };
    case "oauth token":
      return fx.keys.oauth ? { authorization: `Bearer ${fx.keys.oauth}` } : {};
  }
}

const AUTH_CHANGES: AuthKind[] = ["none", "garbage", "malformed header", "foreign org key", "reports:read key", "read-only key", "x-api-key header", "oauth token"];

const KEY_SCOPES: Partial<Record<AuthKind, string[]>> = {
  "reports:read key": ["reports:read"],
  "read-only key": ["templates:read", "estimates:read"],
};

/** The status DESIGN §3/§12 prescribes when the credential alone decides ("auth first"). */
function authExpectation(op: Operation, auth: AuthKind): FuzzCase["expect"] {
  if (op.family !== "beta" && op.family !== "mcp") return undefined;
  if (auth === "none" || auth === "garbage" || auth === "malformed header") return { statuses: [401], why: "no valid credential → 401, decided before anything else (DESIGN §12 auth first)" };
  if (auth === "foreign org key" && op.family === "beta") return { statuses: [403], why: "credential of another organization → 403 before anything else (DESIGN §12)" };
  if (auth === "oauth token" && op.family === "mcp") return { statuses: [401], why: "an OAuth token issued for /beta/v1 is not valid for /mcp (RFC 8707 audience) → 401" };
  const scopes = KEY_SCOPES[auth];
  if (scopes && op.scope && op.scope !== "any" && (op.scope === "all" || !scopes.includes(op.scope)))
    return { statuses: [403], why: `a key without ${op.scope === "all" ? "every scope" : op.scope} → 403 before validation (DESIGN §12 auth first)` };
  return undefined;
}

/** Real values of each path parameter; DELETE takes the last parameter from the disposable pools. */
function pathValuesArb(op: Operation, fx: FuzzFixtures): fc.Arbitrary<Record<string, string>> {
  const names = op.pathParams.map((p) => p.name);
  const real: Record<string, readonly string[]> = { org_id: [fx.orgId], ...fx.stable };
  if (op.method === "DELETE") {
    const last = names[names.length - 1];
    if (last === "line_item_id") return fc.constantFrom(...fx.disposable.line_item).map(([estimate_id, line_item_id]) => ({ org_id: fx.orgId, estimate_id, line_item_id }));
    if (last && last in fx.disposable) {
      const pool = (fx.disposable as any)[last] as string[];
      return fc.record(Object.fromEntries(names.map((n) => [n, n === last ? fc.constantFrom(...pool) : fc.constantFrom(...(real[n] ?? ["x"]))])));
    }
  }
  return fc.record(Object.fromEntries(names.map((n) => [n, fc.constantFrom(...(real[n]?.length ? real[n]! : ["x"]))])));
}

function fillPath(path: string, values: Record<string, string>): string {
  return path.replace(/\{(\w+)\}/g, (_, n) => (values[n] ?? "x").replace(/[^A-Za-z0-9%._~!$&'()*+,;=:@-]/g, encodeURIComponent));
}

function hintsOf(fx: FuzzFixtures): Hints {
  return {
    // AWS throughout, so SKUs, providers and commitment types agree and valid requests succeed.
    provider: ["aws"],
    commitment_type: ["compute_savings_plan", "ec2_instance_savings_plan", "reserved_instance"],
    catalog_sku_id: fx.awsSkuIds,
    redirect_uris: [fx.oauth.redirectUri, "https://client.example/cb"],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: ["none"],
    catalog_sku_org_id: ["public"],
    segment_id: fx.stable.segment_id,
    estimate_id: fx.stable.estimate_id,
    template_id: fx.stable.template_id,
    account_id: ["acct-1", "ba-1"],
    billing_account_id: ["ba-1"],
    year: ["2023"],
    month: ["1"],
  };
}

/** Query parameters of GET /allocation-reports/{report_type}: the report's own ones too. */
function reportQuerySchema(fx: FuzzFixtures): Record<string, any> {
  const props: Record<string, any> = {};
  for (const params of Object.values(fx.reportParams))
    for (const p of params) if (!(p.name in props)) props[p.name] = p.values ? { type: "string", enum: p.values } : p.type === "integer" ? { type: "integer", minimum: 1, maximum: 2100 } : { type: "string", maxLength: 12 };
  props.year = { type: "string", enum: ["2023", "2026", "1999"] };
  props.month = { type: "string", enum: ["1", "3", "12"] };
  props.format = { type: "string", enum: ["json", "csv"] };
  props.provider = { type: "string", enum: ["aws", "azure", "gcp"] };
  return props;
}

type Dimension = FuzzCase["dimension"];

/**
 * Requests for one operation. Weights favour the body of operations that take one, and always
 * leave room for unchanged (valid) requests so the handlers' happy paths run under the same checks.
 */
export function caseArb(op: Operation, fx: FuzzFixtures, maxBodyBytes: number): fc.Arbitrary<FuzzCase> {
  const hints = hintsOf(fx);
  const reports = op.path.includes("/allocation-reports/{report_type}");
  const queryProps = reports ? { ...op.query.properties, ...reportQuerySchema(fx) } : op.query.properties;
  const required = op.path.endsWith("/{report_type}") ? [...op.query.required, "year", "month"] : op.query.required;
  const queryArb = fromSchema({ type: "object", properties: queryProps, required }, hints);
  const bodyArb = op.body ? fromSchema(op.body.schema, hints) : fc.constant(undefined);
  const canSendBody = op.method !== "GET";
  const dims: { weight: number; arbitrary: fc.Arbitrary<Dimension> }[] = [
    { weight: 2, arbitrary: fc.constant("none") },
    { weight: 2, arbitrary: fc.constant("path") },
    { weight: 2, arbitrary: fc.constant("query") },
    { weight: op.body ? 7 : 0, arbitrary: fc.constant("body") },
    { weight: canSendBody ? 3 : 0, arbitrary: fc.constant("raw body") },
    { weight: op.body ? 2 : 0, arbitrary: fc.constant("content type") },
    { weight: 1, arbitrary: fc.constant("header") },
    { weight: 2, arbitrary: fc.constant("auth") },
  ];
  const dimensionArb = fc.oneof(...dims.filter((d) => d.weight > 0));

  return fc
    .record({
      dimension: dimensionArb,
      pathValues: pathValuesArb(op, fx),
      query: queryArb,
      body: bodyArb,
      bodyMutation: jsonMutationArb,
      rawMutation: rawMutationArb,
      formMutation: formMutationArb(maxBodyBytes + 100_000),
      badPath: fc.record({ param: fc.nat(9), value: fc.constantFrom(...BAD_PATH_VALUES), uuid: fc.uuid(), shape: fc.oneof({ weight: 3, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom(...ROUTE_SHAPES) }) }),
      contentType: fc.constantFrom(...CONTENT_TYPES),
      header: fc.constantFrom(...HEADER_CHANGES),
      auth: fc.constantFrom(...AUTH_CHANGES),
      idempotencyKey: fc.uuid(),
      authBody: fc.constantFrom("valid" as const, "typed" as const, "raw" as const),
    })
    .map((g): FuzzCase => {
      const c = buildCase(op, fx, g, maxBodyBytes);
      Object.defineProperty(c, fc.toStringMethod, { value: () => describeCase(c), enumerable: false });
      return c;
    });
}

function buildCase(op: Operation, fx: FuzzFixtures, g: any, maxBodyBytes: number): FuzzCase {
  const dimension: Dimension = g.dimension;
  let mutation = "none (a valid request)";
  let expect: FuzzCase["expect"];
  const pathValues: Record<string, string> = { ...g.pathValues };
  let pathBadRoutable = true;

  // Path: a malformed parameter, another org, an unknown id, or the route's shape
  let shape: ((path: string) => string) | undefined;
  if (dimension === "path" && (g.badPath.shape || !op.pathParams.length)) {
    const [name, fn] = (g.badPath.shape ?? ROUTE_SHAPES[g.badPath.param % ROUTE_SHAPES.length]) as [string, (p: string) => string];
    shape = fn;
    mutation = `route shape: ${name}`;
  } else if (dimension === "path") {
    const p = op.pathParams[g.badPath.param % op.pathParams.length]!;
    const bad = g.badPath.value as { value: string; routable: boolean };
    // Half the changes of org_id are another org's real id (→ 403), the rest malformed values.
    const value = p.name === "org_id" && g.badPath.param % 2 === 0 ? fx.otherOrgId : p.name !== "org_id" && g.badPath.param % 3 === 0 ? g.badPath.uuid : bad.value;
    pathValues[p.name] = value;
    pathBadRoutable = value === fx.otherOrgId || value === g.badPath.uuid || bad.routable;
    mutation = `path parameter ${p.name} = ${JSON.stringify(compact(value, 40))}${value === fx.otherOrgId ? " (another org)" : value === g.badPath.uuid ? " (unknown id)" : ""}`;
    const uuidParam = p.schema?.format === "uuid" || typeof p.schema?.pattern === "string";
    if (op.family === "beta" && p.name === "org_id" && pathBadRoutable) expect = { statuses: [403], why: "a path org other than the credential's → 403 (DESIGN §4)" };
    else if (op.family === "beta" && uuidParam && value !== g.badPath.uuid && bad.routable && !/^0{8}-/.test(value)) expect = { statuses: [400], why: `a malformed ${p.name} → 400 invalid_parameter (DESIGN §4)` };
    else if (op.family === "beta" && value === g.badPath.uuid) expect = { statuses: [404], why: `an unknown ${p.name} → 404 (DESIGN §4)` };
  }
  const path = shape ? shape(fillPath(op.path, pathValues)) : fillPath(op.path, pathValues);

  // Query (a report takes only its own parameters; its periods no year or month)
  let queryEntries: [string, string, boolean?][] = toFormEntries(g.query as JsonLike);
  const report = Object.hasOwn(fx.reportParams, pathValues.report_type ?? "") ? fx.reportParams[pathValues.report_type!] : undefined;
  if (op.path.includes("/allocation-reports/{report_type}") && report) {
    const allowed = new Set(report.map((p) => p.name));
    if (op.path.endsWith("/periods")) ["year", "month", "format"].forEach((k) => allowed.delete(k));
    queryEntries = queryEntries.filter(([k]) => allowed.has(k));
  }
  if (dimension === "query") {
    const r = applyFormMutation(queryEntries as [string, string][], { ...g.formMutation, ...(g.formMutation.kind === "huge value" ? { size: Math.min(g.formMutation.size, 8_000) } : {}) });
    queryEntries = r.entries;
    mutation = `query: ${r.label}`;
  }
  const qs = formText(queryEntries);
  const url = `${fx.base}${path}${qs ? `?${qs}` : ""}`;

  // Headers and credential
  const auth: AuthKind = dimension === "auth" ? g.auth : op.family === "beta" || op.family === "mcp" ? "full" : "none";
  const headers: Record<string, string> = { ...authHeaders(fx, auth) };
  if (op.family === "mcp") headers.accept = "application/json, text/event-stream";
  if (op.family === "oauth-browser") Object.assign(headers, fx.oauth.cookie);
  if (op.method === "POST" && op.family === "beta") headers["idempotency-key"] = g.idempotencyKey;
  if (dimension === "auth") mutation = `credential: ${auth}`;
  if (dimension === "header") {
    const [k, v] = g.header as [string, string];
    headers[k] = v;
    mutation = `header ${k}: ${compact(v, 40)}`;
  }

  // Body
  let body: string | Uint8Array | undefined;
  let contentType: string | undefined;
  let protoTopKey: string | undefined;
  // With another credential the body may be broken too: the credential must still decide first.
  const typedBody = dimension === "body" || (dimension === "auth" && g.authBody === "typed");
  const rawBody = dimension === "raw body" || (dimension === "auth" && g.authBody === "raw");
  const bodyLabel = (label: string) => (dimension === "auth" ? `${mutation}, and ${label}` : label);
  if (op.body?.kind === "json") {
    let value = g.body as JsonLike;
    if (typedBody) {
      const r = applyJsonMutation(value, g.bodyMutation);
      value = r.value;
      mutation = bodyLabel(`body: ${r.label}`);
      if (g.bodyMutation.kind === "prototype key" && r.label.endsWith("at (root)") && op.body.schema?.additionalProperties === false) protoTopKey = g.bodyMutation.key;
    }
    body = toJsonText(value);
    contentType = "application/json";
  } else if (op.body?.kind === "form") {
    let entries: [string, string, boolean?][] = toFormEntries(g.body as JsonLike);
    if (typedBody) {
      const r = applyFormMutation(entries as [string, string][], g.formMutation);
      entries = r.entries;
      mutation = bodyLabel(`form: ${r.label}`);
    }
    body = formText(entries);
    contentType = "application/x-www-form-urlencoded";
  }
  if (rawBody && op.method !== "GET") {
    const r = applyRawMutation(typeof body === "string" && body.startsWith("{") ? body : "{}", g.rawMutation);
    body = r.body;
    contentType = "application/json";
    mutation = bodyLabel(`raw body: ${r.label}`);
  }
  if (dimension === "content type" && body !== undefined) {
    mutation = `content-type: ${g.contentType}`;
    if (g.contentType === "(none)") {
      body = new TextEncoder().encode(body as string);
      contentType = undefined;
    } else contentType = g.contentType;
  }
  if (contentType) headers["content-type"] = contentType;

  // What DESIGN prescribes for this change (only where one change decides the status).
  const size = bodyBytes(body);
  if (dimension === "auth") {
    expect = authExpectation(op, auth);
    // Refusing an over-limit body before looking at the credential is as good.
    if (expect && size > maxBodyBytes) expect = { statuses: [...expect.statuses, 413], why: `${expect.why}; or 413 for the ${size}-byte body` };
  } else if (size > maxBodyBytes) expect = { statuses: [413], why: `a body of ${size} bytes > MAX_BODY_BYTES ${maxBodyBytes} → 413 (DESIGN §12)` };
  else if (op.family === "beta" && op.body?.kind === "json" && contentType === "application/json" && typeof body === "string" && (dimension === "body" || dimension === "raw body")) {
    const shape = jsonShape(body);
    if (shape === "malformed") expect = { statuses: [400], why: "malformed JSON → 400 invalid_request (DESIGN §4)" };
    else if (jsonDepth(body) > JSON_LIMIT_DEPTH) expect = { statuses: [400], why: `JSON nested ${jsonDepth(body)} deep > ${JSON_LIMIT_DEPTH} → 400 (DESIGN §12)` };
    else if (shape === "not an object") expect = { statuses: [422], why: "a body that is not a JSON object fails validation → 422 (DESIGN §4)" };
    else if (protoTopKey) expect = { statuses: [422], why: `\`${protoTopKey}\` is an unknown field → 422 naming it (DESIGN §12)` };
  }
  const requestText = `${url}\n${JSON.stringify(headers)}\n${typeof body === "string" ? body.slice(0, 200_000) : ""}`;
  return { op, url, headers, body, auth, dimension, mutation, expect, requestText, unknownKey: protoTopKey };
}

/** "object", "not an object" (valid JSON, or an empty body) or "malformed"; a leading BOM is tolerated either way. */
function jsonShape(text: string): "object" | "not an object" | "malformed" | "bom" {
  if (text.trim() === "") return "not an object";
  try {
    return isPlainObject(JSON.parse(text)) ? "object" : "not an object";
  } catch {
    return text.startsWith("\ufeff") && isValidJson(text.slice(1)) ? "bom" : "malformed";
  }
}

// ---------------------------------------------------------------------------------------------
// Sending and checking

export interface Answer {
  status: number;
  contentType: string;
  text: string;
  ms: number;
  headers: Headers;
}

export async function send(c: FuzzCase, timeoutMs = 15_000): Promise<Answer> {
  const t0 = performance.now();
  const res = await fetch(c.url, { method: c.op.method, headers: c.headers, body: c.body as BodyInit | undefined, redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  return { status: res.status, contentType: res.headers.get("content-type") ?? "", text, ms: performance.now() - t0, headers: res.headers };
}

/** Substrings of a stack trace or of this machine's paths; never in an answer (DESIGN §4). */
export const LEAK_MARKERS = ["    at ", ".ts:", "node_modules", "/work/", process.cwd(), "file://"];

/** Problems with the spec's error body (SPEC "Errors"), or [] when it is one. */
export function specErrorBodyProblems(json: any): string[] {
  const p: string[] = [];
  if (!isPlainObject(json)) return ["the body is not a JSON object"];
  const need: [string, (v: any) => boolean, string][] = [
    ["error", (v) => typeof v === "string" && v.length > 0, "a non-empty string"],
    ["message", (v) => typeof v === "string" && v.length > 0, "a non-empty string"],
    ["errors", (v) => isPlainObject(v), "an object (never null)"],
    ["timestamp", (v) => typeof v === "string" && !Number.isNaN(Date.parse(v)), "a date-time string"],
    ["type", (v) => typeof v === "string" && v.length > 0, "a non-empty string"],
    ["detail", () => true, "present"],
    ["code", (v) => v === null || typeof v === "string" || Number.isInteger(v), "a string, an integer or null"],
    ["status", (v) => typeof v === "string", "a string"],
    ["url", (v) => v === null || typeof v === "string", "a string or null"],
  ];
  for (const [k, ok, what] of need) {
    if (!Object.prototype.hasOwnProperty.call(json, k)) p.push(`no \`${k}\``);
    else if (!ok((json as any)[k])) p.push(`\`${k}\` is not ${what}: ${JSON.stringify((json as any)[k])?.slice(0, 80)}`);
  }
  return p;
}

/** RFC 6749 §5.2 / RFC 7591 §3.2.2 error bodies of the OAuth endpoints (lib/oauth/errors.ts). */
function oauthErrorBodyOk(json: any): boolean {
  return isPlainObject(json) && typeof json.error === "string" && (json.error_description === undefined || typeof json.error_description === "string");
}

/** A JSON-RPC 2.0 error answer of the MCP transport. */
function jsonRpcErrorOk(json: any): boolean {
  const one = (x: any) => isPlainObject(x) && x.jsonrpc === "2.0" && isPlainObject(x.error) && Number.isInteger((x.error as any).code) && typeof (x.error as any).message === "string";
  return one(json) || (Array.isArray(json) && json.length > 0 && json.every(one));
}

/**
 * Every check of one answer; [] when it passes. Error answers must carry the spec's error body;
 * the documented exceptions are the OAuth endpoints' own RFC error bodies, the MCP transport's
 * JSON-RPC errors and the browser pages (HTML) of the OAuth login flow.
 */
export function answerProblems(c: FuzzCase, a: Answer): string[] {
  const p: string[] = [];
  if (a.status >= 500) p.push(`status ${a.status} (never a 5xx with a healthy database)`);
  if (c.expect && !c.expect.statuses.includes(a.status)) p.push(`status ${a.status}, expected ${c.expect.statuses.join(" or ")}: ${c.expect.why}`);
  const isJson = /^application\/json\b/i.test(a.contentType);
  const isHtml = /^text\/html\b/i.test(a.contentType);
  let json: any;
  let parsed = false;
  if (isJson && a.text.length) {
    try {
      json = JSON.parse(a.text);
      parsed = true;
    } catch {
      p.push("content-type is application/json but the body is not JSON");
    }
  }
  if (a.status >= 400) {
    const htmlAllowed = c.op.family === "oauth-browser";
    if (!isJson && !(htmlAllowed && isHtml)) p.push(`error answer with content-type ${JSON.stringify(a.contentType)} (expected application/json)`);
    else if (isJson && parsed) {
      const spec = specErrorBodyProblems(json);
      const alt = (c.op.family === "oauth-api" && oauthErrorBodyOk(json)) || (c.op.family === "mcp" && jsonRpcErrorOk(json));
      if (spec.length && !alt) p.push(`not the spec's error body: ${spec.join("; ")}`);
      if (c.unknownKey && a.status === 422) {
        const key = c.unknownKey;
        if (!Object.keys(json.errors ?? {}).some((k) => k === key || k.startsWith(`${key}.`)) && !String(json.message).includes(key)) p.push(`422 does not name \`${key}\` (errors: ${JSON.stringify(json.errors).slice(0, 200)})`);
      }
    } else if (isJson && !a.text.length) p.push("error answer with an empty body");
  }
  for (const m of LEAK_MARKERS) if (m && a.text.includes(m) && !c.requestText.includes(m)) p.push(`the body contains ${JSON.stringify(m)} (a stack frame or a path of the machine)`);
  if (isHtml && c.op.family !== "oauth-browser") p.push("an HTML answer outside the OAuth browser pages");
  if (isHtml && /bun(\.sh|:|\sv\d)|__bun|stack trace/i.test(a.text)) p.push("Bun's HTML error page");
  return p;
}

/** One-line excerpt of an answer for a report. */
export function describeAnswer(a: Answer): string {
  return `→ ${a.status} ${a.contentType || "(no content-type)"} in ${a.ms.toFixed(0)} ms: ${compact(a.text, 400)}`;
}

export const HEALTHZ_BUDGET_MS = 100;

/** GET /healthz once; its latency must stay under the budget after every case (no retries). */
export async function healthz(base: string): Promise<{ ok: boolean; ms: number; status: number }> {
  const t0 = performance.now();
  try {
    const r = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(5_000) });
    await r.text();
    const ms = performance.now() - t0;
    return { ok: r.status === 200 && ms < HEALTHZ_BUDGET_MS, ms, status: r.status };
  } catch {
    return { ok: false, ms: performance.now() - t0, status: 0 };
  }
}

/** A stable 32-bit seed per operation from the run's base seed. */
export function seedFor(base: number, key: string): number {
  let h = base | 0;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 16777619);
  return h | 0;
}

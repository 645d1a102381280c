/**
 * The headers of the Beta API (DESIGN §12, README "Paging", "Concurrency", "Retries", "Rate limit
 * headers") in the OpenAPI document: reusable `components.parameters` (request headers) and
 * `components.headers` (response headers), attached to the operations by one declarative table
 * (HEADER_RULES) instead of by every route, plus the `304` and `412` answers of the conditional
 * requests.
 */

const BETA = "/beta/v1/org/{org_id}";

/** Request headers, published as `#/components/parameters/<name>`. */
export const HEADER_PARAMETERS = {
  IdempotencyKey: {
    name: "Idempotency-Key",
    in: "header",
    required: false,
    description:
      "Makes the POST safe to retry: the same key with the same method, path and body within 24 h replays the first 2xx answer (status, body, ETag; `Idempotency-Replayed: true`) without running it again; the same key with another request → 422 `idempotency_key_reused`; while the first is still running → 409 `idempotency_key_in_progress` with `Retry-After`.",
    schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x21-\\x7e]{1,255}$", description: "1–255 visible ASCII characters (0x21–0x7E: no spaces)" },
  },
  IfMatch: {
    name: "If-Match",
    in: "header",
    required: false,
    description: "Write only if the resource is still at the version of one of these strong ETags (`*`: any); otherwise 412 `precondition_failed`. Weak tags never match.",
    schema: { type: "string" },
  },
  IfNoneMatch: {
    name: "If-None-Match",
    in: "header",
    required: false,
    description: "An ETag of a representation the client holds: 304 without a body while the answer would be byte-identical.",
    schema: { type: "string" },
  },
} as const;

/** Response headers, published as `#/components/headers/<name>`. */
export const RESPONSE_HEADERS = {
  ETag: {
    description: 'Strong entity tag of this representation, `"<version>-<digest>"`: send it as If-None-Match (GET → 304 while unchanged) or If-Match (writes → 412 once the resource changed).',
    required: true,
    schema: { type: "string" },
  },
  XPagination: {
    description: 'The page and the totals of the list, as JSON: `{"page","page_size","total_count","total_pages"}`.',
    required: true,
    schema: { type: "string", example: '{"page":1,"page_size":100,"total_count":3,"total_pages":1}' },
  },
  Link: {
    description: 'RFC 8288 links to the `first`, `prev`, `next` (absent on the last page) and `last` pages: absolute URLs keeping the request\'s other query parameters.',
    required: true,
    schema: { type: "string" },
  },
  RateLimitLimit: { description: "Requests allowed per credential and minute (absent when the limit is off).", schema: { type: "integer", minimum: 1 } },
  RateLimitRemaining: { description: "Requests left in the current window.", schema: { type: "integer", minimum: 0 } },
  RateLimitReset: { description: "Seconds until the window resets.", schema: { type: "integer", minimum: 0 } },
  IdempotencyReplayed: { description: "`true` when this answer is the replay of an earlier request with the same Idempotency-Key.", schema: { type: "string", enum: ["true"] } },
  RetryAfter: { description: "Seconds to wait before retrying (on 409 only with `idempotency_key_in_progress`).", schema: { type: "integer", minimum: 0 } },
} as const;

/** The wire name of each response header. */
export const RESPONSE_HEADER_NAMES: Record<keyof typeof RESPONSE_HEADERS, string> = {
  ETag: "ETag",
  XPagination: "X-Pagination",
  Link: "Link",
  RateLimitLimit: "RateLimit-Limit",
  RateLimitRemaining: "RateLimit-Remaining",
  RateLimitReset: "RateLimit-Reset",
  IdempotencyReplayed: "Idempotency-Replayed",
  RetryAfter: "Retry-After",
};

type Method = "get" | "post" | "put" | "patch" | "delete";
type ParameterName = keyof typeof HEADER_PARAMETERS;
type HeaderName = keyof typeof RESPONSE_HEADERS;
/** `2xx`: every success answer; `*`: every answer but 401 and 413 (a request refused before it was counted); else one status. */
type StatusKey = "2xx" | "*" | "304" | "409" | "429" | "503";

export interface HeaderRule {
  /** The operations: methods and paths relative to /beta/v1/org/{org_id} (`*`: any). */
  methods: Method[] | "*";
  paths: string[] | "*";
  /** Only the operations whose 2xx body is a JSON array (the paged lists). */
  pagedList?: true;
  /** Request headers the operations honour. */
  request?: ParameterName[];
  /** Answers the operations add: 304 (no body) or 412 (the error body). */
  adds?: ("304" | "412")[];
  /** Response headers per answer. */
  responses?: Partial<Record<StatusKey, HeaderName[]>>;
}

const TEMPLATES = "/commitment-plan-templates";
const TEMPLATE = "/commitment-plan-templates/{template_id}";
const ESTIMATES = "/cost-estimates";
const ESTIMATE = "/cost-estimates/{estimate_id}";
const LINES = "/cost-estimates/{estimate_id}/line-items";
const LINE = "/cost-estimates/{estimate_id}/line-items/{line_item_id}";

/**
 * Which operation takes and answers which header. The conditional ones are those whose handler
 * goes through lib/http/etag.ts (`withEtag` sets the ETag and answers 304; `expectedVersions`
 * reads If-Match, checked against the locked row → 412).
 */
export const HEADER_RULES: HeaderRule[] = [
  // Rate limit headers on every authenticated Beta answer, errors included (README "Rate limit headers").
  { methods: "*", paths: "*", responses: { "*": ["RateLimitLimit", "RateLimitRemaining", "RateLimitReset"], 429: ["RetryAfter"], 503: ["RetryAfter"] } },
  // Retries: every POST.
  { methods: ["post"], paths: "*", request: ["IdempotencyKey"], responses: { "2xx": ["IdempotencyReplayed"], 409: ["RetryAfter"] } },
  // Paging: every list.
  { methods: ["get"], paths: "*", pagedList: true, responses: { "2xx": ["XPagination", "Link"] } },
  // Concurrency: templates and estimates, and an estimate's lines.
  { methods: ["get"], paths: [TEMPLATE, ESTIMATE, LINE], request: ["IfNoneMatch"], adds: ["304"], responses: { "2xx": ["ETag"], 304: ["ETag"] } },
  { methods: ["put", "patch"], paths: [TEMPLATE, ESTIMATE, LINE], request: ["IfMatch"], adds: ["412"], responses: { "2xx": ["ETag"] } },
  { methods: ["delete"], paths: [TEMPLATE, ESTIMATE, LINE], request: ["IfMatch"], adds: ["412"] },
  { methods: ["post"], paths: [LINES], request: ["IfMatch"], adds: ["412"], responses: { "2xx": ["ETag"] } },
  { methods: ["post"], paths: [TEMPLATES, ESTIMATES], responses: { "2xx": ["ETag"] } },
];

const METHODS: Method[] = ["get", "post", "put", "patch", "delete"];

function isPagedList(op: any): boolean {
  return Object.entries<any>(op.responses ?? {}).some(([status, r]) => status.startsWith("2") && r?.content?.["application/json"]?.schema?.type === "array");
}

/** The rules that apply to one operation. */
export function headerRulesOf(method: string, path: string, op: any): HeaderRule[] {
  return HEADER_RULES.filter(
    (r) => (r.methods === "*" || r.methods.includes(method as Method)) && (r.paths === "*" || r.paths.includes(path)) && (!r.pagedList || isPagedList(op)),
  );
}

function statusesOf(key: StatusKey, responses: Record<string, unknown>): string[] {
  const all = Object.keys(responses);
  if (key === "2xx") return all.filter((s) => s.startsWith("2"));
  if (key === "*") return all.filter((s) => s !== "401" && s !== "413");
  return all.filter((s) => s === key);
}

/**
 * Adds the header parameters, response headers and the 304/412 answers of HEADER_RULES to
 * every Beta operation of the document. Runs after `withErrorResponses` (the headers go on the
 * error answers too, and a 412 refers to its `ErrorBody`).
 */
export function withHeaders(doc: any): any {
  doc.components ??= {};
  doc.components.parameters = { ...doc.components.parameters, ...structuredClone(HEADER_PARAMETERS) };
  doc.components.headers = { ...doc.components.headers, ...structuredClone(RESPONSE_HEADERS) };
  for (const [fullPath, item] of Object.entries<any>(doc.paths ?? {})) {
    if (!fullPath.startsWith(BETA)) continue;
    const path = fullPath.slice(BETA.length);
    for (const method of METHODS) {
      const op = item?.[method];
      if (!op || typeof op !== "object") continue;
      const rules = headerRulesOf(method, path, op);
      op.responses ??= {};
      for (const rule of rules) {
        for (const status of rule.adds ?? []) {
          op.responses[status] ??=
            status === "304"
              ? { description: "Not modified: If-None-Match names the current representation (no body)" }
              : { description: "If-Match does not match the current ETag", content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorBody" } } } };
        }
      }
      for (const rule of rules) {
        for (const name of rule.request ?? []) {
          const ref = `#/components/parameters/${name}`;
          op.parameters ??= [];
          if (!op.parameters.some((p: any) => p?.$ref === ref)) op.parameters.push({ $ref: ref });
        }
        for (const [key, names] of Object.entries(rule.responses ?? {}) as [StatusKey, HeaderName[]][]) {
          for (const status of statusesOf(key, op.responses)) {
            const response = op.responses[status];
            for (const name of names) response.headers = { ...response.headers, [RESPONSE_HEADER_NAMES[name]]: { $ref: `#/components/headers/${name}` } };
          }
        }
      }
    }
  }
  return doc;
}

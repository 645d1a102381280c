import { SPEC_ERROR_STATUSES } from "./errorStatuses.ts";
import { withHeaders } from "./openapiHeaders.ts";

/** Where the error body's schema lives in the document. */
export const ERROR_BODY_REF = "#/components/schemas/ErrorBody";

/** JSON Schema of the spec's error body (SPEC "Errors"), for the OpenAPI document. */
export const ERROR_BODY_SCHEMA = {
  type: "object",
  required: ["error", "message", "errors", "timestamp", "type"],
  properties: {
    error: { type: "string", description: "Reason phrase" },
    message: { type: "string", description: "What went wrong and what to do" },
    errors: { type: "object", additionalProperties: { type: "array", items: { type: "string" } }, description: "Field → messages ({} when none)" },
    timestamp: { type: "string", format: "date-time" },
    type: { type: "string", description: "Stable slug, e.g. validation_error" },
    detail: {},
    code: { type: ["string", "integer", "null"], description: "HTTP status (default shape) or a domain code such as period_not_available" },
    status: { type: "string", description: "Status name, e.g. NOT_FOUND" },
    url: { type: ["string", "null"] },
  },
} as const;

/**
 * What any operation may answer before its own checks: 413 for a declared Content-Length over
 * MAX_BODY_BYTES (lib/http/app.ts, before any route), and 415 for a JSON body sent as another type.
 */
export function addTransportErrors(op: any): void {
  const content = { "application/json": { schema: { $ref: ERROR_BODY_REF } } };
  op.responses ??= {};
  op.responses["413"] ??= { description: "The request body is larger than the server takes (MAX_BODY_BYTES)", content };
  if (op.requestBody?.content?.["application/json"]) op.responses["415"] ??= { description: "The body is not sent as application/json", content };
}

const REASONS: Record<number, string> = {
  400: "Invalid query or path parameter, or malformed JSON", 401: "Missing, unknown, expired or revoked credential",
  403: "Credential of another organization, or a missing scope", 404: "Unknown resource", 405: "Method not allowed",
  409: "Conflict (e.g. a system-generated template, an Idempotency-Key still running)", 412: "If-Match does not match the current ETag", 422: "Body failed validation", 429: "Rate limited",
  500: "Internal error", 502: "A cloud provider refused or could not be reached (detail.cause)", 503: "Database unavailable",
};

/**
 * How every Beta operation authenticates (DESIGN §3): `Authorization: Bearer` or `x-api-key`.
 * Set here rather than per route so that no operation can be published without it.
 */
const BETA_SECURITY = () => [{ bearer: [] as string[] }, { apiKey: [] as string[] }];

/**
 * Adds the error responses of every Beta operation to the generated OpenAPI document: the
 * statuses SPEC lists per endpoint group (SPEC_ERROR_STATUSES), each with the error body; and
 * the operation's security; then the request and response headers of every operation
 * (lib/http/openapiHeaders.ts).
 */
export function withErrorResponses(doc: any): any {
  doc.components ??= {};
  doc.components.schemas = { ...doc.components.schemas, ErrorBody: ERROR_BODY_SCHEMA };
  for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
    if (!path.startsWith("/beta/v1/org/{org_id}")) continue;
    for (const [method, op] of Object.entries<any>(item)) {
      if (!op || typeof op !== "object" || !["get", "post", "put", "patch", "delete"].includes(method)) continue;
      op.security = BETA_SECURITY();
      op.responses ??= {};
      for (const status of SPEC_ERROR_STATUSES(method, path.slice("/beta/v1/org/{org_id}".length))) {
        op.responses[String(status)] ??= {
          description: REASONS[status] ?? "Error",
          content: { "application/json": { schema: { $ref: ERROR_BODY_REF } } },
        };
      }
      addTransportErrors(op);
    }
  }
  return withHeaders(doc);
}

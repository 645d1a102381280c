import { AppError, type FieldErrors } from "../errors.ts";

const REASONS: Record<number, string> = {
  400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
  409: "Conflict", 412: "Precondition Failed", 413: "Payload Too Large", 415: "Unsupported Media Type", 422: "Unprocessable Entity",
  429: "Too Many Requests", 499: "Client Closed Request", 500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable",
};

const NAMES: Record<number, string> = {
  400: "BAD_REQUEST", 401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED",
  409: "CONFLICT", 412: "PRECONDITION_FAILED", 413: "PAYLOAD_TOO_LARGE", 415: "UNSUPPORTED_MEDIA_TYPE", 422: "UNPROCESSABLE_ENTITY",
  429: "TOO_MANY_REQUESTS", 499: "CLIENT_CLOSED_REQUEST", 500: "INTERNAL_SERVER_ERROR", 502: "BAD_GATEWAY", 503: "SERVICE_UNAVAILABLE",
};

/** The spec's error body (SPEC "Errors"; DESIGN §4). */
export interface ErrorBody {
  error: string;
  message: string;
  errors: FieldErrors;
  timestamp: string;
  type: string;
  detail: unknown;
  code: string | number;
  status: string;
  url: string | null;
}

export function errorBody(err: AppError, url: string | null): ErrorBody {
  return {
    error: REASONS[err.status] ?? "Error",
    message: err.message,
    errors: err.errors,
    timestamp: new Date().toISOString(),
    type: err.type,
    detail: err.detail ?? null,
    code: err.code,
    status: NAMES[err.status] ?? String(err.status),
    url,
  };
}

export function errorResponse(err: AppError, url: string | null, extraHeaders: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(errorBody(err, url)), {
    status: err.status,
    headers: { "content-type": "application/json; charset=utf-8", ...err.headers, ...extraHeaders },
  });
}

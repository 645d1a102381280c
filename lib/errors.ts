/**
 * Domain errors. Each carries an HTTP status and a `code`; the single HTTP error handler
 * (lib/http/app.ts with lib/http/errorBody.ts) turns them into the spec's error body. Numeric codes mean "default
 * shape" (code = status), string codes are domain codes such as `period_not_available`.
 */
export type FieldErrors = Record<string, string[]>;

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | number,
    message: string,
    readonly type: string,
    readonly errors: FieldErrors = {},
    readonly detail: unknown = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class BadRequestError extends AppError {
  constructor(message: string, errors: FieldErrors = {}, code = "invalid_parameter") {
    super(400, code, message, "invalid_request", errors);
  }
}

export class ValidationError extends AppError {
  constructor(message: string, errors: FieldErrors = {}, code = "validation_error") {
    super(422, code, message, "validation_error", errors);
  }
}

export class UnauthorizedError extends AppError {
  constructor(message = "Authentication required: send `Authorization: Bearer <token>` or `x-api-key`.", wwwAuthenticate = 'Bearer realm="commitops"') {
    super(401, 401, message, "unauthorized", {}, null, { "WWW-Authenticate": wwwAuthenticate });
  }
}

export class ForbiddenError extends AppError {
  constructor(message = "This credential may not access this resource.", code: string | number = 403, headers: Record<string, string> = {}) {
    super(403, code, message, "forbidden", {}, null, headers);
  }
}

export class NotFoundError extends AppError {
  constructor(message = "Not found.", code = "not_found") {
    super(404, code, message, "not_found");
  }
}

export class ConflictError extends AppError {
  constructor(message: string, code: string, headers: Record<string, string> = {}, detail: unknown = null) {
    super(409, code, message, "conflict", {}, detail, headers);
  }
}

export class MethodNotAllowedError extends AppError {
  constructor(allow: string[]) {
    super(405, 405, `Method not allowed here. Allowed: ${allow.join(", ")}.`, "method_not_allowed", {}, null, {
      Allow: allow.join(", "),
    });
  }
}

/** A stale `If-Match`: the resource changed since the client read it. */
export class PreconditionFailedError extends AppError {
  constructor(message = "The resource has changed since it was read (If-Match does not match its current ETag); read it again and retry.") {
    super(412, "precondition_failed", message, "precondition_failed");
  }
}

export class PayloadTooLargeError extends AppError {
  constructor(maxBytes: number) {
    super(413, "payload_too_large", `The request body is larger than the limit of ${maxBytes} bytes.`, "payload_too_large", {}, { max_bytes: maxBytes });
  }
}

export class TooManyRequestsError extends AppError {
  constructor(retryAfterSeconds: number, headers: Record<string, string> = {}) {
    super(429, 429, "Too many requests; retry later.", "rate_limited", {}, null, {
      ...headers,
      "Retry-After": String(retryAfterSeconds),
    });
  }
}

export class ServiceUnavailableError extends AppError {
  constructor(message = "The database is unreachable; retry shortly.") {
    super(503, "service_unavailable", message, "service_unavailable", {}, null, { "Retry-After": "5" });
  }
}

/** /readyz: a check failed (`detail.checks` lists them all); the same code as any 503 of an unavailable service. */
export class NotReadyError extends AppError {
  constructor(message: string, checks: unknown) {
    super(503, "service_unavailable", message, "service_unavailable", {}, { checks }, { "Retry-After": "5" });
  }
}

/** A cloud provider refused or could not be reached for what the request asked of it now (`detail.cause` says why). */
export class ProviderError extends AppError {
  constructor(message: string, cause: string) {
    super(502, "provider_error", message, "bad_gateway", {}, { cause });
  }
}

/**
 * The client went away before its answer was ready (its query was cancelled). Nobody reads the
 * body; 499 is the status proxies log for it, so the request log tells it from a failure.
 */
export class ClientGoneError extends AppError {
  constructor() {
    super(499, "client_closed_request", "The client closed the request before its answer was ready.", "client_closed_request");
  }
}

export class InternalError extends AppError {
  constructor() {
    super(500, 500, "Something went wrong on our side; the error has been logged.", "internal_error");
  }
}

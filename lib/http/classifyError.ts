import { AppError, BadRequestError, InternalError, ServiceUnavailableError } from "../errors.ts";
import { isDatabaseUnavailable, pgErrorCode } from "../db/index.ts";

/**
 * The one mapping of a thrown value to what the caller is told: domain errors as they are,
 * database outages 503, data exceptions from request values (SQLSTATE class 22: a NUL
 * character, a malformed id, date or number) 400, anything else a generic 500 — whose details
 * go only to the log (`internal` is true then). Used by the HTTP app and the MCP server.
 */
export function classifyError(e: unknown): { error: AppError; internal: boolean } {
  if (e instanceof AppError) return { error: e, internal: false };
  if (isDatabaseUnavailable(e)) return { error: new ServiceUnavailableError(), internal: false };
  if (pgErrorCode(e)?.startsWith("22")) {
    return { error: new BadRequestError("A value in the request is not valid here (e.g. a NUL character, a malformed id, date or number).", {}, "invalid_value"), internal: false };
  }
  return { error: new InternalError(), internal: true };
}

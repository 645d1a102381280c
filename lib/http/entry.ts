import { errorResponse } from "./errorBody.ts";
import { BadRequestError, InternalError } from "../errors.ts";
import { errorForLog, type Logger } from "../log.ts";

/** Any origin of 11+ characters works for Elysia's path slicing; `.invalid` never resolves (RFC 6761). */
const CANONICAL_ORIGIN = "http://host.invalid";

const PLAIN_AUTHORITY = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

/**
 * `scheme://authority/` of the last URL found fine: a URL that starts with it has that same
 * authority and path start (clients send the same Host request after request).
 */
let lastPlainPrefix = "";

/**
 * Elysia finds the path by slicing the URL from a fixed offset (`url.indexOf("/", 11)`), so a
 * short or odd `Host` header (`Host: xx` + `/a/beta/…` → `/beta/…`) would change the route and
 * the logged path; for a Host that is no valid authority Bun even hands over the bare request
 * target (`/a/beta/…`). The path must come from the request line alone: unless the URL is an
 * absolute URL whose authority is a plain `host[:port]` long enough for that offset, the request
 * is rebuilt on a fixed origin with the same path, query, method, headers and body.
 */
export function canonicalRequest(request: Request): Request {
  const url = request.url;
  if (lastPlainPrefix && url.startsWith(lastPlainPrefix)) return request;
  const schemeEnd = url.indexOf("://");
  let target: string;
  if (schemeEnd < 0) {
    target = url.startsWith("/") ? url : "/";
  } else {
    const pathStart = url.indexOf("/", schemeEnd + 3);
    const authority = pathStart < 0 ? url.slice(schemeEnd + 3) : url.slice(schemeEnd + 3, pathStart);
    if (pathStart >= 11 && PLAIN_AUTHORITY.test(authority)) {
      lastPlainPrefix = url.slice(0, pathStart + 1);
      return request;
    }
    target = pathStart < 0 ? "/" : url.slice(pathStart);
  }
  return new Request(CANONICAL_ORIGIN + target, request);
}

/**
 * The last-resort answer of a server entry: whatever escapes the app (an error thrown by an
 * error handler, a runtime failure) becomes the spec's generic JSON 500, logged with a request
 * id — never a runtime's developer page, a stack frame or a path of the machine.
 */
export function lastResortResponse(log: Logger, error: unknown, request?: Request): Response {
  const requestId = request?.headers.get("x-request-id")?.slice(0, 100) || crypto.randomUUID();
  let path: string | null = null;
  try {
    if (request) path = new URL(request.url).pathname;
  } catch {}
  log.error("request failed outside the app", { request_id: requestId, method: request?.method, path, error: errorForLog(error) });
  return errorResponse(new InternalError(), path, { "x-request-id": requestId });
}

/**
 * The runtime-neutral fetch handler every server entry (Bun, Deno, the binary) serves: the URL
 * normalised before routing, and nothing but the JSON error body if the app itself throws.
 */
export function fetchHandler(app: { handle(request: Request): Promise<Response> }, log: Logger) {
  return async (request: Request): Promise<Response> => {
    let req: Request;
    try {
      req = canonicalRequest(request);
    } catch {
      return errorResponse(new BadRequestError("The request target is not a valid URL path.", {}, "invalid_request"), null);
    }
    try {
      const res = await app.handle(req);
      if (res instanceof Response) return res;
      return lastResortResponse(log, new TypeError("the app answered with something other than a Response"), req);
    } catch (e) {
      return lastResortResponse(log, e, req);
    }
  };
}

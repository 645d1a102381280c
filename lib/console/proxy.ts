/**
 * `/app/api/beta/…`: the console's calls to the public Beta API. The session's access token is
 * added server-side (the browser never holds it) and the request goes through the same app as any
 * API client's; nothing here knows a business rule. State changes need the session's CSRF token
 * in `X-CSRF-Token` and, when the browser sends one, a same-origin `Origin`.
 */
import type { Services } from "../services.ts";
import { errorResponse } from "../http/errorBody.ts";
import { AppError, ForbiddenError, PayloadTooLargeError } from "../errors.ts";
import { accessTokenOf, clearedConsoleCookie, csrfMatches, currentConsoleSession, type ConsoleSession } from "./sessions.ts";
import { selfHandler } from "./self.ts";
import { CONSOLE_BASE } from "./sessions.ts";

const API_PREFIX = `${CONSOLE_BASE}/api`;
const FORWARDED_REQUEST_HEADERS = ["accept", "content-type", "if-match", "if-none-match", "idempotency-key", "x-request-id", "accept-language"];
const SAFE_METHODS = new Set(["GET", "HEAD"]);

export class SessionExpiredError extends AppError {
  constructor() {
    super(401, "session_expired", "Your console session has ended. Sign in again.", "unauthorized");
  }
}

function sameOrigin(s: Services, request: Request): boolean {
  const origin = request.headers.get("origin");
  if (!origin || origin === "null") return origin === null;
  const own = new URL(s.config.publicUrl).origin;
  const asked = new URL(request.url).origin;
  return origin === own || origin === asked;
}

async function readBody(s: Services, request: Request): Promise<ArrayBuffer | null> {
  if (SAFE_METHODS.has(request.method) || !request.body) return null;
  const body = await request.arrayBuffer();
  if (body.byteLength > s.config.maxBodyBytes) throw new PayloadTooLargeError(s.config.maxBodyBytes);
  return body;
}

function forward(s: Services, request: Request, apiPath: string, token: string, body: ArrayBuffer | null): Promise<Response> {
  const headers = new Headers({ authorization: `Bearer ${token}` });
  for (const h of FORWARDED_REQUEST_HEADERS) {
    const v = request.headers.get(h);
    if (v !== null) headers.set(h, v);
  }
  return selfHandler(s)(new Request(`${s.config.publicUrl}${apiPath}`, { method: request.method, headers, body }));
}

function expired(s: Services, path: string): Response {
  const res = errorResponse(new SessionExpiredError(), path);
  res.headers.append("set-cookie", clearedConsoleCookie(s.config));
  return res;
}

export async function proxyToApi(s: Services, request: Request): Promise<Response> {
  const url = new URL(request.url);
  const apiPath = url.pathname.slice(API_PREFIX.length) + url.search;
  if (!url.pathname.startsWith(`${API_PREFIX}/beta/`)) return errorResponse(new AppError(404, "not_found", "The console reaches the Beta API only: /app/api/beta/v1/….", "not_found"), url.pathname);
  const session: ConsoleSession | null = await currentConsoleSession(s, request);
  if (!session) return expired(s, url.pathname);
  if (!SAFE_METHODS.has(request.method) && (!csrfMatches(session, request.headers.get("x-csrf-token")) || !sameOrigin(s, request)))
    return errorResponse(new ForbiddenError("The request was not sent by this console page (missing or wrong CSRF token). Reload the page and try again.", "csrf_failed"), url.pathname);
  const body = await readBody(s, request);
  let token = await accessTokenOf(s, session);
  if (!token) return expired(s, url.pathname);
  let res = await forward(s, request, apiPath, token, body);
  if (res.status === 401) {
    // Revoked or expired early (a role change, a sign-out elsewhere): one refresh, else sign in again.
    token = await accessTokenOf(s, session, { force: true });
    if (!token) return expired(s, url.pathname);
    res = await forward(s, request, apiPath, token, body);
    if (res.status === 401) return expired(s, url.pathname);
  }
  const headers = new Headers(res.headers);
  headers.delete("www-authenticate");
  if (!headers.has("cache-control")) headers.set("cache-control", "no-store");
  return new Response(res.body, { status: res.status, headers });
}

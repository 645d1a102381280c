import type { Services } from "../services.ts";
import { errorResponse } from "../http/errorBody.ts";
import { ForbiddenError } from "../errors.ts";
import { clearedSessionCookie, currentSession, endSession, readBrowserSecret } from "../oauth/sessions.ts";
import { clearedConsoleCookie, consoleCsrfToken, csrfMatches, currentConsoleSession, endConsoleSession } from "./sessions.ts";

const NO_STORE = { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" };

/** GET /app/session: who the console acts for (organization, granted scopes) and the CSRF token of its state changes. */
export async function consoleSessionInfo(s: Services, request: Request): Promise<Response> {
  const session = await currentConsoleSession(s, request);
  if (!session) return new Response(JSON.stringify({ signed_in: false }), { headers: NO_STORE });
  return new Response(JSON.stringify({ signed_in: true, org_id: session.orgId, scopes: session.scopes, csrf_token: consoleCsrfToken(session) }), { headers: NO_STORE });
}

/**
 * POST /app/logout: the console session ends (its grant revoked) and so does the browser's login
 * at the authorization server, so the next visit asks for the password again.
 */
export async function consoleLogout(s: Services, request: Request): Promise<Response> {
  const session = await currentConsoleSession(s, request);
  if (session && !csrfMatches(session, request.headers.get("x-csrf-token")))
    return errorResponse(new ForbiddenError("The sign-out was not sent by this console page. Reload the page and try again.", "csrf_failed"), "/app/logout");
  if (session) await endConsoleSession(s, session.secret);
  const login = await currentSession(s.db, readBrowserSecret(s.config, request.headers), s.now());
  if (login) await endSession(s.db, login.id, s.now());
  const headers = new Headers(NO_STORE);
  headers.append("set-cookie", clearedConsoleCookie(s.config));
  headers.append("set-cookie", clearedSessionCookie(s.config));
  return new Response(JSON.stringify({ signed_out: true }), { headers });
}

/**
 * The browser side of the authorization server: GET/POST /oauth/authorize (login, organization
 * choice, consent), /oauth/logout and the upstream OIDC callback. Every answer is an HTML page or
 * a redirect; errors about the client or its redirect URI are pages, never redirects.
 */
import { and, asc, eq } from "drizzle-orm";
import { memberships, organizations } from "../db/schema/index.ts";
import type { DbOrTx } from "../db/index.ts";
import type { Services } from "../services.ts";
import { isUuid } from "../orgs/service.ts";
import { ROLE_SCOPES, type Role } from "../auth/scopes.ts";
import {
  AUTHORIZE_PARAMS,
  RedirectableError,
  UntrustedRequestError,
  clientRedirectUrl,
  validateAuthorizationRequest,
  type AuthorizationRequest,
} from "./authorizeRequest.ts";
import { issueAuthorizationCode } from "./grants.ts";
import { readBodyTextWithin } from "../http/jsonBody.ts";
import { OAUTH_MAX_BODY_BYTES } from "./endpoints.ts";
import { consentPage, errorPage, loginPage, signOutFormPage, signedOutPage, type ConsentOrg } from "./pages.ts";
import {
  clearedSessionCookie,
  createSession,
  csrfToken,
  csrfValid,
  currentSession,
  endSession,
  newBrowserSecret,
  passwordLogin,
  readBrowserSecret,
  sessionCookie,
  type LoginSession,
} from "./sessions.ts";
import { peerAddress } from "./peerAddress.ts";
import { upstreamConfigured, startUpstreamLogin, finishUpstreamLogin, UpstreamLoginError } from "./upstream.ts";

export interface BrowserRequest {
  request: Request;
  /** The peer address from the server, when known. */
  peerIp?: string | null;
}

function clientIp(s: Services, r: BrowserRequest): string {
  if (s.config.trustProxy) {
    const fwd = r.request.headers.get("x-forwarded-for")?.split(",")[0]?.trim();
    if (fwd) return fwd;
  }
  return r.peerIp || peerAddress(r.request) || "unknown";
}

function redirect(location: string, headers: Record<string, string> = {}): Response {
  return new Response(null, { status: 303, headers: { location, "cache-control": "no-store", ...headers } });
}

/** The browser's cookie secret, minting one (with its Set-Cookie) on the first visit. */
function browser(s: Services, request: Request): { secret: string; setCookie: Record<string, string> } {
  const existing = readBrowserSecret(s.config, request.headers);
  if (existing) return { secret: existing, setCookie: {} };
  const secret = newBrowserSecret();
  return { secret, setCookie: { "set-cookie": sessionCookie(s.config, secret) } };
}

async function userOrgs(db: DbOrTx, userId: string): Promise<{ id: string; name: string; role: Role }[]> {
  return db
    .select({ id: organizations.id, name: organizations.name, role: memberships.role })
    .from(memberships)
    .innerJoin(organizations, eq(organizations.id, memberships.orgId))
    .where(eq(memberships.userId, userId))
    .orderBy(asc(organizations.name), asc(organizations.id));
}

function carried(req: AuthorizationRequest): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const k of AUTHORIZE_PARAMS) out[k] = req.params[k];
  return out;
}

function authorizeQuery(req: AuthorizationRequest): string {
  const q = new URLSearchParams();
  for (const k of AUTHORIZE_PARAMS) if (req.params[k] !== undefined) q.set(k, req.params[k]!);
  return q.toString();
}

function redirectError(s: Services, e: RedirectableError): Response {
  return redirect(clientRedirectUrl(e.redirectUri, s.config.publicUrl, { error: e.error, error_description: e.description, state: e.state }));
}

async function loadRequest(s: Services, params: URLSearchParams): Promise<AuthorizationRequest | Response> {
  try {
    return await validateAuthorizationRequest(s.db, s.config, params);
  } catch (e) {
    if (e instanceof UntrustedRequestError) return errorPage("Cannot continue the sign-in", e.message, 400);
    if (e instanceof RedirectableError) return redirectError(s, e);
    throw e;
  }
}

async function renderStep(
  s: Services,
  req: AuthorizationRequest,
  secret: string,
  session: LoginSession | null,
  extra: { headers?: Record<string, string>; error?: string; status?: number; email?: string } = {},
): Promise<Response> {
  const csrf = csrfToken(secret);
  if (!session) {
    return loginPage({
      clientName: req.client.name,
      params: carried(req),
      csrf,
      email: extra.email,
      error: extra.error,
      status: extra.status,
      headers: extra.headers,
      upstreamName: upstreamConfigured(s.config) ? s.config.oidcName : undefined,
    });
  }
  const orgs = await userOrgs(s.db, session.userId);
  if (orgs.length === 0)
    return errorPage("No organization", `The account ${session.email} is not a member of any commitops organization. Ask an administrator of your organization to add you, then sign in again.`, 403, extra.headers);
  const consentOrgs: ConsentOrg[] = orgs.map((o) => ({ ...o, grantable: req.scopes.filter((sc) => ROLE_SCOPES[o.role].includes(sc)) }));
  return consentPage({
    clientName: req.client.name,
    redirectHost: new URL(req.redirectUri).host,
    resource: req.resource,
    userEmail: session.email,
    params: carried(req),
    csrf,
    requested: req.scopes,
    orgs: consentOrgs,
    continueQuery: authorizeQuery(req),
    error: extra.error,
    status: extra.status,
    headers: extra.headers,
  });
}

export async function authorizeGet(s: Services, r: BrowserRequest): Promise<Response> {
  const req = await loadRequest(s, new URL(r.request.url).searchParams);
  if (req instanceof Response) return req;
  const b = browser(s, r.request);
  const session = await currentSession(s.db, b.secret, s.now());
  return renderStep(s, req, b.secret, session, { headers: b.setCookie });
}

async function readForm(request: Request): Promise<URLSearchParams | null> {
  const type = request.headers.get("content-type") ?? "";
  if (!/^application\/x-www-form-urlencoded\b/i.test(type)) return null;
  const text = await readBodyTextWithin(request, OAUTH_MAX_BODY_BYTES);
  if (text === null) return null;
  return new URLSearchParams(text);
}

const CSRF_MESSAGE = "This form was not sent from this browser's current sign-in page (the security token is missing or wrong). Go back, reload the page and try again.";

export async function authorizePost(s: Services, r: BrowserRequest): Promise<Response> {
  const form = await readForm(r.request);
  if (!form) return errorPage("Cannot continue the sign-in", "The form must be sent as application/x-www-form-urlencoded.", 400);
  const req = await loadRequest(s, form);
  if (req instanceof Response) return req;
  const secret = readBrowserSecret(s.config, r.request.headers);
  if (!csrfValid(secret, form.get("csrf_token"))) return errorPage("Security check failed", CSRF_MESSAGE, 403);
  const now = s.now();
  const session = await currentSession(s.db, secret, now);
  const action = form.get("action");

  if (action === "login") {
    const email = form.get("email") ?? "";
    const outcome = await passwordLogin(s.db, { email, password: form.get("password") ?? "", ip: clientIp(s, r) }, now);
    if (!outcome.ok && outcome.reason === "throttled") {
      const minutes = Math.ceil(outcome.retryAfterSeconds / 60);
      return renderStep(s, req, secret!, null, {
        email,
        status: 429,
        headers: { "retry-after": String(outcome.retryAfterSeconds) },
        error: `Too many failed sign-in attempts. Wait ${minutes} minute${minutes === 1 ? "" : "s"} and try again.`,
      });
    }
    if (!outcome.ok) return renderStep(s, req, secret!, null, { email, status: 401, error: "The email or password is incorrect." });
    const fresh = await createSession(s.db, s.config, outcome.userId, "password", now);
    return redirect(`/oauth/authorize?${authorizeQuery(req)}`, { "set-cookie": sessionCookie(s.config, fresh) });
  }

  if (action === "upstream") {
    if (!upstreamConfigured(s.config)) return errorPage("Not available", "Single sign-on is not configured on this server.", 404);
    try {
      return redirect(await startUpstreamLogin(s, secret!, authorizeQuery(req)));
    } catch (e) {
      if (e instanceof UpstreamLoginError) return errorPage("Single sign-on failed", e.message, 502);
      throw e;
    }
  }

  if (action === "approve" || action === "deny") {
    if (!session) return renderStep(s, req, secret!, null, { status: 401, error: "Your sign-in has expired. Sign in again." });
    if (action === "deny") return redirect(clientRedirectUrl(req.redirectUri, s.config.publicUrl, { error: "access_denied", error_description: "The user denied access.", state: req.state }));
    const orgId = form.get("org_id") ?? "";
    const [m] = isUuid(orgId)
      ? await s.db.select({ role: memberships.role }).from(memberships).where(and(eq(memberships.userId, session.userId), eq(memberships.orgId, orgId.toLowerCase()))).limit(1)
      : [];
    if (!m) return renderStep(s, req, secret!, session, { status: 400, error: "Choose one of your organizations." });
    const granted = req.scopes.filter((sc) => ROLE_SCOPES[m.role].includes(sc));
    if (granted.length === 0)
      return redirect(clientRedirectUrl(req.redirectUri, s.config.publicUrl, { error: "access_denied", error_description: "Your role in this organization includes none of the requested permissions.", state: req.state }));
    const code = await issueAuthorizationCode(s.db, s.config, req, { userId: session.userId, orgId: orgId.toLowerCase(), sessionId: session.id, scopes: granted }, now);
    return redirect(clientRedirectUrl(req.redirectUri, s.config.publicUrl, { code, state: req.state }));
  }
  return errorPage("Cannot continue the sign-in", "Unknown form action.", 400);
}

export async function logoutGet(s: Services, r: BrowserRequest): Promise<Response> {
  const b = browser(s, r.request);
  const session = await currentSession(s.db, b.secret, s.now());
  if (!session) return errorPage("Not signed in", "You are not signed in to commitops in this browser.", 200, b.setCookie);
  return signOutFormPage({ email: session.email, csrf: csrfToken(b.secret) });
}

export async function logoutPost(s: Services, r: BrowserRequest): Promise<Response> {
  const form = await readForm(r.request);
  const secret = readBrowserSecret(s.config, r.request.headers);
  if (!form || !csrfValid(secret, form.get("csrf_token"))) return errorPage("Security check failed", CSRF_MESSAGE, 403);
  const now = s.now();
  const session = await currentSession(s.db, secret, now);
  if (session) await endSession(s.db, session.id, now);
  // "Not you?" on the consent page: back to the same authorization, now at the login form.
  // Always a path on this server, so it cannot become an open redirect.
  const resume = form.get("continue");
  if (resume) return redirect(`/oauth/authorize?${new URLSearchParams(resume)}`, { "set-cookie": clearedSessionCookie(s.config) });
  return signedOutPage({ "set-cookie": clearedSessionCookie(s.config) });
}

export async function upstreamCallback(s: Services, r: BrowserRequest): Promise<Response> {
  const secret = readBrowserSecret(s.config, r.request.headers);
  try {
    const { userId, returnQuery } = await finishUpstreamLogin(s, secret, new URL(r.request.url).searchParams);
    const fresh = await createSession(s.db, s.config, userId, "oidc", s.now());
    return redirect(`/oauth/authorize?${returnQuery}`, { "set-cookie": sessionCookie(s.config, fresh) });
  } catch (e) {
    if (e instanceof UpstreamLoginError) return errorPage("Single sign-on failed", e.message, e.status);
    throw e;
  }
}

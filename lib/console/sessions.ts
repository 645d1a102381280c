/**
 * The web console is an OAuth client of this server (a backend-for-frontend): it signs the user in
 * through /oauth/authorize (the same login, upstream providers and organization choice as any
 * client), exchanges the code at /oauth/token, and keeps the tokens server-side. The browser holds
 * only an HttpOnly cookie; the tokens are sealed with a key derived from that cookie's secret.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { and, eq, isNull, lt, or } from "drizzle-orm";
import { consoleLogins, consoleSessions, oauthClients } from "../db/schema/index.ts";
import type { Config } from "../config.ts";
import type { Services } from "../services.ts";
import { SCOPES } from "../auth/scopes.ts";
import { hashSecret, newSecret, timingSafeEqualStr } from "../auth/tokens.ts";
import { pkceChallenge } from "../oauth/grants.ts";
import { escapeHtml } from "../oauth/pages.ts";
import { selfHandler } from "./self.ts";

export const CONSOLE_CLIENT_ID = "commitops-console";
export const CONSOLE_BASE = "/app";
const LOGIN_TTL_SECONDS = 10 * 60;
/** Refresh this long before the access token ends, so a request never starts with a dying token. */
const REFRESH_MARGIN_MS = 30_000;
const REFRESH_CLAIM_MS = 15_000;

export function consoleCallbackUrl(config: Config): string {
  return `${config.publicUrl}${CONSOLE_BASE}/callback`;
}

export function apiResource(config: Config): string {
  return `${config.publicUrl}/beta/v1`;
}

const secure = (config: Config) => config.publicUrl.startsWith("https:");

function cookieNames(config: Config) {
  return secure(config)
    ? { session: "__Host-commitops_console", login: "__Host-commitops_console_login" }
    : { session: "commitops_console", login: "commitops_console_login" };
}

function cookie(config: Config, name: string, value: string, maxAgeSeconds: number | null): string {
  const age = maxAgeSeconds === null ? "" : `; Max-Age=${maxAgeSeconds}`;
  return `${name}=${value}; Path=/; HttpOnly; SameSite=Lax${secure(config) ? "; Secure" : ""}${age}`;
}

function readCookie(headers: Headers, name: string): string | null {
  const raw = headers.get("cookie");
  if (!raw) return null;
  for (const part of raw.split(";")) {
    const i = part.indexOf("=");
    if (i > 0 && part.slice(0, i).trim() === name) {
      const v = part.slice(i + 1).trim();
      return /^[A-Za-z0-9_-]{20,200}$/.test(v) ? v : null;
    }
  }
  return null;
}

/** A console path to come back to: only a path under /app, never an absolute or protocol-relative URL. */
export function safeReturnPath(raw: string | null | undefined): string {
  const home = `${CONSOLE_BASE}/`;
  if (!raw || raw.length > 2000 || !raw.startsWith("/") || raw.startsWith("//") || /[\\\u0000-\u001f]/.test(raw)) return home;
  let u: URL;
  try {
    u = new URL(raw, "http://console.invalid");
  } catch {
    return home;
  }
  // Judged as the browser will resolve it (dot segments removed), on this origin only.
  if (u.origin !== "http://console.invalid") return home;
  const path = u.pathname;
  if (path !== CONSOLE_BASE && !path.startsWith(home)) return home;
  if (path.startsWith(`${CONSOLE_BASE}/api/`) || path.startsWith(`${CONSOLE_BASE}/callback`) || path.startsWith(`${CONSOLE_BASE}/login`)) return home;
  return path + u.search;
}

const registered = new WeakMap<object, string>();

/** The console's own client row: public, PKCE, refresh tokens, its callback on this server's public URL. */
async function ensureConsoleClient(s: Services): Promise<void> {
  const callback = consoleCallbackUrl(s.config);
  if (registered.get(s.db) === callback) return;
  await s.db
    .insert(oauthClients)
    .values({ id: CONSOLE_CLIENT_ID, name: "commitops console", redirectUris: [callback], grantTypes: ["authorization_code", "refresh_token"], scope: null, createdAt: s.now() })
    .onConflictDoUpdate({ target: oauthClients.id, set: { name: "commitops console", redirectUris: [callback], grantTypes: ["authorization_code", "refresh_token"] } });
  registered.set(s.db, callback);
}

function redirect(location: string, cookies: string[] = []): Response {
  const headers = new Headers({ location, "cache-control": "no-store" });
  for (const c of cookies) headers.append("set-cookie", c);
  return new Response(null, { status: 303, headers });
}

/** GET /app/login: a new authorization request for every scope; the consent page is where the organization is chosen. */
export async function startConsoleLogin(s: Services, request: Request): Promise<Response> {
  await ensureConsoleClient(s);
  const returnTo = safeReturnPath(new URL(request.url).searchParams.get("return"));
  const state = newSecret("cst", 24);
  const verifier = Buffer.from(randomBytes(48)).toString("base64url");
  const now = s.now();
  await s.db.delete(consoleLogins).where(lt(consoleLogins.expiresAt, now));
  await s.db.insert(consoleLogins).values({ stateHash: hashSecret(state), codeVerifier: verifier, returnTo, createdAt: now, expiresAt: new Date(now.getTime() + LOGIN_TTL_SECONDS * 1000) });
  const q = new URLSearchParams({
    response_type: "code",
    client_id: CONSOLE_CLIENT_ID,
    redirect_uri: consoleCallbackUrl(s.config),
    code_challenge: pkceChallenge(verifier),
    code_challenge_method: "S256",
    state,
    scope: SCOPES.join(" "),
    resource: apiResource(s.config),
  });
  return redirect(`/oauth/authorize?${q}`, [cookie(s.config, cookieNames(s.config).login, state, LOGIN_TTL_SECONDS)]);
}

interface TokenSet {
  access_token: string;
  refresh_token?: string;
  expires_in: number;
  scope: string;
  org_id: string;
}

type TokenOutcome = { ok: true; tokens: TokenSet } | { ok: false; status: number; error: string; description: string };

/** A request to this server's own token endpoint, as any OAuth client makes it. */
async function tokenRequest(s: Services, form: Record<string, string>): Promise<TokenOutcome> {
  const res = await selfHandler(s)(
    new Request(`${s.config.publicUrl}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: new URLSearchParams({ ...form, client_id: CONSOLE_CLIENT_ID }).toString(),
    }),
  );
  const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (res.ok && typeof body.access_token === "string" && typeof body.org_id === "string") return { ok: true, tokens: body as unknown as TokenSet };
  return { ok: false, status: res.status, error: String(body.error ?? "server_error"), description: String(body.error_description ?? "The sign-in could not be completed.") };
}

function tokenKey(secret: string): Buffer {
  return Buffer.from(hkdfSync("sha256", secret, "commitops-console", "oauth-tokens", 32));
}

function seal(secret: string, tokens: { access_token: string; refresh_token?: string }): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", tokenKey(secret), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify({ a: tokens.access_token, r: tokens.refresh_token ?? null }), "utf8"), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]).toString("base64url");
}

function unseal(secret: string, sealed: string): { access: string; refresh: string | null } | null {
  try {
    const raw = Buffer.from(sealed, "base64url");
    const decipher = createDecipheriv("aes-256-gcm", tokenKey(secret), raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(raw.length - 16));
    const text = Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]).toString("utf8");
    const v = JSON.parse(text) as { a: string; r: string | null };
    return { access: v.a, refresh: v.r };
  } catch {
    return null;
  }
}

/** The small page for a sign-in that cannot be completed: it says why and offers to start again. */
export function signInProblem(title: string, message: string, status = 400): Response {
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(title)} · commitops</title></head><body><main><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p><p><a href="${CONSOLE_BASE}/login">Sign in again</a></p></main></body></html>`;
  return new Response(html, {
    status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "content-security-policy": "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
      "x-frame-options": "DENY",
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
    },
  });
}

/** GET /app/callback: the code for the tokens, then a session whose cookie replaces any earlier one. */
export async function finishConsoleLogin(s: Services, request: Request): Promise<Response> {
  const names = cookieNames(s.config);
  const q = new URL(request.url).searchParams;
  const state = q.get("state");
  const browserState = readCookie(request.headers, names.login);
  const clearLogin = cookie(s.config, names.login, "", 0);
  if (!state || !browserState || !timingSafeEqualStr(state, browserState)) {
    return signInProblem("Sign-in not completed", "This sign-in was not started in this browser, or it took longer than 10 minutes. Start again.");
  }
  const [login] = await s.db.delete(consoleLogins).where(eq(consoleLogins.stateHash, hashSecret(state))).returning();
  if (!login || login.expiresAt.getTime() <= s.now().getTime()) return signInProblem("Sign-in not completed", "This sign-in has expired. Start again.");
  const error = q.get("error");
  if (error) {
    const description = (q.get("error_description") ?? "").slice(0, 300) || "The authorization was not granted.";
    return signInProblem(error === "access_denied" ? "Access not granted" : "Sign-in failed", description, 403);
  }
  const code = q.get("code");
  if (!code) return signInProblem("Sign-in failed", "The authorization server sent no code.");
  const outcome = await tokenRequest(s, { grant_type: "authorization_code", code, redirect_uri: consoleCallbackUrl(s.config), code_verifier: login.codeVerifier, resource: apiResource(s.config) });
  if (!outcome.ok) return signInProblem("Sign-in failed", outcome.description, outcome.status >= 500 ? 502 : 400);

  // A second sign-in (another organization) replaces the first session of this browser.
  const previous = readCookie(request.headers, names.session);
  if (previous) await endConsoleSession(s, previous);

  const secret = newSecret("ccs", 32);
  const now = s.now();
  await s.db.insert(consoleSessions).values({
    secretHash: hashSecret(secret),
    orgId: outcome.tokens.org_id,
    scopes: outcome.tokens.scope.split(" ").filter(Boolean),
    sealedTokens: seal(secret, outcome.tokens),
    accessExpiresAt: new Date(now.getTime() + outcome.tokens.expires_in * 1000),
    createdAt: now,
    expiresAt: new Date(now.getTime() + s.config.oauthSessionTtl * 1000),
  });
  return redirect(login.returnTo, [cookie(s.config, names.session, secret, s.config.oauthSessionTtl), clearLogin]);
}

export interface ConsoleSession {
  id: string;
  secret: string;
  orgId: string;
  scopes: string[];
  sealedTokens: string;
  accessExpiresAt: Date;
}

export async function currentConsoleSession(s: Services, request: Request): Promise<ConsoleSession | null> {
  const secret = readCookie(request.headers, cookieNames(s.config).session);
  if (!secret) return null;
  const [row] = await s.db.select().from(consoleSessions).where(eq(consoleSessions.secretHash, hashSecret(secret))).limit(1);
  if (!row || row.expiresAt.getTime() <= s.now().getTime()) return null;
  return { id: row.id, secret, orgId: row.orgId, scopes: row.scopes, sealedTokens: row.sealedTokens, accessExpiresAt: row.accessExpiresAt };
}

/** The CSRF token of a session: derived from its cookie secret; the console sends it back in `X-CSRF-Token`. */
export function consoleCsrfToken(session: ConsoleSession): string {
  return hashSecret(`console-csrf:${session.secret}`);
}

export function csrfMatches(session: ConsoleSession, presented: string | null): boolean {
  return !!presented && timingSafeEqualStr(consoleCsrfToken(session), presented);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A usable access token for the session: the stored one while it lasts, else one refresh. Only one
 * request refreshes (a claimed row; a refresh token presented twice would revoke the whole grant);
 * the others wait for its result. Null: the session cannot continue (sign in again).
 */
export async function accessTokenOf(s: Services, session: ConsoleSession, opts: { force?: boolean } = {}): Promise<string | null> {
  const tokens = unseal(session.secret, session.sealedTokens);
  if (!tokens) return null;
  const now = s.now();
  if (!opts.force && session.accessExpiresAt.getTime() - REFRESH_MARGIN_MS > now.getTime()) return tokens.access;
  if (!tokens.refresh) return null;
  const claimed = await s.db
    .update(consoleSessions)
    .set({ refreshingUntil: new Date(now.getTime() + REFRESH_CLAIM_MS) })
    .where(
      and(
        eq(consoleSessions.id, session.id),
        eq(consoleSessions.sealedTokens, session.sealedTokens),
        or(isNull(consoleSessions.refreshingUntil), lt(consoleSessions.refreshingUntil, now)),
      ),
    )
    .returning({ id: consoleSessions.id });
  if (claimed.length === 0) {
    for (let i = 0; i < 100; i++) {
      const [row] = await s.db.select({ sealedTokens: consoleSessions.sealedTokens }).from(consoleSessions).where(eq(consoleSessions.id, session.id)).limit(1);
      if (!row) return null;
      if (row.sealedTokens !== session.sealedTokens) return unseal(session.secret, row.sealedTokens)?.access ?? null;
      await sleep(100);
    }
    return null;
  }
  const outcome = await tokenRequest(s, { grant_type: "refresh_token", refresh_token: tokens.refresh });
  if (!outcome.ok) {
    await s.db.delete(consoleSessions).where(eq(consoleSessions.id, session.id));
    return null;
  }
  const sealed = seal(session.secret, outcome.tokens);
  await s.db
    .update(consoleSessions)
    .set({ sealedTokens: sealed, scopes: outcome.tokens.scope.split(" ").filter(Boolean), accessExpiresAt: new Date(s.now().getTime() + outcome.tokens.expires_in * 1000), refreshingUntil: null })
    .where(eq(consoleSessions.id, session.id));
  session.sealedTokens = sealed;
  return outcome.tokens.access_token;
}

/** Ends a console session by its cookie secret: its grant is revoked at the token server too. */
export async function endConsoleSession(s: Services, secret: string): Promise<void> {
  const [row] = await s.db.delete(consoleSessions).where(eq(consoleSessions.secretHash, hashSecret(secret))).returning();
  const tokens = row && unseal(secret, row.sealedTokens);
  if (!tokens) return;
  // Revoking the refresh token revokes its whole authorization (RFC 7009 as this server does it).
  await selfHandler(s)(
    new Request(`${s.config.publicUrl}/oauth/revoke`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: tokens.refresh ?? tokens.access, client_id: CONSOLE_CLIENT_ID }).toString(),
    }),
  );
}

export function clearedConsoleCookie(config: Config): string {
  return cookie(config, cookieNames(config).session, "", 0);
}

export function consoleSessionSecret(config: Config, request: Request): string | null {
  return readCookie(request.headers, cookieNames(config).session);
}

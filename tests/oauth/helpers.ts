import { expect } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import type { TestContext } from "../helpers/app.ts";
import { addMember, createUser } from "../../lib/orgs/service.ts";
import type { Role } from "../../lib/auth/scopes.ts";

export const BASE = "http://localhost";
export const MCP_RESOURCE = `${BASE}/mcp`;
export const REST_RESOURCE = `${BASE}/beta/v1`;
export const REDIRECT = "http://127.0.0.1:8765/callback";

export function pkce() {
  const verifier = randomBytes(32).toString("base64url");
  const challenge = createHash("sha256").update(verifier).digest("base64url");
  return { verifier, challenge };
}

/** A minimal browser cookie jar for driving the login pages over plain HTTP. */
export class Jar {
  cookies = new Map<string, string>();
  store(res: Response) {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const i = pair!.indexOf("=");
      const name = pair!.slice(0, i).trim();
      const value = pair!.slice(i + 1).trim();
      if (/max-age=0/i.test(c) || value === "") this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  header(): Record<string, string> {
    return this.cookies.size ? { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ") } : {};
  }
}

let seq = 0;
export async function makeUser(t: TestContext, memberships: { orgId: string; role: Role }[], password = "correct horse battery") {
  const email = `user${++seq}.${Math.random().toString(36).slice(2, 8)}@example.com`;
  const u = await createUser(t.s.db, { email, password, emailVerified: true });
  for (const m of memberships) await addMember(t.s.db, { orgId: m.orgId, userId: u.id, role: m.role });
  return { id: u.id, email, password };
}

export function send(t: TestContext, method: string, path: string, o: { headers?: Record<string, string>; body?: string } = {}) {
  return t.app.handle(new Request(path.startsWith("http") ? path : `${BASE}${path}`, { method, headers: o.headers, body: o.body }));
}

export function form(values: Record<string, string | undefined>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(values)) if (v !== undefined) p.set(k, v);
  return p.toString();
}

export const FORM = { "content-type": "application/x-www-form-urlencoded" };

export async function registerClient(t: TestContext, meta: Record<string, unknown> = {}) {
  const r = await send(t, "POST", "/oauth/register", {
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ client_name: "Test client", redirect_uris: [REDIRECT], ...meta }),
  });
  expect(r.status).toBe(201);
  return (await r.json()) as { client_id: string; redirect_uris: string[] };
}

export function csrfFrom(html: string): string {
  const m = /name="csrf_token" value="([^"]+)"/.exec(html);
  if (!m) throw new Error(`no csrf token in page: ${html.slice(0, 300)}`);
  return m[1]!;
}

export interface AuthParams {
  client_id: string;
  redirect_uri?: string;
  code_challenge?: string;
  code_challenge_method?: string;
  scope?: string;
  resource?: string;
  state?: string;
  response_type?: string;
}

export function authorizeQuery(p: AuthParams): string {
  return form({ response_type: "code", redirect_uri: REDIRECT, code_challenge_method: "S256", state: "st-123", ...p });
}

/** GET /oauth/authorize, then the login form POST; returns the jar (signed in) and the consent page. */
export async function signIn(t: TestContext, p: AuthParams, user: { email: string; password: string }, jar = new Jar(), extraHeaders: Record<string, string> = {}) {
  const q = authorizeQuery(p);
  const page = await send(t, "GET", `/oauth/authorize?${q}`, { headers: { ...jar.header(), ...extraHeaders } });
  expect(page.status).toBe(200);
  jar.store(page);
  const csrf = csrfFrom(await page.text());
  const login = await send(t, "POST", "/oauth/authorize", {
    headers: { ...FORM, ...jar.header(), ...extraHeaders },
    body: `${q}&${form({ action: "login", csrf_token: csrf, email: user.email, password: user.password })}`,
  });
  expect(login.status).toBe(303);
  jar.store(login);
  const consent = await send(t, "GET", login.headers.get("location")!, { headers: jar.header() });
  expect(consent.status).toBe(200);
  return { jar, consentHtml: await consent.text(), query: q };
}

/** Whole browser part: sign in, approve for `orgId`; returns the code from the redirect. */
export async function authorize(t: TestContext, p: AuthParams, user: { email: string; password: string }, orgId: string, jar = new Jar()) {
  const { consentHtml, query } = await signIn(t, p, user, jar);
  const approve = await send(t, "POST", "/oauth/authorize", {
    headers: { ...FORM, ...jar.header() },
    body: `${query}&${form({ action: "approve", csrf_token: csrfFrom(consentHtml), org_id: orgId })}`,
  });
  expect(approve.status).toBe(303);
  const loc = new URL(approve.headers.get("location")!);
  const code = loc.searchParams.get("code");
  if (!code) throw new Error(`no code in redirect ${loc}`);
  return { code, location: loc, jar, consentHtml };
}

export async function token(t: TestContext, values: Record<string, string | undefined>) {
  const r = await send(t, "POST", "/oauth/token", { headers: FORM, body: form(values) });
  return { status: r.status, body: (await r.json()) as any, headers: r.headers };
}

/** Register → authorize → exchange: a fresh token pair for `user` on `orgId`. */
export async function obtainTokens(t: TestContext, user: { email: string; password: string }, orgId: string, o: { scope?: string; resource?: string } = {}) {
  const client = await registerClient(t);
  const { verifier, challenge } = pkce();
  const { code, jar } = await authorize(t, { client_id: client.client_id, code_challenge: challenge, scope: o.scope, resource: o.resource }, user, orgId);
  const r = await token(t, { grant_type: "authorization_code", client_id: client.client_id, code, redirect_uri: REDIRECT, code_verifier: verifier, resource: o.resource });
  expect(r.status).toBe(200);
  return { ...r.body, client_id: client.client_id, jar } as { access_token: string; refresh_token: string; scope: string; expires_in: number; client_id: string; jar: Jar };
}

export function bearer(tok: string) {
  return { authorization: `Bearer ${tok}` };
}

/** Server-rendered pages of the login and consent flow: small, no script, no external assets. */
import { SCOPE_DESCRIPTIONS } from "./scopeText.ts";
import { htmlPageHeaders } from "../http/pageHeaders.ts";

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

// No form-action: the consent form's answer redirects to the client's registered URI.
const PAGE_HEADERS = htmlPageHeaders("default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'");

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · commitops</title>
<style>
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;background:#f4f6f8;color:#1d2733;margin:0;padding:40px 16px}
main{max-width:420px;margin:0 auto;background:#fff;border-radius:8px;box-shadow:0 1px 4px rgba(0,0,0,.12);padding:28px 32px}
h1{font-size:1.3rem;margin:0 0 16px}label{display:block;margin:12px 0 4px;font-weight:600}
input[type=email],input[type=password],select{width:100%;box-sizing:border-box;padding:9px;border:1px solid #b7c0ca;border-radius:4px;font-size:1rem}
button{margin-top:18px;padding:10px 16px;font-size:1rem;border-radius:4px;border:1px solid #1f5fbf;background:#1f5fbf;color:#fff;cursor:pointer}
button.secondary{background:#fff;color:#1f5fbf}.error{background:#fdecea;border:1px solid #f5c2bd;padding:10px;border-radius:4px;margin-bottom:12px}
.muted{color:#5b6773;font-size:.9rem}ul{padding-left:20px}code{background:#eef1f4;padding:1px 4px;border-radius:3px}
</style></head><body><main>${body}</main></body></html>`;
}

export function htmlPage(title: string, body: string, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(layout(title, body), { status, headers: { ...PAGE_HEADERS, ...headers } });
}

function hidden(values: Record<string, string | undefined>): string {
  return Object.entries(values)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v!)}">`)
    .join("");
}

export function errorPage(title: string, message: string, status = 400, headers: Record<string, string> = {}): Response {
  return htmlPage(title, `<h1>${escapeHtml(title)}</h1><p class="error" role="alert">${escapeHtml(message)}</p><p class="muted">You can close this window and start the sign-in again from your application.</p>`, status, headers);
}

export function loginPage(o: {
  clientName: string;
  params: Record<string, string | undefined>;
  csrf: string;
  email?: string;
  error?: string;
  upstreamName?: string;
  status?: number;
  headers?: Record<string, string>;
}): Response {
  const err = o.error ? `<p class="error" role="alert">${escapeHtml(o.error)}</p>` : "";
  const upstream = o.upstreamName
    ? `<form method="post" action="/oauth/authorize">${hidden({ ...o.params, csrf_token: o.csrf, action: "upstream" })}<button class="secondary" type="submit" id="upstream">Sign in with ${escapeHtml(o.upstreamName)}</button></form>`
    : "";
  return htmlPage(
    "Sign in",
    `<h1>Sign in to commitops</h1>
<p class="muted"><strong>${escapeHtml(o.clientName)}</strong> wants to access your commitops account.</p>${err}
<form method="post" action="/oauth/authorize">${hidden({ ...o.params, csrf_token: o.csrf, action: "login" })}
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required value="${escapeHtml(o.email ?? "")}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit" id="sign-in">Sign in</button></form>${upstream}`,
    o.status ?? 200,
    o.headers,
  );
}

export interface ConsentOrg {
  id: string;
  name: string;
  role: string;
  grantable: string[];
}

export function consentPage(o: {
  clientName: string;
  redirectHost: string;
  resource: string;
  userEmail: string;
  params: Record<string, string | undefined>;
  csrf: string;
  requested: string[];
  orgs: ConsentOrg[];
  /** The authorize request to resume after "Not you? Sign out". */
  continueQuery: string;
  error?: string;
  status?: number;
  headers?: Record<string, string>;
}): Response {
  const err = o.error ? `<p class="error" role="alert">${escapeHtml(o.error)}</p>` : "";
  const orgChoice =
    o.orgs.length === 1
      ? `<p>Organization: <strong>${escapeHtml(o.orgs[0]!.name)}</strong> (${escapeHtml(o.orgs[0]!.role)})</p>${hidden({ org_id: o.orgs[0]!.id })}`
      : `<label for="org_id">Organization</label><select id="org_id" name="org_id" required>${o.orgs
          .map((g) => `<option value="${escapeHtml(g.id)}">${escapeHtml(g.name)} (${escapeHtml(g.role)})</option>`)
          .join("")}</select><p class="muted">Permissions your role in the chosen organization does not include are not granted.</p>`;
  // With one organization the grant is known now: list it, and say what the role leaves out.
  const single = o.orgs.length === 1 ? o.orgs[0]! : null;
  const shown = single ? single.grantable : o.requested;
  const withheld = single ? o.requested.filter((s) => !single.grantable.includes(s)) : [];
  const scopes =
    `<ul>${shown.map((s) => `<li><code>${escapeHtml(s)}</code> — ${escapeHtml(SCOPE_DESCRIPTIONS[s] ?? s)}</li>`).join("")}</ul>` +
    (withheld.length ? `<p class="muted">Not granted (your role is ${escapeHtml(single!.role)}): ${withheld.map((s) => `<code>${escapeHtml(s)}</code>`).join(", ")}</p>` : "");
  return htmlPage(
    "Authorize access",
    `<h1>Authorize ${escapeHtml(o.clientName)}</h1>${err}
<p>Signed in as <strong>${escapeHtml(o.userEmail)}</strong>.</p>
<p><strong>${escapeHtml(o.clientName)}</strong> (returning to <code>${escapeHtml(o.redirectHost)}</code>) asks to use <code>${escapeHtml(o.resource)}</code> with these permissions:</p>
${scopes}
<form method="post" action="/oauth/authorize">${hidden({ ...o.params, csrf_token: o.csrf })}${orgChoice}
<button type="submit" name="action" value="approve" id="approve">Allow</button>
<button class="secondary" type="submit" name="action" value="deny" id="deny">Deny</button></form>
<form method="post" action="/oauth/logout">${hidden({ csrf_token: o.csrf, continue: o.continueQuery })}<button class="secondary" type="submit" id="sign-out">Not you? Sign out</button></form>`,
    o.status ?? 200,
    o.headers,
  );
}

export function signedOutPage(headers: Record<string, string> = {}): Response {
  return htmlPage(
    "Signed out",
    `<h1>Signed out</h1><p>You are signed out of commitops. Access tokens your applications obtained through this sign-in are revoked; they will ask you to sign in again.</p>`,
    200,
    headers,
  );
}

export function signOutFormPage(o: { email: string; csrf: string }): Response {
  return htmlPage(
    "Sign out",
    `<h1>Sign out</h1><p>Signed in as <strong>${escapeHtml(o.email)}</strong>. Signing out also revokes the access tokens applications obtained through this sign-in.</p>
<form method="post" action="/oauth/logout">${hidden({ csrf_token: o.csrf })}<button type="submit" id="sign-out">Sign out</button></form>`,
  );
}

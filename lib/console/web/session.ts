import { SCOPES } from "../../auth/scopes.ts";

/** Who the console acts for: the organization and the scopes its sign-in was granted (GET /app/session). */
export interface Session {
  orgId: string;
  scopes: string[];
  csrf: string;
}

let current: Session | null = null;

export function session(): Session {
  if (!current) throw new Error("no session yet");
  return current;
}

export function setSession(s: Session): void {
  current = s;
}

/** Whether the session holds a scope: an action the role cannot take is not offered (the server refuses it anyway). */
export function can(scope: string): boolean {
  return !!current?.scopes.includes(scope);
}

/** Admin acts (API keys, members) need every scope, as on the API (lib/auth/guard.ts requireAdmin). */
export function isAdmin(): boolean {
  return SCOPES.every(can);
}

export async function loadSession(): Promise<Session | null> {
  const res = await fetch("/app/session", { credentials: "same-origin", headers: { accept: "application/json" } });
  if (!res.ok) throw new Error(`The console could not check your sign-in (HTTP ${res.status}). Reload the page.`);
  const body = (await res.json()) as { signed_in: boolean; org_id: string; scopes: string[]; csrf_token: string };
  if (!body.signed_in) return null;
  return { orgId: body.org_id, scopes: body.scopes, csrf: body.csrf_token };
}

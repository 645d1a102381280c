/** Every scope of the Beta API and the assistant (DESIGN §3). */
export const SCOPES = [
  "reports:read",
  "templates:read",
  "templates:write",
  "estimates:read",
  "estimates:write",
  "support:write",
  "assistant:read",
  "connections:read",
  "connections:write",
  "purchases:read",
  "purchases:write",
  "events:read",
  "webhooks:write",
  "budgets:read",
  "budgets:write",
] as const;
export type Scope = (typeof SCOPES)[number];

export function isScope(s: string): s is Scope {
  return (SCOPES as readonly string[]).includes(s);
}

export type Role = "viewer" | "member" | "admin";

/** What a membership role may do; a token's effective scopes are its own ∩ its user's role. */
export const ROLE_SCOPES: Record<Role, readonly Scope[]> = {
  viewer: ["reports:read", "templates:read", "estimates:read", "assistant:read", "support:write", "events:read", "budgets:read"],
  member: ["reports:read", "templates:read", "estimates:read", "estimates:write", "assistant:read", "support:write", "purchases:read", "events:read", "budgets:read"],
  admin: SCOPES,
};

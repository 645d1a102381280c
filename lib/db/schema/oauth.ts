import { index, pgTable, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { organizations, users } from "./core.ts";

/** Dynamically registered (RFC 7591) public clients; `id` is the client_id. */
export const oauthClients = pgTable("oauth_clients", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  redirectUris: text("redirect_uris").array().notNull(),
  /** `authorization_code`, plus `refresh_token` when the client asked for refresh tokens. */
  grantTypes: text("grant_types").array().notNull(),
  /** Scopes the client registered for (null: any scope of the service). */
  scope: text("scope"),
  clientUri: text("client_uri"),
  softwareId: text("software_id"),
  softwareVersion: text("software_version"),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
});

/** Browser login sessions of the authorization server (cookie holds the secret, stored hashed). */
export const oauthSessions = pgTable(
  "oauth_sessions",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    sessionHash: text("session_hash").notNull(),
    userId: uuid("user_id").notNull().references(() => users.id, { onDelete: "cascade" }),
    /** `password` or `oidc`. */
    method: text("method").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
  },
  (t) => [uniqueIndex("oauth_sessions_hash_uq").on(t.sessionHash), index("oauth_sessions_user_idx").on(t.userId)],
);

/** Failed sign-ins, counted per (email, ip) over a sliding window to throttle guessing. */
export const oauthLoginFailures = pgTable(
  "oauth_login_failures",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    email: text("email").notNull(),
    ip: text("ip").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull(),
  },
  (t) => [index("oauth_login_failures_key_idx").on(t.email, t.ip, t.createdAt)],
);

/** Authorization codes: single use (used_at set atomically), short-lived, PKCE-bound. */
export const oauthCodes = pgTable(
  "oauth_codes",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    codeHash: text("code_hash").notNull(),
    clientId: text("client_id").notNull().references(() => oauthClients.id, { onDelete: "cascade" }),
    userId: uuid("user_id").notNull().references(() => users.id, { onDelete: "cascade" }),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    sessionId: uuid("session_id").references(() => oauthSessions.id, { onDelete: "set null" }),
    redirectUri: text("redirect_uri").notNull(),
    codeChallenge: text("code_challenge").notNull(),
    scopes: text("scopes").array().notNull(),
    resource: text("resource").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    usedAt: timestamp("used_at", { withTimezone: true }),
  },
  (t) => [uniqueIndex("oauth_codes_hash_uq").on(t.codeHash)],
);

/**
 * Access and refresh tokens (opaque, stored hashed). `family_id` is the authorization code's id:
 * every token descending from one code shares it, so code or refresh reuse revokes them all.
 */
export const oauthTokens = pgTable(
  "oauth_tokens",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    kind: text("kind", { enum: ["access", "refresh"] }).notNull(),
    tokenHash: text("token_hash").notNull(),
    familyId: uuid("family_id").notNull(),
    clientId: text("client_id").notNull().references(() => oauthClients.id, { onDelete: "cascade" }),
    userId: uuid("user_id").notNull().references(() => users.id, { onDelete: "cascade" }),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    sessionId: uuid("session_id").references(() => oauthSessions.id, { onDelete: "set null" }),
    scopes: text("scopes").array().notNull(),
    /** RFC 8707 audience: the MCP URL or the REST base URL. */
    resource: text("resource").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    /** Refresh tokens: set when rotated (a second use is a replay). */
    usedAt: timestamp("used_at", { withTimezone: true }),
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
  },
  (t) => [
    uniqueIndex("oauth_tokens_hash_uq").on(t.tokenHash),
    index("oauth_tokens_family_idx").on(t.familyId),
    index("oauth_tokens_session_idx").on(t.sessionId),
  ],
);

/** Pending upstream (OIDC) sign-ins: state → PKCE verifier, nonce and the authorize request to resume. */
export const oauthUpstreamStates = pgTable(
  "oauth_upstream_states",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    stateHash: text("state_hash").notNull(),
    /** Hash of the browser's pre-login cookie: the callback must come from the same browser. */
    browserHash: text("browser_hash").notNull(),
    codeVerifier: text("code_verifier").notNull(),
    nonce: text("nonce").notNull(),
    returnQuery: text("return_query").notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    usedAt: timestamp("used_at", { withTimezone: true }),
  },
  (t) => [uniqueIndex("oauth_upstream_states_hash_uq").on(t.stateHash)],
);

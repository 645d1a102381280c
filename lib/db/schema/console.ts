import { index, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { organizations } from "./core.ts";

/**
 * Sign-ins of the web console in progress (the console is an OAuth client of this server): the
 * PKCE verifier of one authorization request, keyed by the hash of its `state`, which the browser
 * also holds in a cookie (so a code cannot be injected into another browser's session).
 */
export const consoleLogins = pgTable(
  "console_logins",
  {
    stateHash: text("state_hash").primaryKey(),
    codeVerifier: text("code_verifier").notNull(),
    /** The console path to return to after sign-in (always under /app). */
    returnTo: text("return_to").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
  },
  (t) => [index("console_logins_expires_idx").on(t.expiresAt)],
);

/**
 * Web console sessions: the cookie holds a random secret; the row is found by its hash and keeps
 * the OAuth tokens sealed with a key derived from that secret (AES-256-GCM), so the database
 * alone never yields a usable token.
 */
export const consoleSessions = pgTable(
  "console_sessions",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    secretHash: text("secret_hash").notNull().unique(),
    orgId: uuid("org_id").notNull().references(() => organizations.id, { onDelete: "cascade" }),
    scopes: text("scopes").array().notNull(),
    /** base64url(iv ‖ ciphertext ‖ tag) of `{ access_token, refresh_token }`. */
    sealedTokens: text("sealed_tokens").notNull(),
    accessExpiresAt: timestamp("access_expires_at", { withTimezone: true }).notNull(),
    /** One refresh at a time across requests and replicas (a reused refresh token revokes the whole grant). */
    refreshingUntil: timestamp("refreshing_until", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
  },
  (t) => [index("console_sessions_expires_idx").on(t.expiresAt)],
);

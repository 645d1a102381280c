import { and, count, eq, gt, isNull, min, sql } from "drizzle-orm";
import { oauthLoginFailures, oauthSessions, users } from "../db/schema/index.ts";
import type { Db, DbOrTx } from "../db/index.ts";
import type { Config } from "../config.ts";
import { hashSecret, newSecret, timingSafeEqualStr } from "../auth/tokens.ts";
import { hashPassword, verifyPassword } from "../adapters/password.ts";
import { findUserByEmail } from "../orgs/service.ts";
import { revokeSessionGrants } from "./grants.ts";
import { SESSION_PREFIX } from "./secrets.ts";

/**
 * The browser cookie of the authorization server. It always holds a random secret: before login
 * it only anchors the CSRF token of the login form; after login a new secret is issued (no
 * session fixation) whose hash is an `oauth_sessions` row.
 */
export function cookieName(config: Config): string {
  return config.publicUrl.startsWith("https:") ? "__Host-commitops_login" : "commitops_login";
}

export function readBrowserSecret(config: Config, headers: Headers): string | null {
  const raw = headers.get("cookie");
  if (!raw) return null;
  const name = cookieName(config);
  for (const part of raw.split(";")) {
    const i = part.indexOf("=");
    if (i < 0) continue;
    if (part.slice(0, i).trim() === name) {
      const v = part.slice(i + 1).trim();
      return /^cos_[A-Za-z0-9_-]{20,100}$/.test(v) ? v : null;
    }
  }
  return null;
}

export function newBrowserSecret(): string {
  return newSecret(SESSION_PREFIX);
}

export function sessionCookie(config: Config, secret: string, maxAgeSeconds?: number): string {
  const secure = config.publicUrl.startsWith("https:") ? "; Secure" : "";
  const age = maxAgeSeconds === undefined ? "" : `; Max-Age=${maxAgeSeconds}`;
  return `${cookieName(config)}=${secret}; Path=/; HttpOnly; SameSite=Lax${secure}${age}`;
}

export function clearedSessionCookie(config: Config): string {
  const secure = config.publicUrl.startsWith("https:") ? "; Secure" : "";
  return `${cookieName(config)}=; Path=/; HttpOnly; SameSite=Lax${secure}; Max-Age=0`;
}

/** The CSRF token of forms: derived from the cookie secret, so it is bound to this browser and login. */
export function csrfToken(browserSecret: string): string {
  return hashSecret(`csrf:${browserSecret}`);
}

export function csrfValid(browserSecret: string | null, presented: unknown): boolean {
  if (!browserSecret || typeof presented !== "string" || presented.length === 0) return false;
  return timingSafeEqualStr(csrfToken(browserSecret), presented);
}

export interface LoginSession {
  id: string;
  userId: string;
  email: string;
  name: string | null;
}

export async function currentSession(db: DbOrTx, secret: string | null, now: Date): Promise<LoginSession | null> {
  if (!secret) return null;
  const [row] = await db
    .select({ id: oauthSessions.id, userId: oauthSessions.userId, email: users.email, name: users.name })
    .from(oauthSessions)
    .innerJoin(users, eq(users.id, oauthSessions.userId))
    .where(and(eq(oauthSessions.sessionHash, hashSecret(secret)), isNull(oauthSessions.revokedAt), gt(oauthSessions.expiresAt, now)))
    .limit(1);
  return row ?? null;
}

/** Starts a login session; returns the new cookie secret. */
export async function createSession(db: DbOrTx, config: Config, userId: string, method: "password" | "oidc", now: Date): Promise<string> {
  const secret = newBrowserSecret();
  await db.insert(oauthSessions).values({ sessionHash: hashSecret(secret), userId, method, createdAt: now, expiresAt: new Date(now.getTime() + config.oauthSessionTtl * 1000) });
  return secret;
}

/** Sign-out: the session ends and every code and token obtained through it is revoked. */
export async function endSession(db: Db, sessionId: string, now: Date): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.update(oauthSessions).set({ revokedAt: now }).where(and(eq(oauthSessions.id, sessionId), isNull(oauthSessions.revokedAt)));
    await revokeSessionGrants(tx, sessionId, now);
  });
}

export const LOGIN_MAX_FAILURES = 5;
export const LOGIN_WINDOW_SECONDS = 15 * 60;

export type LoginOutcome =
  | { ok: true; userId: string }
  | { ok: false; reason: "invalid" }
  | { ok: false; reason: "throttled"; retryAfterSeconds: number };

let dummyHash: Promise<string> | null = null;

/**
 * Password sign-in with throttling per (email, IP): after LOGIN_MAX_FAILURES failures within
 * LOGIN_WINDOW_SECONDS every attempt is refused — right password included — until the oldest
 * failure leaves the window. Counting and recording run under a transaction-scoped advisory lock
 * on the (email, IP) key, so concurrent guesses cannot slip past the limit.
 */
export async function passwordLogin(db: Db, input: { email: string; password: string; ip: string }, now: Date): Promise<LoginOutcome> {
  const email = input.email.trim().toLowerCase().slice(0, 320);
  const ip = input.ip.slice(0, 100);
  const since = new Date(now.getTime() - LOGIN_WINDOW_SECONDS * 1000);
  const key = and(eq(oauthLoginFailures.email, email), eq(oauthLoginFailures.ip, ip), gt(oauthLoginFailures.createdAt, since));
  const throttled = async (tx: DbOrTx) => {
    const [r] = await tx.select({ n: count(), oldest: min(oauthLoginFailures.createdAt) }).from(oauthLoginFailures).where(key);
    if (!r || r.n < LOGIN_MAX_FAILURES) return null;
    const oldest = r.oldest ? new Date(r.oldest as unknown as string).getTime() : now.getTime();
    return Math.max(1, Math.ceil((oldest + LOGIN_WINDOW_SECONDS * 1000 - now.getTime()) / 1000));
  };
  // Cheap early refusal, so a throttled key costs no password hashing.
  const early = await throttled(db);
  if (early !== null) return { ok: false, reason: "throttled", retryAfterSeconds: early };

  const user = email ? await findUserByEmail(db, email) : null;
  let valid = false;
  if (user?.passwordHash) valid = await verifyPassword(input.password, user.passwordHash);
  else await verifyPassword(input.password, await (dummyHash ??= hashPassword("timing-equaliser-password"))); // same cost for unknown accounts

  return db.transaction(async (tx) => {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtext(${`oauth_login:${email}|${ip}`}))`);
    const wait = await throttled(tx);
    if (wait !== null) return { ok: false, reason: "throttled", retryAfterSeconds: wait } as const;
    if (!valid || !user) {
      await tx.insert(oauthLoginFailures).values({ email, ip, createdAt: now });
      return { ok: false, reason: "invalid" } as const;
    }
    await tx.delete(oauthLoginFailures).where(and(eq(oauthLoginFailures.email, email), eq(oauthLoginFailures.ip, ip)));
    return { ok: true, userId: user.id } as const;
  });
}

import { lt } from "drizzle-orm";
import { consoleLogins, consoleSessions, oauthCodes, oauthLoginFailures, oauthSessions, oauthTokens, oauthUpstreamStates } from "../db/schema/index.ts";
import type { Db } from "../db/index.ts";
import { LOGIN_WINDOW_SECONDS } from "./sessions.ts";

/** Rows kept a day past expiry, so a late replay still meets its record (and revokes) rather than "unknown". */
const GRACE_MS = 86_400_000;

/**
 * Deletes what can no longer matter: expired codes, tokens, sessions (the console's too) and upstream states, and
 * failed logins outside the throttling window. Idempotent; concurrent replicas are harmless.
 */
export async function pruneOAuthState(db: Db, now: Date): Promise<Record<string, number>> {
  const cutoff = new Date(now.getTime() - GRACE_MS);
  return db.transaction(async (tx) => {
    const tokens = await tx.delete(oauthTokens).where(lt(oauthTokens.expiresAt, cutoff)).returning({ id: oauthTokens.id });
    const codes = await tx.delete(oauthCodes).where(lt(oauthCodes.expiresAt, cutoff)).returning({ id: oauthCodes.id });
    const sessions = await tx.delete(oauthSessions).where(lt(oauthSessions.expiresAt, cutoff)).returning({ id: oauthSessions.id });
    const states = await tx.delete(oauthUpstreamStates).where(lt(oauthUpstreamStates.expiresAt, now)).returning({ id: oauthUpstreamStates.id });
    const failures = await tx
      .delete(oauthLoginFailures)
      .where(lt(oauthLoginFailures.createdAt, new Date(now.getTime() - LOGIN_WINDOW_SECONDS * 1000)))
      .returning({ id: oauthLoginFailures.id });
    // The web console's sign-ins in progress and ended sessions (its tokens above end with them).
    const consoleStarts = await tx.delete(consoleLogins).where(lt(consoleLogins.expiresAt, now)).returning({ state: consoleLogins.stateHash });
    const consoleEnded = await tx.delete(consoleSessions).where(lt(consoleSessions.expiresAt, now)).returning({ id: consoleSessions.id });
    return {
      tokens: tokens.length,
      codes: codes.length,
      sessions: sessions.length,
      upstream_states: states.length,
      login_failures: failures.length,
      console_logins: consoleStarts.length,
      console_sessions: consoleEnded.length,
    };
  });
}

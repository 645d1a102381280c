import type { Job } from "./index.ts";
import { pruneOAuthState } from "../lib/oauth/cleanup.ts";

/** Hourly: drops expired OAuth codes, tokens, sessions and stale login failures (idempotent deletes). */
export const oauthCleanupJob: Job = {
  name: "oauth-cleanup",
  pattern: "17 * * * *",
  async run(s) {
    const r = await pruneOAuthState(s.db, s.now());
    if (Object.values(r).some((n) => n > 0)) s.log.info("oauth cleanup", r);
  },
};

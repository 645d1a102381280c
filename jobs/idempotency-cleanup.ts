import type { Job } from "./index.ts";
import { purgeExpiredIdempotencyKeys } from "../lib/idempotency/store.ts";

/** Hourly: forgets Idempotency-Keys older than 24 h (a reused stale key is also taken over on the spot). */
export const idempotencyCleanupJob: Job = {
  name: "idempotency-cleanup",
  pattern: "23 * * * *",
  async run(s) {
    const purged = await purgeExpiredIdempotencyKeys(s.db);
    if (purged > 0) s.log.info("idempotency keys purged", { purged });
  },
};

import type { Services } from "../lib/services.ts";
import { autoCloseOldPeriods, freezeClosedPeriods } from "../lib/reports/periods.ts";
import type { Job } from "./index.ts";

/**
 * Closes billing periods older than the previous month and freezes every closed period's
 * reports into report_snapshots. Safe on any number of replicas: each period is claimed with a
 * row lock (SKIP LOCKED) and snapshotted in the transaction that marks it frozen.
 */
export const freezePeriodsJob: Job = {
  name: "freeze-periods",
  pattern: "0 */10 * * * *",
  async run(s: Services) {
    const closed = await autoCloseOldPeriods(s.db, s.now());
    const frozen = await freezeClosedPeriods(s.db, s.now());
    if (closed || frozen.length) s.log.info("billing periods frozen", { auto_closed: closed, frozen: frozen.map((f) => `${f.org_id}/${f.provider}/${f.month}`) });
  },
};

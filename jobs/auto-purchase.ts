import type { Job } from "./index.ts";
import type { Services } from "../lib/services.ts";
import { runDueAutoPurchases } from "../lib/purchasing/autoPurchase.ts";
import { purchaserOf, type Purchaser } from "../lib/purchasing/purchaser.ts";

/**
 * Test hook (multi-process tests only): COMMITOPS_TEST_PURCHASE_DELAY_MS makes the purchaser
 * announce itself on stderr and sleep inside the purchase transaction, so a test can kill the
 * process mid-run.
 */
export function purchaserForProcess(s: Services): Purchaser {
  const base = purchaserOf(s);
  const delay = Number(process.env.COMMITOPS_TEST_PURCHASE_DELAY_MS ?? 0);
  if (!(delay > 0)) return base;
  return {
    name: base.name,
    async purchase(tx, order) {
      process.stderr.write(`purchase-started ${order.idempotencyKey}\n`);
      await new Promise((r) => setTimeout(r, delay));
      return base.purchase(tx, order);
    },
  };
}

/** Every 5 minutes: cheap when nothing is due; each slot is claimed once in the database. */
export const autoPurchaseJob: Job = {
  name: "auto-purchase",
  pattern: "0 */5 * * * *",
  async run(s) {
    await runDueAutoPurchases(s, { purchaser: purchaserForProcess(s) });
  },
};

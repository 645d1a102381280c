import type { Job } from "./index.ts";
import type { Services } from "../lib/services.ts";
import { runPurchasingTick } from "../lib/purchasing/autoPurchase.ts";
import type { PurchaseHooks } from "../lib/purchasing/executor.ts";
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

/**
 * Test hook (multi-process crash tests only): COMMITOPS_TEST_PURCHASE_CRASH=before_provider |
 * after_provider kills this process with SIGKILL at that boundary of the first item it works
 * on: after the intent is committed and before the provider is called, or after the provider
 * answered and before the outcome is committed.
 */
export function purchaseHooksForProcess(): PurchaseHooks | undefined {
  const at = process.env.COMMITOPS_TEST_PURCHASE_CRASH;
  if (at !== "before_provider" && at !== "after_provider") return undefined;
  const die = (item: { token: string }) => {
    process.stderr.write(`purchase-crash ${at} ${item.token}\n`);
    process.kill(process.pid, "SIGKILL");
    return new Promise<void>(() => {});
  };
  return at === "before_provider" ? { beforeProviderCall: die } : { afterProviderCall: die };
}

/** Every 5 minutes: cheap when nothing is due; each slot and each item is claimed once in the database. */
export const autoPurchaseJob: Job = {
  name: "auto-purchase",
  pattern: "0 */5 * * * *",
  async run(s) {
    await runPurchasingTick(s, { purchaser: purchaserForProcess(s), hooks: purchaseHooksForProcess() });
  },
};

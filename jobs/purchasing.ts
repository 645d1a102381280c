import type { Job } from "./index.ts";
import { syncDueInventories } from "../lib/purchasing/inventory.ts";
import { deliverPurchaseEvents } from "../lib/purchasing/events.ts";
import { getPurchase } from "../lib/purchasing/orders.ts";

/** Every 15 minutes: each purchasing connection whose listing is due (PURCHASING_INVENTORY_INTERVAL_HOURS) is claimed by one replica and reconciled. */
export const purchasingInventoryJob: Job = {
  name: "purchasing-inventory",
  pattern: "0 */15 * * * *",
  async run(s) {
    await syncDueInventories(s);
  },
};

/** Every 30 seconds: purchase events (pending approval, outcomes) to PURCHASE_WEBHOOK_URL, when set. */
export const purchaseWebhookJob: Job = {
  name: "purchase-webhook",
  pattern: "*/30 * * * * *",
  async run(s) {
    await deliverPurchaseEvents(s, getPurchase);
  },
};

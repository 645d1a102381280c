import type { Job } from "./index.ts";
import { syncDueInventories } from "../lib/purchasing/inventory.ts";

/** Every 15 minutes: each purchasing connection whose listing is due (PURCHASING_INVENTORY_INTERVAL_HOURS) is claimed by one replica and reconciled. */
export const purchasingInventoryJob: Job = {
  name: "purchasing-inventory",
  pattern: "0 */15 * * * *",
  async run(s) {
    await syncDueInventories(s);
  },
};


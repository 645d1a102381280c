/** "Test connection" for a purchasing connection: one authenticated read at the provider, nothing bought. */
import type { Services } from "../services.ts";
import { errorForLog } from "../log.ts";
import { getPurchasingConnectionRow } from "./connections.ts";
import { purchaserOfConnection } from "./executor.ts";
import { PurchaseFailure, type PurchaseFailureCause } from "./providers/types.ts";

export async function checkPurchasingConnection(s: Services, orgId: string, id: string): Promise<{ ok: boolean; cause: PurchaseFailureCause | null; message: string }> {
  const c = await getPurchasingConnectionRow(s.db, orgId, id);
  const purchaser = await purchaserOfConnection(s, c);
  try {
    await purchaser.check();
    return { ok: true, cause: null, message: `The ${c.provider} credentials work${c.dryRun ? " (dry run: purchases are priced and checked, nothing is bought)" : ""}.` };
  } catch (e) {
    if (e instanceof PurchaseFailure) return { ok: false, cause: e.cause, message: e.message };
    s.log.error("purchasing connection test failed", { connection_id: id, error: errorForLog(e) });
    return { ok: false, cause: "internal", message: "The check failed unexpectedly (see the server log)." };
  } finally {
    await Promise.resolve(purchaser.close?.()).catch(() => {});
  }
}

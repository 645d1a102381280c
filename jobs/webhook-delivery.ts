import type { Job } from "./index.ts";
import { deliverWebhooks, type DeliveryHooks } from "../lib/webhooks/deliver.ts";
import { syncLegacyEndpoints } from "../lib/webhooks/legacy.ts";

/** How often a process re-reads PURCHASE_WEBHOOK_URL / SUPPORT_WEBHOOK_URL into their endpoints. */
const LEGACY_SYNC_MS = 30_000;

/**
 * Test hooks (multi-process crash tests only): COMMITOPS_TEST_WEBHOOK_CRASH=after_send kills this
 * process with SIGKILL after a receiver answered and before the attempt is recorded;
 * COMMITOPS_TEST_WEBHOOK_LEASE_MS shortens the lease a crashed worker leaves behind.
 */
export function webhookHooksForProcess(): DeliveryHooks | undefined {
  if (process.env.COMMITOPS_TEST_WEBHOOK_CRASH !== "after_send") return undefined;
  return {
    afterSend(d) {
      process.stderr.write(`webhook-crash after_send ${d.eventId}\n`);
      process.kill(process.pid, "SIGKILL");
      return new Promise<void>(() => {});
    },
  };
}

function testLeaseMs(): number | undefined {
  const ms = Number(process.env.COMMITOPS_TEST_WEBHOOK_LEASE_MS);
  return Number.isInteger(ms) && ms > 0 ? ms : undefined;
}

/**
 * Every second: the due endpoints are claimed (each by one replica, with a lease) and served
 * concurrently, each in event order. Runs overlap: an endpoint whose receiver is slow holds only
 * itself, and the next run claims the others. The compatibility endpoints follow the configuration.
 */
export const webhookDeliveryJob: Job = {
  name: "webhook-delivery",
  pattern: "* * * * * *",
  async run(s) {
    const state = ((s.extras.webhookLegacySync as { at: number } | undefined) ??= { at: 0 });
    if (Date.now() - state.at >= LEGACY_SYNC_MS) {
      state.at = Date.now();
      await syncLegacyEndpoints(s);
    }
    await deliverWebhooks(s, { hooks: webhookHooksForProcess(), leaseMs: testLeaseMs() });
  },
};


import type { Job } from "./index.ts";
import { deliverSupportOutbox } from "../lib/support/outbox.ts";

/**
 * Forwards filed support tickets to SUPPORT_WEBHOOK_URL. Every replica may run it: rows are
 * claimed with FOR UPDATE SKIP LOCKED and a lease, so a ticket is posted by one replica at a time.
 */
export const supportOutboxJob: Job = {
  name: "support-outbox",
  pattern: "*/5 * * * * *",
  async run(s) {
    if (!s.config.supportWebhookUrl) return;
    const r = await deliverSupportOutbox(s);
    if (r.delivered || r.failed) s.log.info("support outbox run", { delivered: r.delivered, failed: r.failed });
  },
};

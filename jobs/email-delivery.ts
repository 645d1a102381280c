import type { Job } from "./index.ts";
import { deliverEmails } from "../lib/notifications/delivery.ts";

/**
 * Every 5 seconds: due notification emails are claimed (each by one replica, with a lease) and
 * sent through SMTP_URL; failures are retried with backoff for 3 days (lib/notifications/delivery.ts).
 * Without SMTP_URL it only gives up emails older than 3 days.
 */
export const emailDeliveryJob: Job = {
  name: "email-delivery",
  pattern: "*/5 * * * * *",
  async run(s) {
    const r = await deliverEmails(s);
    if (r.sent || r.failed) s.log.info("notification emails", { sent: r.sent, retried: r.retried, failed: r.failed });
  },
};

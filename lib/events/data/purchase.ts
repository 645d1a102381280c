import { t, type TSchema } from "elysia";
import type { EventTypeSpec } from "../catalog.ts";

/** Data documents of purchase.*, support.ticket_created and webhook_endpoint.disabled (version 1). */
const Loose = t.Object({}, { additionalProperties: true });
export const purchaseEventTypes = {
  "purchase.pending_approval": { version: 1, description: "A purchase waits for an admin's approval.", data: Loose as TSchema },
  "purchase.approved": { version: 1, description: "A purchase was approved.", data: Loose },
  "purchase.rejected": { version: 1, description: "A purchase was rejected (or its approval expired).", data: Loose },
  "purchase.confirmed": { version: 1, description: "The provider confirmed a purchase.", data: Loose },
  "purchase.failed": { version: 1, description: "A purchase failed at the provider.", data: Loose },
  "purchase.dry_run": { version: 1, description: "A dry-run purchase was validated without buying.", data: Loose },
  "support.ticket_created": { version: 1, description: "A support ticket was filed.", data: Loose },
  "webhook_endpoint.disabled": { version: 1, description: "A webhook endpoint was disabled after persistent failure (or a 410).", data: Loose },
} satisfies Record<string, EventTypeSpec>;

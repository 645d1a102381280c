import { t, type TSchema } from "elysia";
import type { EventTypeSpec } from "../catalog.ts";

/** Data documents of billing_sync.*, period.finalized, commitment.expiring, anomaly.detected, catalog.refresh_failed (version 1). */
const Loose = t.Object({}, { additionalProperties: true });
export const billingEventTypes = {
  "billing_sync.succeeded": { version: 1, description: "A billing connection's sync imported new data.", data: Loose as TSchema },
  "billing_sync.failed": { version: 1, description: "A billing connection's sync failed.", data: Loose },
  "billing_sync.stale": { version: 1, description: "A billing connection has brought no new data for N days.", data: Loose },
  "period.finalized": { version: 1, description: "A billing period was finalized (frozen).", data: Loose },
  "commitment.expiring": { version: 1, description: "A commitment ends in 90, 30 or 7 days (once each).", data: Loose },
  "anomaly.detected": { version: 1, description: "Unusual daily spend was detected.", data: Loose },
  "catalog.refresh_failed": { version: 1, description: "A live price feed refresh failed.", data: Loose },
} satisfies Record<string, EventTypeSpec>;

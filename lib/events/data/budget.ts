import { t, type TSchema } from "elysia";
import type { EventTypeSpec } from "../catalog.ts";

/** Data document of budget.threshold_crossed (version 1). */
const Loose = t.Object({}, { additionalProperties: true });
export const budgetEventTypes = {
  "budget.threshold_crossed": { version: 1, description: "A budget's actual or forecast spend crossed one of its thresholds this month (once per threshold per month).", data: Loose as TSchema },
} satisfies Record<string, EventTypeSpec>;

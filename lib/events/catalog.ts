/**
 * Every event type, its description and the versioned schema of its `data` document (shown in
 * the OpenAPI document under GET /events). One file per domain under data/.
 */
import type { TSchema } from "elysia";
import { billingEventTypes } from "./data/billing.ts";
import { budgetEventTypes } from "./data/budget.ts";
import { purchaseEventTypes } from "./data/purchase.ts";

export interface EventTypeSpec {
  version: number;
  description: string;
  data: TSchema;
}

export const EVENT_CATALOG = { ...purchaseEventTypes, ...billingEventTypes, ...budgetEventTypes } as const satisfies Record<string, EventTypeSpec>;

export type EventType = keyof typeof EVENT_CATALOG;
export const EVENT_TYPES = Object.keys(EVENT_CATALOG).sort() as EventType[];

export function isEventType(s: string): s is EventType {
  return Object.hasOwn(EVENT_CATALOG, s);
}

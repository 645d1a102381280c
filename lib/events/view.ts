/**
 * An event as every consumer sees it: GET /events, the webhook body (the Standard Webhooks
 * envelope: `type`, `timestamp`, `data`, plus our id, version, org and links), Slack and email.
 */
import { t } from "elysia";
import type { events } from "../db/schema/events.ts";
import type { EmittedEvent } from "./emit.ts";

export const EventLinks = t.Object({
  api: t.Union([t.String({ format: "uri" }), t.Null()], { description: "The API resource the event is about." }),
  console: t.Union([t.String({ format: "uri" }), t.Null()], { description: "Its page in the console." }),
});

export interface EventView {
  id: string;
  type: string;
  version: number;
  timestamp: string;
  org_id: string;
  data: Record<string, unknown>;
  links: { api: string | null; console: string | null };
}

type EventRow = typeof events.$inferSelect;

function absolute(publicUrl: string, path: string | null): string | null {
  return path ? `${publicUrl.replace(/\/+$/, "")}${path.startsWith("/") ? path : `/${path}`}` : null;
}

/** An event's links, absolute. */
export function absoluteLinks(publicUrl: string, l: { resourcePath: string | null; consolePath: string | null }): EventView["links"] {
  return { api: absolute(publicUrl, l.resourcePath), console: absolute(publicUrl, l.consolePath) };
}

export function eventView(e: EventRow | EmittedEvent, publicUrl: string): EventView {
  return {
    id: e.id,
    type: e.type,
    version: e.dataVersion,
    timestamp: e.occurredAt.toISOString(),
    org_id: e.orgId,
    data: e.data as Record<string, unknown>,
    links: absoluteLinks(publicUrl, e),
  };
}

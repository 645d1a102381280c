/** The event catalog in words, for the API reference (the document's description and GET /events). */
import { EVENT_CATALOG, EVENT_TYPES } from "./catalog.ts";

/** `billing_sync.succeeded` → `BillingSyncSucceeded`: the stem of its OpenAPI schema names (`…Event`, `…Data`). */
export const eventSchemaStem = (type: string) =>
  type
    .split(/[._]/)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join("");

/** One Markdown line per event type: its name, data version and schema, and what it tells. */
export const EVENT_CATALOG_MARKDOWN = EVENT_TYPES.map((x) => `- \`${x}\` (data v${EVENT_CATALOG[x].version}, \`${eventSchemaStem(x)}Data\`): ${EVENT_CATALOG[x].description}`).join("\n");

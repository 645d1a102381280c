import { t, type TSchema } from "elysia";
import { Kind, Type, TypeRegistry } from "@sinclair/typebox";
import { component } from "../../../../../../lib/http/openapiComponents.ts";
import { PageQueryFields } from "../../../../../../lib/http/paging.ts";
import { EVENT_CATALOG, EVENT_TYPES } from "../../../../../../lib/events/catalog.ts";
import { EVENT_ORDERS, MAX_TIME_LENGTH, MAX_TYPE_FILTERS, MAX_TYPE_LENGTH } from "../../../../../../lib/events/list.ts";
import { EventLinks, type EventView } from "../../../../../../lib/events/view.ts";
import { eventSchemaStem } from "../../../../../../lib/events/docs.ts";

/**
 * A query param published with its real type but read by lib/events/list.ts from the request's
 * URL (a repeated `type` keeps every value; a 400 names the param): Elysia's parsing would keep
 * one value of a repeated param.
 */
const CHECKED_BY_EVENT_LIST = "EventListQueryParam";
if (!TypeRegistry.Has(CHECKED_BY_EVENT_LIST)) TypeRegistry.Set(CHECKED_BY_EVENT_LIST, () => true);
const param = <T>(schema: Record<string, unknown>) => t.Optional(Type.Unsafe<T>({ ...schema, [Kind]: CHECKED_BY_EVENT_LIST }));

const DOMAINS = [...new Set(EVENT_TYPES.map((x) => x.slice(0, x.indexOf("."))))].sort();

export const ListEventsQuery = t.Object(
  {
    type: param<string[]>({
      type: "array",
      items: { type: "string", maxLength: MAX_TYPE_LENGTH, anyOf: [{ enum: [...EVENT_TYPES] }, { enum: DOMAINS.map((d) => `${d}.*`) }] },
      maxItems: MAX_TYPE_FILTERS,
      description: `Only events of these types (repeat the param or separate with commas, up to ${MAX_TYPE_FILTERS}); \`<domain>.*\` names every type of a domain (${DOMAINS.map((d) => `\`${d}.*\``).join(", ")}). An unknown type is 400.`,
    }),
    since: param<string>({ type: "string", format: "date-time", maxLength: MAX_TIME_LENGTH, description: "Only events that occurred at or after this time (ISO 8601 with a time zone, or a date = its midnight UTC)" }),
    until: param<string>({ type: "string", format: "date-time", maxLength: MAX_TIME_LENGTH, description: "Only events that occurred before this time (exclusive; same forms as since)" }),
    order: param<string>({
      type: "string",
      enum: [...EVENT_ORDERS],
      default: "newest_first",
      description: "`newest_first` (default) or `oldest_first`: by the time the event occurred, then the order it was written (a consumer catching up walks `oldest_first` from its last `since`)",
    }),
    ...PageQueryFields,
  },
  { additionalProperties: false },
);

export const EventParams = t.Object({ org_id: t.String(), event_id: t.String({ format: "uuid" }) });

const pascal = eventSchemaStem;

/** One event type's envelope, its `data` the catalog's schema of that type (named `<Type>Data`). */
function eventOf(type: (typeof EVENT_TYPES)[number]) {
  const spec = EVENT_CATALOG[type];
  // A copy: one data schema may serve several types (purchase.*), and the component mark names it.
  const data = component(`${pascal(type)}Data`, { ...(spec.data as TSchema), description: spec.description } as TSchema);
  return component(
    `${pascal(type)}Event`,
    t.Object(
      {
        id: t.String({ format: "uuid", description: "The event's id: also the `webhook-id` of its deliveries (receivers dedupe by it)" }),
        type: t.Literal(type),
        version: t.Literal(spec.version, { description: "Version of the `data` document of this type" }),
        timestamp: t.String({ format: "date-time", description: "When it occurred" }),
        org_id: t.String({ format: "uuid" }),
        data,
        links: EventLinks,
      },
      { description: spec.description },
    ),
  );
}

const EVENT_SCHEMA_KIND = "EventEnvelope";

/**
 * An event as the catalog documents it: one schema per type, `type` the discriminator, so each
 * type's `data` document is in the OpenAPI document. At run time only the envelope is checked:
 * the log keeps every event as written, and an event written under an earlier version of its
 * `data` must still be listed, not turn the page into a 500.
 */
if (!TypeRegistry.Has(EVENT_SCHEMA_KIND)) {
  TypeRegistry.Set(EVENT_SCHEMA_KIND, (_schema, v: any) => {
    if (!v || typeof v !== "object") return false;
    const links = v.links;
    return (
      typeof v.id === "string" && typeof v.type === "string" && Number.isInteger(v.version) && typeof v.timestamp === "string" && typeof v.org_id === "string" &&
      !!v.data && typeof v.data === "object" && !Array.isArray(v.data) && !!links && typeof links === "object" &&
      (links.api === null || typeof links.api === "string") && (links.console === null || typeof links.console === "string")
    );
  });
}

const members = EVENT_TYPES.map(eventOf);

export const Event = component(
  "Event",
  Type.Unsafe<EventView>({
    oneOf: members,
    discriminator: { propertyName: "type", mapping: Object.fromEntries(EVENT_TYPES.map((x) => [x, `#/components/schemas/${pascal(x)}Event`])) },
    description: "An event of the organization's log: `type` says which, and which `data` document it carries.",
    [Kind]: EVENT_SCHEMA_KIND,
  }),
);

import { t } from "elysia";
import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { pagedList } from "../../../../../../lib/http/paging.ts";
import { eventFiltersOf, getEvent, pageEvents } from "../../../../../../lib/events/list.ts";
import { EVENT_CATALOG_MARKDOWN } from "../../../../../../lib/events/docs.ts";
import { Event, EventParams, ListEventsQuery } from "./model.ts";

const tags = ["Events"];

/** The organization's event log (lib/events), read by pull-based consumers: the same events webhooks, Slack and email carry. */
export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix)
    .get(
      "",
      async (ctx) => {
        // Read before paging: a bad filter is a 400 whatever the page.
        const filters = eventFiltersOf(ctx.request.url);
        return pagedList(ctx, s.config.publicUrl, (p) => pageEvents(s.db, ctx.principal.orgId, filters, p, s.config.publicUrl));
      },
      {
        scope: "events:read",
        query: ListEventsQuery,
        response: { 200: t.Array(Event) },
        detail: {
          tags,
          summary: "The organization's events, newest first; filter by type and time",
          description:
            "The append-only log of what happened in the organization, each event written in the transaction of the change it tells of. Each has an id (the `webhook-id` of its deliveries), a type, the time it occurred, a versioned `data` document (its schema per type below: `<Type>Data`) and links to the resource in the API and the console. " +
            "Paged like every list (`page`, `page_size`, `X-Pagination`, `Link`); `order=oldest_first` walks the log forward. An unknown `type`, a malformed time or `until` not after `since` is 400 `invalid_parameter`.\n\nEvent types:\n\n" +
            EVENT_CATALOG_MARKDOWN,
        },
      },
    )
    .get("/:event_id", ({ principal, params }) => getEvent(s.db, principal.orgId, params.event_id, s.config.publicUrl), {
      scope: "events:read",
      params: EventParams,
      response: { 200: Event },
      detail: { tags, summary: "One event of the organization (404 when it is not the organization's)" },
    }),
);

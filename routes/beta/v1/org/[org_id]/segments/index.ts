import { t } from "elysia";
import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { pagedList } from "../../../../../../lib/http/paging.ts";
import { getSegment, pageSegments, segmentView } from "../../../../../../lib/segments/service.ts";
import { ListSegmentsQuery, Segment, SegmentParams } from "./model.ts";

const tags = ["Segments"];

/** Segments (the scopes of usage templates plan for): read only, over lib/segments. */
export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix)
    .get(
      "",
      async (ctx) => pagedList(ctx, s.config.publicUrl, (p) => pageSegments(s.db, ctx.principal.orgId, { provider: ctx.query.provider }, p)),
      {
        scope: "templates:read",
        query: ListSegmentsQuery,
        response: { 200: t.Array(Segment) },
        detail: { tags, summary: "Segments of the organization, by provider (the provider-resources segment first, created on first use), then oldest first" },
      },
    )
    .get("/:segment_id", async ({ principal, params }) => segmentView(await getSegment(s.db, principal.orgId, params.segment_id.toLowerCase())), {
      scope: "templates:read",
      params: SegmentParams,
      response: { 200: Segment },
      detail: { tags, summary: "One segment: its provider, kind, name and filters" },
    }),
);

import { t } from "elysia";
import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { NotFoundError } from "../../../../../../lib/errors.ts";
import { fileSupportTicket, getSupportTicket, pageOrgSupportTickets } from "../../../../../../lib/support/tickets.ts";
import { pagedList } from "../../../../../../lib/http/paging.ts";
import { BugReportBody, FeatureRequestBody, ListTicketsQuery, SupportTicket, SupportTicketResult } from "./model.ts";

const tags = ["Support"];
export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix)
    .post(
      "/bug-reports",
      ({ principal, body }) => {
        return fileSupportTicket(s, principal, { kind: "bug", input: body });
      },
      {
        scope: "support:write",
        body: BugReportBody,
        response: { 200: SupportTicketResult },
        detail: {
          tags,
          summary: "File a bug report",
          description:
            "Files a ticket for the service team (scope `support:write`). Always 200: `status` says whether a ticket was `created`, the organization hit its daily cap (`rate_limited`) or filing is disabled (`not_filed`). Repeated reports are stored, not refused.",
        },
      },
    )
    .post(
      "/feature-requests",
      ({ principal, body }) => {
        return fileSupportTicket(s, principal, { kind: "feature", input: body });
      },
      {
        scope: "support:write",
        body: FeatureRequestBody,
        response: { 200: SupportTicketResult },
        detail: {
          tags,
          summary: "Request a capability the platform lacks",
          description: "Same results as a bug report (scope `support:write`).",
        },
      },
    )
    .get(
      "/tickets",
      async (ctx) => pagedList(ctx, s.config.publicUrl, (p) => pageOrgSupportTickets(s.db, ctx.principal.orgId, { kind: ctx.query.kind }, p)),
      {
        scope: "support:write",
        query: ListTicketsQuery,
        response: { 200: t.Array(SupportTicket) },
        detail: { tags, summary: "The tickets this organization filed, newest first (same scope as reading one back)" },
      },
    )
    .get(
      "/tickets/:ticket_key",
      async ({ principal, params }) => {
        const ticket = await getSupportTicket(s.db, params.ticket_key, principal.orgId);
        if (!ticket) throw new NotFoundError("No such support ticket in this organization.");
        return ticket;
      },
      {
        scope: "support:write",
        params: t.Object({ org_id: t.String(), ticket_key: t.String({ maxLength: 40 }) }),
        response: { 200: SupportTicket },
        detail: { tags, summary: "Read back a ticket this organization filed (its `ticket_url`)" },
      },
    ),
);

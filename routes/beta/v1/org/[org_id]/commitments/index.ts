import { t } from "elysia";
import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { pageOfArray, pagedList } from "../../../../../../lib/http/paging.ts";
import { BadRequestError } from "../../../../../../lib/errors.ts";
import { commitmentPerformance, commitmentShown, findCommitment, findCommitments } from "../../../../../../lib/billing/commitmentViews.ts";
import { Commitment, CommitmentDetail, CommitmentParams, CommitmentQuery, ListCommitmentsQuery } from "./model.ts";

const tags = ["Commitments"];

/** The commitment inventory (read only), over the lib functions of the assistant's commitment tools. */
export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix)
    .get(
      "",
      async (ctx) => {
        const q = ctx.query;
        if (q.expiring_within_days !== undefined && q.status !== undefined && q.status !== "active") {
          throw new BadRequestError("Invalid query parameter: expiring_within_days lists active commitments only; leave status out or send status=active.", {
            status: ["only active with expiring_within_days"],
          });
        }
        const expiring = q.expiring_within_days !== undefined;
        const now = s.now();
        const rows = await findCommitments(s.db, ctx.principal.orgId, now, {
          provider: q.provider,
          status: q.status ?? (expiring ? "active" : "all"),
          expiringWithinDays: q.expiring_within_days,
          soonestFirst: expiring,
        });
        return pagedList(ctx, s.config.publicUrl, (p) => pageOfArray(rows.map((c) => commitmentShown(c, now)), p));
      },
      {
        scope: "reports:read",
        query: ListCommitmentsQuery,
        response: { 200: t.Array(Commitment) },
        detail: {
          tags,
          summary: "The organization's commitments (RIs, savings plans, reservations, CUDs, insured commitments); filter by provider, status or expiry horizon",
          description:
            "Ordered by provider, start and provider id; with `expiring_within_days`, the active commitments ending within that many days, soonest end first. Money: `upfront_cost` rounded to cents, hourly figures and `amount` to 6 decimals.",
        },
      },
    )
    .get(
      "/:commitment_id",
      async ({ principal, params, query }) => {
        const now = s.now();
        const c = await findCommitment(s.db, principal.orgId, params.commitment_id, now);
        return { ...commitmentShown(c, now), performance: await commitmentPerformance(s.db, principal.orgId, c, now, query.lookback_days ?? 30) };
      },
      {
        scope: "reports:read",
        params: CommitmentParams,
        query: CommitmentQuery,
        response: { 200: CommitmentDetail },
        detail: { tags, summary: "One commitment with its utilization, covered on-demand cost and savings over the last `lookback_days` complete days (404 when not the organization's)" },
      },
    ),
);

import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { BadRequestError } from "../../../../../../lib/errors.ts";
import { resolveMonths } from "../../../../../../lib/reports/coverage.ts";
import { commitmentSummary } from "../../../../../../lib/reports/commitmentSummary.ts";
import { CommitmentSummary, DEFAULT_MONTHS, SummaryQuery } from "./model.ts";

const tags = ["Commitments"];

export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix).get(
    "",
    async ({ principal, query }) => {
      const now = s.now();
      const months = resolveMonths(now, { start: query.from, end: query.to }, {
        startField: "from",
        endField: "to",
        defaultMonths: DEFAULT_MONTHS,
        error: (message, errors) => new BadRequestError(`Invalid query parameter: ${message}`, errors),
      });
      return commitmentSummary(s, principal.orgId, now, { months, provider: query.provider });
    },
    {
      scope: "reports:read",
      query: SummaryQuery,
      response: { 200: CommitmentSummary },
      detail: {
        tags,
        summary: "Commitment overview per month: coverage, utilization, savings, Effective Savings Rate, and the commitment lock-in",
        description:
          "Per month (default the last 12, the current one included) and billing currency: coverage, utilization, commitment cost, on-demand-equivalent cost, savings, realized savings and the Effective Savings Rate (ESR = realized_savings ÷ ondemand_equivalent_cost), each month marked finalized or in progress; the same for the whole range; and the lock-in of the commitments active now, in months, weighted by their committed cost. Figures come from the allocation reports, as the assistant's get_coverage_and_utilization shows them (to the cent).",
      },
    },
  ),
);

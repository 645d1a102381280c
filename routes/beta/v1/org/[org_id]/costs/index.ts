import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { servedAlsoAs } from "../../../../../../lib/http/openapiComponents.ts";
import { asBadRequest, costQueryOfParams, costRowsCsv, dimensionQueryOfParams, exploreCosts, exploreDimensionValues, type CostExplorerResult } from "../../../../../../lib/billing/costExplorer.ts";
import { COST_QUERY_CSV, CostQueryResult, CostsQuery, DimensionParams, DimensionQuery, DimensionValues } from "./model.ts";

const tags = ["Costs"];

/** `format=csv`: the rows of the JSON answer as a download. */
const csvResponse = (r: CostExplorerResult) =>
  new Response(costRowsCsv(r), {
    status: 200,
    headers: { "content-type": "text/csv; charset=utf-8", "content-disposition": `attachment; filename="costs-${r.window.start_date}-${r.window.end_date}.csv"` },
  });

/**
 * The cost explorer (the assistant's query_costs and list_dimension_values, the same lib
 * functions and cents): params are read from the URL by lib/billing/costExplorer.ts (repeated
 * params, `tag:<key>` filters); bad params (an unknown group_by or filter dimension, a bad
 * window) answer 400, an unknown dimension in the path 404.
 */
export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix)
    .get(
      "",
      async ({ principal, request }) => {
        const { format, ...q } = costQueryOfParams(new URL(request.url).searchParams);
        const r = await asBadRequest(() => exploreCosts(s.db, principal.orgId, s.now(), q));
        // The CSV download is a whole Response (as withEtag's 304): typed as the JSON it stands for.
        return format === "json" ? r : (csvResponse(r) as unknown as CostExplorerResult);
      },
      {
        scope: "reports:read",
        query: CostsQuery,
        response: { 200: servedAlsoAs(CostQueryResult, COST_QUERY_CSV) },
        detail: {
          tags,
          summary: "Costs of a window grouped by up to two dimensions and filtered (JSON, or CSV with format=csv)",
          description:
            "The assistant's query_costs: effective, billed and list cost and the on-demand / commitment / other split of a window of days (by charge date, UTC), grouped by up to two dimensions (provider, billing_account, account, service, service_category, region, resource, charge_category, commitment, month, day, tag:<key>) and filtered. Rows are split by currency (never added across currencies), largest effective cost first; totals per currency cover all rows. Amounts are rounded to cents as the allocation reports are.",
        },
      },
    )
    .get(
      "/dimensions/:dimension",
      async ({ principal, params, request }) => {
        const q = dimensionQueryOfParams(params.dimension, new URL(request.url).searchParams);
        return asBadRequest(() => exploreDimensionValues(s.db, principal.orgId, s.now(), q));
      },
      {
        scope: "reports:read",
        params: DimensionParams,
        query: DimensionQuery,
        response: { 200: DimensionValues },
        detail: {
          tags,
          summary: "Values of one cost dimension (or the tag keys) with their effective cost per currency, most costly first",
          description: "The assistant's list_dimension_values: the values to group or filter on in GET /costs, e.g. /costs/dimensions/service, /costs/dimensions/tag:team, /costs/dimensions/tag_keys.",
        },
      },
    ),
);

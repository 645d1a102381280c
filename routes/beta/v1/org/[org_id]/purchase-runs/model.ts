import { t } from "elysia";
import { component } from "../../../../../../lib/http/openapiComponents.ts";
import { PageQueryFields } from "../../../../../../lib/http/paging.ts";
import { TextEnum } from "../../../../../../lib/http/text.ts";
import { RUN_STATUSES } from "../../../../../../lib/purchasing/runs.ts";

export const ListRunsQuery = t.Object({
  template_id: t.Optional(t.String({ format: "uuid", description: "Only the runs of this template" })),
  status: t.Optional(TextEnum(RUN_STATUSES, { description: "`pending` (claimed, not finished or being retried), `done` or `failed` (given up after repeated errors, or at once when the billing data cannot be planned on, e.g. monthly-grain usage)" })),
  ...PageQueryFields,
});


export const PurchaseRun = component(
  "PurchaseRun",
  t.Object({
    id: t.String({ format: "uuid" }),
    template_id: t.String({ format: "uuid" }),
    execution_date: t.String({ format: "date", description: "The schedule slot (UTC date); each (template, execution date) runs at most once" }),
    status: t.String({ enum: [...RUN_STATUSES] }),
    outcome: t.Union([t.String(), t.Null()], {
      description: "When done: purchased, disabled, below_min_monthly_savings, nothing_to_buy, superseded, schedule_removed or purchase_in_progress",
    }),
    plan_id: t.Union([t.String({ format: "uuid" }), t.Null()], { description: "The plan it generated (GET /commitment-plans/{plan_id})" }),
    purchase_id: t.Union([t.String({ format: "uuid" }), t.Null()], { description: "The purchase it placed (GET /purchases/{purchase_id})" }),
    attempts: t.Integer(),
    last_attempt_failed: t.Boolean({ description: "The last attempt ended in an error (the cause is in the service log); a pending run is retried" }),
    created_at: t.String({ format: "date-time" }),
    completed_at: t.Union([t.String({ format: "date-time" }), t.Null()]),
  }),
);

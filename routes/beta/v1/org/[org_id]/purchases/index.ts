import { t } from "elysia";
import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { approvePurchase, getPurchase, pagePurchases, rejectPurchase } from "../../../../../../lib/purchasing/orders.ts";
import { pagedList } from "../../../../../../lib/http/paging.ts";
import { buyInBackground } from "../../../../../../lib/purchasing/executor.ts";
import type { Principal } from "../../../../../../lib/auth/principal.ts";
import { DecisionBody, ListPurchasesQuery, Purchase, PurchaseParams, PurchaseSummary } from "./model.ts";

const tags = ["Purchases"];
const decider = (p: Principal) => (p.userId ? `user:${p.userId}` : `${p.kind}:${p.credentialId}`);

export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix)
    .get(
      "",
      async (ctx) => pagedList(ctx, s.config.publicUrl, (p) => pagePurchases(s.db, ctx.principal.orgId, { status: ctx.query.status }, p)),
      {
        scope: "purchases:read",
        query: ListPurchasesQuery,
        response: { 200: t.Array(PurchaseSummary) },
        detail: { tags, summary: "Commitment purchases, newest first (filter by status, e.g. pending_approval)" },
      },
    )
    .get("/:purchase_id", ({ principal, params }) => getPurchase(s.db, principal.orgId, params.purchase_id), {
      scope: "purchases:read",
      params: PurchaseParams,
      response: { 200: Purchase },
      detail: { tags, summary: "One purchase: its items (state, token, provider id, price) and its story" },
    })
    .post(
      "/:purchase_id/approve",
      async ({ principal, params, body }) => {
        const p = await approvePurchase(s, principal.orgId, params.purchase_id, { by: decider(principal), note: body?.note });
        // Bought here at once unless another replica is faster; any replica's auto-purchase job
        // takes what is left. A ledger order is already confirmed by the approval itself.
        if (p.status === "approved") buyInBackground(s, p.id);
        return p;
      },
      {
        scope: "purchases:write",
        params: PurchaseParams,
        body: t.Optional(DecisionBody),
        response: { 200: Purchase },
        detail: { tags, summary: "Approve a purchase pending approval: its items are bought at the provider, or recorded in the ledger (409 when it is not pending or has lapsed)" },
      },
    )
    .post(
      "/:purchase_id/reject",
      ({ principal, params, body }) => rejectPurchase(s, principal.orgId, params.purchase_id, { by: decider(principal), note: body?.note }),
      {
        scope: "purchases:write",
        params: PurchaseParams,
        body: t.Optional(DecisionBody),
        response: { 200: Purchase },
        detail: { tags, summary: "Reject a purchase pending approval: nothing is bought (409 when it is not pending)" },
      },
    ),
);

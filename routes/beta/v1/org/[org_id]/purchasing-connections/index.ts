import { t } from "elysia";
import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { pageOfArray, pagedList, PageQueryFields } from "../../../../../../lib/http/paging.ts";
import {
  createPurchasingConnection,
  deletePurchasingConnection,
  getPurchasingConnectionRow,
  listPurchasingConnections,
  purchasingConnectionView,
  updatePurchasingConnection,
} from "../../../../../../lib/purchasing/connections.ts";
import { checkPurchasingConnection } from "../../../../../../lib/purchasing/probe.ts";
import { syncInventory } from "../../../../../../lib/purchasing/inventory.ts";
import { secretBoxOf } from "../../../../../../lib/secrets/index.ts";
import { PurchaseFailure } from "../../../../../../lib/purchasing/providers/types.ts";
import { ProviderError } from "../../../../../../lib/errors.ts";
import { CreatePurchasingConnectionBody, InventoryResult, PurchasingConnectionParams, PurchasingConnectionView, PurchasingTestResult, UpdatePurchasingConnectionBody } from "./model.ts";
import { NO_CONTENT } from "../../../../../../lib/http/openapiComponents.ts";

const tags = ["Purchasing connections"];

export default defineRoutes((s, prefix) => {
  const writeOptions = () => ({ now: s.now(), allowPrivateEndpoints: s.config.connectionsAllowPrivateEndpoints });
  return orgRoutes(s, prefix)
    .get("", async (ctx) => pagedList(ctx, s.config.publicUrl, async (p) => pageOfArray(await listPurchasingConnections(s.db, ctx.principal.orgId), p)), {
      query: t.Object(PageQueryFields),
      scope: "connections:read",
      response: { 200: t.Array(PurchasingConnectionView) },
      detail: { tags, summary: "List the organization's purchasing connections (never their secrets)" },
    })
    .post(
      "",
      async ({ principal, body, set }) => {
        const c = await createPurchasingConnection(s.db, secretBoxOf(s.config), principal.orgId, body, writeOptions());
        set.status = 201;
        return c;
      },
      {
        scope: "connections:write",
        body: CreatePurchasingConnectionBody,
        response: { 201: PurchasingConnectionView },
        detail: { tags, summary: "Connect the credentials commitops buys commitments with at a provider (one per provider; dry_run until turned off)" },
      },
    )
    .get("/:connection_id", async ({ principal, params }) => purchasingConnectionView(await getPurchasingConnectionRow(s.db, principal.orgId, params.connection_id)), {
      scope: "connections:read",
      params: PurchasingConnectionParams,
      response: { 200: PurchasingConnectionView },
      detail: { tags, summary: "One purchasing connection" },
    })
    .patch("/:connection_id", ({ principal, params, body }) => updatePurchasingConnection(s.db, secretBoxOf(s.config), principal.orgId, params.connection_id, body, writeOptions()), {
      scope: "connections:write",
      params: PurchasingConnectionParams,
      body: UpdatePurchasingConnectionBody,
      response: { 200: PurchasingConnectionView },
      detail: { tags, summary: "Change a purchasing connection (dry_run: false makes purchases real; null removes a field)" },
    })
    .delete(
      "/:connection_id",
      async ({ principal, params, set }) => {
        await deletePurchasingConnection(s.db, principal.orgId, params.connection_id);
        set.status = 204;
      },
      {
        scope: "connections:write",
        params: PurchasingConnectionParams,
        detail: { tags, responses: NO_CONTENT, summary: "Delete a purchasing connection (refused with 409 while it is buying approved items)" },
      },
    )
    .post("/:connection_id/test", ({ principal, params }) => checkPurchasingConnection(s, principal.orgId, params.connection_id), {
      scope: "connections:write",
      params: PurchasingConnectionParams,
      response: { 200: PurchasingTestResult },
      detail: { tags, summary: "Check the credentials with one read at the provider (nothing is bought)" },
    })
    .post(
      "/:connection_id/inventory",
      async ({ principal, params }) => {
        const connection = await getPurchasingConnectionRow(s.db, principal.orgId, params.connection_id);
        try {
          return await syncInventory(s, connection);
        } catch (e) {
          // The provider's answer is the client's to know (the connection also records it); anything else stays a 500.
          if (e instanceof PurchaseFailure) throw new ProviderError(e.message, e.cause);
          throw e;
        }
      },
      {
        scope: "connections:write",
        params: PurchasingConnectionParams,
        response: { 200: InventoryResult },
        detail: { tags, summary: "List the commitments at the provider now and reconcile the inventory (new, modified, expired); 502 provider_error with detail.cause when the provider refuses" },
      },
    );
});

import { t } from "elysia";
import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { LimitAliasField, pageOfArray, pagedList, PageQueryFields } from "../../../../../../lib/http/paging.ts";
import { createConnection, deleteConnection, getConnection, listConnections, listRuns, updateConnection } from "../../../../../../lib/connections/service.ts";
import { requestSync, runDueSyncs } from "../../../../../../lib/connections/sync.ts";
import { testConnection } from "../../../../../../lib/connections/probe.ts";
import { secretBoxOf } from "../../../../../../lib/secrets/index.ts";
import { errorForLog } from "../../../../../../lib/log.ts";
import { ConnectionParams, ConnectionView, CreateConnectionBody, RunView, TestResultView, UpdateConnectionBody } from "./model.ts";
import { NO_CONTENT } from "../../../../../../lib/http/openapiComponents.ts";

const tags = ["Billing connections"];

export default defineRoutes((s, prefix) => {
  const writeOptions = () => ({ now: s.now(), allowPrivateEndpoints: s.config.connectionsAllowPrivateEndpoints });
  return orgRoutes(s, prefix)
    .get("", async (ctx) => pagedList(ctx, s.config.publicUrl, async (p) => pageOfArray(await listConnections(s.db, ctx.principal.orgId, s.now()), p)), {
      query: t.Object(PageQueryFields),
      scope: "connections:read",
      response: { 200: t.Array(ConnectionView) },
      detail: { tags, summary: "List the organization's billing connections (never their secrets)" },
    })
    .post(
      "",
      async ({ principal, body, set }) => {
        const c = await createConnection(s.db, secretBoxOf(s.config), principal.orgId, body, writeOptions());
        set.status = 201;
        return c;
      },
      {
        scope: "connections:write",
        body: CreateConnectionBody,
        response: { 201: ConnectionView },
        detail: { tags, summary: "Connect a provider's FOCUS export (AWS Data Exports, Azure cost exports, GCP BigQuery FOCUS view)" },
      },
    )
    .get("/:connection_id", ({ principal, params }) => getConnection(s.db, principal.orgId, params.connection_id, s.now()), {
      scope: "connections:read",
      params: ConnectionParams,
      response: { 200: ConnectionView },
      detail: { tags, summary: "One billing connection and its freshness" },
    })
    .patch("/:connection_id", ({ principal, params, body }) => updateConnection(s.db, secretBoxOf(s.config), principal.orgId, params.connection_id, body, writeOptions()), {
      scope: "connections:write",
      params: ConnectionParams,
      body: UpdateConnectionBody,
      response: { 200: ConnectionView },
      detail: { tags, summary: "Change a connection's name, settings or secrets (null removes a field)" },
    })
    .delete(
      "/:connection_id",
      async ({ principal, params, set }) => {
        await deleteConnection(s.db, principal.orgId, params.connection_id);
        set.status = 204;
      },
      {
        scope: "connections:write",
        params: ConnectionParams,
        detail: { tags, responses: NO_CONTENT, summary: "Delete a connection and its run history (the billing data it imported stays)" },
      },
    )
    .post("/:connection_id/test", ({ principal, params }) => testConnection(s, principal.orgId, params.connection_id), {
      scope: "connections:write",
      params: ConnectionParams,
      response: { 200: TestResultView },
      detail: { tags, summary: "Check access and format: the cause of each failure (credentials, not_found, permission, no_export, not_focus, format, unreachable)" },
    })
    .post(
      "/:connection_id/sync",
      async ({ principal, params, set }) => {
        const run = await requestSync(s, principal.orgId, params.connection_id);
        // This connection runs here at once unless another replica holds it; then the billing-sync job of any replica takes the queued run.
        // Tracked: a stopping process lets it reach a safe point and gives its claim back (lib/shutdown).
        s.shutdown.trackWork(runDueSyncs(s, { connectionId: params.connection_id, limit: 1 })).catch((e) => s.log.error("billing sync failed", { error: errorForLog(e) }));
        set.status = 202;
        return run;
      },
      {
        scope: "connections:write",
        params: ConnectionParams,
        response: { 202: RunView },
        detail: { tags, summary: "Sync now: 202 with the queued run (a repeated request joins it)" },
      },
    )
    .get("/:connection_id/runs", async (ctx) => pagedList(ctx, s.config.publicUrl, (p) => listRuns(s.db, ctx.principal.orgId, ctx.params.connection_id, p)), {
      scope: "connections:read",
      params: ConnectionParams,
      query: t.Object({ ...PageQueryFields, ...LimitAliasField }),
      response: { 200: t.Array(RunView) },
      detail: { tags, summary: "The connection's syncs, newest first (paged): status, periods seen/imported/unchanged, rows, bytes, duration, error" },
    });
});

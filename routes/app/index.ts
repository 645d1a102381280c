import { Elysia } from "elysia";
import type { RouteModule } from "../../lib/http/orgRoutes.ts";
import { consoleLogout, consoleSessionInfo } from "../../lib/console/service.ts";
import { finishConsoleLogin, startConsoleLogin } from "../../lib/console/sessions.ts";
import { proxyToApi } from "../../lib/console/proxy.ts";
import { assetResponse, shellResponse } from "../../lib/console/assets.ts";
import { NotFoundError } from "../../lib/errors.ts";

const hidden = { detail: { hide: true } } as const;

/**
 * The web console (docs/features/console.md): its HTML shell and hashed assets, the sign-in as an
 * OAuth client of this server, and `/app/api/beta/…`, its way to the public API.
 */
export default ((s, prefix) =>
  new Elysia({ prefix, normalize: false })
    .get("/login", ({ request }) => startConsoleLogin(s, request), hidden)
    .get("/callback", ({ request }) => finishConsoleLogin(s, request), hidden)
    .get("/session", ({ request }) => consoleSessionInfo(s, request), hidden)
    .post("/logout", ({ request }) => consoleLogout(s, request), { ...hidden, parse: "none" })
    .get("/assets/:file", async ({ request, params }) => {
      const res = await assetResponse(params.file, request);
      if (!res) throw new NotFoundError("No such console file (the console was updated: reload the page).");
      return res;
    }, hidden)
    // Per method: a GET would otherwise fall to the page route "/*".
    .get("/api/*", ({ request }) => proxyToApi(s, request), hidden)
    .post("/api/*", ({ request }) => proxyToApi(s, request), { ...hidden, parse: "none" })
    .put("/api/*", ({ request }) => proxyToApi(s, request), { ...hidden, parse: "none" })
    .patch("/api/*", ({ request }) => proxyToApi(s, request), { ...hidden, parse: "none" })
    .delete("/api/*", ({ request }) => proxyToApi(s, request), { ...hidden, parse: "none" })
    .get("", () => shellResponse(), hidden)
    .get("/*", () => shellResponse(), hidden)) satisfies RouteModule;

import { Elysia } from "elysia";
import type { RouteModule } from "../../../../lib/http/orgRoutes.ts";
import { upstreamCallback } from "../../../../lib/oauth/flow.ts";
import { CALLBACK_RESPONSES } from "../../../../lib/http/protocolResponses.ts";

/** Redirect target of the upstream OpenID Connect provider. */
export default ((s, prefix) =>
  new Elysia({ prefix, normalize: false }).get("", ({ request }) => upstreamCallback(s, { request }), {
    detail: { tags: ["OAuth"], summary: "Upstream OpenID Connect sign-in callback", responses: CALLBACK_RESPONSES },
  })) satisfies RouteModule;

import { Elysia } from "elysia";
import type { RouteModule } from "../../../lib/http/orgRoutes.ts";
import { authorizationServerMetadata } from "../../../lib/oauth/endpoints.ts";
import { corsPreflight, oauthJson } from "../../../lib/oauth/errors.ts";

/** RFC 8414 authorization server metadata (issuer = PUBLIC_URL). */
export default ((s, prefix) =>
  new Elysia({ prefix, normalize: false })
    .get("", () => oauthJson(authorizationServerMetadata(s.config), 200, { "cache-control": "public, max-age=300" }), {
      detail: { tags: ["OAuth"], summary: "Authorization server metadata (RFC 8414)" },
    })
    .options("", () => corsPreflight("GET"), { detail: { hide: true } })) satisfies RouteModule;

import { Elysia } from "elysia";
import type { RouteModule } from "../../../../lib/http/orgRoutes.ts";
import { protectedResourceMetadata } from "../../../../lib/mcp/http.ts";

const CORS = { "access-control-allow-origin": "*", "access-control-allow-methods": "GET, OPTIONS", "access-control-allow-headers": "Content-Type, MCP-Protocol-Version" };

/** RFC 9728 protected resource metadata of the MCP server (public, cacheable, any origin). */
export default ((s, prefix) =>
  new Elysia({ prefix, normalize: false })
    .get(
      "",
      () =>
        new Response(JSON.stringify(protectedResourceMetadata(s.config.publicUrl)), {
          headers: { "content-type": "application/json", "cache-control": "public, max-age=300", ...CORS },
        }),
      { detail: { tags: ["Assistant (MCP)"], summary: "Protected resource metadata of /mcp (RFC 9728)" } },
    )
    .options("", () => new Response(null, { status: 204, headers: { ...CORS, "access-control-max-age": "600" } }), { detail: { hide: true } })) satisfies RouteModule;

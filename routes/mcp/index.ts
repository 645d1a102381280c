import { Elysia } from "elysia";
import type { RouteModule } from "../../lib/http/orgRoutes.ts";
import { handleMcpRequest } from "../../lib/mcp/http.ts";
import type { Services } from "../../lib/services.ts";
import { MCP_RESPONSES } from "../../lib/http/protocolResponses.ts";

/**
 * The assistant (MCP) server, Streamable HTTP. `parse: "none"` leaves the raw request body to
 * the MCP transport. One handler for the transport's methods (origin check, CORS, auth, then the
 * transport: POST carries JSON-RPC; GET/DELETE answer 405 in stateless mode; OPTIONS is the CORS
 * preflight); other methods get the app's 405.
 */
const handler = (s: Services) => async ({ request, set }: { request: Request; set: { status?: number | string } }) => {
  const res = await handleMcpRequest(s, request);
  set.status = res.status; // for the request log (the Response itself is returned as is)
  return res;
};

const hidden = { parse: "none" as const, detail: { hide: true } };

export default ((s, prefix) =>
  new Elysia({ prefix, normalize: false })
    .post("", handler(s), {
      parse: "none",
      detail: {
        tags: ["Assistant (MCP)"],
        summary: "MCP server (Streamable HTTP: JSON-RPC over POST)",
        description:
          "Model Context Protocol endpoint for AI assistants. Authenticate with OAuth (discovered from /.well-known/oauth-protected-resource/mcp) or an API key with the assistant:read scope.",
        security: [{ bearer: [] }],
        responses: MCP_RESPONSES,
      },
    })
    .get("", handler(s), hidden)
    .delete("", handler(s), hidden)
    .options("", handler(s), hidden)) satisfies RouteModule;

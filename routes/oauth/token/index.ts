import { Elysia } from "elysia";
import type { RouteModule } from "../../../lib/http/orgRoutes.ts";
import { tokenEndpoint } from "../../../lib/oauth/endpoints.ts";
import { corsPreflight } from "../../../lib/oauth/errors.ts";
import { TOKEN_RESPONSES } from "../../../lib/http/protocolResponses.ts";

/** Token endpoint: authorization_code (PKCE) and refresh_token grants; RFC 6749 error bodies. */
export default ((s, prefix) =>
  new Elysia({ prefix, normalize: false })
    .post("", ({ request }) => tokenEndpoint(s, request), {
      parse: "none",
      detail: { tags: ["OAuth"], summary: "Exchange a code or refresh token for tokens", responses: TOKEN_RESPONSES },
    })
    .options("", () => corsPreflight("POST"), { detail: { hide: true } })) satisfies RouteModule;

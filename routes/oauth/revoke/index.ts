import { Elysia } from "elysia";
import type { RouteModule } from "../../../lib/http/orgRoutes.ts";
import { revocationEndpoint } from "../../../lib/oauth/endpoints.ts";
import { corsPreflight } from "../../../lib/oauth/errors.ts";
import { REVOCATION_RESPONSES } from "../../../lib/http/protocolResponses.ts";

/** RFC 7009 token revocation. */
export default ((s, prefix) =>
  new Elysia({ prefix, normalize: false })
    .post("", ({ request }) => revocationEndpoint(s, request), {
      parse: "none",
      detail: { tags: ["OAuth"], summary: "Revoke an access or refresh token (RFC 7009)", responses: REVOCATION_RESPONSES },
    })
    .options("", () => corsPreflight("POST"), { detail: { hide: true } })) satisfies RouteModule;

import { Elysia } from "elysia";
import type { RouteModule } from "../../../lib/http/orgRoutes.ts";
import { authorizeGet, authorizePost } from "../../../lib/oauth/flow.ts";
import { AUTHORIZE_RESPONSES, FORM_RESPONSES } from "../../../lib/http/protocolResponses.ts";

/** The browser login and consent pages of the authorization endpoint. */
export default ((s, prefix) =>
  new Elysia({ prefix, normalize: false })
    .get("", ({ request, server }) => authorizeGet(s, { request, peerIp: server?.requestIP(request)?.address }), {
      detail: { tags: ["OAuth"], summary: "Authorization endpoint: sign-in and consent page", responses: AUTHORIZE_RESPONSES },
    })
    .post("", ({ request, server }) => authorizePost(s, { request, peerIp: server?.requestIP(request)?.address }), {
      parse: "none",
      detail: { tags: ["OAuth"], summary: "Sign-in and consent form submissions", responses: FORM_RESPONSES },
    })) satisfies RouteModule;

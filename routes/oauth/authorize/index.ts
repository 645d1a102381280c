import { Elysia } from "elysia";
import type { RouteModule } from "../../../lib/http/orgRoutes.ts";
import { authorizeGet, authorizePost } from "../../../lib/oauth/flow.ts";

/** The browser login and consent pages of the authorization endpoint. */
export default ((s, prefix) =>
  new Elysia({ prefix, normalize: false })
    .get("", ({ request, server }) => authorizeGet(s, { request, peerIp: server?.requestIP(request)?.address }), {
      detail: { tags: ["OAuth"], summary: "Authorization endpoint: sign-in and consent page" },
    })
    .post("", ({ request, server }) => authorizePost(s, { request, peerIp: server?.requestIP(request)?.address }), {
      parse: "none",
      detail: { tags: ["OAuth"], summary: "Sign-in and consent form submissions" },
    })) satisfies RouteModule;

import { Elysia } from "elysia";
import type { RouteModule } from "../../../lib/http/orgRoutes.ts";
import { logoutGet, logoutPost } from "../../../lib/oauth/flow.ts";
import { FORM_RESPONSES, HTML_PAGE_RESPONSES } from "../../../lib/http/protocolResponses.ts";

/** Sign-out of the authorization server: ends the login session and revokes its tokens. */
export default ((s, prefix) =>
  new Elysia({ prefix, normalize: false })
    .get("", ({ request }) => logoutGet(s, { request }), { detail: { tags: ["OAuth"], summary: "Sign-out page", responses: HTML_PAGE_RESPONSES } })
    .post("", ({ request }) => logoutPost(s, { request }), {
      parse: "none",
      detail: { tags: ["OAuth"], summary: "Sign out (CSRF-protected form)", responses: FORM_RESPONSES },
    })) satisfies RouteModule;

import { Elysia } from "elysia";
import type { RouteModule } from "../../../lib/http/orgRoutes.ts";
import { logoutGet, logoutPost } from "../../../lib/oauth/flow.ts";

/** Sign-out of the authorization server: ends the login session and revokes its tokens. */
export default ((s, prefix) =>
  new Elysia({ prefix, normalize: false })
    .get("", ({ request }) => logoutGet(s, { request }), { detail: { tags: ["OAuth"], summary: "Sign-out page" } })
    .post("", ({ request }) => logoutPost(s, { request }), {
      parse: "none",
      detail: { tags: ["OAuth"], summary: "Sign out (CSRF-protected form)" },
    })) satisfies RouteModule;

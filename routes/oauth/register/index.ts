import { Elysia } from "elysia";
import type { RouteModule } from "../../../lib/http/orgRoutes.ts";
import { registrationEndpoint } from "../../../lib/oauth/endpoints.ts";
import { corsPreflight } from "../../../lib/oauth/errors.ts";
import { REGISTRATION_RESPONSES } from "../../../lib/http/protocolResponses.ts";

/** RFC 7591 dynamic client registration (public clients; answers use RFC 7591 error bodies). */
export default ((s, prefix) =>
  new Elysia({ prefix, normalize: false })
    .post("", ({ request }) => registrationEndpoint(s, request), {
      parse: "none",
      detail: { tags: ["OAuth"], summary: "Register a client (RFC 7591)", responses: REGISTRATION_RESPONSES },
    })
    .options("", () => corsPreflight("POST"), { detail: { hide: true } })) satisfies RouteModule;

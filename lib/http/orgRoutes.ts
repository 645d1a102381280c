import { Elysia } from "elysia";
import type { Services } from "../services.ts";
import { RateLimiter } from "./rateLimit.ts";
import { betaRequestBody } from "./jsonBody.ts";
import { OrgGuard, REQUIRED_SCOPE, type RouteScope } from "./orgGuard.ts";
import { IdempotencyKeys } from "./idempotency.ts";

/**
 * The base of every route module under /beta/v1/org/:org_id. Each route declares what it
 * requires (`{ scope: "estimates:write" }`, `"admin"` or `"any"`); the app's OrgGuard checks it
 * when the request arrives, before the body is read or validated, and the handlers receive the
 * caller as `principal`.
 */
export function orgRoutes(s: Services, prefix: string) {
  const guard = orgGuardOf(s);
  const idempotency = idempotencyKeysOf(s);
  return new Elysia({ prefix, normalize: false })
    .macro({
      // Published as the operation's `x-required-scope`, read from there by OrgGuard.declare
      // and enforced before parsing. The body itself is read by the parse hook below (limits
      // first); `json` here only tells the OpenAPI document the media type.
      // (Cast: Elysia 1.4's macro typing accepts no hook object here although the runtime does.)
      scope: (scope: RouteScope) => ({ parse: "json", detail: { [REQUIRED_SCOPE]: scope } }) as unknown as void,
    })
    .onParse(({ request, contentType }) => betaRequestBody(request, contentType, s.config.maxBodyBytes))
    .derive(({ request }) => {
      const principal = guard.principalOf(request);
      // The guard runs in the app's onRequest; a route reached without it is a wiring fault,
      // answered 500 rather than served without authentication.
      if (!principal) throw new Error("a Beta route was reached without the org guard");
      return { principal };
    })
    // After authentication and validation, so a refused request never claims a key.
    .onBeforeHandle(({ request, principal, body }) => idempotency.begin(request, principal, body))
    .onAfterHandle(({ request, responseValue, set }) => idempotency.finish(request, responseValue, set));
}

/** One `Idempotency-Key` handler per Services (per app); the app's error handler releases failed claims. */
export function idempotencyKeysOf(s: Services): IdempotencyKeys {
  return ((s.extras.idempotencyKeys as IdempotencyKeys | undefined) ??= new IdempotencyKeys(s.db, s.log, s.extras.idempotencyWaitMs as number | undefined));
}

/** One limiter per Services (per app), shared by the Beta guard and /mcp. */
export function rateLimiterOf(s: Services): RateLimiter {
  return ((s.extras.rateLimiter as RateLimiter | undefined) ??= new RateLimiter(s.config.apiRateLimitPerMinute));
}

/** One guard per Services (per app). */
export function orgGuardOf(s: Services): OrgGuard {
  return ((s.extras.orgGuard as OrgGuard | undefined) ??= new OrgGuard(s, rateLimiterOf(s)));
}

/** A route module: given the services and its URL prefix (from its folder), the routes. */
export type RouteModule = (s: Services, prefix: string) => Elysia<any, any, any, any, any, any, any>;

export function defineRoutes<T extends RouteModule>(fn: T): T {
  return fn;
}

import { Elysia } from "elysia";
import { authenticateOrg } from "../auth/guard.ts";
import type { Services } from "../services.ts";
import { RateLimiter } from "./rateLimit.ts";

/**
 * The base of every route module under /beta/v1/org/:org_id: an Elysia instance whose routes
 * all pass the org guard first (401/403; `derive` runs before body validation, so an anonymous caller never learns the schema) and receive the caller as `principal`. Handlers then
 * call `requireScope(principal, …)` for their scope.
 */
export function orgRoutes(s: Services, prefix: string) {
  const limiter = rateLimiterOf(s);
  return new Elysia({ prefix, normalize: false }).derive(async ({ request, params }) => {
    const principal = await authenticateOrg(s, request.headers, String((params as Record<string, string>).org_id ?? ""));
    limiter.check(principal.credentialId);
    return { principal };
  });
}

/** One limiter per Services (per app), shared by every route module. */
export function rateLimiterOf(s: Services): RateLimiter {
  return ((s.extras.rateLimiter as RateLimiter | undefined) ??= new RateLimiter(s.config.apiRateLimitPerMinute));
}

/** A route module: given the services and its URL prefix (from its folder), the routes. */
export type RouteModule = (s: Services, prefix: string) => Elysia<any, any, any, any, any, any, any>;

export function defineRoutes<T extends RouteModule>(fn: T): T {
  return fn;
}

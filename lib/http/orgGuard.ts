import { authenticate, requireAdmin, requireOrg, requireScope } from "../auth/guard.ts";
import type { Scope } from "../auth/scopes.ts";
import type { Principal } from "../auth/principal.ts";
import type { Services } from "../services.ts";
import { rateLimitHeaders, type RateLimiter } from "./rateLimit.ts";
import { ORG_PATH, compileRoutePattern, pathSegments } from "./routePattern.ts";

/**
 * What a Beta route requires of its caller, declared with the route (`{ scope: … }`): one scope,
 * `admin` (every scope: managing API keys) or `any` (any credential of the organization).
 */
export type RouteScope = Scope | "admin" | "any";

/** The OpenAPI extension naming what an operation requires (set by the `scope` route option). */
export const REQUIRED_SCOPE = "x-required-scope";

interface DeclaredRoute {
  pattern: string;
  matches: (segments: string[]) => boolean;
  scope: RouteScope;
}

function checkRouteScope(principal: Principal, scope: RouteScope): void {
  if (scope === "any") return;
  if (scope === "admin") requireAdmin(principal);
  else requireScope(principal, scope);
}

/**
 * The Beta API's guard, run when a request arrives — before its body is read, parsed or
 * validated (DESIGN §12 "auth first"): 401 without a valid credential, 403 for another
 * organization or a scope the route declares and the credential lacks, 429 over the rate
 * limit. The principal is kept for the route's handlers (`principalOf`).
 */
export class OrgGuard {
  /** Declared Beta routes by method. */
  private routes = new Map<string, DeclaredRoute[]>();
  private principals = new WeakMap<Request, Principal>();
  private rateHeaders = new WeakMap<Request, Record<string, string>>();

  constructor(private readonly s: Services, private readonly limiter: RateLimiter) {}

  /** Every Beta org route must declare what it requires: a route without it fails at start. */
  declare(routes: { method: string; path: string; hooks?: unknown }[]): void {
    this.routes = new Map();
    for (const r of routes) {
      if (!r.path.startsWith("/beta/v1/org/")) continue;
      const scope = (r.hooks as { detail?: Record<string, RouteScope> } | undefined)?.detail?.[REQUIRED_SCOPE];
      if (!scope) throw new Error(`Route ${r.method} ${r.path} declares no scope`);
      const list = this.routes.get(r.method) ?? [];
      list.push({ pattern: r.path, matches: compileRoutePattern(r.path), scope });
      this.routes.set(r.method, list);
    }
  }

  /**
   * Authenticates and authorizes a Beta request; a no-op for every other path. Returns the
   * `RateLimit-*` headers the response carries (none when the limit is off or not a Beta path).
   */
  async check(request: Request, path: string): Promise<Record<string, string> | null> {
    const m = ORG_PATH.exec(path);
    if (!m) return null;
    let orgId = m[1]!;
    if (orgId.includes("%")) {
      try {
        orgId = decodeURIComponent(orgId);
      } catch {}
    }
    const principal = await authenticate(this.s, request.headers);
    const rate = this.limiter.check(principal.credentialId);
    const headers = rate && rateLimitHeaders(rate);
    if (headers) this.rateHeaders.set(request, headers);
    requireOrg(principal, orgId);
    const method = request.method === "HEAD" ? "GET" : request.method;
    const segments = pathSegments(path);
    const route = this.routes.get(method)?.find((r) => r.matches(segments));
    // An unknown path or method gets its 404/405 from the router, after authentication.
    this.principals.set(request, principal);
    if (route) checkRouteScope(principal, route.scope);
    return headers;
  }

  /** The `RateLimit-*` headers decided for a request (error responses add them too). */
  rateLimitHeadersOf(request: Request): Record<string, string> | undefined {
    return this.rateHeaders.get(request);
  }

  principalOf(request: Request): Principal | undefined {
    return this.principals.get(request);
  }
}

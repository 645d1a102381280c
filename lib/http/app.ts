import { Elysia } from "elysia";
import { registerFormats } from "./formats.ts";
import { AppError, MethodNotAllowedError, NotFoundError, ServiceUnavailableError, BadRequestError, InternalError, PayloadTooLargeError, UnauthorizedError, NotReadyError } from "../errors.ts";
import { metricsResponse, serviceMetrics } from "../metrics/service.ts";
import { bearerMatches, isStatementTimeout } from "../metrics/access.ts";
import { readiness } from "../ops/readiness.ts";
import { inRequestSpan, SpanStatusCode, tracingEnabled } from "../tracing/index.ts";
import { createHash } from "node:crypto";
import { classifyError } from "./classifyError.ts";
import { errorForLog } from "../log.ts";
import type { Services } from "../services.ts";
import { errorResponse } from "./errorBody.ts";
import { fromElysiaValidation } from "./validation.ts";
import { withErrorResponses } from "./openapiErrors.ts";
import { completeDocument } from "./openapiComplete.ts";
import { hoistComponents } from "./openapiComponents.ts";
import { apiDocs } from "./docs.ts";
import { routes as manifest } from "../../routes/manifest.gen.ts";
import { idempotencyKeysOf, orgGuardOf } from "./orgRoutes.ts";
import { runInRequestScope, type RequestScope } from "../db/requestScope.ts";
import { ORG_PATH, compileRoutePattern, pathSegments } from "./routePattern.ts";
import { HEALTH_RESPONSES, READY_RESPONSES } from "./protocolResponses.ts";
import { setSelfHandler } from "../console/self.ts";

interface RequestMeta {
  id: string;
  start: number;
  /** Set by the error handler: the error Response's status is not visible to onAfterResponse. */
  status?: number;
  /** The route as registered (metrics only). */
  route?: string;
}

/** The path of a request URL without parsing the whole URL (the entry has normalised it). */
function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("://") + 3);
  if (start < 0) return "/";
  const q = url.indexOf("?", start);
  return url.slice(start, q < 0 ? undefined : q);
}

/** Elysia's own failures (validation, JSON parsing, no route), then the shared classification. */
function toAppError(code: string | number, error: any): AppError {
  if (error instanceof AppError) return error;
  if (code === "VALIDATION") return fromElysiaValidation(error);
  // Elysia wraps whatever a parse hook throws; the Beta body reader throws the answer itself.
  if (code === "PARSE" && error?.cause instanceof AppError) return error.cause;
  if (code === "PARSE") return new BadRequestError("The request body is not valid JSON.", {}, "invalid_request");
  if (code === "NOT_FOUND") return new NotFoundError("No such resource.");
  return classifyError(error).error;
}

/**
 * The whole HTTP service as a runtime-neutral Elysia app: `app.fetch` serves it under Bun,
 * Deno or a test's `app.handle(new Request(…))`.
 */
export function createApp(s: Services) {
  registerFormats();
  const meta = new WeakMap<Request, RequestMeta>();
  // Recorded only when something can scrape them.
  const metrics = s.config.metricsToken || s.config.metricsPort ? serviceMetrics(s) : null;
  const tracing = tracingEnabled();
  /** The registered route of a request Elysia routed; else the known route its path matches (refused before routing), else "unmatched". */
  const routeTemplate = (request: Request): string => {
    const routed = meta.get(request)?.route;
    if (routed) return routed;
    const here = pathSegments(pathOf(request.url));
    return knownRoutes.find((r) => r.method === request.method && r.matches(here))?.path ?? "unmatched";
  };
  let knownRoutes: { method: string; path: string; matches: (segments: string[]) => boolean }[] = [];
  const guard = orgGuardOf(s);
  const idempotency = idempotencyKeysOf(s);

  const app = new Elysia({ normalize: false })
    .onRequest(async ({ request, set }) => {
      const id = request.headers.get("x-request-id")?.slice(0, 100) || crypto.randomUUID();
      meta.set(request, { id, start: performance.now() });
      set.headers["x-request-id"] = id;
      // Before any route reads it, on every path (the MCP and OAuth routes read their own bodies).
      const declared = request.headers.get("content-length");
      if (declared !== null && Number(declared) > s.config.maxBodyBytes) throw new PayloadTooLargeError(s.config.maxBodyBytes);
      const rateLimit = await guard.check(request, pathOf(request.url));
      if (rateLimit) Object.assign(set.headers, rateLimit);
    })
    .onTransform(({ request, route }) => {
      const m = (metrics || tracing) && meta.get(request);
      if (m) m.route = route;
    })
    .onError(async ({ code, error, request, path }) => {
      let url: string | null = null;
      await idempotency.failed(request);
      try {
        let err = toAppError(code, error);
        url = pathOf(request.url);
        if (err instanceof NotFoundError && code === "NOT_FOUND") {
          const here = pathSegments(url);
          const allow = [...new Set(knownRoutes.filter((r) => r.matches(here)).map((r) => r.method))];
          if (allow.length) err = new MethodNotAllowedError(allow.includes("GET") && !allow.includes("HEAD") ? [...allow, "HEAD"] : allow);
        }
        const m = meta.get(request);
        if (m) m.status = err.status;
        if (metrics) {
          if (err.status === 429) metrics.rateLimitRefusals.inc();
          if (isStatementTimeout(error)) metrics.statementTimeouts.inc();
        }
        if (err.status >= 500) {
          s.log.error("request failed", {
            request_id: m?.id,
            method: request.method,
            path: url,
            error: errorForLog(error),
          });
        }
        return errorResponse(err, path ?? url, { ...guard.rateLimitHeadersOf(request), ...(m ? { "x-request-id": m.id } : {}) });
      } catch (failure) {
        // The error handler itself must never be what fails a request.
        s.log.error("error handler failed", { path: url, error: errorForLog(failure), original: errorForLog(error) });
        return errorResponse(new InternalError(), url);
      }
    })
    // The request log line. Without it (LOG_LEVEL above info) no hook at all: Elysia schedules
    // every after-response hook on its own macrotask, a cost per request for nothing.
    .onAfterResponse(
      s.log.enabled?.("info") === false
        ? []
        : [
            ({ request, set, responseValue }) => {
              const m = meta.get(request);
              const path = pathOf(request.url);
              s.log.info("request", {
                request_id: m?.id,
                method: request.method,
                path,
                org_id: ORG_PATH.exec(path)?.[1],
                status: m?.status ?? (responseValue instanceof Response ? responseValue.status : typeof set.status === "number" ? set.status : Number(set.status) || 200),
                duration_ms: m ? Math.round((performance.now() - m.start) * 100) / 100 : undefined,
              });
            },
          ],
    )
    .get(
      "/metrics",
      async ({ request }) => {
        // Off the API's keys: a scraper's own token (METRICS_TOKEN), or the loopback METRICS_PORT (scripts/server.ts).
        if (!metrics || !s.config.metricsToken) throw new NotFoundError("No such resource.");
        if (!bearerMatches(request.headers.get("authorization"), s.config.metricsToken)) throw new UnauthorizedError("A valid metrics token is required (Authorization: Bearer <METRICS_TOKEN>).");
        return metricsResponse(metrics);
      },
      { detail: { hide: true } },
    )
    .get("/healthz", () => ({ status: "ok" }), { detail: { tags: ["Operations"], summary: "The process is alive", responses: HEALTH_RESPONSES } })
    .get(
      "/readyz",
      async () => {
        const { ready, checks } = await readiness(s);
        if (!ready) {
          const failing = checks.filter((c) => c.status === "failing");
          throw new NotReadyError(`Not ready: ${failing.map((c) => c.message ?? c.name).join(" ")}`, checks);
        }
        return { status: "ready", database: s.handle.driver, checks };
      },
      { detail: { tags: ["Operations"], summary: "The replica can serve: database, migrations, secret key", responses: READY_RESPONSES } },
    )
    // A browser opening the service lands in the console; API clients get the usual 404.
    .get(
      "/",
      ({ request }) => {
        if (!/\btext\/html\b/.test(request.headers.get("accept") ?? "")) throw new NotFoundError("No such resource. The API is under /beta/v1; its reference is /docs.");
        return new Response(null, { status: 302, headers: { location: "/app/", "cache-control": "no-store" } });
      },
      { detail: { hide: true } },
    )
    // Browsers ask for it on every page (the sign-in pages have no icon link): nothing, not a 404.
    .get("/favicon.ico", () => new Response(null, { status: 204, headers: { "cache-control": "public, max-age=86400" } }), { detail: { hide: true } })
    .use(apiDocs(s));

  const generatedDocument = async (): Promise<unknown> => (await app.handle(new Request(`${s.config.publicUrl}/openapi/generated.json`))).json();
  // Built once (12.7 ms of CPU and 280 KB each time otherwise, on an unauthenticated path); the routes do not change after start-up.
  let openApiDocument: Promise<string> | undefined;
  app.get(
    "/openapi.json",
    async () => {
      openApiDocument ??= generatedDocument()
        .then((doc) => JSON.stringify(completeDocument(withErrorResponses(hoistComponents(doc)), { publicUrl: s.config.publicUrl })))
        .catch((e) => {
          openApiDocument = undefined;
          throw e;
        });
      return new Response(await openApiDocument, { headers: { "content-type": "application/json; charset=utf-8" } });
    },
    { detail: { hide: true } },
  );
  for (const r of manifest) app.use(r.module(s, r.prefix));
  knownRoutes = app.routes.map((r) => ({ method: r.method, path: r.path, matches: compileRoutePattern(r.path) }));
  guard.declare(app.routes);
  exactlyOnceScope(app, (request) => errorResponse(new ServiceUnavailableError(), pathOf(request.url), guard.rateLimitHeadersOf(request)));
  if (metrics) timedRequests(app, (request, response, seconds) =>
    // The route as registered, never the raw path: the label's values are bounded by the routes.
    metrics.httpDuration.observe({ method: request.method, route: routeTemplate(request), status: String(response.status) }, seconds),
  );
  if (tracingEnabled()) tracedRequests(app, routeTemplate);
  setSelfHandler(s, (request) => app.handle(request));
  return app;
}

/**
 * A POST with an Idempotency-Key runs in a request scope (lib/db/requestScope.ts): when its
 * COMMIT goes unanswered in an outage, the client is answered 503 at once (`unavailable`) while
 * the request waits for the database to learn how the write went, and ends as it really did —
 * its answer stored for the retry with the same key, or its key freed.
 */
function exactlyOnceScope(app: { handle(request: Request): Promise<Response> }, unavailable: (request: Request) => Response) {
  const handle = app.handle.bind(app);
  app.handle = (request: Request) => {
    if (request.method !== "POST" || !request.headers.has("idempotency-key")) return handle(request);
    const scope: RequestScope = {};
    return runInRequestScope(
      scope,
      () =>
        new Promise<Response>((resolve, reject) => {
          scope.answerNow = () => resolve(unavailable(request));
          handle(request).then(resolve, reject);
        }),
    );
  };
}

export type App = ReturnType<typeof createApp>;

/** Every request's answer, timed to its head, as the entry receives it (the status as sent, whatever produced it). */
function timedRequests(app: { handle(request: Request): Promise<Response> }, observe: (request: Request, response: Response, seconds: number) => void) {
  const handle = app.handle.bind(app);
  app.handle = async (request: Request) => {
    const start = performance.now();
    const response = await handle(request);
    observe(request, response, (performance.now() - start) / 1000);
    return response;
  };
}

/**
 * A server span per request, in the caller's trace when it sent `traceparent`: named by the route
 * as registered, with the org id hashed (a trace store is not where org ids belong) and the status.
 * The request runs with it active, so its statements' spans are its children.
 */
function tracedRequests(app: { handle(request: Request): Promise<Response> }, routeOf: (request: Request) => string) {
  const handle = app.handle.bind(app);
  app.handle = (request: Request) =>
    inRequestSpan(request, async (span) => {
      try {
        const response = await handle(request);
        const route = routeOf(request);
        const org = ORG_PATH.exec(pathOf(request.url))?.[1];
        span.updateName(`${request.method} ${route}`);
        span.setAttributes({ "http.route": route, "http.response.status_code": response.status, ...(org ? { "commitops.org_id_hash": orgIdHash(org) } : {}) });
        if (response.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        return response;
      } catch (e) {
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw e;
      } finally {
        span.end();
      }
    });
}

/** An org id as a trace attribute: the same org, the same value, and not the id. */
function orgIdHash(orgId: string): string {
  return createHash("sha256").update(`commitops-org\0${orgId}`).digest("hex").slice(0, 16);
}

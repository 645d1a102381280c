import { Elysia } from "elysia";
import { openapi } from "@elysiajs/openapi";
import { AppError, MethodNotAllowedError, NotFoundError, ServiceUnavailableError, BadRequestError } from "../errors.ts";
import { classifyError, errorForLog } from "./classifyError.ts";
import type { Services } from "../services.ts";
import { errorResponse } from "./errorBody.ts";
import { fromElysiaValidation } from "./validation.ts";
import { withErrorResponses } from "./openapiErrors.ts";
import { routes as manifest } from "../../routes/manifest.gen.ts";

interface RequestMeta {
  id: string;
  start: number;
  /** Set by the error handler: the error Response's status is not visible to onAfterResponse. */
  status?: number;
}

const ORG_IN_PATH = /^\/beta\/v1\/org\/([^/]+)/;

/** Elysia's own failures (validation, JSON parsing, no route), then the shared classification. */
function toAppError(code: string | number, error: any): AppError {
  if (error instanceof AppError) return error;
  if (code === "VALIDATION") return fromElysiaValidation(error);
  if (code === "PARSE") return new BadRequestError("The request body is not valid JSON.", {}, "invalid_request");
  if (code === "NOT_FOUND") return new NotFoundError("No such resource.");
  return classifyError(error).error;
}

/** Matches a concrete path against an Elysia route pattern (`/a/:id/b`). */
function patternMatches(pattern: string, path: string): boolean {
  const p = pattern.replace(/\/+$/, "").split("/");
  const a = path.replace(/\/+$/, "").split("/");
  if (p.length !== a.length) return p[p.length - 1] === "*" && a.length >= p.length - 1;
  return p.every((seg, i) => seg.startsWith(":") || seg === "*" || seg === a[i]);
}

/**
 * The whole HTTP service as a runtime-neutral Elysia app: `app.fetch` serves it under Bun,
 * Deno or a test's `app.handle(new Request(…))`.
 */
export function createApp(s: Services) {
  const meta = new WeakMap<Request, RequestMeta>();
  let knownRoutes: { method: string; path: string }[] = [];

  const app = new Elysia({ normalize: false })
    .use(
      openapi({
        path: "/docs",
        // The plugin's document is completed by /openapi.json below (error responses).
        specPath: "/openapi/generated.json",
        scalar: { url: "/openapi.json" } as any,
        documentation: {
          openapi: "3.1.0",
          info: {
            title: "commitops Beta API",
            version: "1.0.0",
            description: "Cloud commitment optimization: allocation reports, commitment plan templates, cost estimates, support and the assistant (MCP) server.",
          },
          servers: [{ url: s.config.publicUrl }],
          components: {
            securitySchemes: {
              bearer: { type: "http", scheme: "bearer", description: "Org API key (co_…) or OAuth access token" },
              apiKey: { type: "apiKey", in: "header", name: "x-api-key" },
            },
          },
        } as any,
      }),
    )
    .onRequest(({ request, set }) => {
      const id = request.headers.get("x-request-id")?.slice(0, 100) || crypto.randomUUID();
      meta.set(request, { id, start: performance.now() });
      set.headers["x-request-id"] = id;
    })
    .onError(({ code, error, request, path }) => {
      let err = toAppError(code, error);
      const url = new URL(request.url).pathname;
      if (err instanceof NotFoundError && code === "NOT_FOUND") {
        const allow = [...new Set(knownRoutes.filter((r) => patternMatches(r.path, url)).map((r) => r.method))];
        if (allow.length) err = new MethodNotAllowedError(allow.includes("GET") && !allow.includes("HEAD") ? [...allow, "HEAD"] : allow);
      }
      const m = meta.get(request);
      if (m) m.status = err.status;
      if (err.status >= 500) {
        s.log.error("request failed", {
          request_id: m?.id,
          method: request.method,
          path: url,
          error: errorForLog(error),
        });
      }
      return errorResponse(err, path ?? url, m ? { "x-request-id": m.id } : {});
    })
    .onAfterResponse(({ request, set, responseValue }) => {
      const m = meta.get(request);
      const path = new URL(request.url).pathname;
      s.log.info("request", {
        request_id: m?.id,
        method: request.method,
        path,
        org_id: ORG_IN_PATH.exec(path)?.[1],
        status: m?.status ?? (responseValue instanceof Response ? responseValue.status : typeof set.status === "number" ? set.status : Number(set.status) || 200),
        duration_ms: m ? Math.round((performance.now() - m.start) * 100) / 100 : undefined,
      });
    })
    .get("/healthz", () => ({ status: "ok" }), { detail: { tags: ["Operations"], summary: "The process is alive" } })
    .get(
      "/readyz",
      async () => {
        try {
          await s.handle.query("SELECT 1");
        } catch (e) {
          throw new ServiceUnavailableError();
        }
        return { status: "ready", database: s.handle.driver };
      },
      { detail: { tags: ["Operations"], summary: "The database is reachable" } },
    );

  const generatedDocument = async (): Promise<unknown> => (await app.handle(new Request(`${s.config.publicUrl}/openapi/generated.json`))).json();
  app.get("/openapi.json", async () => withErrorResponses(await generatedDocument()), { detail: { hide: true } });
  for (const r of manifest) app.use(r.module(s, r.prefix));
  knownRoutes = app.routes.map((r) => ({ method: r.method, path: r.path }));
  return app;
}

export type App = ReturnType<typeof createApp>;

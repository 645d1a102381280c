import { afterAll, beforeAll } from "bun:test";
import { createApp, type App } from "../../lib/http/app.ts";
import { loadConfig, type Config } from "../../lib/config.ts";
import { createLogger } from "../../lib/log.ts";
import { createServices, type Services } from "../../lib/services.ts";
import { createOrganization } from "../../lib/orgs/service.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { createTestDatabase, type DriverName, type TestDatabase } from "./db.ts";

export interface TestContext {
  db: TestDatabase;
  s: Services;
  app: App;
  /** An org with an all-scopes API key. */
  org: { id: string; key: string };
  /** Sends a request through the real app. `path` is relative to http://localhost. */
  request(method: string, path: string, opts?: { body?: unknown; key?: string | null; headers?: Record<string, string>; rawBody?: string }): Promise<Response>;
  /** Same as request, relative to /beta/v1/org/{org.id}. */
  orgRequest(method: string, path: string, opts?: { body?: unknown; key?: string | null; headers?: Record<string, string>; rawBody?: string }): Promise<Response>;
  newOrg(name?: string, scopes?: string[]): Promise<{ id: string; key: string }>;
}

/**
 * Sets up (beforeAll) a fresh database, services, app and an org with a key for one suite and
 * tears it down afterwards. Use inside describeEachDb.
 */
export function useTestApp(driver: DriverName, opts: { config?: Partial<Config>; now?: () => Date; extras?: Record<string, unknown> } = {}): TestContext {
  const ctx = {} as TestContext;
  beforeAll(async () => {
    ctx.db = await createTestDatabase(driver);
    const config = loadConfig({ ...process.env, PUBLIC_URL: "http://localhost" }, { jobsEnabled: false, seedDemo: false, apiRateLimitPerMinute: 0, ...opts.config });
    ctx.s = createServices(ctx.db.handle, config, createLogger("silent"), { now: opts.now, extras: opts.extras });
    ctx.app = createApp(ctx.s);
    ctx.newOrg = async (name = "Test org", scopes?: string[]) => {
      const o = await createOrganization(ctx.s.db, { name });
      const k = await createApiKey(ctx.s.db, { orgId: o.id, scopes });
      return { id: o.id, key: k.key };
    };
    ctx.org = await ctx.newOrg();
    ctx.request = async (method, path, o = {}) => {
      const headers: Record<string, string> = { ...(o.headers ?? {}) };
      const key = o.key === undefined ? ctx.org.key : o.key;
      if (key) headers.authorization = `Bearer ${key}`;
      let body: string | undefined;
      if (o.rawBody !== undefined) body = o.rawBody;
      else if (o.body !== undefined) body = JSON.stringify(o.body);
      if (body !== undefined) headers["content-type"] ??= "application/json";
      return ctx.app.handle(new Request(`http://localhost${path}`, { method, headers, body }));
    };
    ctx.orgRequest = (method, path, o) => ctx.request(method, `/beta/v1/org/${ctx.org.id}${path}`, o);
  });
  afterAll(async () => {
    await ctx.db?.drop();
  });
  return ctx;
}

/**
 * Requests with an API key the database does not know cost one lookup per key per 30 s, not one
 * per request (lib/auth/apiKeys.ts `UnknownKeys`); keys created meanwhile work at once.
 */
import { afterAll, afterEach, beforeAll, expect, setSystemTime, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { describeEachDb } from "../helpers/db.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { createApp, type App } from "../../lib/http/app.ts";
import { loadConfig } from "../../lib/config.ts";
import { createLogger } from "../../lib/log.ts";
import { createServices } from "../../lib/services.ts";
import { createOrganization } from "../../lib/orgs/service.ts";
import { createApiKey, UNKNOWN_KEY_TTL_MS } from "../../lib/auth/apiKeys.ts";
import type { DatabaseHandle } from "../../lib/db/index.ts";

describeEachDb("unknown API keys are remembered briefly", (driver) => {
  let db: TestDatabase;
  let app: App;
  let orgId = "";
  let adminKey = "";
  /** Statements that looked an API key up, counted through the handle the app runs on. */
  let lookups = 0;

  beforeAll(async () => {
    db = await createTestDatabase(driver);
    const inner = db.handle;
    const counting = new Proxy(inner, {
      get(target, k) {
        if (k === "query") {
          return (text: string, ...rest: unknown[]) => {
            if (/FROM api_keys k\b/.test(text)) lookups++;
            return (inner.query as any)(text, ...rest);
          };
        }
        return Reflect.get(target, k, target);
      },
    }) as DatabaseHandle;
    const config = loadConfig({ ...process.env, PUBLIC_URL: "http://localhost" }, { jobsEnabled: false, seedDemo: false, apiRateLimitPerMinute: 0 });
    const s = createServices(counting, config, createLogger("silent"));
    app = createApp(s);
    orgId = (await createOrganization(s.db, { name: "Keys" })).id;
    adminKey = (await createApiKey(s.db, { orgId })).key;
  });
  afterAll(async () => {
    await db?.drop();
  });
  afterEach(() => {
    setSystemTime();
  });

  const get = (key: string) => app.handle(new Request(`http://localhost/beta/v1/org/${orgId}/segments`, { headers: { authorization: `Bearer ${key}` } }));
  const randomKey = () => `co_${randomBytes(32).toString("base64url")}`;

  test("500 requests with one unknown key: all 401, one lookup; a key created afterwards works at once", async () => {
    const wrong = randomKey();
    lookups = 0;
    for (let i = 0; i < 500; i++) {
      const r = await get(wrong);
      expect(r.status).toBe(401);
    }
    expect(lookups).toBe(1);
    // Another unknown key is looked up on its own.
    expect((await get(randomKey())).status).toBe(401);
    expect(lookups).toBe(2);

    const fresh = await createApiKey(db.handle.db, { orgId, name: "after the burst" });
    expect((await get(fresh.key)).status).toBe(200);
    expect((await get(adminKey)).status).toBe(200);
    // Valid keys are looked up on every request (a revocation applies on the next one).
    const before = lookups;
    for (let i = 0; i < 5; i++) expect((await get(fresh.key)).status).toBe(200);
    expect(lookups).toBe(before + 5);
  });

  test("the memory lasts UNKNOWN_KEY_TTL_MS; a revoked key is remembered as well", async () => {
    const wrong = randomKey();
    lookups = 0;
    expect((await get(wrong)).status).toBe(401);
    expect((await get(wrong)).status).toBe(401);
    expect(lookups).toBe(1);
    setSystemTime(new Date(Date.now() + UNKNOWN_KEY_TTL_MS + 1000));
    expect((await get(wrong)).status).toBe(401);
    expect(lookups).toBe(2);
    setSystemTime();

    const k = await createApiKey(db.handle.db, { orgId, name: "to revoke" });
    expect((await get(k.key)).status).toBe(200);
    const revoked = await app.handle(new Request(`http://localhost/beta/v1/org/${orgId}/api-keys/${k.id}`, { method: "DELETE", headers: { authorization: `Bearer ${adminKey}` } }));
    expect(revoked.status).toBeLessThan(300);
    lookups = 0;
    for (let i = 0; i < 50; i++) expect((await get(k.key)).status).toBe(401);
    expect(lookups).toBe(1);
  });
});

import { expect, test, describe } from "bun:test";
import { createTestDatabase } from "../helpers/db.ts";
import { startTcpProxy } from "../helpers/tcpProxy.ts";
import { createApp } from "../../lib/http/app.ts";
import { loadConfig } from "../../lib/config.ts";
import { createLogger } from "../../lib/log.ts";
import { createServices } from "../../lib/services.ts";
import { openDb } from "../../lib/db/index.ts";
import { createOrganization } from "../../lib/orgs/service.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";

const config = loadConfig({ PUBLIC_URL: "http://localhost" }, { jobsEnabled: false, seedDemo: false });

async function expect503(app: ReturnType<typeof createApp>, path: string, key?: string) {
  const r = await app.handle(new Request(`http://localhost${path}`, { headers: key ? { authorization: `Bearer ${key}` } : {} }));
  expect(r.status).toBe(503);
  const b = await r.json();
  expect(b.code).toBe("service_unavailable");
  expect(JSON.stringify(b)).not.toMatch(/ECONNREFUSED|PGlite|127\.0\.0\.1|stack/);
}

describe("database down → 503", () => {
  test("[pglite] the embedded database closed under a running app", async () => {
    const db = await createTestDatabase("pglite");
    const s = createServices(db.handle, config, createLogger("silent"));
    const app = createApp(s);
    const org = await createOrganization(s.db, { name: "x" });
    const key = (await createApiKey(s.db, { orgId: org.id })).key;
    expect((await app.handle(new Request("http://localhost/readyz"))).status).toBe(200);
    await db.handle.close();
    await expect503(app, "/readyz");
    await expect503(app, `/beta/v1/org/${org.id}`, key);
  });

  test.skipIf(!process.env.TEST_DATABASE_URL)("[postgres] the server goes away under a running app", async () => {
    const db = await createTestDatabase("postgres");
    const target = new URL(db.url!);
    // A TCP proxy in front of the server that we can cut, as a server crash would.
    const proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
    const handle = await openDb({ url: proxy.urlFor(db.url!), migrate: false, log: createLogger("silent") });
    const s = createServices(handle, config, createLogger("silent"));
    const app = createApp(s);
    const org = await createOrganization(s.db, { name: "x" });
    const key = (await createApiKey(s.db, { orgId: org.id })).key;
    expect((await app.handle(new Request("http://localhost/readyz"))).status).toBe(200);
    await proxy.cut();
    await expect503(app, "/readyz");
    await expect503(app, `/beta/v1/org/${org.id}`, key);
    await handle.close().catch(() => {});
    await proxy.close();
    await db.drop();
  });
});

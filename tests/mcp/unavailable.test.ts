import { expect, test } from "bun:test";
import { createTestDatabase } from "../helpers/db.ts";
import { createApp } from "../../lib/http/app.ts";
import { loadConfig } from "../../lib/config.ts";
import { createLogger } from "../../lib/log.ts";
import { createServices } from "../../lib/services.ts";
import { createOrganization } from "../../lib/orgs/service.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";
import { initializeBody, mcpHeaders } from "./fixtures.ts";

test("database down → /mcp answers 503 service_unavailable, nothing leaked", async () => {
  const db = await createTestDatabase("pglite");
  const s = createServices(db.handle, loadConfig({ PUBLIC_URL: "http://localhost" }, { jobsEnabled: false, seedDemo: false }), createLogger("silent"));
  const app = createApp(s);
  const org = await createOrganization(s.db, { name: "x" });
  const key = (await createApiKey(s.db, { orgId: org.id })).key;
  const send = () => app.handle(new Request("http://localhost/mcp", { method: "POST", headers: mcpHeaders(key), body: JSON.stringify(initializeBody) }));
  expect((await send()).status).toBe(200);
  await db.handle.close();
  const r = await send();
  expect(r.status).toBe(503);
  expect(r.headers.get("retry-after")).toBeTruthy();
  const b = await r.json();
  expect(b.code).toBe("service_unavailable");
  expect(JSON.stringify(b)).not.toMatch(/PGlite|stack|closed/i);
}, 30_000);

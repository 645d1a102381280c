import { expect, test, afterAll } from "bun:test";
import { createTestDatabase } from "../helpers/db.ts";
import { createApp } from "../../lib/http/app.ts";
import { loadConfig } from "../../lib/config.ts";
import { createLogger } from "../../lib/log.ts";
import { createServices } from "../../lib/services.ts";
import { createOrganization } from "../../lib/orgs/service.ts";
import { createApiKey } from "../../lib/auth/apiKeys.ts";

const lines: any[] = [];
const db = await createTestDatabase("pglite");
const s = createServices(db.handle, loadConfig({ PUBLIC_URL: "http://localhost" }, { apiRateLimitPerMinute: 0 }), createLogger("info", (l) => lines.push(JSON.parse(l))));
const app = createApp(s);
afterAll(() => db.drop());

test("one JSON log line per request with request id, org id, the real status and duration; no secret", async () => {
  const org = await createOrganization(s.db, { name: "log" });
  const key = (await createApiKey(s.db, { orgId: org.id })).key;
  const ok = await app.handle(new Request(`http://localhost/beta/v1/org/${org.id}`, { headers: { authorization: `Bearer ${key}`, "x-request-id": "req-123" } }));
  expect(ok.headers.get("x-request-id")).toBe("req-123");
  await app.handle(new Request(`http://localhost/beta/v1/org/${org.id}`, { method: "PUT", headers: { authorization: `Bearer ${key}` } }));
  await app.handle(new Request(`http://localhost/beta/v1/org/${org.id}`, { headers: { authorization: "Bearer co_wrong" } }));
  await app.handle(new Request(`http://localhost/mcp`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } }));
  await new Promise((r) => setTimeout(r, 50));
  const reqs = lines.filter((l) => l.msg === "request");
  expect(reqs.length).toBe(4);
  expect(reqs[0]).toMatchObject({ request_id: "req-123", method: "GET", org_id: org.id, status: 200 });
  expect(typeof reqs[0].duration_ms).toBe("number");
  expect(reqs[1].status).toBe(405);
  expect(reqs[2].status).toBe(401);
  expect(reqs[3].status).toBe(401); // a route answering with a Response of its own
  expect(JSON.stringify(lines)).not.toContain(key);
});

test("a failed query logged with errorForLog keeps its stack but never its parameters (drizzle puts them in the message and the stack)", async () => {
  const { sql } = await import("drizzle-orm");
  const { errorForLog } = await import("../../lib/log.ts");
  const e: Error = await s.db.execute(sql`SELECT ${"secret-param-4711"}::text FROM no_such_table`).then(() => new Error("no failure"), (x: Error) => x);
  expect(e).toBeInstanceOf(Error);
  expect(String(e.message) + String(e.stack)).toContain("secret-param-4711");
  const logged = errorForLog(e) as { message: string; stack?: string };
  expect(logged.stack).toContain("at ");
  expect(JSON.stringify(logged)).not.toContain("secret-param-4711");
});

// Serves, in one process, the real app (PORT_APP) and a bare Elysia hello route (PORT_HELLO),
// so bench/auth.ts can compare them in the same run. Prints "READY <orgId> <key>" when up.
import { Elysia } from "elysia";
import { loadConfig } from "../lib/config.ts";
import { createLogger } from "../lib/log.ts";
import { openDb } from "../lib/db/index.ts";
import { createServices } from "../lib/services.ts";
import { createApp } from "../lib/http/app.ts";
import { createOrganization } from "../lib/orgs/service.ts";
import { createApiKey } from "../lib/auth/apiKeys.ts";

const config = loadConfig(process.env, { jobsEnabled: false, seedDemo: false, logLevel: "silent", apiRateLimitPerMinute: 0 });
const handle = await openDb({ url: process.env.BENCH_DB_URL, migrate: true });
const s = createServices(handle, config, createLogger("silent"));
const app = createApp(s);
const org = await createOrganization(s.db, { name: "bench" });
const key = await createApiKey(s.db, { orgId: org.id });
Bun.serve({ port: Number(process.env.PORT_APP), hostname: "127.0.0.1", fetch: (r) => app.handle(r) });
const hello = new Elysia().get("/hello", () => "hello");
Bun.serve({ port: Number(process.env.PORT_HELLO), hostname: "127.0.0.1", fetch: (r) => hello.handle(r) });
console.log(`READY ${org.id} ${key.key}`);

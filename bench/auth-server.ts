// Serves, in one process, the real app (PORT_APP) through the production Bun entry
// (scripts/bun-server.ts: URL normalisation, last-resort handler) and a bare Elysia hello route
// (PORT_HELLO), so bench/auth.ts can compare them in the same run. Prints "READY <orgId> <key>".
// The rate limiter runs (its limit is out of reach). BENCH_LOG_LEVEL (default silent) sets the
// app's log level (JSON lines on stdout, which bench/auth.ts drops after the READY line).
import { Elysia } from "elysia";
import { loadConfig } from "../lib/config.ts";
import { createLogger, parseLogLevel } from "../lib/log.ts";
import { openDb } from "../lib/db/index.ts";
import { createServices } from "../lib/services.ts";
import { createApp } from "../lib/http/app.ts";
import { createOrganization } from "../lib/orgs/service.ts";
import { createApiKey } from "../lib/auth/apiKeys.ts";
import { listen } from "../scripts/bun-server.ts";

const logLevel = process.env.BENCH_LOG_LEVEL ? parseLogLevel(process.env.BENCH_LOG_LEVEL) : "silent";
const config = loadConfig(process.env, { jobsEnabled: false, seedDemo: false, logLevel, apiRateLimitPerMinute: 1_000_000_000 });
const handle = await openDb({ url: process.env.BENCH_DB_URL, migrate: true });
const s = createServices(handle, config, createLogger(logLevel));
const app = createApp(s);
const org = await createOrganization(s.db, { name: "bench" });
const key = await createApiKey(s.db, { orgId: org.id });
listen(s, app, { port: Number(process.env.PORT_APP), hostname: "127.0.0.1" });
const hello = new Elysia().get("/hello", () => "hello");
Bun.serve({ port: Number(process.env.PORT_HELLO), hostname: "127.0.0.1", fetch: (r) => hello.handle(r) });
console.log(`READY ${org.id} ${key.key}`);

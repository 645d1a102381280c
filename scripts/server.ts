// Bun entry: serve the whole service (API, docs, jobs) on one port.
import { loadConfig } from "../lib/config.ts";
import { createLogger } from "../lib/log.ts";
import { openDb } from "../lib/db/index.ts";
import { createServices } from "../lib/services.ts";
import { createApp } from "../lib/http/app.ts";
import { seedDemoData, seedDemoOrganization } from "../lib/demo/seed.ts";
import { jobsPlugin } from "../jobs/index.ts";
import { DataDirLockedError } from "../lib/db/pglite.ts";
import { listen } from "./bun-server.ts";

export async function serve() {
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  let handle;
  try {
    handle = await openDb({ url: config.databaseUrl, dataDir: config.dataDir, migrate: true });
  } catch (e) {
    if (e instanceof DataDirLockedError) {
      console.error(e.message);
      process.exit(1);
    }
    throw e;
  }
  const s = createServices(handle, config, log);
  const app = createApp(s);
  if (config.jobsEnabled) app.use(await jobsPlugin(s));

  const server = listen(s, app, { port: config.port, hostname: config.host });

  const lines = [
    `commitops listening on ${config.publicUrl} (database: ${handle.description})`,
    `  API:      ${config.publicUrl}/beta/v1/org/{org_id}/…`,
    `  OpenAPI:  ${config.publicUrl}/openapi.json`,
    `  Docs:     ${config.publicUrl}/docs`,
    `  MCP:      ${config.publicUrl}/mcp`,
  ];
  if (config.seedDemo) {
    const demo = await seedDemoOrganization(s);
    // The demo's billing months and catalog load in the background: the API answers meanwhile.
    void seedDemoData(s, demo.orgId);
    lines.push(`  Demo org: ${demo.orgId}`);
    if (demo.apiKey) lines.push(`  Demo API key (shown once, keep it): ${demo.apiKey}`);
    else lines.push(`  Demo API key: shown at first start; make another with: npx commitops apikey create --org ${demo.orgId} (stop the server first when on the embedded database)`);
    lines.push(`  Try: curl -H "Authorization: Bearer <key>" ${config.publicUrl}/beta/v1/org/${demo.orgId}`);
  }
  console.log(lines.join("\n"));
  log.info("started", { url: config.publicUrl, database: handle.driver });

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info("shutting down", { signal });
    await server.stop(false); // stop accepting; in-flight requests finish
    await handle.close().catch(() => {});
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
  return server;
}

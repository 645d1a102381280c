// Deno entry: the same runtime-neutral app served with Deno.serve.
//   deno run -A scripts/server.deno.ts
import { loadConfig } from "../lib/config.ts";
import { createLogger } from "../lib/log.ts";
import { openDb } from "../lib/db/index.ts";
import { createServices } from "../lib/services.ts";
import { createApp } from "../lib/http/app.ts";
import { seedDemo } from "../lib/demo/seed.ts";
import { fetchHandler } from "../lib/http/entry.ts";
import { rememberPeerAddress } from "../lib/oauth/peerAddress.ts";
import { keepServingOnUncaughtErrors } from "../lib/lastResort.ts";

declare const Deno: any;

const config = loadConfig();
const log = createLogger(config.logLevel);
keepServingOnUncaughtErrors(log);
const handle = await openDb({ url: config.databaseUrl, readUrl: config.databaseReadUrl, dataDir: config.dataDir, migrate: true, migrationLockTimeoutMs: config.migrationLockTimeoutMs });
const s = createServices(handle, config, log);
const app = createApp(s);
if (config.seedDemo) {
  const demo = await seedDemo(s);
  console.log(`Demo org: ${demo.orgId}`);
}
const serveRequest = fetchHandler(app, log);
const server = Deno.serve({ port: config.port, hostname: config.host, onListen: () => console.log(`commitops (Deno) listening on ${config.publicUrl}`) }, (req: Request, info: any) => {
  rememberPeerAddress(req, info?.remoteAddr?.hostname);
  return serveRequest(req);
});
const stop = async () => {
  await server.shutdown();
  await handle.close();
  Deno.exit(0);
};
Deno.addSignalListener("SIGTERM", stop);
Deno.addSignalListener("SIGINT", stop);

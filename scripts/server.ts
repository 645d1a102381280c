// Bun entry: serve the whole service (API, docs, jobs) on one port. The order is the cold start's
// (bench/coldstart.ts): the app's modules load while the database opens, the server listens as
// soon as the app exists, and the jobs and the demo data start after that.
import { loadConfig } from "../lib/config.ts";
import { createLogger } from "../lib/log.ts";
import { openDb, ReadReplicaConfigError } from "../lib/db/index.ts";
import { createServices } from "../lib/services.ts";
import { DataDirLockedError } from "../lib/db/pglite.ts";
import { MigrationLockTimeoutError } from "../lib/db/migrate.ts";
import { listen, listenMetrics } from "./bun-server.ts";
import { keepServingOnUncaughtErrors } from "../lib/lastResort.ts";
import { warmConsole } from "../lib/console/assets.ts";
import { startTracing } from "../lib/tracing/index.ts";

/**
 * After the grace (SHUTDOWN_GRACE_SECONDS): how long abandoned work may take to roll back, the
 * claims to be given back, the pool and the trace exporter to close. At most ≈ 5 s together, so
 * the default grace (25 s) ends within a 30 s kill timeout (Kubernetes' default).
 */
const ABANDON_MS = 2000;
const RELEASE_MS = 1500;
const CLOSE_MS = 1500;

const within = <T>(p: Promise<T>, ms: number) => Promise.race([p.then(() => true as const), new Promise<false>((r) => setTimeout(() => r(false), ms))]);

/** Bun's error when the port is taken (EADDRINUSE; its message asks "Is port … in use?"). */
function isAddressInUse(e: unknown): boolean {
  const x = e as { code?: unknown; message?: unknown };
  return x?.code === "EADDRINUSE" || (typeof x?.message === "string" && /in use|EADDRINUSE/i.test(x.message));
}

export async function serve() {
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  keepServingOnUncaughtErrors(log);
  const appModules = Promise.all([import("../lib/http/app.ts"), import("../lib/demo/seed.ts")]);
  let handle;
  try {
    handle = await openDb({ url: config.databaseUrl, readUrl: config.databaseReadUrl, dataDir: config.dataDir, migrate: true, migrationLockTimeoutMs: config.migrationLockTimeoutMs, log });
  } catch (e) {
    if (e instanceof DataDirLockedError || e instanceof ReadReplicaConfigError || e instanceof MigrationLockTimeoutError) {
      console.error(e.message);
      process.exit(1);
    }
    throw e;
  }
  const [{ createApp }, { seedDemoData, seedDemoOrganization }] = await appModules;
  // Before the app is built: it instruments itself only when tracing is on.
  const tracing = config.otelEndpoint ? await startTracing({ endpoint: config.otelEndpoint, serviceName: config.otelServiceName }) : null;
  const s = createServices(handle, config, log);
  const app = createApp(s);
  // The console's bundle is built (from source) or unpacked (binary) while the server starts.
  warmConsole((e) => log.error("console bundle failed", { error: e instanceof Error ? e.message : String(e) }));
  // The demo organization (one short transaction) exists, and its key is printed, by the time
  // /readyz answers; its data loads in the background after that.
  const demo = config.seedDemo ? await seedDemoOrganization(s) : undefined;
  // PURCHASE_WEBHOOK_URL / SUPPORT_WEBHOOK_URL (deprecated) as endpoints before the API answers, so no event misses them.
  await (await import("../lib/webhooks/legacy.ts")).syncLegacyEndpoints(s);

  let server: ReturnType<typeof listen>;
  try {
    server = listen(s, app, { port: config.port, hostname: config.host, reusePort: config.reusePort });
  } catch (e) {
    await handle.close().catch(() => {});
    if (isAddressInUse(e)) {
      console.error(`commitops: port ${config.port} on ${config.host} is already in use (another commitops instance?). Stop it, or start this one with another PORT.`);
      process.exit(1);
    }
    throw e;
  }

  // Metrics on a loopback port of their own (METRICS_PORT): a failure to bind is said and the service goes on.
  let metricsServer: ReturnType<typeof listenMetrics> | undefined;
  if (config.metricsPort) {
    try {
      metricsServer = listenMetrics(s, config.metricsPort);
    } catch (e) {
      log.error("metrics port unavailable", { port: config.metricsPort, error: e instanceof Error ? e.message : String(e) });
    }
  }

  const lines = [
    `commitops listening on ${config.publicUrl} (database: ${handle.description}${handle.replica ? `; report reads: ${handle.replica.description}` : ""})`,
    `  API:      ${config.publicUrl}/beta/v1/org/{org_id}/…`,
    `  OpenAPI:  ${config.publicUrl}/openapi.json`,
    `  Docs:     ${config.publicUrl}/docs`,
    `  MCP:      ${config.publicUrl}/mcp`,
    `  Console:  ${config.publicUrl}/app/`,
  ];
  if (demo) {
    lines.push(`  Demo org: ${demo.orgId}`);
    if (demo.apiKey) lines.push(`  Demo API key (shown once, keep it): ${demo.apiKey}`);
    else lines.push(`  Demo API key: shown at first start; make another with: npx commitops apikey create --org ${demo.orgId} (stop the server first when on the embedded database)`);
    lines.push(`  Try: curl -H "Authorization: Bearer <key>" ${config.publicUrl}/beta/v1/org/${demo.orgId}`);
    if (demo.signIn)
      lines.push(
        `  Demo sign-in (shown once, keep it): ${demo.signIn.emails.admin} (admin), ${demo.signIn.emails.member} (member), ${demo.signIn.emails.viewer} (viewer); password ${demo.signIn.password}`,
      );
  }
  console.log(lines.join("\n"));
  log.info("started", { url: config.publicUrl, database: handle.driver });
  // The demo's billing months and estimate load in the background: the API answers meanwhile.
  if (demo) void seedDemoData(s, demo.orgId);
  // The cron jobs (scheduled on `.use`) start once the server answers.
  const jobs = config.jobsEnabled ? await import("../jobs/index.ts") : null;
  if (jobs) app.use(await jobs.jobsPlugin(s));

  // docs/OPERATIONS.md, "Stopping and restarting". The first SIGTERM/SIGINT: no new job run, no
  // new connection; requests, downloads and job runs in flight get the grace to finish (job loops
  // take no new item: lib/shutdown); then what still runs is cut (an import mid-period rolls
  // back); the claims and leases this process still holds are given back so another replica
  // takes them at once; the pool closes; exit 0. A second signal exits at once.
  let stopping = false;
  const shutdown = async (signal: "SIGTERM" | "SIGINT") => {
    if (stopping) {
      log.warn("second signal: exiting now", { signal });
      process.exit(signal === "SIGINT" ? 130 : 143);
    }
    stopping = true;
    const t0 = performance.now();
    const graceMs = config.shutdownGraceSeconds * 1000;
    s.shutdown.requestStop();
    const schedules = jobs ? jobs.stopJobSchedules(app) : 0;
    log.info("shutting down", { signal, grace_seconds: config.shutdownGraceSeconds, requests_in_flight: server.pendingRequests, jobs_in_flight: s.shutdown.workInFlight(), job_schedules_stopped: schedules });
    void metricsServer?.stop(true);
    const drained = Promise.all([server.stop(false), s.shutdown.workSettled()]); // stop accepting; in-flight requests finish
    if (!(await within(drained, graceMs))) {
      log.warn("shutdown grace over: cutting what still runs", { grace_seconds: config.shutdownGraceSeconds, requests_in_flight: server.pendingRequests, jobs_in_flight: s.shutdown.workInFlight() });
      s.shutdown.abandonWork();
      void server.stop(true);
      await within(drained, ABANDON_MS);
    }
    const { released, failed } = await s.shutdown.releaseHeld(RELEASE_MS);
    if (released.length || failed.length) log.info("shutdown: claims given back", { released, not_released: failed });
    await within(handle.close().catch(() => {}), CLOSE_MS);
    if (tracing) await within(tracing.shutdown(), CLOSE_MS);
    log.info("stopped", { seconds: Math.round(performance.now() - t0) / 1000 });
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
  return server;
}

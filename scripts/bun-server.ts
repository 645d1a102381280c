// The Bun adapter of the HTTP service: the one place that calls Bun.serve (server, binary, tests).
import type { Services } from "../lib/services.ts";
import { fetchHandler, lastResortResponse } from "../lib/http/entry.ts";
import { rememberPeerAddress } from "../lib/oauth/peerAddress.ts";

export interface ListenOptions {
  port: number;
  hostname: string;
  /** SO_REUSEPORT (default off: a second process on a taken port fails instead of sharing it). */
  reusePort?: boolean;
}

export function listen(s: Services, app: { handle(request: Request): Promise<Response> }, opts: ListenOptions) {
  const handle = fetchHandler(app, s.log);
  return Bun.serve({
    port: opts.port,
    hostname: opts.hostname,
    // Never Bun's developer error page (it shows source lines, stack frames and the cwd).
    development: false,
    // Bun turns SO_REUSEPORT on in production mode: a second instance would then listen on the
    // same port and take half the connections. The port is ours alone unless asked otherwise.
    reusePort: opts.reusePort ?? false,
    // 0 disables Bun's 10 s idle timeout, which would cut SSE streams of the MCP server.
    idleTimeout: 0,
    // Bun's own limit would answer an empty 413 before the app sees the request. Every body
    // reader of the app stops at its own limit (MAX_BODY_BYTES; 64 KiB for OAuth forms) and a
    // declared Content-Length over it gets the 413 error body unread, whatever its size.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    fetch: (req, server) => {
      // Only the entry sees the socket: login throttling counts failures per client address
      // (looked up only when a sign-in asks for it).
      rememberPeerAddress(req, () => server.requestIP(req)?.address);
      return handle(req);
    },
    error: (e) => lastResortResponse(s.log, e),
  });
}

/**
 * METRICS_PORT: /metrics alone, without a token, on 127.0.0.1 (a scraper on the same host or a
 * sidecar). Everything else there is a 404.
 */
export function listenMetrics(s: Services, port: number) {
  return Bun.serve({
    port,
    hostname: "127.0.0.1",
    development: false,
    reusePort: false,
    fetch: async (req) => {
      if (new URL(req.url).pathname !== "/metrics" || (req.method !== "GET" && req.method !== "HEAD")) return new Response("Not found\n", { status: 404 });
      const { metricsResponse, serviceMetrics } = await import("../lib/metrics/service.ts");
      return metricsResponse(serviceMetrics(s));
    },
    error: (e) => lastResortResponse(s.log, e),
  });
}

// Debian's headless Chromium for the browser tests (CI installs it with
// scripts/ci-install-chromium.sh). Absent locally: the tests are skipped with a message; absent
// in CI: a failure, never a silent skip.
import { afterAll, beforeAll } from "bun:test";
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";
import { useTestApp } from "./app.ts";
import type { DriverName } from "./db.ts";
import { rememberPeerAddress } from "../../lib/oauth/peerAddress.ts";

export const CHROMIUM = "/usr/bin/chromium";

/** Whether Chromium is installed; `suite` names the skipped tests in the message. */
export function chromiumAvailable(suite: string): boolean {
  const present = existsSync(CHROMIUM);
  if (!present && process.env.CI) throw new Error(`${CHROMIUM} is missing in CI: scripts/ci-install-chromium.sh did not install it`);
  if (!present) console.warn(`[${suite}] SKIPPED: ${CHROMIUM} is missing. Install it with scripts/ci-install-chromium.sh.`);
  return present;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}

/**
 * The test app behind a real loopback server with Chromium launched, for one browser suite. The
 * server binds first (its URL is the app's PUBLIC_URL: the OAuth issuer, the docs' origin) and
 * serves the app once the app exists.
 */
export function useServedTestApp(driver: DriverName, suite: string, opts: { now?: () => Date; config?: Record<string, unknown> } = {}) {
  const hasChromium = chromiumAvailable(suite);
  const config: { publicUrl?: string } = { ...opts.config };
  let server: ReturnType<typeof Bun.serve> | undefined;
  let handler: (req: Request) => Response | Promise<Response> = () => new Response("starting", { status: 503 });
  beforeAll(() => {
    server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: (req, srv) => {
        rememberPeerAddress(req, () => srv.requestIP(req)?.address);
        return handler(req);
      },
    });
    config.publicUrl = `http://127.0.0.1:${server.port}`;
  });
  const t = useTestApp(driver, { config, now: opts.now });
  let browser: Browser | undefined;
  beforeAll(async () => {
    handler = (req) => t.app.handle(req);
    if (hasChromium) browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    server?.stop(true);
  });
  return { t, hasChromium, baseUrl: () => config.publicUrl!, browser: () => browser! };
}

// Debian's headless Chromium for the browser tests (CI installs it with
// scripts/ci-install-chromium.sh). Absent locally: the tests are skipped with a message; absent
// in CI: a failure, never a silent skip.
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";

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

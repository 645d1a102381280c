import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, startProcess, waitFor } from "../helpers/process.ts";

const root = join(import.meta.dir, "../..");

/**
 * Issue 26, point 2: Bun turns SO_REUSEPORT on in production mode, so a second instance on the
 * same port started and took half the connections. Listening is exclusive: the second instance
 * exits non-zero with a plain message, and the first keeps every connection.
 */
test("a second instance on a taken port exits 1 with a clear message; the first keeps serving", async () => {
  const dir = mkdtempSync(join(tmpdir(), "commitops-listen-"));
  const port = await freePort();
  const env = (name: string) => ({ PORT: String(port), HOST: "0.0.0.0", DATABASE_URL: "", DATA_DIR: join(dir, name), SEED_DEMO: "false", JOBS_ENABLED: "false", LOG_LEVEL: "warn" });
  const first = startProcess(process.execPath, [join(root, "scripts/main.ts"), "serve"], { cwd: root, env: env("a") });
  try {
    await waitFor(`http://127.0.0.1:${port}/readyz`, 200, 90_000);
    const second = startProcess(process.execPath, [join(root, "scripts/main.ts"), "serve"], { cwd: root, env: env("b") });
    const code = await Promise.race([second.exited, new Promise<string>((r) => setTimeout(() => r("still running"), 60_000))]);
    if (code === "still running") await second.stop("SIGKILL");
    expect(code).toBe(1);
    const out = second.output();
    expect(out).toContain(`port ${port}`);
    expect(out).toContain("already in use");
    expect(out).not.toMatch(/^\s+at /m); // one plain line, no stack
    // Every connection still reaches the first instance (its database, its answers).
    for (let i = 0; i < 20; i++) {
      const r = await fetch(`http://127.0.0.1:${port}/readyz`, { headers: { connection: "close" } });
      expect(r.status).toBe(200);
    }
    expect(first.child.exitCode).toBeNull();
  } finally {
    await first.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 180_000);

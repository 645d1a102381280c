import { expect, test } from "bun:test";
import { join } from "node:path";
import { spawnSync } from "node:child_process";

/**
 * Issue 29: a lean binary and a fast start. The provider SDKs (and the other modules only some
 * connection kinds or commands use) load when used: what a server or CLI start imports must not
 * pull them in.
 */
const root = join(import.meta.dir, "../..");

/** Packages a start must not load: each is imported by the adapter of one connection kind. */
const LAZY = /node_modules\/(@aws-sdk|@smithy|@azure|@google-cloud|google-gax|@grpc|protobufjs|google-auth-library|hyparquet|hyparquet-compressors)\//;

/** The node_modules packages loaded after importing `modules` in a fresh process. */
function packagesLoadedBy(modules: string[]): string[] {
  const script =
    `for (const m of ${JSON.stringify(modules.map((m) => join(root, m)))}) await import(m);\n` +
    `console.log(JSON.stringify(Object.keys(require.cache)));`;
  const r = spawnSync(process.execPath, ["-e", script], { cwd: root, encoding: "utf8", env: { ...process.env, DATABASE_URL: "" } });
  expect(r.status, r.stderr).toBe(0);
  const loaded = JSON.parse(r.stdout.trim().split("\n").at(-1)!) as string[];
  return [...new Set(loaded.filter((p) => LAZY.test(p)).map((p) => p.split("node_modules/").at(-1)!.split("/").slice(0, 2).join("/")))];
}

test("the server's start (server, app, demo seed, jobs) loads no provider SDK", () => {
  expect(packagesLoadedBy(["scripts/server.ts", "lib/http/app.ts", "lib/demo/seed.ts", "jobs/index.ts", "lib/webhooks/legacy.ts"])).toEqual([]);
}, 60_000);

test("the CLI's command table loads no provider SDK (each command loads its own when run)", () => {
  expect(packagesLoadedBy(["scripts/cli/index.ts"])).toEqual([]);
}, 60_000);

// The compiled binary's size budget (150 MB) is checked on the build tests/foundation/binary.test.ts makes.

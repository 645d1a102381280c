#!/usr/bin/env node
// `npx commitops …`: runs the CLI under the Bun that npm installed with the project.
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
let bunBin;
try {
  bunBin = join(dirname(require.resolve("bun/package.json")), "bin", "bun.exe");
} catch {
  bunBin = "bun";
}
const r = spawnSync(bunBin, [join(here, "main.ts"), ...process.argv.slice(2)], { stdio: "inherit" });
process.exit(r.status ?? 1);

// npm run bench: every benchmark in turn (each prints a Markdown table). Pass names to run some:
//   npm run bench -- auth reports
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";

const skip = new Set(["run.ts", "auth-server.ts", "auth-minimal-server.ts", "scale.ts", "sync.ts", "soak.ts"]);
const wanted = process.argv.slice(2);
const files = readdirSync(import.meta.dir).filter((f) => f.endsWith(".ts") && !skip.has(f) && (!wanted.length || wanted.includes(f.replace(/\.ts$/, ""))));
let failed = 0;
for (const f of files.sort()) {
  console.log(`\n## bench/${f}`);
  const r = spawnSync(process.execPath, [join(import.meta.dir, f)], { stdio: "inherit" });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);

// npm run bench: every benchmark in turn (each prints a Markdown table), then one table of the
// headline figures with their same-run baselines (bench/lib/summary.ts). Pass names to run some:
//   npm run bench -- scale coldstart
// The import benchmark (bench/scale.ts) runs at SCALE_ROWS=1000000 here unless set.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { cpus, tmpdir, totalmem } from "node:os";
import { existsSync, readFileSync, rmSync } from "node:fs";

const skip = new Set(["run.ts", "auth-server.ts", "auth-minimal-server.ts", "sync.ts", "soak.ts", "reports-scale.ts"]);
const wanted = process.argv.slice(2);
const files = readdirSync(import.meta.dir).filter((f) => f.endsWith(".ts") && !skip.has(f) && (!wanted.length || wanted.includes(f.replace(/\.ts$/, ""))));
const summary = join(tmpdir(), `commitops-bench-summary-${process.pid}.jsonl`);
const env = { ...process.env, BENCH_SUMMARY: summary, SCALE_ROWS: process.env.SCALE_ROWS ?? "1000000" };
let failed = 0;
for (const f of files.sort()) {
  console.log(`\n## bench/${f}`);
  const r = spawnSync(process.execPath, [join(import.meta.dir, f)], { stdio: "inherit", env });
  if (r.status !== 0) failed++;
}
if (existsSync(summary)) {
  const rows = readFileSync(summary, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  rmSync(summary, { force: true });
  console.log(`\n## Headline figures (${new Date().toISOString().slice(0, 10)}, ${cpus().length} × ${cpus()[0]?.model.trim()}, ${(totalmem() / 2 ** 30).toFixed(0)} GB)\n`);
  console.log("| figure | commitops | baseline (same run) | ratio | goal |");
  console.log("|---|---|---|---|---|");
  for (const r of rows) console.log(`| ${r.figure} | ${r.value} | ${r.baseline} | ${r.ratio} | ${r.goal} |`);
}
process.exit(failed ? 1 : 0);

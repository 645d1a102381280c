// npm run build → dist/commitops: one executable with the server, the CLI, PGlite's assets and
// the migrations (drizzle/migrations.gen.ts) embedded. `OUTFILE` overrides the path.
import { join } from "node:path";

const outfile = process.env.OUTFILE ?? join(import.meta.dir, "..", "dist", "commitops");
const proc = Bun.spawnSync([process.execPath, "build", "--compile", "--minify-syntax", "--sourcemap=none", join(import.meta.dir, "main.binary.ts"), "--outfile", outfile], {
  stdout: "inherit",
  stderr: "inherit",
  cwd: join(import.meta.dir, ".."),
});
if (proc.exitCode !== 0) process.exit(proc.exitCode ?? 1);
console.log(`built ${outfile}`);

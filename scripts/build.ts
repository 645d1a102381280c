// npm run build → dist/commitops: one executable with the server, the CLI, PGlite's assets, the
// migrations (drizzle/migrations.gen.ts) and a prebuilt data directory embedded. `OUTFILE`
// overrides the path.
import { join } from "node:path";
import { pgliteTemplateArchive } from "../lib/db/pglite.ts";
import { templateMeta, unpackTemplate, writeTemplate } from "../lib/db/pgliteTemplate.ts";
import { writeFileSync } from "node:fs";
import { buildConsole } from "../lib/adapters/consoleBuild.ts";

const root = join(import.meta.dir, "..");
const outfile = process.env.OUTFILE ?? join(root, "dist", "commitops");

// The template of a fresh embedded database (initdb + every migration, lib/db/pgliteTemplate.ts):
// a first start of the binary unpacks it instead of running initdb and the migrations. The entry
// (scripts/main.binary.ts) embeds it from this fixed path; it is keyed by the migrations' hash, so
// a binary never uses a template of other migrations.
const template = await pgliteTemplateArchive();
writeTemplate(join(root, "dist", ".build", "pglite-template.tar.gz"), template);
const meta = templateMeta(unpackTemplate(template))!;
console.log(`embedded PGlite data directory: migrations ${meta.tags.join(", ")} (${meta.migrations}), ${(template.length / 1e6).toFixed(1)} MB`);

// The console's bundle (lib/adapters/consoleBuild.ts), embedded as one file the binary hands to
// lib/console/assets.ts: the binary serves the same console with no bundler and no network.
const consoleFiles = await buildConsole();
writeFileSync(
  join(root, "dist", ".build", "console.bundle"),
  JSON.stringify(consoleFiles.map((f) => ({ name: f.name, kind: f.kind, base64: Buffer.from(f.bytes).toString("base64") }))),
);
console.log(`embedded console: ${consoleFiles.length} files, ${(consoleFiles.reduce((n, f) => n + f.bytes.length, 0) / 1e3).toFixed(0)} kB`);

// --bytecode: JavaScriptCore bytecode compiled now instead of parsing the ~27 MB bundle at every
// start (≈ 0.1–0.3 s of each start on this 2-core machine; ESM output keeps top-level await).
const proc = Bun.spawnSync([process.execPath, "build", "--compile", "--bytecode", "--format=esm", "--minify-syntax", "--sourcemap=none", join(import.meta.dir, "main.binary.ts"), "--outfile", outfile], {
  stdout: "inherit",
  stderr: "inherit",
  cwd: root,
});
if (proc.exitCode !== 0) process.exit(proc.exitCode ?? 1);
console.log(`built ${outfile}`);

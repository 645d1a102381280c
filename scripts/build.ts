// npm run build → dist/commitops: one executable with the server, the CLI, PGlite's assets, the
// migrations (drizzle/migrations.gen.ts) and a prebuilt data directory embedded. `OUTFILE`
// overrides the path; BUILD_BYTECODE=off|0|1|all chooses the bytecode (below).
import { join } from "node:path";
import { readFileSync, writeFileSync } from "node:fs";
import { gunzipSync, gzipSync } from "node:zlib";
import { pgliteTemplateArchive } from "../lib/db/pglite.ts";
import { templateMeta, unpackTemplate, writeTemplate } from "../lib/db/pgliteTemplate.ts";
import { buildConsole } from "../lib/adapters/consoleBuild.ts";

const root = join(import.meta.dir, "..");
const outfile = process.env.OUTFILE ?? join(root, "dist", "commitops");
const assets = join(root, "dist", ".build");
const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;

/** Writes `bytes` zstd-compressed (level 19: ≈ 3.5× smaller than PGlite's files, 20 ms to undo). */
function writeZstd(name: string, bytes: Uint8Array): void {
  const packed = Bun.zstdCompressSync(bytes, { level: 19 });
  writeFileSync(join(assets, name), packed);
  console.log(`embedded ${name}: ${mb(bytes.length)} → ${mb(packed.length)}`);
}

// The template of a fresh embedded database (initdb + every migration, lib/db/pgliteTemplate.ts):
// a first start of the binary unpacks it instead of running initdb and the migrations. The entry
// (scripts/main.binary.ts) embeds it from this fixed path; it is keyed by the migrations' hash, so
// a binary never uses a template of other migrations. Re-gzipped at level 9 (−2.3 MB, same gunzip).
const template = await pgliteTemplateArchive();
const tar = unpackTemplate(template)!;
const meta = templateMeta(tar)!;
const packedTemplate = gzipSync(tar, { level: 9 });
writeTemplate(join(assets, "pglite-template.tar.gz"), packedTemplate);
console.log(`embedded PGlite data directory: migrations ${meta.tags.join(", ")} (${meta.migrations}), ${mb(template.length)} → ${mb(packedTemplate.length)}`);
if (gunzipSync(packedTemplate).length !== tar.length) throw new Error("re-gzipped template differs");

// PGlite's wasm, initdb and file-system bundle, and Scalar's browser script for /docs.
const pglite = join(root, "node_modules", "@electric-sql", "pglite", "dist");
for (const f of ["pglite.wasm", "initdb.wasm", "pglite.data"]) writeZstd(`${f}.zst`, readFileSync(join(pglite, f)));
writeZstd("scalar.js.zst", readFileSync(join(root, "node_modules", "@scalar", "api-reference", "dist", "browser", "standalone.js")));

// The console's bundle (lib/adapters/consoleBuild.ts), embedded as one file the binary hands to
// lib/console/assets.ts: the binary serves the same console with no bundler and no network.
const consoleFiles = await buildConsole();
writeZstd("console.bundle.zst", new TextEncoder().encode(JSON.stringify(consoleFiles.map((f) => ({ name: f.name, kind: f.kind, base64: Buffer.from(f.bytes).toString("base64") })))));
console.log(`embedded console: ${consoleFiles.length} files, ${(consoleFiles.reduce((n, f) => n + f.bytes.length, 0) / 1e3).toFixed(0)} kB`);

// --splitting: every `await import()` (the provider SDKs, the CLI, the console's and MCP's
// modules) becomes its own chunk, read and parsed only when a start imports it; the server's start
// parses ≈ 3 MB of code instead of all 12 MB. --minify: whitespace and identifiers too (−20 MB of
// code before the SDK work). --bytecode-depth=1: JavaScriptCore bytecode of every module's body
// and its top-level functions, compiled now instead of at each start; deeper functions compile
// from source when first called. Measured 2026-11-28 (2 shared cores, PostgreSQL start to /readyz):
// no bytecode 132 MB, 298–439 ms; depth 0 137 MB, 174–466 ms; depth 1 149 MB, 204–332 ms; every
// function 158 MB, 139–217 ms (over the 150 MB budget).
const BYTECODE = bytecodeFlags(process.env.BUILD_BYTECODE ?? "1");
const proc = Bun.spawnSync(
  [process.execPath, "build", "--compile", "--splitting", "--minify", ...BYTECODE, "--format=esm", "--sourcemap=none", join(import.meta.dir, "main.binary.ts"), "--outfile", outfile],
  { stdout: "inherit", stderr: "inherit", cwd: root },
);
if (proc.exitCode !== 0) process.exit(proc.exitCode ?? 1);
console.log(`built ${outfile}: ${mb(Bun.file(outfile).size)}`);

/** BUILD_BYTECODE: off, all (every function), or a nesting depth (0: module bodies only). */
function bytecodeFlags(v: string): string[] {
  if (/^(off|false|no)$/i.test(v)) return [];
  if (/^(all|on|true|yes)$/i.test(v)) return ["--bytecode"];
  if (/^\d+$/.test(v)) return ["--bytecode", `--bytecode-depth=${v}`];
  throw new Error(`BUILD_BYTECODE: off, all or a depth, not ${v}`);
}

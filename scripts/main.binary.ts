// Entry of the compiled binary: embeds PGlite's three asset files (bun build --compile does not
// follow PGlite's runtime URL loads), the prebuilt data directory of a fresh embedded database
// (written by scripts/build.ts) and the Scalar script of /docs, then runs the normal entry.
import pgliteWasm from "../node_modules/@electric-sql/pglite/dist/pglite.wasm" with { type: "file" };
import initdbWasm from "../node_modules/@electric-sql/pglite/dist/initdb.wasm" with { type: "file" };
import pgliteData from "../node_modules/@electric-sql/pglite/dist/pglite.data" with { type: "file" };
import pgliteTemplate from "../dist/.build/pglite-template.tar.gz" with { type: "file" };
import scalarScript from "../node_modules/@scalar/api-reference/dist/browser/standalone.js" with { type: "file" };
import { prewarmPglite, setPgliteAssets } from "../lib/db/pglite.ts";
import { setPgliteTemplate } from "../lib/db/pgliteTemplate.ts";
import { setScalarScript } from "../lib/http/docs.ts";
import consoleBundle from "../dist/.build/console.bundle" with { type: "file" };
import { setConsoleFiles } from "../lib/console/assets.ts";

setPgliteAssets(async () => ({
  pgliteWasm: await Bun.file(pgliteWasm).arrayBuffer(),
  initdbWasm: await Bun.file(initdbWasm).arrayBuffer(),
  fsBundle: await Bun.file(pgliteData).arrayBuffer(),
}));

// On the embedded database, PGlite's wasm compiles (on another thread) while the app loads.
if (!/^postgres(ql)?:\/\//.test(process.env.DATABASE_URL ?? "") && (process.argv.length <= 2 || process.argv[2] === "serve")) prewarmPglite();

setPgliteTemplate(async () => new Uint8Array(await Bun.file(pgliteTemplate).arrayBuffer()));

setScalarScript(async () => new Uint8Array(await Bun.file(scalarScript).arrayBuffer()));

setConsoleFiles(async () =>
  (JSON.parse(await Bun.file(consoleBundle).text()) as { name: string; kind: "entry" | "chunk" | "asset"; base64: string }[]).map((f) => ({ name: f.name, kind: f.kind, bytes: new Uint8Array(Buffer.from(f.base64, "base64")) })),
);

await import("./main.ts");

// Entry of the compiled binary: embeds PGlite's three asset files (bun build --compile does not
// follow PGlite's runtime URL loads) and the Scalar script of /docs, then runs the normal entry.
import pgliteWasm from "../node_modules/@electric-sql/pglite/dist/pglite.wasm" with { type: "file" };
import initdbWasm from "../node_modules/@electric-sql/pglite/dist/initdb.wasm" with { type: "file" };
import pgliteData from "../node_modules/@electric-sql/pglite/dist/pglite.data" with { type: "file" };
import scalarScript from "../node_modules/@scalar/api-reference/dist/browser/standalone.js" with { type: "file" };
import { setPgliteAssets } from "../lib/db/pglite.ts";
import { setScalarScript } from "../lib/http/docs.ts";

setPgliteAssets(async () => ({
  pgliteWasm: await Bun.file(pgliteWasm).arrayBuffer(),
  initdbWasm: await Bun.file(initdbWasm).arrayBuffer(),
  fsBundle: await Bun.file(pgliteData).arrayBuffer(),
}));

setScalarScript(async () => new Uint8Array(await Bun.file(scalarScript).arrayBuffer()));

await import("./main.ts");

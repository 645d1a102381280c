// Entry of the compiled binary: embeds PGlite's three asset files (bun build --compile does not
// follow PGlite's runtime URL loads), the prebuilt data directory of a fresh embedded database,
// the Scalar script of /docs and the console's bundle (all written by scripts/build.ts, the large
// ones zstd-compressed: 15 MB less binary for ≈ 20–40 ms of decompression on the start that
// needs them), then runs the normal entry.
import pgliteWasm from "../dist/.build/pglite.wasm.zst" with { type: "file" };
import initdbWasm from "../dist/.build/initdb.wasm.zst" with { type: "file" };
import pgliteData from "../dist/.build/pglite.data.zst" with { type: "file" };
import pgliteTemplate from "../dist/.build/pglite-template.tar.gz" with { type: "file" };
import scalarScript from "../dist/.build/scalar.js.zst" with { type: "file" };
import consoleBundle from "../dist/.build/console.bundle.zst" with { type: "file" };
import { prewarmPglite, setPgliteAssets } from "../lib/db/pglite.ts";
import { setPgliteTemplate } from "../lib/db/pgliteTemplate.ts";
import { setScalarScript } from "../lib/http/docs.ts";
import { setConsoleFiles } from "../lib/console/assets.ts";

/** An embedded zstd file, decompressed off the main thread. */
const unpack = async (path: string): Promise<Uint8Array<ArrayBuffer>> => new Uint8Array(await Bun.zstdDecompress(new Uint8Array(await Bun.file(path).arrayBuffer())));
const arrayBuffer = async (path: string): Promise<ArrayBuffer> => (await unpack(path)).buffer;

setPgliteAssets(async () => {
  const [pgliteWasmBytes, initdbWasmBytes, fsBundle] = await Promise.all([arrayBuffer(pgliteWasm), arrayBuffer(initdbWasm), arrayBuffer(pgliteData)]);
  return { pgliteWasm: pgliteWasmBytes, initdbWasm: initdbWasmBytes, fsBundle };
});

// On the embedded database, PGlite's wasm compiles (on another thread) while the app loads.
if (!/^postgres(ql)?:\/\//.test(process.env.DATABASE_URL ?? "") && (process.argv.length <= 2 || process.argv[2] === "serve")) prewarmPglite();

setPgliteTemplate(async () => new Uint8Array(await Bun.file(pgliteTemplate).arrayBuffer()));

setScalarScript(() => unpack(scalarScript));

setConsoleFiles(async () =>
  (JSON.parse(new TextDecoder().decode(await unpack(consoleBundle))) as { name: string; kind: "entry" | "chunk" | "asset"; base64: string }[]).map((f) => ({
    name: f.name,
    kind: f.kind,
    bytes: new Uint8Array(Buffer.from(f.base64, "base64")),
  })),
);

await import("./main.ts");

import { basename, join } from "node:path";
import type { ConsoleFile } from "../console/assets.ts";

/** The console's browser source (Preact + Chart.js), bundled by Bun's bundler. */
export const CONSOLE_ENTRY = join(import.meta.dir, "..", "console", "web", "main.tsx");

/**
 * Bundles the console: minified, split into an entry and lazily loaded chunks, every file named by
 * its content hash. Runs in memory at the first /app request when the server runs from source;
 * the compiled binary embeds the same output (scripts/build.ts).
 */
export async function buildConsole(): Promise<ConsoleFile[]> {
  const bun = (globalThis as any).Bun;
  if (!bun?.build) throw new Error("the console is bundled by Bun; this runtime has no Bun.build (use the compiled binary or bun)");
  const result = await bun.build({
    entrypoints: [CONSOLE_ENTRY],
    target: "browser",
    format: "esm",
    splitting: true,
    minify: true,
    sourcemap: "none",
    naming: { entry: "[name]-[hash].[ext]", chunk: "[name]-[hash].[ext]", asset: "[name]-[hash].[ext]" },
    define: { "process.env.NODE_ENV": JSON.stringify("production") },
  });
  if (!result.success) throw new Error(`console build failed: ${result.logs.map((l: { message: string }) => l.message).join("; ")}`);
  const files: ConsoleFile[] = [];
  for (const out of result.outputs as { path: string; kind: string; arrayBuffer(): Promise<ArrayBuffer> }[]) {
    files.push({ name: basename(out.path), kind: out.kind === "entry-point" ? "entry" : out.kind === "chunk" ? "chunk" : "asset", bytes: new Uint8Array(await out.arrayBuffer()) });
  }
  return files;
}

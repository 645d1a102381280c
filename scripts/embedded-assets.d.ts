// `import x from "…" with { type: "file" }` in the compiled binary's entry gives a path string.
declare module "*.wasm" {
  const path: string;
  export default path;
}
declare module "*.data" {
  const path: string;
  export default path;
}
// Scalar's browser bundle for /docs (lib/http/docs.ts), embedded as a file, not bundled as code.
declare module "*/@scalar/api-reference/dist/browser/standalone.js" {
  const path: string;
  export default path;
}
// The prebuilt PGlite data directory (scripts/build.ts writes it before compiling).
declare module "*.tar.gz" {
  const path: string;
  export default path;
}
// Stylesheets imported by the console's browser code (bundled by Bun's bundler, lib/adapters/consoleBuild.ts).
declare module "*.css" {}
// The console's prebuilt bundle (scripts/build.ts writes it before compiling).
declare module "*.bundle" {
  const path: string;
  export default path;
}
// The binary's zstd-compressed assets (scripts/build.ts writes them before compiling).
declare module "*.zst" {
  const path: string;
  export default path;
}

// `import x from "…" with { type: "file" }` in the compiled binary's entry gives a path string.
declare module "*.wasm" {
  const path: string;
  export default path;
}
declare module "*.data" {
  const path: string;
  export default path;
}

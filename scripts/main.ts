// The single entry of `npm start`, the `commitops` CLI and the compiled binary:
// no arguments or `serve` → the server; anything else → a CLI command.
// Each side loads only its own modules (the server never evaluates the CLI's commands).
const args = process.argv.slice(2);
if (args.length === 0 || args[0] === "serve") {
  const { serve } = await import("./server.ts");
  await serve();
} else {
  const { runCli } = await import("./cli/index.ts");
  process.exit(await runCli(args));
}
export {};

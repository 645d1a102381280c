// The single entry of `npm start`, the `commitops` CLI and the compiled binary:
// no arguments or `serve` → the server; anything else → a CLI command.
import { runCli } from "./cli/index.ts";

const args = process.argv.slice(2);
if (args.length === 0 || args[0] === "serve") {
  const { serve } = await import("./server.ts");
  await serve();
} else {
  process.exit(await runCli(args));
}

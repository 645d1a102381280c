import { endOnUncaughtErrors } from "../../lib/lastResort.ts";
import { doctorCommands } from "./doctor.ts";
import { parseArgs } from "node:util";
import { loadConfig } from "../../lib/config.ts";
import { createLogger } from "../../lib/log.ts";
import { openDb } from "../../lib/db/index.ts";
import { DataDirLockedError } from "../../lib/db/pglite.ts";
import { MigrationLockTimeoutError } from "../../lib/db/migrate.ts";
import { createServices } from "../../lib/services.ts";
import { AppError } from "../../lib/errors.ts";
import { CliError, type CliCommand } from "./types.ts";
import { coreCommands } from "./core.ts";
import { supportCommands } from "./support.ts";
import { planningCommands } from "./planning.ts";
import { billingCommands } from "./billing.ts";
import { catalogCommands } from "./catalog.ts";
import { connectionCommands } from "./connections.ts";
import { purchasingCommands } from "./purchasing.ts";

const unavailable = () => {
  throw new Error("this command runs without a database");
};
const noDatabase = new Proxy({} as any, { get: (_t, prop) => (prop === "db" ? new Proxy({}, { get: unavailable }) : prop === "close" ? async () => {} : unavailable) });

/** Every command; features append theirs (one file per feature in scripts/cli/). */
export const commands: CliCommand[] = [...doctorCommands, ...coreCommands, ...supportCommands, ...planningCommands, ...billingCommands, ...catalogCommands, ...connectionCommands, ...purchasingCommands];

function help(): string {
  return [
    "usage: commitops <command> [--flags]",
    "",
    "  serve                     start the server (same as npm start)",
    ...commands.map((c) => `  ${`${c.group} ${c.name}`.trim().padEnd(25)} ${c.summary}`),
    "",
    "Every command takes --json. Database: DATABASE_URL, else the embedded one under DATA_DIR (./.data).",
  ].join("\n");
}

/** Runs one CLI invocation; returns the process exit code. */
export async function runCli(argv: string[]): Promise<number> {
  const [group, ...afterGroup] = argv;
  if (!group || group === "help" || group === "--help" || group === "-h") {
    console.log(help());
    return group ? 0 : 2;
  }
  // A one-word command (`doctor`) takes everything after it as its arguments.
  const single = commands.find((c) => c.group === group && c.name === "");
  const name = single ? "" : afterGroup[0];
  const rest = single ? afterGroup : afterGroup.slice(1);
  const cmd = single ?? commands.find((c) => c.group === group && c.name === name);
  if (!cmd) {
    console.error(`unknown command: ${[group, name].filter(Boolean).join(" ")}\n\n${help()}`);
    return 2;
  }
  let parsed;
  try {
    parsed = parseArgs({ args: rest, options: { ...cmd.options, json: { type: "boolean" }, help: { type: "boolean", short: "h" } }, allowPositionals: true, strict: true });
  } catch (e) {
    console.error(`${(e as Error).message}\nusage: commitops ${cmd.usage}`);
    return 2;
  }
  const { values, positionals } = parsed as { values: Record<string, any>; positionals: string[] };
  if (values.help) {
    console.log(`usage: commitops ${cmd.usage}\n${cmd.summary}`);
    return 0;
  }
  const config = loadConfig();
  let handle;
  try {
    handle = cmd.noDb ? undefined : await openDb({ url: config.databaseUrl, dataDir: config.dataDir, migrate: true, migrationLockTimeoutMs: config.migrationLockTimeoutMs });
  } catch (e) {
    if (e instanceof DataDirLockedError) {
      console.error(`error: ${e.message}`);
      return 3;
    }
    if (e instanceof MigrationLockTimeoutError) {
      console.error(`error: ${e.message}`);
      return 1;
    }
    throw e;
  }
  const log = createLogger(values.json ? "silent" : "warn", (l) => process.stderr.write(l + "\n"));
  // A command without a database (a generator writing a file) gets services whose database
  // access fails loudly instead of opening (and locking) the embedded one.
  const s = handle ? createServices(handle, config, log) : createServices(noDatabase, config, log);
  // An error no await caught ends the command as any failure does: one line, exit 1, no stack.
  const failureReported = endOnUncaughtErrors((e) => console.error(`error: ${oneLine(e)}`));
  try {
    const result = await cmd.run(s, values, positionals);
    if (values.json) console.log(JSON.stringify(result, null, 2));
    else console.log(cmd.human ? cmd.human(result) : JSON.stringify(result, null, 2));
    return cmd.exitCode?.(result) ?? 0;
  } catch (e) {
    failureReported();
    if (e instanceof CliError || e instanceof AppError) {
      const msg = oneLine(e) + (e instanceof AppError && Object.keys(e.errors).length ? ` (${JSON.stringify(e.errors)})` : "");
      if (values.json) console.log(JSON.stringify({ error: msg }));
      console.error(`error: ${msg}`);
      return 1;
    }
    console.error(`error: ${oneLine(e)}`);
    return 1;
  } finally {
    await handle?.close();
  }
}

/** An error's message on one line (a message may span lines; a stack never shows). */
function oneLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).replace(/\s*\n\s*/g, " ").trim() || "unexpected error";
}

import type { Services } from "../../lib/services.ts";

export class CliError extends Error {}

/** One CLI command: `commitops <group> <name> [--flags]`. */
export interface CliCommand {
  group: string;
  name: string;
  summary: string;
  /** node:util parseArgs option spec; every command also gets --json and --help. */
  options: Record<string, { type: "string" | "boolean"; multiple?: boolean; short?: string }>;
  usage: string;
  /** Return value is printed as JSON with --json, or via `human` otherwise. */
  run(s: Services, values: Record<string, any>, positionals: string[]): Promise<unknown>;
  human?(result: any): string;
  /** The process exit code for a result that is not a plain success (default 0). */
  exitCode?(result: any): number;
  /** Commands that need no database (e.g. a generator writing a file). */
  noDb?: boolean;
}

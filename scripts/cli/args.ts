import { readFileSync } from "node:fs";
import { isUuid } from "../../lib/orgs/service.ts";
import { CliError } from "./types.ts";

/** A string flag that must be present. */
export function requiredOption(values: Record<string, any>, name: string): string {
  const v = values[name];
  if (v === undefined || v === "" || v === true) throw new CliError(`--${name} is required`);
  return String(v);
}

/** A flag holding an id (UUID), e.g. `--org`. */
export function uuidOption(values: Record<string, any>, name: string, what = "an organization id"): string {
  const v = requiredOption(values, name);
  if (!isUuid(v)) throw new CliError(`--${name} must be ${what} (UUID)`);
  return v.toLowerCase();
}

/** The command's one positional id (a UUID). */
export function oneIdArgument(positionals: string[], what: string): string {
  const id = positionals[0];
  if (!id || positionals.length > 1 || !isUuid(id)) throw new CliError(`give exactly one ${what} id (UUID)`);
  return id.toLowerCase();
}

/** `key=value` flags as an object. */
export function pairs(list: string[] | undefined, flag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of list ?? []) {
    const i = item.indexOf("=");
    if (i < 1) throw new CliError(`${flag} takes key=value, got "${item}"`);
    out[item.slice(0, i)] = item.slice(i + 1);
  }
  return out;
}

/** Secret fields from a JSON file (`--secrets-file`): secrets never go on a command line. */
export function secretsFile(path: unknown): Record<string, unknown> {
  if (!path) return {};
  let secrets: unknown;
  try {
    secrets = JSON.parse(readFileSync(String(path), "utf8"));
  } catch {
    throw new CliError("--secrets-file must be a readable JSON object of secret fields");
  }
  if (!secrets || typeof secrets !== "object" || Array.isArray(secrets)) throw new CliError("--secrets-file must hold a JSON object");
  return secrets as Record<string, unknown>;
}

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

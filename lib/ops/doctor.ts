/**
 * `commitops doctor`: a deployment's settings checked before (or while) it serves — the public
 * URL, the secret key, the database (reachable, version, migrations, clock), the price catalog.
 * Each problem is one line that says what to do; the command exits non-zero when there is one.
 * It never migrates or writes: it may run beside a live deployment.
 */
import type { Config } from "../config.ts";
import type { DatabaseHandle } from "../db/types.ts";
import { migrationState } from "../db/migrate.ts";
import { SecretBox } from "../secrets/index.ts";
import { secretKeyCheck } from "./readiness.ts";
import { createServices } from "../services.ts";
import { createLogger } from "../log.ts";

export type DoctorStatus = "ok" | "problem" | "warning" | "skipped";

export interface DoctorCheck {
  name: "public_url" | "secret_key" | "database" | "database_version" | "migrations" | "clock" | "catalog";
  status: DoctorStatus;
  message: string;
}

/** PostgreSQL 15 is the oldest the schema runs on (`ON DELETE SET NULL (column)`). */
const MIN_SERVER_VERSION = 150000;
/** Leases, claims and "due" times compare the process's clock with the database's. */
const MAX_CLOCK_SKEW_MS = 5000;
const DAY_MS = 86_400_000;

const LOOPBACK = /^(localhost|127(\.\d+){3}|\[::1\])$/i;

export function publicUrlCheck(config: Config): DoctorCheck {
  let url: URL;
  try {
    url = new URL(config.publicUrl);
  } catch {
    return { name: "public_url", status: "problem", message: `PUBLIC_URL (${config.publicUrl}) is not a URL: set it to the address users and OAuth clients reach, e.g. https://commitops.example.com.` };
  }
  if (url.protocol !== "https:" && !LOOPBACK.test(url.hostname))
    return { name: "public_url", status: "problem", message: `PUBLIC_URL is ${url.protocol}//${url.host}: a public address must be https:// (OAuth redirects and the console's session cookie need it).` };
  return { name: "public_url", status: "ok", message: `PUBLIC_URL ${url.origin}` };
}

function secretKeyFormatCheck(config: Config): DoctorCheck | null {
  try {
    new SecretBox(config.secretKey, config.previousSecretKeys);
    return null;
  } catch (e) {
    return { name: "secret_key", status: "problem", message: `COMMITOPS_SECRET_KEY or COMMITOPS_SECRET_KEY_PREVIOUS is malformed: ${(e as Error).message}` };
  }
}

/** Every check, against `handle` when the database could be opened (else `openError` says why). */
export async function runDoctor(config: Config, handle: DatabaseHandle | null, opts: { openError?: string; now?: () => Date } = {}): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [publicUrlCheck(config)];
  const keyFormat = secretKeyFormatCheck(config);
  if (keyFormat) checks.push(keyFormat);
  if (!handle) {
    checks.push({ name: "database", status: "problem", message: `The database could not be opened: ${opts.openError ?? "unknown error"}. Check DATABASE_URL (or DATA_DIR for the embedded one).` });
    return checks;
  }
  try {
    await handle.query("SELECT 1");
    checks.push({ name: "database", status: "ok", message: `reachable (${handle.description})` });
  } catch (e) {
    checks.push({ name: "database", status: "problem", message: `The database does not answer (${(e as Error).message}). Check DATABASE_URL, the network and the server.` });
    return checks;
  }
  const [{ v }] = await handle.query<{ v: number }>(`SELECT current_setting('server_version_num')::int AS v`);
  const version = Number(v);
  checks.push(
    version >= MIN_SERVER_VERSION
      ? { name: "database_version", status: "ok", message: `PostgreSQL ${Math.floor(version / 10000)}` }
      : { name: "database_version", status: "problem", message: `PostgreSQL ${Math.floor(version / 10000)} is too old: commitops needs PostgreSQL 15 or newer.` },
  );

  // The skew against the middle of a round trip that read the database's clock.
  const t0 = Date.now();
  const [{ db_clock }] = await handle.query<{ db_clock: string }>(`SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS db_clock`);
  const t1 = Date.now();
  const skewMs = Date.parse(db_clock) - (t0 + t1) / 2;
  checks.push(
    Math.abs(skewMs) <= MAX_CLOCK_SKEW_MS
      ? { name: "clock", status: "ok", message: `within ${Math.max(1, Math.ceil(Math.abs(skewMs)))} ms of the database's` }
      : { name: "clock", status: "problem", message: `This machine's clock is ${(skewMs / -1000).toFixed(1)} s off the database's: leases, claims and schedules compare both; run NTP on both hosts.` },
  );

  const { pending, unknown } = await migrationState(handle);
  if (pending.length) checks.push({ name: "migrations", status: "problem", message: `${pending.length} migration(s) pending (${pending.join(", ")}): run \`npm run migrate\` (or start the server, which applies them).` });
  else if (unknown.length) checks.push({ name: "migrations", status: "warning", message: `The database has ${unknown.length} migration(s) this version does not know (${unknown.join(", ")}): a newer version applied them; expected during a rolling upgrade.` });
  else checks.push({ name: "migrations", status: "ok", message: "up to date" });
  if (pending.length) return checks; // the tables the next checks read may not be there yet

  const s = createServices(handle, config, createLogger("silent"), { now: opts.now });
  const key = keyFormat ? null : await secretKeyCheck(s);
  if (key) checks.push(key.status === "ok" ? { name: "secret_key", status: "ok", message: "every stored credential can be opened" } : { name: "secret_key", status: "problem", message: key.message! });

  const now = (opts.now ?? (() => new Date()))().getTime();
  const feeds = await handle.query<{ provider: string; checked: string | null }>(
    `SELECT provider, to_char(max(checked_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS checked FROM catalog_feeds GROUP BY provider ORDER BY provider`,
  );
  const checked = feeds.filter((f) => f.checked);
  if (!checked.length) checks.push({ name: "catalog", status: "warning", message: "Live prices were never refreshed: estimates and plans use the bundled snapshot. Run `commitops catalog refresh` (the daily job does when the providers are reachable)." });
  for (const f of checked) {
    const days = (now - Date.parse(f.checked!)) / DAY_MS;
    checks.push(
      days > config.priceStaleDays
        ? { name: "catalog", status: "problem", message: `${f.provider} prices were last confirmed ${Math.floor(days)} days ago (PRICE_STALE_DAYS is ${config.priceStaleDays}): run \`commitops catalog refresh --provider ${f.provider}\` and read catalog_feeds.last_error.` }
        : { name: "catalog", status: "ok", message: `${f.provider} prices confirmed ${days < 1 ? "today" : `${Math.floor(days)} day(s) ago`}` },
    );
  }
  return checks;
}

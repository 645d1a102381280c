/**
 * What `/readyz` checks (docs/OPERATIONS.md "Health"): the database answers, this version's
 * migrations are applied, and every stored credential can be opened with the keys this process
 * has. A replica that fails one is taken out of rotation by its orchestrator, which is what a
 * rolling upgrade with a forgotten COMMITOPS_SECRET_KEY or a skipped migration needs.
 */
import type { Services } from "../services.ts";
import { migrationState } from "../db/migrate.ts";
import { secretBoxOf } from "../secrets/index.ts";
import { queryRows } from "../billing/sql.ts";

export type CheckStatus = "ok" | "failing" | "skipped";

export interface ReadinessCheck {
  name: "database" | "migrations" | "secret_key";
  status: CheckStatus;
  /** What is wrong and what to do (failing), or why it was not checked (skipped). */
  message?: string;
}

export interface Readiness {
  ready: boolean;
  checks: ReadinessCheck[];
}

/** The rows holding sealed secrets, per table (their key ids tell whether this process can open them). */
const SEALED_SECRETS = `
  SELECT secret_key_id AS key_id, count(*)::int AS n FROM (
    SELECT secret_key_id FROM billing_connections WHERE secret_ciphertext IS NOT NULL
    UNION ALL SELECT secret_key_id FROM purchasing_connections WHERE secret_ciphertext IS NOT NULL
    UNION ALL SELECT secret_key_id FROM webhook_endpoints WHERE secret_ciphertext IS NOT NULL
  ) s GROUP BY 1`;

/** The stored secrets this process cannot open: none when COMMITOPS_SECRET_KEY (and the previous keys) cover them all. */
export async function secretKeyCheck(s: Services): Promise<ReadinessCheck> {
  const rows = await queryRows<{ key_id: string | null; n: number }>(s.db, SEALED_SECRETS);
  const box = secretBoxOf(s.config);
  const unopenable = rows.filter((r) => !r.key_id || !box.hasKey(r.key_id)).reduce((n, r) => n + Number(r.n), 0);
  if (!unopenable) return { name: "secret_key", status: "ok" };
  return {
    name: "secret_key",
    status: "failing",
    message: box.canSeal
      ? `${unopenable} stored credential(s) are sealed under a key this process does not have: set the old key in COMMITOPS_SECRET_KEY_PREVIOUS (a key rotation) or the right COMMITOPS_SECRET_KEY.`
      : `COMMITOPS_SECRET_KEY is not set, but ${unopenable} stored credential(s) need it (billing and purchasing connections, webhook signing secrets).`,
  };
}

/** The migrations check: failing while this version's migrations are not all applied. */
export async function migrationsCheck(s: Services): Promise<ReadinessCheck> {
  const { pending } = await migrationState(s.handle);
  if (!pending.length) return { name: "migrations", status: "ok" };
  return { name: "migrations", status: "failing", message: `${pending.length} migration(s) of this version are not applied (${pending.join(", ")}): run \`npm run migrate\` or start one replica of this version, which applies them.` };
}

/** How long the checks beyond the database's ping are reused: /readyz is polled every few seconds by every orchestrator. */
const SLOW_CHECKS_TTL_MS = 30_000;
const cached = new WeakMap<Services, { at: number; checks: Promise<ReadinessCheck[]> }>();

export async function readiness(s: Services): Promise<Readiness> {
  try {
    await (s.handle.ping ? s.handle.ping() : s.handle.query("SELECT 1"));
  } catch {
    return {
      ready: false,
      checks: [
        { name: "database", status: "failing", message: "The database does not answer." },
        { name: "migrations", status: "skipped", message: "The database does not answer." },
        { name: "secret_key", status: "skipped", message: "The database does not answer." },
      ],
    };
  }
  let entry = cached.get(s);
  if (!entry || performance.now() - entry.at > SLOW_CHECKS_TTL_MS) {
    entry = { at: performance.now(), checks: Promise.all([migrationsCheck(s), secretKeyCheck(s)]) };
    cached.set(s, entry);
    // A failed read is not kept: the next poll asks again.
    const mine = entry;
    entry.checks.catch(() => cached.get(s) === mine && cached.delete(s));
  }
  let slow: ReadinessCheck[];
  try {
    slow = await entry.checks;
  } catch {
    slow = [
      { name: "migrations", status: "skipped", message: "Could not be read from the database." },
      { name: "secret_key", status: "skipped", message: "Could not be read from the database." },
    ];
  }
  // Only a passing result is reused: a fixed deployment is ready at its next poll.
  if (slow.some((c) => c.status === "failing") && cached.get(s) === entry) cached.delete(s);
  const checks: ReadinessCheck[] = [{ name: "database", status: "ok" }, ...slow];
  // A check that could not be read does not take the replica out: the database answered.
  return { ready: checks.every((c) => c.status !== "failing"), checks };
}

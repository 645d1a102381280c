/**
 * A real streaming replica for tests: a hot-standby PostgreSQL cluster made with
 * `pg_basebackup -R` in a temporary directory, started on a free loopback port as the
 * `postgres` OS user (when the tests run as root), torn down by `destroy()`.
 *
 * The primary is the TEST_DATABASE_URL server when it accepts replication connections from
 * this host (pg_hba.conf needs a `host replication …` line: `all` does not cover replication).
 * When it does not, the helper never edits the system configuration: it starts a private
 * primary of its own (initdb in the same temporary directory, trust on loopback, replication
 * allowed) with the same server binaries and replicates that instead. When neither is possible
 * (no server binaries, no `postgres` user, …) it answers `{ skip: reason }`.
 *
 * Lag is simulated with `pg_wal_replay_pause()` / `pg_wal_replay_resume()` on the replica: WAL
 * keeps arriving, it is just not applied until resumed.
 */
import { execFile, spawnSync } from "node:child_process";
import { chownSync, mkdtempSync, rmSync, writeFileSync, appendFileSync, existsSync, readFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { freePort } from "./process.ts";

export interface ReplicaCluster {
  /** "shared": the TEST_DATABASE_URL server is the primary; "private": a primary this helper started. */
  primarySource: "shared" | "private";
  /** Why the shared server could not be replicated (private primary only). */
  sharedRefusal?: string;
  /** postgres://… of `database` on the primary / on the replica (`password` is ignored by trust auth). */
  primaryUrl(database: string): string;
  replicaUrl(database: string, opts?: { password?: string }): string;
  /** Creates a database on the primary (it reaches the replica by streaming; see waitForReplay). */
  createDatabase(name: string): Promise<void>;
  dropDatabase(name: string): Promise<void>;
  /** Waits until the replica has replayed everything the primary had written when called. */
  waitForReplay(timeoutMs?: number): Promise<void>;
  /** Stops applying WAL on the replica (returns once replay is paused). */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  /** Stops / starts the replica's server (same port, same data). */
  stopReplica(): Promise<void>;
  startReplica(): Promise<void>;
  /** Stops every server this helper started and removes the temporary directory. */
  destroy(): Promise<void>;
}

interface Exec {
  code: number;
  stdout: string;
  stderr: string;
}

const asRoot = userInfo().uid === 0;

/** Runs a server binary as the postgres OS user (tests run as root here; the server refuses root). */
function run(bin: string, args: string[], env: Record<string, string> = {}, timeoutMs = 120_000): Promise<Exec> {
  const [cmd, argv] = asRoot ? ["runuser", ["-u", "postgres", "--", bin, ...args]] : [bin, args];
  return new Promise((resolve) => {
    execFile(cmd, argv, { env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err: any, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout: String(stdout), stderr: String(stderr || err?.message || "") });
    });
  });
}

function connectionOf(url: string) {
  const u = new URL(url);
  return { host: u.hostname || "127.0.0.1", port: Number(u.port || 5432), user: decodeURIComponent(u.username || "postgres"), password: decodeURIComponent(u.password || "") };
}

async function sql<T = Record<string, unknown>>(url: string, text: string, params: unknown[] = []): Promise<T[]> {
  const c = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 5, idle_timeout: 1 });
  try {
    return (await c.unsafe(text, params as any[])) as unknown as T[];
  } finally {
    await c.end({ timeout: 1 });
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Servers to stop if the test process exits without destroy() (a crash, a failed beforeAll). */
const live = new Map<string, string>(); // data dir → pg_ctl path
process.on("exit", () => {
  for (const [dir, pgCtl] of live) {
    const [cmd, argv] = asRoot ? ["runuser", ["-u", "postgres", "--", pgCtl, "-D", dir, "-m", "immediate", "stop"]] : [pgCtl, ["-D", dir, "-m", "immediate", "stop"]];
    spawnSync(cmd, argv, { stdio: "ignore" });
  }
});

/**
 * Starts a replica of the TEST_DATABASE_URL server (or, when that refuses replication, of a
 * private primary). `baseUrl` is a superuser URL of the server (TEST_DATABASE_URL).
 */
export async function startReplicaCluster(baseUrl: string): Promise<ReplicaCluster | { skip: string }> {
  let version: number;
  let limits: Record<string, string>;
  try {
    const rows = await sql<{ name: string; setting: string }>(
      baseUrl,
      `SELECT name, setting FROM pg_settings WHERE name IN ('server_version_num', 'max_connections', 'max_worker_processes', 'max_wal_senders', 'max_prepared_transactions', 'max_locks_per_transaction')`,
    );
    limits = Object.fromEntries(rows.map((r) => [r.name, r.setting]));
    version = Math.floor(Number(limits.server_version_num) / 10000);
    delete limits.server_version_num;
  } catch (e) {
    return { skip: `the TEST_DATABASE_URL server does not answer (${(e as Error).message})` };
  }
  const bindir = process.env.PG_BINDIR ?? `/usr/lib/postgresql/${version}/bin`;
  const bin = (name: string) => join(bindir, name);
  if (!existsSync(bin("pg_basebackup")) || !existsSync(bin("pg_ctl"))) return { skip: `no PostgreSQL ${version} server binaries in ${bindir} (set PG_BINDIR)` };
  if (asRoot && spawnSync("id", ["-u", "postgres"]).status !== 0) return { skip: "running as root and there is no `postgres` OS user to run the servers" };

  const dir = mkdtempSync(join(tmpdir(), "commitops-replica-"));
  if (asRoot) {
    const uid = Number(spawnSync("id", ["-u", "postgres"]).stdout.toString().trim());
    const gid = Number(spawnSync("id", ["-g", "postgres"]).stdout.toString().trim());
    chownSync(dir, uid, gid);
  }
  const replicaDir = join(dir, "replica");
  const primaryDir = join(dir, "primary");
  const started: string[] = [];
  const common = (port: number) => [
    `-p ${port}`,
    `-c listen_addresses=127.0.0.1`,
    `-c unix_socket_directories='${dir}'`,
    `-c fsync=off`,
    `-c synchronous_commit=off`,
    `-c shared_buffers=32MB`,
    `-c logging_collector=off`,
    `-c log_min_messages=warning`,
    // A hot standby needs these at least as high as its primary's.
    ...Object.entries(limits).map(([k, v]) => `-c ${k}=${v}`),
  ];
  const pgStart = async (dataDir: string, port: number, extra: string[] = []) => {
    const r = await run(bin("pg_ctl"), ["-D", dataDir, "-l", `${dataDir}.log`, "-w", "-t", "60", "-o", [...common(port), ...extra].join(" "), "start"]);
    if (r.code !== 0) {
      const log = existsSync(`${dataDir}.log`) ? readFileSync(`${dataDir}.log`, "utf8").split("\n").slice(-15).join("\n") : "";
      throw new Error(`pg_ctl start failed (${r.code}): ${r.stderr.trim()}\n${log}`);
    }
    live.set(dataDir, bin("pg_ctl"));
    if (!started.includes(dataDir)) started.push(dataDir);
  };
  const pgStop = async (dataDir: string, mode = "fast") => {
    await run(bin("pg_ctl"), ["-D", dataDir, "-m", mode, "-w", "stop"]);
    live.delete(dataDir);
  };
  const cleanup = async () => {
    for (const d of [...started].reverse()) await pgStop(d, "immediate");
    rmSync(dir, { recursive: true, force: true });
  };
  const basebackup = (c: { host: string; port: number; user: string; password: string }) =>
    run(bin("pg_basebackup"), ["-h", c.host, "-p", String(c.port), "-U", c.user, "-D", replicaDir, "-X", "stream", "-R", "-c", "fast", "-N", "-w"], c.password ? { PGPASSWORD: c.password } : {});

  try {
    // 1. The shared server, when its pg_hba.conf allows replication from here.
    const shared = connectionOf(baseUrl);
    let primary = { ...shared };
    let source: "shared" | "private" = "shared";
    let sharedRefusal: string | undefined;
    const b = await basebackup(shared);
    if (b.code !== 0) {
      sharedRefusal = b.stderr.trim().split("\n").filter(Boolean).slice(-1)[0] ?? `pg_basebackup exited with ${b.code}`;
      rmSync(replicaDir, { recursive: true, force: true });
      // 2. A private primary: initdb's default pg_hba.conf (trust) allows local replication.
      const init = await run(bin("initdb"), ["-D", primaryDir, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"]);
      if (init.code !== 0) throw new Error(`initdb failed: ${init.stderr.trim()}`);
      const port = await freePort();
      await pgStart(primaryDir, port, ["-c wal_level=replica"]);
      primary = { host: "127.0.0.1", port, user: "postgres", password: "" };
      source = "private";
      const b2 = await basebackup(primary);
      if (b2.code !== 0) throw new Error(`pg_basebackup of the private primary failed: ${b2.stderr.trim()}`);
    } else {
      // The copy of a Debian cluster has no configuration files (they live in /etc): give it its own.
      writeFileSync(join(replicaDir, "postgresql.conf"), "# commitops test replica\n");
      writeFileSync(join(replicaDir, "pg_ident.conf"), "");
    }
    // Whatever the primary's own files said, the replica listens on loopback only, with trust.
    writeFileSync(join(replicaDir, "pg_hba.conf"), "local all all trust\nhost all all 127.0.0.1/32 trust\n");
    appendFileSync(join(replicaDir, "postgresql.conf"), "\nhot_standby = on\n");
    const replicaPort = await freePort();
    await pgStart(replicaDir, replicaPort);

    const auth = (p: string | undefined, user: string) => `${encodeURIComponent(user)}${p ? `:${encodeURIComponent(p)}` : ""}@`;
    const primaryUrl = (db: string) => `postgres://${auth(primary.password, primary.user)}${primary.host}:${primary.port}/${db}`;
    const replicaUrl = (db: string, o: { password?: string } = {}) => `postgres://${auth(o.password, "postgres")}127.0.0.1:${replicaPort}/${db}`;
    const adminPrimary = primaryUrl("postgres");
    const adminReplica = replicaUrl("postgres");

    // Accepting connections and streaming.
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        const [r] = await sql<{ standby: boolean }>(adminReplica, `SELECT pg_is_in_recovery() AS standby`);
        if (!r?.standby) throw new Error("the replica is not in recovery");
        break;
      } catch (e) {
        if (Date.now() > deadline) throw e;
        await sleep(200);
      }
    }

    const cluster: ReplicaCluster = {
      primarySource: source,
      sharedRefusal,
      primaryUrl,
      replicaUrl,
      async createDatabase(name) {
        await sql(adminPrimary, `CREATE DATABASE ${name}`);
      },
      async dropDatabase(name) {
        await sql(adminPrimary, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      },
      async waitForReplay(timeoutMs = 30_000) {
        const [{ lsn }] = (await sql<{ lsn: string }>(adminPrimary, `SELECT pg_current_wal_lsn()::text AS lsn`)) as [{ lsn: string }];
        const end = Date.now() + timeoutMs;
        for (;;) {
          const [r] = await sql<{ ok: boolean }>(adminReplica, `SELECT coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false) AS ok`, [lsn]);
          if (r?.ok) return;
          if (Date.now() > end) throw new Error(`the replica did not replay up to ${lsn} within ${timeoutMs} ms`);
          await sleep(20);
        }
      },
      async pauseReplay() {
        await sql(adminReplica, `SELECT pg_wal_replay_pause()`);
        for (let i = 0; i < 500; i++) {
          const [r] = await sql<{ s: string }>(adminReplica, `SELECT pg_get_wal_replay_pause_state() AS s`);
          if (r?.s === "paused") return;
          await sleep(10);
        }
        throw new Error("replay did not pause");
      },
      async resumeReplay() {
        await sql(adminReplica, `SELECT pg_wal_replay_resume()`);
      },
      stopReplica: () => pgStop(replicaDir),
      async startReplica() {
        await pgStart(replicaDir, replicaPort);
      },
      destroy: cleanup,
    };
    return cluster;
  } catch (e) {
    await cleanup().catch(() => {});
    return { skip: `could not start a streaming replica: ${(e as Error).message}` };
  }
}

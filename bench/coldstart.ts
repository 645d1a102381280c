// Cold start (issue 11): time from spawning the service to its first `/readyz` 200, against
// baselines measured in the same run, round by round so a neighbour's load on the shared cores
// hits all of them alike (the table gives every round's figure and the median):
//   - bare process: `bun` running a bare Bun.serve script (the floor of any start);
//   - bare PGlite: `new PGlite(dir)` on an empty directory (PGlite's own initdb), in a process;
//   - the service on a fresh data dir with the prebuilt template (the normal first start), on a
//     fresh data dir with COMMITOPS_PGLITE_TEMPLATE=off (initdb + migrations: the old first
//     start), on an existing data dir, and on PostgreSQL (database already migrated).
// Every start loads the demo org and its data (the default); the fresh-template row also gives
// when the background demo seed finished and the slowest /readyz answered while it ran.
// The service is dist/commitops when built (npm run build), else `bun scripts/main.ts serve`
// (BENCH_BINARY=path or BENCH_BINARY=source to choose). BENCH_BEFORE=path of another build (say
// one of the previous commit: `git archive`, `npm run build` with OUTFILE) adds its fresh, existing
// and PostgreSQL starts to the same rounds. Env: BENCH_ROUNDS (3), BENCH_PAUSE_MS (1000: between
// two starts, so the previous one's exit and disk writes do not land on the next),
// BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test; a fresh database is made
// and dropped on that server), BENCH_DB=pglite to skip PostgreSQL.
// It also prints the size of the binary (and of BENCH_BEFORE's) and a compiled minimal server's
// start (a bare Bun.serve compiled with `bun build --compile`: the floor of any compiled binary).
// Usage: npx bun bench/coldstart.ts
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { freePort } from "../tests/helpers/process.ts";
import { addHeadline } from "./lib/summary.ts";
import { openDb } from "../lib/db/index.ts";

const root = join(import.meta.dir, "..");
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const builtBinary = join(root, "dist", "commitops");
const choice = process.env.BENCH_BINARY ?? (existsSync(builtBinary) ? builtBinary : "source");
const service: string[] = choice === "source" ? [process.execPath, join(root, "scripts", "main.ts"), "serve"] : [choice];
const label = choice === "source" ? "`bun scripts/main.ts serve`" : `the binary (${choice === builtBinary ? "dist/commitops" : choice})`;
const work = mkdtempSync(join(tmpdir(), "commitops-coldstart-"));

interface Start {
  readyMs: number;
  /** When the background demo seed logged its last seeder (ms from spawn), if watched. */
  seedDoneMs?: number;
  /** The slowest /readyz between ready and the end of the seed. */
  readyzMaxMs?: number;
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
    setTimeout(() => child.kill("SIGKILL"), 10_000).unref();
  });
}

/** Spawns `cmd`, polls /readyz every 10 ms; with `watchSeed`, keeps polling until the demo seed is done. */
const pauseMs = Number(process.env.BENCH_PAUSE_MS ?? 1000);

async function timeToReady(cmd: string[], env: Record<string, string>, watchSeed = false): Promise<Start> {
  await new Promise((r) => setTimeout(r, pauseMs));
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(cmd[0]!, cmd.slice(1), {
    cwd: work,
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "info", JOBS_ENABLED: "false", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let seedDoneMs: number | undefined;
  let out = "";
  child.stdout!.on("data", (d) => {
    out += d;
    if (seedDoneMs === undefined && /"msg":"demo (data seeded|seeder failed)","seeder":"billing"/.test(out)) seedDoneMs = performance.now() - t0;
    if (out.length > 100_000) out = out.slice(-10_000);
  });
  child.stderr!.on("data", (d) => (out += d));
  let readyMs = 0;
  let readyzMaxMs = 0;
  try {
    while (performance.now() - t0 < 180_000) {
      if (child.exitCode !== null) throw new Error(`${cmd.join(" ")} exited with ${child.exitCode}:\n${out.slice(-2000)}`);
      const s = performance.now();
      const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200, () => false);
      if (ok && !readyMs) readyMs = performance.now() - t0;
      else if (ok && seedDoneMs === undefined) readyzMaxMs = Math.max(readyzMaxMs, performance.now() - s);
      if (readyMs && (!watchSeed || seedDoneMs !== undefined)) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    if (!readyMs) throw new Error(`${cmd.join(" ")} was not ready in 180 s:\n${out.slice(-2000)}`);
    return watchSeed ? { readyMs, seedDoneMs, readyzMaxMs } : { readyMs };
  } finally {
    await stop(child);
  }
}

// The floor: a process that only starts Bun and listens.
const bareServer = join(work, "bare-serve.ts");
writeFileSync(bareServer, `Bun.serve({ port: Number(process.env.PORT), hostname: "127.0.0.1", fetch: () => new Response("ok") });\n`);
// PGlite's own cold start: a process that creates an empty database (initdb), then listens.
const barePglite = join(work, "bare-pglite.ts");
writeFileSync(
  barePglite,
  `import { PGlite } from ${JSON.stringify(join(root, "node_modules", "@electric-sql", "pglite", "dist", "index.js"))};\n` +
    `const pg = await PGlite.create({ dataDir: process.env.DATA_DIR });\nawait pg.query("SELECT 1");\n` +
    `Bun.serve({ port: Number(process.env.PORT), hostname: "127.0.0.1", fetch: () => new Response("ok") });\n`,
);

// The floor of a compiled binary: the same bare server, compiled (the runtime alone is ≈ 107 MB).
const bareBinary = join(work, "bare-serve");
const compiled = spawnSync(process.execPath, ["build", "--compile", "--minify", bareServer, "--outfile", bareBinary], { cwd: work, encoding: "utf8" });
if (compiled.status !== 0) throw new Error(`compiling the bare server failed: ${compiled.stderr}`);
const bareBinaryBytes = statSync(bareBinary).size;

let pgUrl: string | undefined;
let dropPg = async () => {};
if (process.env.BENCH_DB !== "pglite") {
  const server = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
  const name = `commitops_coldstart_${Date.now().toString(36)}`;
  try {
    const admin = postgres(server, { max: 1, onnotice: () => {} });
    await admin.unsafe(`CREATE DATABASE ${name}`);
    await admin.end();
    const u = new URL(server);
    u.pathname = `/${name}`;
    pgUrl = u.toString();
    const h = await openDb({ url: pgUrl, migrate: true });
    await h.close();
    dropPg = async () => {
      const a = postgres(server, { max: 1, onnotice: () => {} });
      await a.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await a.end();
    };
  } catch (e) {
    console.error(`PostgreSQL skipped (${server}): ${e instanceof Error ? e.message : e}`);
    pgUrl = undefined;
  }
}

type Row = { name: string; figures: Start[] };
const rows: Row[] = [
  { name: "baseline: bare Bun.serve process", figures: [] },
  { name: "baseline: bare Bun.serve, compiled binary", figures: [] },
  { name: "baseline: bare PGlite process, `new PGlite(dir)` on an empty dir (initdb)", figures: [] },
  { name: `${label}, fresh data dir (prebuilt template)`, figures: [] },
  { name: `${label}, fresh data dir, COMMITOPS_PGLITE_TEMPLATE=off (initdb + migrations)`, figures: [] },
  { name: `${label}, existing data dir`, figures: [] },
];
if (pgUrl) rows.push({ name: `${label}, PostgreSQL (migrated database)`, figures: [] });
const before = process.env.BENCH_BEFORE;
const beforeRows: Row[] = before
  ? [
      { name: `before (${before}), fresh data dir`, figures: [] },
      { name: `before (${before}), existing data dir`, figures: [] },
      ...(pgUrl ? [{ name: `before (${before}), PostgreSQL (migrated database)`, figures: [] }] : []),
    ]
  : [];

try {
  // One untimed start per kind warms the page cache (binary, PGlite assets, the checkout's
  // template); on PostgreSQL it also completes the demo seed, so the timed starts find it done.
  const warm = join(work, "warm");
  await timeToReady(service, { DATA_DIR: warm, DATABASE_URL: "" });
  if (pgUrl) await timeToReady(service, { DATABASE_URL: pgUrl }, true);
  for (let round = 1; round <= rounds; round++) {
    const dir = (n: string) => join(work, `${n}-${round}`);
    rows[0]!.figures.push(await timeToReady([process.execPath, bareServer], {}));
    rows[1]!.figures.push(await timeToReady([bareBinary], {}));
    rows[2]!.figures.push(await timeToReady([process.execPath, barePglite], { DATA_DIR: dir("bare") }));
    rows[3]!.figures.push(await timeToReady(service, { DATA_DIR: dir("fresh"), DATABASE_URL: "" }, true));
    rows[4]!.figures.push(await timeToReady(service, { DATA_DIR: dir("initdb"), DATABASE_URL: "", COMMITOPS_PGLITE_TEMPLATE: "off" }));
    rows[5]!.figures.push(await timeToReady(service, { DATA_DIR: dir("fresh"), DATABASE_URL: "" }));
    if (pgUrl) rows[6]!.figures.push(await timeToReady(service, { DATABASE_URL: pgUrl }));
    if (before) {
      beforeRows[0]!.figures.push(await timeToReady([before], { DATA_DIR: dir("before"), DATABASE_URL: "" }));
      beforeRows[1]!.figures.push(await timeToReady([before], { DATA_DIR: dir("before"), DATABASE_URL: "" }));
      if (pgUrl) beforeRows[2]!.figures.push(await timeToReady([before], { DATABASE_URL: pgUrl }));
    }
    for (const n of ["bare", "fresh", "initdb", "before"]) rmSync(dir(n), { recursive: true, force: true });
  }
} finally {
  await dropPg().catch(() => {});
  rmSync(work, { recursive: true, force: true });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (x: number | undefined) => (x === undefined ? "–" : `${Math.round(x)}`);
console.log(`\nCold start: spawn → first /readyz 200, ${rounds} rounds (interleaved), ms\n`);
console.log(`| start | ${Array.from({ length: rounds }, (_, i) => `round ${i + 1}`).join(" | ")} | median |`);
console.log(`|---|${"---|".repeat(rounds)}---|`);
for (const r of [...rows, ...beforeRows]) console.log(`| ${r.name} | ${r.figures.map((f) => ms(f.readyMs)).join(" | ")} | **${ms(median(r.figures.map((f) => f.readyMs)))}** |`);
const seeded = rows[3]!.figures;
console.log(`\nFresh start with the demo seed in the background: seed done at ${seeded.map((f) => ms(f.seedDoneMs)).join(" / ")} ms after spawn; slowest /readyz while it ran ${seeded.map((f) => ms(f.readyzMaxMs)).join(" / ")} ms.`);
const med = (i: number) => median(rows[i]!.figures.map((f) => f.readyMs));
console.log(
  `Fresh data dir: ${ms(med(3))} ms (target < 2000), ${(med(4) / med(3)).toFixed(1)}× faster with the template; ${ms(med(3) - med(0))} ms over the bare process.` +
    (pgUrl ? ` PostgreSQL: ${ms(med(6))} ms (target < 300; the compiled bare server: ${ms(med(1))} ms).` : ""),
);
const size = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
if (choice !== "source") console.log(`Binary size: ${size(statSync(choice).size)} (target ≤ 150 MB; the compiled bare server: ${size(bareBinaryBytes)})` + (before ? `; before: ${size(statSync(before).size)}.` : "."));
addHeadline({ figure: "cold start, fresh embedded PGlite (template), median", value: `${ms(med(3))} ms`, baseline: `bare PGlite initdb ${ms(med(2))} ms`, ratio: `${(med(3) / med(2)).toFixed(2)}×`, goal: `< 2000 ms ${med(3) < 2000 ? "ok" : "MISSED"}` });
if (pgUrl) addHeadline({ figure: "cold start, migrated PostgreSQL, median", value: `${ms(med(6))} ms`, baseline: `compiled bare server ${ms(med(1))} ms`, ratio: `+${ms(med(6) - med(1))} ms`, goal: `< 300 ms ${med(6) < 300 ? "ok" : "MISSED"}` });
if (choice !== "source") {
  const bytes = statSync(choice).size;
  addHeadline({ figure: "compiled binary size", value: size(bytes), baseline: `compiled bare server ${size(bareBinaryBytes)}`, ratio: `+${size(bytes - bareBinaryBytes)}`, goal: `≤ 150 MB ${bytes <= 150e6 ? "ok" : "MISSED"}` });
}

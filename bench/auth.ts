// The authenticated request path of the Beta API against the floor of the same work: the real app's
// `GET /beta/v1/org/{id}` (production Bun entry, routing, API-key lookup, scope check, rate
// limiter, org read, response schema) vs a minimal Bun.serve + driver server running the same two
// indexed queries and answering the same JSON (bench/auth-minimal-server.ts), and a bare Elysia
// hello route for scale. Minimal and app are measured back to back in each round, so a
// neighbour's load on the shared cores hits both alike; the table gives every round, the medians
// and each server's CPU time per request (from /proc: less sensitive to that load than req/s).
// Target (issue 11): the app within 1.25× of the minimal server's req/s.
// Env: BENCH_SECONDS (5), BENCH_CONCURRENCY (32), BENCH_ROUNDS (3), BENCH_DATABASE_URL (a
// PostgreSQL server; default postgres://postgres@127.0.0.1:5432/test), BENCH_DB (pglite|postgres|
// both, default both), BENCH_WRK=0 (skip the wrk second opinion when wrk is installed),
// BENCH_LOG_LEVEL (the app's log level; default silent: no request log, as the minimal server).
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { readFileSync } from "node:fs";
import postgres from "postgres";
import { freePort } from "../tests/helpers/process.ts";
import { load, fmt, type LoadResult } from "./lib/load.ts";

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const which = process.env.BENCH_DB ?? "both";
const hasWrk = process.env.BENCH_WRK !== "0" && spawnSync("wrk", ["--version"]).error === undefined;

function start(file: string, env: Record<string, string>): Promise<{ child: ChildProcess; ready: string }> {
  const child = spawn(process.execPath, [join(import.meta.dir, file)], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    let out = "";
    const onData = (d: Buffer) => {
      out += String(d);
      const line = out.split("\n").find((l) => l.startsWith("READY"));
      if (line) {
        child.stdout!.off("data", onData);
        child.stdout!.resume(); // request logs (BENCH_LOG_LEVEL) are drained and dropped
        resolve({ child, ready: line.trim() });
      }
    };
    child.stdout!.on("data", onData);
    child.on("exit", (code) => reject(new Error(`${file} exited with ${code}`)));
  });
}

/** wrk's figures for the same request (one thread: the machine has two cores). */
function wrk(url: string, key: string, pid: number | undefined): (LoadResult & { cpuUs: number }) | null {
  const c0 = cpuSeconds(pid);
  const args = ["-t1", `-c${concurrency}`, `-d${seconds}s`, "--latency", ...(key ? ["-H", `Authorization: Bearer ${key}`] : []), url];
  const r = spawnSync("wrk", args, { encoding: "utf8" });
  if (r.status !== 0) return null;
  const ms = (label: string) => {
    const m = new RegExp(`^\\s*${label}%\\s+([\\d.]+)(us|ms|s)`, "m").exec(r.stdout);
    return m ? Number(m[1]) * (m[2] === "us" ? 0.001 : m[2] === "s" ? 1000 : 1) : NaN;
  };
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(r.stdout)?.[1] ?? NaN);
  const requests = Number(/(\d+) requests in/.exec(r.stdout)?.[1] ?? NaN);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(r.stdout)?.[1] ?? 0);
  const socketErrors = /Socket errors: (.*)/.exec(r.stdout)?.[1];
  return { requests, rps, p50: ms("50"), p99: ms("99"), errors: non2xx + (socketErrors ? 1 : 0), cpuUs: ((cpuSeconds(pid) - c0) / requests) * 1e6 };
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux); NaN elsewhere. */
function cpuSeconds(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in USER_HZ (100 on Linux)
  } catch {
    return NaN;
  }
}

/** A measurement with the server's CPU time per request (µs): what the shared cores cost it. */
async function measure(url: string, init: RequestInit, pid: number | undefined): Promise<LoadResult & { cpuUs: number }> {
  const c0 = cpuSeconds(pid);
  const r = await load(url, init, { concurrency, seconds });
  return { ...r, cpuUs: ((cpuSeconds(pid) - c0) / r.requests) * 1e6 };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const row = (db: string, what: string, r: LoadResult & { cpuUs?: number }, extra = "") =>
  console.log(`| ${db} | ${what} | ${fmt(r.rps, 0)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${r.cpuUs === undefined || Number.isNaN(r.cpuUs) ? "" : fmt(r.cpuUs, 0)} | ${r.errors} | ${extra} |`);

async function run(dbLabel: string, dbUrl?: string) {
  const [pApp, pHello, pMin] = [await freePort(), await freePort(), await freePort()];
  const app = await start("auth-server.ts", { PORT_APP: String(pApp), PORT_HELLO: String(pHello), BENCH_DB_URL: dbUrl ?? "" });
  const [, orgId, key] = app.ready.split(/\s+/) as [string, string, string];
  const path = `/beta/v1/org/${orgId}`;
  const appUrl = `http://127.0.0.1:${pApp}${path}`;
  const minUrl = `http://127.0.0.1:${pMin}${path}`;
  const init = { headers: { authorization: `Bearer ${key}` } };
  const expected = await (await fetch(appUrl, init)).text();
  const min = await start("auth-minimal-server.ts", { PORT: String(pMin), BENCH_DB_URL: dbUrl ?? "", ORG_ID: orgId, KEY: key, CREATED_AT: JSON.parse(expected).created_at });
  try {
    // Same answer from both (the minimal server is a fair floor only if it does the same work).
    const got = await (await fetch(minUrl, init)).text();
    if (got !== expected) throw new Error(`different answers: ${expected} vs ${got}`);
    const warm = { concurrency, seconds: 1 };
    await load(`http://127.0.0.1:${pHello}/hello`, {}, warm);
    await load(minUrl, init, warm);
    await load(appUrl, init, warm);
    const hello = await load(`http://127.0.0.1:${pHello}/hello`, {}, { concurrency, seconds });
    row(dbLabel, "bare Elysia hello (no auth, no DB)", hello);
    type M = LoadResult & { cpuUs: number };
    const mins: M[] = [];
    const apps: M[] = [];
    for (let i = 1; i <= rounds; i++) {
      const m = await measure(minUrl, init, min.child.pid);
      const r = await measure(appUrl, init, app.child.pid);
      mins.push(m);
      apps.push(r);
      row(dbLabel, `round ${i}: minimal server`, m);
      row(dbLabel, `round ${i}: commitops`, r, `${fmt(m.rps / r.rps, 2)}×`);
    }
    const med = (rs: M[]): M => ({
      requests: 0,
      rps: median(rs.map((r) => r.rps)),
      p50: median(rs.map((r) => r.p50)),
      p99: median(rs.map((r) => r.p99)),
      cpuUs: median(rs.map((r) => r.cpuUs)),
      errors: rs.reduce((n, r) => n + r.errors, 0),
    });
    const ratios = mins.map((m, i) => m.rps / apps[i]!.rps);
    const mm = med(mins);
    const ma = med(apps);
    row(dbLabel, `**median: minimal server**`, mm);
    row(dbLabel, `**median: commitops**`, ma, `**${fmt(median(ratios), 2)}×** (rounds ${ratios.map((x) => fmt(x, 2)).join(", ")}; target ≤ 1.25×); CPU per request ${fmt(ma.cpuUs / mm.cpuUs, 2)}×`);
    if (hasWrk) {
      const wm = wrk(minUrl, key, min.child.pid);
      const wa = wrk(appUrl, key, app.child.pid);
      if (wm && wa) {
        row(dbLabel, "wrk: minimal server", wm);
        row(dbLabel, "wrk: commitops", wa, `${fmt(wm.rps / wa.rps, 2)}×; CPU per request ${fmt(wa.cpuUs / wm.cpuUs, 2)}×`);
      }
    }
  } finally {
    min.child.kill("SIGTERM");
    app.child.kill("SIGTERM");
  }
}

console.log(`\nAuthenticated request path — ${concurrency} concurrent connections, ${seconds} s per measurement, ${rounds} rounds, loopback, 2-core machine\n`);
console.log("| database | server | req/s | p50 ms | p99 ms | server CPU µs/req | errors | ratio (minimal req/s ÷ commitops req/s) |\n|---|---|---|---|---|---|---|---|");
if (which !== "postgres") await run("PGlite (embedded)");
if (which !== "pglite") {
  const server = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
  const name = `commitops_bench_${Date.now()}`;
  let admin: postgres.Sql | undefined;
  try {
    admin = postgres(server, { max: 1, onnotice: () => {} });
    await admin.unsafe(`CREATE DATABASE ${name}`);
  } catch (e) {
    console.log(`(PostgreSQL server run skipped: ${(e as Error).message})`);
    admin = undefined;
  }
  if (admin) {
    const u = new URL(server);
    u.pathname = `/${name}`;
    try {
      await run("PostgreSQL server", u.toString());
    } finally {
      await admin.unsafe(`DROP DATABASE ${name} WITH (FORCE)`);
      await admin.end();
    }
  }
}
process.exit(0);

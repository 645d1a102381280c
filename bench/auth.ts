// Auth + database overhead of the Beta API: an authenticated GET on a trivial org route vs a
// bare Elysia hello route, same process, same run. Env: BENCH_SECONDS (5), BENCH_CONCURRENCY (32),
// BENCH_DATABASE_URL (a PostgreSQL server; default the embedded PGlite).
import { spawn } from "node:child_process";
import { join } from "node:path";
import postgres from "postgres";
import { freePort } from "../tests/helpers/process.ts";
import { load, fmt } from "./lib/load.ts";

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32);

async function run(dbLabel: string, dbUrl?: string) {
  const [pApp, pHello] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, [join(import.meta.dir, "auth-server.ts")], {
    env: { ...process.env, PORT_APP: String(pApp), PORT_HELLO: String(pHello), BENCH_DB_URL: dbUrl ?? "" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const ready = await new Promise<string>((resolve) => child.stdout!.on("data", (d) => String(d).includes("READY") && resolve(String(d).trim())));
  const [, orgId, key] = ready.split(/\s+/);
  const warm = { concurrency, seconds: 1 };
  await load(`http://127.0.0.1:${pHello}/hello`, {}, warm);
  await load(`http://127.0.0.1:${pApp}/beta/v1/org/${orgId}`, { headers: { authorization: `Bearer ${key}` } }, warm);
  const hello = await load(`http://127.0.0.1:${pHello}/hello`, {}, { concurrency, seconds });
  const authed = await load(`http://127.0.0.1:${pApp}/beta/v1/org/${orgId}`, { headers: { authorization: `Bearer ${key}` } }, { concurrency, seconds });
  child.kill("SIGTERM");
  console.log(`| ${dbLabel} | hello (no auth, no DB) | ${fmt(hello.rps, 0)} | ${fmt(hello.p50, 2)} | ${fmt(hello.p99, 2)} | ${hello.errors} |`);
  console.log(`| ${dbLabel} | GET /beta/v1/org/{id} (key lookup + org read) | ${fmt(authed.rps, 0)} | ${fmt(authed.p50, 2)} | ${fmt(authed.p99, 2)} | ${authed.errors} |`);
  console.log(`| ${dbLabel} | overhead ratio (hello rps / authed rps) | ${fmt(hello.rps / authed.rps, 2)}× | | | |`);
}

console.log(`\nAuth overhead — ${concurrency} concurrent connections, ${seconds} s each, loopback, 2-core machine\n`);
console.log("| database | route | req/s | p50 ms | p99 ms | errors |\n|---|---|---|---|---|---|");
await run("PGlite (embedded)");
const server = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const name = `commitops_bench_${Date.now()}`;
try {
  const admin = postgres(server, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const u = new URL(server);
  u.pathname = `/${name}`;
  await run("PostgreSQL 15 server", u.toString());
  await admin.unsafe(`DROP DATABASE ${name} WITH (FORCE)`);
  await admin.end();
} catch (e) {
  console.log(`(PostgreSQL server run skipped: ${(e as Error).message})`);
}
process.exit(0);

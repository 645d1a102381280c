// Assistant (MCP) server. Two measurements, each against a baseline of the same run:
// 1. Forecast accuracy: the spend forecast (linear trend + day-of-week profile) back-tested on
//    MCP_BENCH_SERIES generated daily-spend series (trend, weekend dip, noise) vs the
//    seasonal-naive baseline (repeat the last week): WAPE of the 28 held-out days.
// 2. Request cost of the stateless design (a fresh McpServer + transport per request, bearer
//    key resolved per request): MCP_BENCH_N tools/call get_spend requests through app.handle vs
//    baselines of the same number of authenticated REST reads (GET /beta/v1/org/{id}) and of
//    direct calls of the query the tool runs (queryCosts by month and provider, the reports'
//    rounding), so the MCP overhead shows.
// Env: MCP_BENCH_SERIES (200), MCP_BENCH_N (300), BENCH_DATABASE_URL (PostgreSQL; default an
// in-memory PGlite). Usage: npx bun bench/mcp.ts
import { loadConfig } from "../lib/config.ts";
import { createLogger } from "../lib/log.ts";
import { openDb } from "../lib/db/index.ts";
import { createServices } from "../lib/services.ts";
import { createApp } from "../lib/http/app.ts";
import { createOrganization } from "../lib/orgs/service.ts";
import { createApiKey } from "../lib/auth/apiKeys.ts";
import { backtest } from "../lib/mcp/forecast.ts";
import { queryCosts } from "../lib/billing/costQuery.ts";
import { generatedSpend } from "../tests/mcp/generated.ts";
import { NOW, seedOrgBilling } from "../tests/mcp/fixtures.ts";

const SERIES = Number(process.env.MCP_BENCH_SERIES ?? 200);
const N = Number(process.env.MCP_BENCH_N ?? 300);

// 1. Forecast accuracy
const wapes: number[] = [];
const baselines: number[] = [];
for (let seed = 1; seed <= SERIES; seed++) {
  const r = (seed * 7919) % 1000 / 1000;
  const g = generatedSpend({ seed, days: 120, level: 500 + 2000 * r, slopePerDay: (r - 0.5) * 8, weekendFactor: 0.6 + 0.4 * r, noise: 0.02 + 0.1 * r });
  const bt = backtest(g.history, 28)!;
  wapes.push(bt.wape!);
  baselines.push(bt.baseline_wape!);
}
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;
const f = (x: number) => `${(x * 100).toFixed(2)}%`;
console.log(`\n### Forecast back-test (${SERIES} generated series, 120 days, last 28 held out)\n`);
console.log("| model | mean WAPE | median WAPE | p90 WAPE |");
console.log("|---|---|---|---|");
console.log(`| trend + weekday profile | ${f(mean(wapes))} | ${f(pct(wapes, 0.5))} | ${f(pct(wapes, 0.9))} |`);
console.log(`| baseline: seasonal naive | ${f(mean(baselines))} | ${f(pct(baselines, 0.5))} | ${f(pct(baselines, 0.9))} |`);

// 2. Request cost
const handle = await openDb({ url: process.env.BENCH_DATABASE_URL, migrate: true });
const s = createServices(handle, loadConfig({ ...process.env, PUBLIC_URL: "http://localhost" }, { jobsEnabled: false, seedDemo: false }), createLogger("silent"), { now: () => NOW });
const app = createApp(s);
const org = await createOrganization(s.db, { name: `bench ${Date.now()}` });
const key = (await createApiKey(s.db, { orgId: org.id })).key;
await seedOrgBilling(s.db, org.id, { scale: 1, tag: String(Date.now()).slice(-3) });
const headers = { authorization: `Bearer ${key}`, "content-type": "application/json", accept: "application/json, text/event-stream" };
const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_spend", arguments: { group_by: "month" } } });

async function time(label: string, fn: () => Promise<Response>) {
  for (let i = 0; i < 10; i++) await (await fn()).text();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const r = await fn();
    if (r.status !== 200) throw new Error(`${label}: status ${r.status}`);
    await r.text();
  }
  const ms = performance.now() - t0;
  return { label, perReq: ms / N, rps: (N / ms) * 1000 };
}
const mcp = await time("MCP tools/call get_spend (fresh server per request)", () => app.handle(new Request("http://localhost/mcp", { method: "POST", headers, body })));
const rest = await time("baseline: REST GET organization", () => app.handle(new Request(`http://localhost/beta/v1/org/${org.id}`, { headers })));
const direct = await time("baseline: the same cost query (queryCosts), called directly", async () => {
  const r = await queryCosts(s.db, org.id, { window: { from: new Date("2026-04-01T00:00:00Z"), to: new Date("2026-07-01T00:00:00Z") }, groupBy: ["month", "provider"], limit: 200 });
  return new Response(JSON.stringify(r));
});
console.log(`\n### Stateless request cost (${N} sequential requests, ${handle.driver})\n`);
console.log("| request | ms/request | requests/s |");
console.log("|---|---|---|");
for (const r of [mcp, rest, direct]) console.log(`| ${r.label} | ${r.perReq.toFixed(2)} | ${r.rps.toFixed(0)} |`);
await handle.close();

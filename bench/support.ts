// Support tickets: cost of the exact daily cap and the ticket's event. Files N tickets through
// fileSupportTicket (counter upsert + ticket + support.ticket_created event and its delivery row,
// one transaction) vs a baseline of the bare ticket insert, sequentially and with CONCURRENCY
// callers; then delivers the events to a local receiver (SUPPORT_WEBHOOK_URL's compatibility
// endpoint) vs a baseline of plain POSTs of the same payloads.
// Env: SUPPORT_BENCH_N (500), SUPPORT_BENCH_CONCURRENCY (16), BENCH_DATABASE_URL (a PostgreSQL
// database to use; default an in-memory PGlite). Usage: npx bun bench/support.ts
import { loadConfig } from "../lib/config.ts";
import { createLogger } from "../lib/log.ts";
import { openDb } from "../lib/db/index.ts";
import { createServices } from "../lib/services.ts";
import { createOrganization } from "../lib/orgs/service.ts";
import { supportTickets } from "../lib/db/schema/support.ts";
import { fileSupportTicket } from "../lib/support/tickets.ts";
import { deliverWebhooks } from "../lib/webhooks/deliver.ts";
import { syncLegacyEndpoints } from "../lib/webhooks/legacy.ts";
import type { Principal } from "../lib/auth/principal.ts";

const N = Number(process.env.SUPPORT_BENCH_N ?? 500);
const CONCURRENCY = Number(process.env.SUPPORT_BENCH_CONCURRENCY ?? 16);

let received = 0;
const receiver = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: async (r) => (await r.arrayBuffer(), received++, new Response(null, { status: 204 })) });
const webhook = `http://127.0.0.1:${receiver.port}/hook`;

const handle = await openDb({ url: process.env.BENCH_DATABASE_URL, migrate: true });
const config = loadConfig(process.env, { supportDailyCap: 1_000_000_000, supportFilingEnabled: true, supportWebhookUrl: webhook, jobsEnabled: false, seedDemo: false });
const s = createServices(handle, config, createLogger("silent"));
// SUPPORT_WEBHOOK_URL becomes its compatibility endpoint (as at server start): each filed ticket's event is queued for it.
await syncLegacyEndpoints(s);

const input = {
  summary: "Export fails 😀",
  user_verbatim: "The export button spins forever.",
  what_happened: "x".repeat(500),
  steps_to_reproduce: "1. open\n2. click",
  expected_behavior: "A CSV downloads.",
  app_url: "https://app.example.com/reports",
  provider: "aws" as const,
};

async function principalFor(name: string): Promise<Principal> {
  const org = await createOrganization(s.db, { name });
  return { kind: "api_key", orgId: org.id, scopes: ["support:write"], userId: null, credentialId: crypto.randomUUID() };
}

async function timed(n: number, concurrency: number, fn: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < n) await fn(next++);
  }));
  return (n / (performance.now() - t0)) * 1000;
}

const rows: string[] = [];
for (const conc of [1, CONCURRENCY]) {
  const p1 = await principalFor(`bench-baseline-${conc}`);
  const baseline = await timed(N, conc, () =>
    s.db.insert(supportTickets).values({
      orgId: p1.orgId, kind: "bug", credentialId: p1.credentialId, credentialKind: "api_key", summary: input.summary,
      userVerbatim: input.user_verbatim, whatHappened: input.what_happened, stepsToReproduce: input.steps_to_reproduce,
      expectedBehavior: input.expected_behavior, appUrl: input.app_url, provider: input.provider, capDay: "2026-01-01",
    }),
  );
  const p2 = await principalFor(`bench-filing-${conc}`);
  const filing = await timed(N, conc, () => fileSupportTicket(s, p2, { kind: "bug", input }));
  rows.push(`| ${handle.driver} | baseline: bare ticket insert, concurrency ${conc} | ${baseline.toFixed(0)} |`);
  rows.push(`| ${handle.driver} | fileSupportTicket (cap upsert + ticket + event + delivery row, 1 tx), concurrency ${conc} | ${filing.toFixed(0)} |`);
  rows.push(`| ${handle.driver} | overhead ratio (baseline / filing) | ${(baseline / filing).toFixed(2)}× |`);
}

const pending = 2 * N;
const payload = JSON.stringify({ event: "support_ticket.created", ticket: { ...input, ticket_key: "SUP-1" } });
const t0 = performance.now();
await timed(pending, CONCURRENCY, () => fetch(webhook, { method: "POST", headers: { "content-type": "application/json" }, body: payload }).then((r) => r.arrayBuffer()));
const baselinePosts = (pending / (performance.now() - t0)) * 1000;
received = 0;
const t1 = performance.now();
while ((await deliverWebhooks(s, { maxPerClaim: 1000, claimBudgetMs: 60_000 })).endpoints > 0);
const delivery = (received / (performance.now() - t1)) * 1000;
rows.push(`| ${handle.driver} | baseline: plain webhook POSTs, concurrency ${CONCURRENCY} | ${baselinePosts.toFixed(0)} |`);
rows.push(`| ${handle.driver} | support.ticket_created events through the SUPPORT_WEBHOOK_URL compatibility endpoint (claim + POST + record) | ${delivery.toFixed(0)} (${received} delivered) |`);

console.log(`N=${N} per case\n\n| db | case | per second |\n|---|---|---|\n${rows.join("\n")}`);
receiver.stop(true);
await handle.close();

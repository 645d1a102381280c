// Cost estimates: live pricing must not dominate a read. GETs an estimate of N lines through the
// real app with include_options=true vs the same GET with include_pricing=false (baseline, same
// run; target ≤ 3×), then in-process CommitmentOption evaluations per second vs a baseline of
// on-demand-only line pricing.
// Env: ESTIMATES_BENCH_LINES (1000), ESTIMATES_BENCH_REPEAT (10), BENCH_DATABASE_URL (a PostgreSQL
// database; default an in-memory PGlite). Usage: npx bun bench/estimates.ts
import { loadConfig } from "../lib/config.ts";
import { createLogger } from "../lib/log.ts";
import { openDb } from "../lib/db/index.ts";
import { createServices } from "../lib/services.ts";
import { createApp } from "../lib/http/app.ts";
import { createOrganization } from "../lib/orgs/service.ts";
import { createApiKey } from "../lib/auth/apiKeys.ts";
import { ensurePublicCatalog } from "../lib/catalog/seed.ts";
import { loadPricingInputs } from "../lib/catalog/pricingInputs.ts";
import { evaluateOption, applicableLeases, priceLine } from "../lib/pricing/index.ts";

const LINES = Number(process.env.ESTIMATES_BENCH_LINES ?? 1000);
const REPEAT = Number(process.env.ESTIMATES_BENCH_REPEAT ?? 10);

const handle = await openDb({ url: process.env.BENCH_DATABASE_URL, migrate: true });
const s = createServices(handle, loadConfig(process.env, { jobsEnabled: false, seedDemo: false, publicUrl: "http://localhost" }), createLogger("silent"));
const app = createApp(s);
await ensurePublicCatalog(s.db);
const org = await createOrganization(s.db, { name: "bench" });
const { key } = await createApiKey(s.db, { orgId: org.id });
const base = `http://localhost/beta/v1/org/${org.id}/cost-estimates`;
const req = (method: string, url: string, body?: unknown) =>
  app.handle(new Request(url, { method, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) }));

// A realistic basket: every AWS SKU with commitment options, cycled, with varied quantities.
const skuIds = (await handle.query<{ id: string }>(
  "SELECT DISTINCT s.id FROM catalog_skus s JOIN lease_menu_items l ON l.catalog_sku_id = s.id WHERE s.provider = 'aws' AND s.catalog_sku_org_id = 'public' ORDER BY s.id",
)).map((r) => r.id);
const lines = Array.from({ length: LINES }, (_, i) => ({ catalog_sku_id: skuIds[i % skuIds.length]!, catalog_sku_org_id: "public", quantity: 1 + (i % 17), is_enabled: i % 10 !== 0 }));
const created = await (await req("POST", base, { provider: "aws", name: "bench", line_items: lines })).json();
if (!created.id || created.line_items.length !== LINES) throw new Error(`estimate not created: ${JSON.stringify(created).slice(0, 300)}`);

async function timeGet(qs: string): Promise<number> {
  const r0 = await req("GET", `${base}/${created.id}${qs}`); // warm-up
  if (r0.status !== 200) throw new Error(`GET ${qs} → ${r0.status}`);
  await r0.arrayBuffer();
  const t0 = performance.now();
  for (let i = 0; i < REPEAT; i++) await (await req("GET", `${base}/${created.id}${qs}`)).arrayBuffer();
  return (performance.now() - t0) / REPEAT;
}

for (const qs of ["?include_pricing=false", "", "?include_options=true"]) await timeGet(qs); // JIT warm-up of all paths
const baseline = await timeGet("?include_pricing=false");
const priced = await timeGet("");
const withOptions = await timeGet("?include_options=true");

// In-process: option evaluations per second (the pricing engine alone, no database).
const inputs = [...(await loadPricingInputs(s.db, org.id, skuIds)).values()];
const pairs = inputs.flatMap((inp) => applicableLeases(inp).map((l) => [inp, l] as const));
function rate(fn: (i: number) => void): number {
  let n = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < 500) for (let k = 0; k < 1000; k++) fn(n++);
  return (n / (performance.now() - t0)) * 1000;
}
let sink = 0;
const odRate = rate((i) => {
  const inp = inputs[i % inputs.length]!;
  sink += priceLine(inp, { id: "x", catalogSkuId: inp.sku.id, quantity: 1 + (i % 17), quantityBasis: "resource_count", isEnabled: true, selected: null }).ondemand_monthly_cost;
});
const optRate = rate((i) => {
  const [inp, l] = pairs[i % pairs.length]!;
  sink += evaluateOption(inp, l, 1 + (i % 17), "resource_count").discount_rate;
});

const ratio = withOptions / baseline;
console.log(`\nEstimate of ${LINES} lines (${pairs.length} SKU×offer pairs in the catalog), ${REPEAT} GETs each, driver ${handle.driver}\n`);
console.log("| measurement | value |");
console.log("|---|---|");
console.log(`| GET include_pricing=false (baseline) | ${baseline.toFixed(1)} ms |`);
console.log(`| GET priced (default) | ${priced.toFixed(1)} ms (${(priced / baseline).toFixed(2)}×) |`);
console.log(`| GET include_options=true | ${withOptions.toFixed(1)} ms (${ratio.toFixed(2)}×, target ≤ 3×) |`);
console.log(`| on-demand line pricings / s (baseline) | ${Math.round(odRate).toLocaleString("en-US")} |`);
console.log(`| CommitmentOption evaluations / s | ${Math.round(optRate).toLocaleString("en-US")} |`);
if (!Number.isFinite(sink)) console.log("(sink)");
console.log(ratio <= 3 ? "\nOK: pricing with the full options grid stays within 3× of the unpriced read." : "\nOVER TARGET: pricing dominates the read.");
await handle.close();
process.exit(ratio <= 3 ? 0 : 1);

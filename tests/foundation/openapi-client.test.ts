/**
 * A real client's view of /openapi.json (DESIGN §12): TypeScript types generated from the live
 * document by openapi-typescript, and a small client written against them, type-checked with
 * the repository's own compiler in strict mode. A field the client reads that the document
 * lost, or a nullable field it stopped declaring, fails the check.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import openapiTS from "openapi-typescript";
import { useTestApp } from "../helpers/app.ts";

const TSC = join(import.meta.dir, "../../node_modules/.bin/tsc");
const BETA = "/beta/v1/org/{org_id}";

/** The client: typed only by the generated `paths` and `components`. */
const CLIENT = `import type { components, paths } from "./api.ts";

type Schemas = components["schemas"];
type Json<P extends keyof paths, M extends keyof paths[P], S extends number> = paths[P][M] extends { responses: { [K in S]: { content: { "application/json": infer T } } } } ? T : never;

export type Estimate = Json<"${BETA}/cost-estimates/{estimate_id}", "get", 200>;
export type LineRead = Json<"${BETA}/cost-estimates/{estimate_id}/line-items/{line_item_id}", "get", 200>;
export type Report = Json<"${BETA}/allocation-reports/{report_type}", "get", 200>;
export type ReportQuery = NonNullable<paths["${BETA}/allocation-reports/{report_type}"]["get"]["parameters"]["query"]>;
export type ReportCsv = paths["${BETA}/allocation-reports/{report_type}"]["get"]["responses"][200]["content"]["text/csv"];

export async function getEstimate(baseUrl: string, token: string, orgId: string, estimateId: string): Promise<Estimate> {
  const r = await fetch(\`\${baseUrl}/beta/v1/org/\${orgId}/cost-estimates/\${estimateId}\`, { headers: { authorization: \`Bearer \${token}\` } });
  if (!r.ok) throw new Error(\`HTTP \${r.status}\`);
  return (await r.json()) as Estimate;
}

export function monthlySavings(e: Estimate): number | null {
  const same: Schemas["CostEstimate"] = e;
  // @ts-expect-error pricing is null with include_pricing=false
  same.pricing.totals;
  return e.pricing ? e.pricing.totals.monthly_net_savings : null;
}

export function provider(e: Schemas["CostEstimate"]): "aws" | "azure" | "gcp" {
  return e.provider;
}

export function bestNetSavings(l: LineRead): number {
  const option = l.pricing.commitment_options[0];
  const matched = l.pricing.matched_commitment_option;
  const selected: string | undefined = l.line_item.selected_commitment_option?.lease_menu_item_id;
  void selected;
  return (option?.commitment_financials_monthly_rate.commitment_savings.net ?? 0) + (matched?.commitment_upfront_cost ?? 0);
}

export function nextPurchase(t: Schemas["CommitmentPlanTemplate"]): string | null {
  // @ts-expect-error auto_purchase is null when the template is not on a schedule
  t.auto_purchase.schedule;
  return t.auto_purchase?.next_execution_date ?? null;
}

export function firstCell(r: Report, field: string): string | number | boolean | null | undefined {
  const status: "finalized" | "in_progress" | null = r.period_status;
  void status;
  return r.rows[0]?.[field];
}

export function reportQuery(year: number, month: number): ReportQuery {
  return { year, month, format: "csv" };
}

export function csvLines(csv: ReportCsv): string[] {
  return csv.split("\\r\\n");
}

export function ticketKey(r: Schemas["SupportResult"]): string | undefined {
  const status: "created" | "rate_limited" | "not_filed" = r.status;
  return status === "created" ? r.ticket_key : undefined;
}
`;

async function typeCheck(doc: unknown): Promise<{ ok: boolean; output: string }> {
  const dir = await mkdtemp(join(tmpdir(), "commitops-openapi-client-"));
  try {
    await writeFile(join(dir, "api.ts"), await openapiTS(doc as any));
    await writeFile(join(dir, "client.ts"), CLIENT);
    const args = ["--noEmit", "--strict", "--target", "ES2022", "--module", "ESNext", "--moduleResolution", "bundler", "--allowImportingTsExtensions", "--lib", "ES2023,DOM", "--types", "", "api.ts", "client.ts"];
    const p = Bun.spawn([TSC, ...args], { cwd: dir, stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { ok: code === 0, output: out + err };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// The document does not depend on the database driver: one run is enough.
describe("OpenAPI typed client", () => {
  const t = useTestApp("pglite");
  let doc: any;
  beforeAll(async () => {
    doc = await (await t.request("GET", "/openapi.json", { key: null })).json();
  });

  test("types generated from /openapi.json type-check a client in strict mode", async () => {
    const { ok, output } = await typeCheck(doc);
    expect(output).toBe("");
    expect(ok).toBe(true);
  }, 120_000);

  test("the check has teeth: a field the client reads, removed from the document, fails it", async () => {
    const broken = structuredClone(doc);
    delete broken.components.schemas.PricingTotals.properties.monthly_net_savings;
    broken.components.schemas.PricingTotals.required = broken.components.schemas.PricingTotals.required.filter((f: string) => f !== "monthly_net_savings");
    const { ok, output } = await typeCheck(broken);
    expect(ok).toBe(false);
    expect(output).toContain("monthly_net_savings");
  }, 120_000);
});

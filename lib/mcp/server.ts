/**
 * The assistant's MCP server for one caller: the tools of the five spec areas (plus reports,
 * cost queries, anomalies, pricing and purchases) that the caller's scopes allow, the report
 * months as resources and the review prompts, each bound to the caller's organization. Built
 * per request (stateless transport, lib/mcp/http.ts).
 *
 * On the SDK's low-level `Server` rather than `McpServer`: a stateless server cannot notify a
 * client of anything, so it must not advertise `listChanged` (McpServer always does), and an
 * unknown tool is a JSON-RPC error (-32602), which McpServer turns into a tool result.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { toJsonSchemaCompat } from "@modelcontextprotocol/sdk/server/zod-json-schema-compat.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import * as z from "zod";
import pkg from "../../package.json" with { type: "json" };
import type { Principal } from "../auth/principal.ts";
import type { Services } from "../services.ts";
import { accountTools } from "./tools/accounts.ts";
import { commitmentTools } from "./tools/commitments.ts";
import { FAILED_ON_OUR_SIDE, failureMessage, runTool, type ToolContext, type ToolDef } from "./tools/common.ts";
import { coverageTools } from "./tools/coverage.ts";
import { planningTools } from "./tools/planning.ts";
import { spendTools } from "./tools/spend.ts";
import { connectionTools } from "./tools/connections.ts";
import { reportTools } from "./tools/reports.ts";
import { costTools } from "./tools/costs.ts";
import { anomalyTools } from "./tools/anomalies.ts";
import { pricingTools } from "./tools/pricing.ts";
import { purchaseTools } from "./tools/purchases.ts";
import { budgetTools } from "./tools/budgets.ts";
import { listReportResources, readReportResource, REPORT_RESOURCE_TEMPLATE, reportResourcesAllowed } from "./resources.ts";
import { getPrompt, PROMPTS } from "./prompts.ts";

export const SERVER_NAME = "commitops";
/** The service's own version (package.json), so a client can tell which release answered. */
export const SERVER_VERSION: string = pkg.version;

/** Every tool, by area (the registry; order = tools/list order). */
export const ALL_TOOLS: ToolDef<any, any>[] = [
  ...commitmentTools,
  ...coverageTools,
  ...reportTools,
  ...planningTools,
  ...pricingTools,
  ...purchaseTools,
  ...spendTools,
  ...costTools,
  ...anomalyTools,
  ...accountTools,
  ...connectionTools,
  ...budgetTools,
];

/** The tools a principal may see: assistant:read plus each tool's own scopes. */
export function toolsFor(principal: Principal): ToolDef<any, any>[] {
  if (!principal.scopes.includes("assistant:read")) return [];
  return ALL_TOOLS.filter((t) => t.scopes.every((sc) => principal.scopes.includes(sc)));
}

const INSTRUCTIONS = `commitops answers questions about this organization's cloud commitments (reserved instances, savings plans, CUDs, insured commitments), their coverage and utilization, allocation reports and chargeback, purchase recommendations and purchases, ad-hoc pricing, spend, cost breakdowns, period comparisons, anomalies and forecasts, and linked accounts, for aws, azure and gcp. All data is read-only and limited to the organization of this connection. Money is in the billing currency of each row and is never added across currencies: totals come per currency. Ratios are 0-1. Report months are also resources (commitops://reports/{report_type}/{YYYY-MM}); the prompts monthly_commitment_review and explain_monthly_bill walk through the usual reviews. If a tool or data seems missing, call get_organization to see the granted scopes: missing tools point to missing account permissions or an incomplete login (sign out in the client and authenticate again).`;

/**
 * Schemas built once per tool, not per request: zod compiles a schema on first use, and the
 * server is rebuilt for every request. Output is loose so a field a service adds later does
 * not make clients reject the result.
 */
const schemas = new Map(
  ALL_TOOLS.map((t) => {
    const input = z.object(t.input);
    const output = z.looseObject(t.output);
    return [t, { input, output, inputJson: toJsonSchemaCompat(input, { strictUnions: true, pipeStrategy: "input" }), outputJson: toJsonSchemaCompat(output, { strictUnions: true, pipeStrategy: "output" }) }];
  }),
);

const ANNOTATIONS = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

export function createMcpServer(s: Services, principal: Principal): Server {
  const server = new Server({ name: SERVER_NAME, version: SERVER_VERSION, title: "commitops assistant" }, { capabilities: { tools: {}, resources: {}, prompts: {} }, instructions: INSTRUCTIONS });
  const tools = toolsFor(principal);
  const byName = new Map(tools.map((t) => [t.name, t]));
  const ctx = (): ToolContext => ({ s, principal, orgId: principal.orgId, now: s.now() });

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: tools.map((t) => ({
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: schemas.get(t)!.inputJson as any,
      outputSchema: schemas.get(t)!.outputJson as any,
      annotations: { title: t.title, ...ANNOTATIONS },
    })),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const def = byName.get(request.params.name);
    // A tool this caller cannot see does not exist for it, exactly like an unknown one.
    if (!def) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}. Call tools/list for the tools this connection may use.`);
    const { input, output } = schemas.get(def)!;
    const args = input.safeParse(request.params.arguments ?? {});
    // Invalid arguments are a tool error the model can read and correct (MCP 2025-11-25).
    if (!args.success) return { isError: true, content: [{ type: "text" as const, text: `Invalid arguments for ${def.name}: ${z.prettifyError(args.error)}` }] };
    const c = ctx();
    const result = await runTool(def, c, args.data);
    if (!result.isError && !output.safeParse(result.structuredContent).success) {
      s.log.error("mcp tool output does not match its schema", { tool: def.name, org_id: c.orgId });
      return { isError: true, content: [{ type: "text" as const, text: FAILED_ON_OUR_SIDE }] };
    }
    return result;
  });

  const reportsAllowed = reportResourcesAllowed(principal);
  server.setRequestHandler(ListResourcesRequestSchema, () => protocolAnswer(s, "resources/list", async () => ({ resources: reportsAllowed ? await listReportResources(ctx()) : [] })));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({ resourceTemplates: reportsAllowed ? [REPORT_RESOURCE_TEMPLATE] : [] }));
  server.setRequestHandler(ReadResourceRequestSchema, (request) =>
    protocolAnswer(s, "resources/read", async () => {
      if (!reportsAllowed) throw new McpError(ErrorCode.InvalidParams, `Unknown resource: ${request.params.uri.slice(0, 200)}.`);
      return readReportResource(ctx(), request.params.uri);
    }),
  );

  // Only the prompts whose every tool this caller may call (a prompt naming a hidden tool would fail).
  const prompts = PROMPTS.filter((p) => p.tools.every((name) => byName.has(name)));
  server.setRequestHandler(ListPromptsRequestSchema, () => ({ prompts: prompts.map((p) => ({ name: p.name, title: p.title, description: p.description, arguments: p.arguments })) }));
  server.setRequestHandler(GetPromptRequestSchema, (request) => getPrompt(prompts, request.params.name, request.params.arguments ?? {}, s.now()));
  return server;
}

/**
 * A protocol answer that reads data (resources): MCP errors pass as they are; anything else is
 * -32603 with `failureMessage` (the SDK would send an exception's message as it is).
 */
async function protocolAnswer<T>(s: Services, method: string, answer: () => Promise<T>): Promise<T> {
  try {
    return await answer();
  } catch (e) {
    if (e instanceof McpError) throw e;
    throw new McpError(ErrorCode.InternalError, failureMessage(s, "mcp request failed", { method }, e));
  }
}

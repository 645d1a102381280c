/**
 * The assistant's MCP server for one caller: the tools of the five spec areas that the
 * caller's scopes allow, each bound to the caller's organization. Built per request (stateless
 * transport, lib/mcp/http.ts); registering a dozen tools is cheap.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import * as z from "zod";
import type { Principal } from "../auth/principal.ts";
import type { Services } from "../services.ts";
import { accountTools } from "./tools/accounts.ts";
import { commitmentTools } from "./tools/commitments.ts";
import { runTool, type ToolDef } from "./tools/common.ts";
import { coverageTools } from "./tools/coverage.ts";
import { planningTools } from "./tools/planning.ts";
import { spendTools } from "./tools/spend.ts";
import { connectionTools } from "./tools/connections.ts";

export const SERVER_NAME = "commitops";
export const SERVER_VERSION = "1.0.0";

/** Every tool, by area (the registry; order = tools/list order). */
export const ALL_TOOLS: ToolDef<any, any>[] = [...commitmentTools, ...coverageTools, ...planningTools, ...spendTools, ...accountTools, ...connectionTools];

/** The tools a principal may see: assistant:read plus each tool's own scopes. */
export function toolsFor(principal: Principal): ToolDef<any, any>[] {
  if (!principal.scopes.includes("assistant:read")) return [];
  return ALL_TOOLS.filter((t) => t.scopes.every((sc) => principal.scopes.includes(sc)));
}

const INSTRUCTIONS = `commitops answers questions about this organization's cloud commitments (reserved instances, savings plans, CUDs, insured commitments), their coverage and utilization, purchase recommendations, spend and forecasts, and linked accounts, for aws, azure and gcp. All data is read-only and limited to the organization of this connection. Money is in the billing currency; ratios are 0-1. If a tool or data seems missing, call get_organization to see the granted scopes: missing tools point to missing account permissions or an incomplete login (sign out in the client and authenticate again).`;

/**
 * Schemas built once per tool, not per request: zod compiles a schema on first use, and the
 * server is rebuilt for every request. Output is loose so a field a service adds later does
 * not make clients reject the result.
 */
const schemas = new Map(ALL_TOOLS.map((t) => [t, { input: z.object(t.input), output: z.looseObject(t.output) }]));

export function createMcpServer(s: Services, principal: Principal): McpServer {
  const server = new McpServer({ name: SERVER_NAME, version: SERVER_VERSION, title: "commitops assistant" }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  for (const def of toolsFor(principal)) {
    server.registerTool(
      def.name,
      {
        title: def.title,
        description: def.description,
        inputSchema: schemas.get(def)!.input,
        outputSchema: schemas.get(def)!.output,
        annotations: { title: def.title, readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      },
      (async (args: unknown) => runTool(def, { s, principal, orgId: principal.orgId, now: s.now() }, args)) as any,
    );
  }
  return server;
}

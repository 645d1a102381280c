// Third-party MCP clients against a real server on a random loopback port: the official
// conformance suite (server scenarios that apply to any server) and the Inspector CLI.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { createApp } from "../../lib/http/app.ts";
import { loadConfig } from "../../lib/config.ts";
import { createLogger } from "../../lib/log.ts";
import { createServices } from "../../lib/services.ts";
import { NOW, seedOrgBilling } from "./fixtures.ts";
import { focusCsv, importCsvText } from "../reports/helpers.ts";

const ROOT = join(import.meta.dir, "..", "..");
const CONFORMANCE = join(ROOT, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
const INSPECTOR = join(ROOT, "node_modules/@modelcontextprotocol/inspector/cli/build/index.js");

async function run(args: string[]): Promise<{ code: number; out: string }> {
  const p = Bun.spawn([process.execPath, ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" } });
  const timer = setTimeout(() => p.kill(), 50_000);
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  const code = await p.exited;
  clearTimeout(timer);
  return { code, out: out + err };
}

describeEachDb("mcp with the conformance suite and the Inspector CLI", (driver) => {
  const t = useTestApp(driver, { now: () => NOW });
  let server: ReturnType<typeof Bun.serve>;
  let gateway: ReturnType<typeof Bun.serve>;
  let url = "";
  let gatewayUrl = "";

  beforeAll(async () => {
    await seedOrgBilling(t.s.db, t.org.id, { scale: 1, tag: "555" });
    // An imported month, so report months are listed as resources (resources-list is not vacuous).
    await importCsvText(
      t,
      t.org.id,
      focusCsv([{ BillingPeriodStart: "2026-05-01T00:00:00Z", BillingPeriodEnd: "2026-06-01T00:00:00Z", ChargePeriodStart: "2026-05-02T00:00:00Z", ChargePeriodEnd: "2026-05-02T01:00:00Z", BilledCost: "3.5", EffectiveCost: "3.5", ListCost: "3.5", ContractedCost: "3.5" }]),
      { now: NOW },
    );
    let app: ReturnType<typeof createApp> | undefined;
    // The real service, with full authentication.
    server = Bun.serve({ port: 0, hostname: "127.0.0.1", idleTimeout: 0, fetch: (req) => app!.handle(req) });
    url = `http://127.0.0.1:${server.port}`;
    // Neither the conformance runner nor Inspector 0.15's CLI can send an Authorization header:
    // they reach the service through this loopback gateway (its public URL, like a reverse
    // proxy), which adds the org's key as a header-configured client would and passes Origin
    // through unchanged.
    gateway = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      idleTimeout: 0,
      fetch: async (req) => {
        const h = new Headers(req.headers);
        h.set("authorization", `Bearer ${t.org.key}`);
        const u = new URL(req.url);
        return fetch(`${url}${u.pathname}${u.search}`, { method: req.method, headers: h, body: req.body, redirect: "manual" });
      },
    });
    gatewayUrl = `http://127.0.0.1:${gateway.port}`;
    const s = createServices(t.s.handle, loadConfig({ ...process.env, PUBLIC_URL: gatewayUrl }, { jobsEnabled: false, seedDemo: false }), createLogger("silent"), { now: () => NOW });
    app = createApp(s);
  });
  afterAll(() => {
    gateway?.stop(true);
    server?.stop(true);
  });

  test(
    "conformance server scenarios for every capability declared: initialize, ping, tools, resources, prompts, DNS rebinding",
    async () => {
      // The scenarios that apply to any server with tools, resources and prompts. The others
      // (tools-call-*, resources-read-text, prompts-get-*, …) call fixtures of the suite's own
      // test server (test_simple_text, test://static-text, test_simple_prompt) or capabilities
      // we do not declare (logging, completions, subscriptions, sampling, elicitation).
      for (const scenario of ["server-initialize", "ping", "tools-list", "resources-list", "prompts-list", "dns-rebinding-protection"]) {
        const r = await run([CONFORMANCE, "server", "--url", `${gatewayUrl}/mcp`, "--scenario", scenario, "--verbose"]);
        expect(r.out).toContain("0 failed");
        expect(r.out).not.toContain("FAILURE");
        expect(r.code).toBe(0);
        // Not vacuous: the lists the scenarios check hold items.
        if (scenario === "resources-list") expect(r.out).toMatch(/"resourceCount": ?[1-9]/);
        if (scenario === "prompts-list") expect(r.out).toMatch(/"promptCount": ?[1-9]/);
        if (scenario === "dns-rebinding-protection") {
          expect(r.out).toContain("localhost-host-rebinding-rejected");
          expect(r.out).toContain("Passed: 2/2");
        }
      }
    },
    120_000,
  );

  test(
    "Inspector CLI lists and calls tools",
    async () => {
      const list = await run([INSPECTOR, `${gatewayUrl}/mcp`, "--transport", "http", "--method", "tools/list"]);
      expect(list.code).toBe(0);
      const tools = JSON.parse(list.out.slice(list.out.indexOf("{"))).tools.map((x: any) => x.name);
      expect(tools).toContain("list_commitments");
      expect(tools).toContain("forecast_spend");

      const call = await run([INSPECTOR, `${gatewayUrl}/mcp`, "--transport", "http", "--method", "tools/call", "--tool-name", "list_commitments", "--tool-arg", "status=all"]);
      expect(call.code).toBe(0);
      const res = JSON.parse(call.out.slice(call.out.indexOf("{")));
      expect(res.structuredContent.total_count).toBe(3);
      expect(res.structuredContent.commitments.map((c: any) => c.provider_commitment_id)).toContain("ri-555-long");

      // Straight to the server, without the key: refused.
      const direct = await run([INSPECTOR, `${url}/mcp`, "--transport", "http", "--method", "tools/list"]);
      expect(direct.code).not.toBe(0);
      expect(direct.out).toContain("401");
    },
    120_000,
  );
});

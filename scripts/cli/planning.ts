import { isUuid } from "../../lib/orgs/service.ts";
import { createCustomSegment, getSegment, listSegments, segmentView } from "../../lib/segments/service.ts";
import { PROVIDERS, type Provider } from "../../lib/templates/enums.ts";
import { commitmentPlanTemplates } from "../../lib/db/schema/index.ts";
import { and, eq } from "drizzle-orm";
import { configurationOf } from "../../lib/templates/service.ts";
import { generatePlan, savePlan } from "../../lib/planning/generate.ts";
import { runPurchasingTick } from "../../lib/purchasing/autoPurchase.ts";
import { purchaseHooksForProcess, purchaserForProcess } from "../../jobs/auto-purchase.ts";
import { CliError, type CliCommand } from "./types.ts";
import { requiredOption, uuidOption } from "./args.ts";

const required = requiredOption;
const orgOf = (values: Record<string, any>) => uuidOption(values, "org");
const list = (v: unknown) => (typeof v === "string" && v.trim() ? v.split(",").map((x) => x.trim()).filter(Boolean) : undefined);

export const planningCommands: CliCommand[] = [
  {
    group: "segments",
    name: "create",
    summary: "Create a custom segment (usage filtered by account, region, service) with its system templates",
    usage: "segments create --org ORG_ID --provider aws|azure|gcp --name NAME [--accounts A,B] [--regions R,S] [--services S,T] [--json]",
    options: { org: { type: "string" }, provider: { type: "string" }, name: { type: "string" }, accounts: { type: "string" }, regions: { type: "string" }, services: { type: "string" } },
    async run(s, v) {
      const seg = await createCustomSegment(s.db, orgOf(v), {
        provider: required(v, "provider"),
        name: required(v, "name"),
        filters: { account_ids: list(v.accounts), regions: list(v.regions), services: list(v.services) },
      });
      return segmentView(seg);
    },
    human: (r) => `Segment ${r.name} (${r.provider}) created: ${r.id}`,
  },
  {
    group: "segments",
    name: "list",
    summary: "List an organization's segments",
    usage: "segments list --org ORG_ID [--provider aws|azure|gcp] [--json]",
    options: { org: { type: "string" }, provider: { type: "string" } },
    async run(s, v) {
      if (v.provider && !(PROVIDERS as readonly string[]).includes(v.provider)) throw new CliError(`--provider must be one of ${PROVIDERS.join(", ")}`);
      return (await listSegments(s.db, orgOf(v), v.provider as Provider | undefined)).map(segmentView);
    },
    human: (rows: any[]) => (rows.length ? rows.map((r) => `${r.id}  ${r.provider.padEnd(5)}  ${r.kind.padEnd(18)}  ${r.name}  ${JSON.stringify(r.filters)}`).join("\n") : "no segments yet (the provider segments are created on first use)"),
  },
  {
    group: "plans",
    name: "generate",
    summary: "Generate and store a plan from a template now (never buys)",
    usage: "plans generate --org ORG_ID --template TEMPLATE_ID [--json]",
    options: { org: { type: "string" }, template: { type: "string" } },
    async run(s, v) {
      const org = orgOf(v);
      const id = required(v, "template");
      if (!isUuid(id)) throw new CliError("--template must be a template id (UUID)");
      const [t] = await s.db.select().from(commitmentPlanTemplates).where(and(eq(commitmentPlanTemplates.orgId, org), eq(commitmentPlanTemplates.id, id.toLowerCase())));
      if (!t) throw new CliError(`no template ${id} in organization ${org}`);
      const config = configurationOf(t);
      const segment = await getSegment(s.db, org, t.segmentId);
      const plan = await generatePlan(s.db, org, segment, config, s.now());
      const planId = await s.db.transaction((tx) =>
        savePlan(tx, { orgId: org, segmentId: t.segmentId, templateId: t.id, executionDate: null, status: "generated", statusReason: null, lookbackDays: config.lookback_days, maxUpfrontCost: config.max_upfront_cost, plan }),
      );
      return {
        plan_id: planId,
        groups: plan.groupCount,
        items: plan.sizing.items.map((i) => ({ group: i.groupKey, commitment_type: i.quote.commitmentType, contract_term: i.quote.contractTerm, payment_option: i.quote.paymentOption, amount: i.amount, upfront_cost: i.upfrontCost, monthly_net_savings: i.monthlyNetSavings, expected_utilization: i.expectedUtilization })),
        total_upfront_cost: plan.sizing.totalUpfront,
        monthly_cost: plan.sizing.monthlyCost,
        monthly_net_savings: plan.sizing.monthlyNetSavings,
      };
    },
    human: (r) => `Plan ${r.plan_id}: ${r.items.length} purchase(s) over ${r.groups} group(s); upfront $${r.total_upfront_cost.toFixed(2)}, monthly net savings $${r.monthly_net_savings.toFixed(2)}`,
  },
  {
    group: "autopurchase",
    name: "tick",
    summary: "Run due auto-purchase schedules once (what the cron job does)",
    usage: "autopurchase tick [--now ISO_DATETIME] [--json]",
    options: { now: { type: "string" } },
    async run(s, v) {
      let services = s;
      if (v.now) {
        const fixed = new Date(String(v.now));
        if (Number.isNaN(fixed.getTime())) throw new CliError("--now must be an ISO date-time");
        services = { ...s, now: () => fixed };
      }
      return runPurchasingTick(services, { purchaser: purchaserForProcess(services), hooks: purchaseHooksForProcess() });
    },
    human: (r) =>
      [
        ...r.runs.map((x: any) => `${x.template_id} ${x.execution_date}: ${x.outcome}${x.purchase_id ? ` (purchase ${x.purchase_id})` : ""}${x.error ? ` — ${x.error}` : ""}`),
        ...(r.expired_approvals ? [`${r.expired_approvals} approval(s) lapsed`] : []),
        ...r.items.map((i: any) => `item ${i.item_id} of purchase ${i.purchase_id}: ${i.status}${i.provider_purchase_id ? ` (${i.provider_purchase_id})` : ""}${i.failure_cause ? ` — ${i.failure_cause}` : ""}`),
      ].join("\n") || "nothing due",
  },
];

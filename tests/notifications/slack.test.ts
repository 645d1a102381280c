/**
 * The Slack renderer (lib/notifications/slack.ts) for every event type: a valid Block Kit
 * message (blocks within Slack's limits), the figures of its type, a button to the console page
 * (a pending approval's: "Review and approve" on its approval page), a fallback text, and every
 * value from the data escaped for mrkdwn. The samples are checked against the catalog's data
 * schemas, so a type added to the catalog without a sample here fails.
 */
import { describe, expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import { Value } from "@sinclair/typebox/value";
import "../../lib/http/app.ts";
import { EVENT_CATALOG, EVENT_TYPES } from "../../lib/events/catalog.ts";
import type { EventView } from "../../lib/events/view.ts";
import { slackMessage, escapeMrkdwn } from "../../lib/notifications/slack.ts";
import { summarizeEvent } from "../../lib/notifications/summary.ts";
import { purchaseData } from "./fixtures.ts";

const PUBLIC = "https://commitops.example.com";
const ORG = randomUUID();
const at = "2025-03-04T05:06:07.000Z";
const connection = { id: randomUUID(), name: "Prod CUR", kind: "aws_data_exports", provider: "aws" };

/** One data document per event type, as its producer writes it (checked against the catalog below). */
const SAMPLES: Record<string, Record<string, unknown>> = {
  "purchase.pending_approval": purchaseData(),
  "purchase.approved": purchaseData({ status: "approved", decided_by: "alice@example.com", decided_at: at }),
  "purchase.rejected": purchaseData({ status: "expired", message: "Not approved within 7 days." }),
  "purchase.confirmed": purchaseData({ status: "confirmed" }),
  "purchase.failed": purchaseData({ status: "partially_failed", message: "2 of 3 items bought; 1 refused by AWS." }),
  "purchase.dry_run": purchaseData({ status: "dry_run", dry_run: true, purchaser: "aws_purchasing" }),
  "billing_sync.succeeded": {
    connection,
    run_id: randomUUID(),
    trigger: "schedule",
    started_at: at,
    finished_at: at,
    periods_seen: 3,
    periods_imported: 2,
    periods_unchanged: 1,
    rows_imported: 120_345,
    months_imported: ["2025-02", "2025-03"],
    recovered: false,
  },
  "billing_sync.failed": {
    connection,
    run_id: randomUUID(),
    trigger: "schedule",
    started_at: at,
    finished_at: at,
    error: { cause: "permission", message: "The role may not read the export's bucket: grant s3:GetObject." },
    consecutive_failures: 3,
    connection_status: "error",
    next_attempt_at: "2025-03-04T09:06:07.000Z",
    periods_imported: 0,
  },
  "billing_sync.stale": {
    connection,
    last_new_data_at: "2025-02-28T00:00:00.000Z",
    newest_month: "2025-02",
    days_without_new_data: 4,
    stale_after_days: 3,
    last_synced_at: at,
    connection_status: "ok",
    last_error_cause: null,
  },
  "period.finalized": { provider: "azure", period: "2025-02", year: 2025, month: 2, closed_at: at, finalized_at: at, reports: ["chargeback", "showback"] },
  "commitment.expiring": {
    commitment: {
      id: randomUUID(),
      provider: "aws",
      provider_commitment_id: "arn:aws:savingsplans::123456789012:savingsplan/abc",
      name: "Compute SP 2022",
      commitment_type: "compute_savings_plan",
      contract_term: "three_year",
      payment_option: "no_upfront",
      region: null,
      instance_type: null,
      holding_account_id: "123456789012",
      insured: false,
      starts_at: "2022-04-01T00:00:00.000Z",
      ends_at: "2025-04-03T00:00:00.000Z",
    },
    notice_days: 30,
    days_left: 30,
    amount: 12.5,
    hourly_commitment: 12.5,
    monthly_commitment: 9125,
    upfront_cost: 0,
    currency: "USD",
  },
  "anomaly.detected": {
    dimension: "service",
    provider: "gcp",
    currency: "EUR",
    key: "Compute Engine",
    name: null,
    date: "2025-03-03",
    weekday: "Monday",
    expected: 1000,
    actual: 4321.5,
    impact: 3321.5,
    spread: 120,
    score: 27.7,
    direction: "spike",
  },
  "budget.threshold_crossed": {
    budget_id: randomUUID(),
    budget_name: "Production",
    month: "2025-03",
    basis: "forecast",
    threshold_percent: 100,
    threshold_amount: 10000,
    amount: 10000,
    currency: "USD",
    actual: 4200,
    forecast: 11234.56,
    percent_used: 42,
    forecast_percent_used: 112.3456,
    filter: { provider: "aws" },
  },
  "catalog.refresh_failed": {
    day: "2025-03-04",
    status: "partial",
    feeds_failed: 2,
    feeds_refreshed: 40,
    failures: [
      { provider: "aws", feed: "AmazonEC2", error: "HTTP 503 from the price list" },
      { provider: "azure", feed: null, error: "timeout" },
    ],
    prices_kept: true,
  },
  "support.ticket_created": {
    ticket_key: "SUP-42",
    kind: "bug",
    summary: "Export fails",
    provider: null,
    filed_by: { user_id: null, credential_kind: "api_key" },
    ticket_url: `${PUBLIC}/beta/v1/org/${ORG}/support/tickets/SUP-42`,
  },
  "webhook_endpoint.disabled": {
    endpoint_id: randomUUID(),
    kind: "webhook",
    url: "https://hooks.example.com/in",
    description: "Ops pager",
    reason: "failing",
    disabled_reason: "Every delivery failed for 3 days.",
    failing_since: "2025-03-01T00:00:00.000Z",
    consecutive_failures: 40,
    last_status_code: 500,
    last_error: null,
    failed_deliveries: 12,
  },
};

function view(type: string, data: Record<string, unknown>, consolePath: string | null = "/app/things/1"): EventView {
  return { id: randomUUID(), type, version: 1, timestamp: at, org_id: ORG, data, links: { api: `${PUBLIC}/beta/v1/org/${ORG}/things/1`, console: consolePath ? `${PUBLIC}${consolePath}` : null } };
}

/** Every mrkdwn text object in a message (section texts, fields, context elements). */
function mrkdwnTexts(blocks: any[]): string[] {
  const out: string[] = [];
  for (const b of blocks) {
    if (b.text?.type === "mrkdwn") out.push(b.text.text);
    for (const f of b.fields ?? []) if (f.type === "mrkdwn") out.push(f.text);
    if (b.type === "context") for (const e of b.elements) if (e.type === "mrkdwn") out.push(e.text);
  }
  return out;
}

/** Block Kit's structure and limits for the blocks we use; returns the problems found. */
function blockKitProblems(msg: { text: unknown; blocks: unknown }): string[] {
  const p: string[] = [];
  if (typeof msg.text !== "string" || !msg.text) p.push("text: a non-empty fallback is required");
  if (!Array.isArray(msg.blocks) || msg.blocks.length === 0 || msg.blocks.length > 50) return [...p, "blocks: 1 to 50"];
  const textObj = (o: any, where: string, max: number, kinds = ["plain_text", "mrkdwn"]) => {
    if (!o || !kinds.includes(o.type) || typeof o.text !== "string" || o.text.length === 0) p.push(`${where}: a ${kinds.join("/")} text object`);
    else if (o.text.length > max) p.push(`${where}: longer than ${max}`);
  };
  msg.blocks.forEach((b: any, i: number) => {
    const w = `blocks[${i}] (${b?.type})`;
    switch (b?.type) {
      case "header":
        textObj(b.text, w, 150, ["plain_text"]);
        break;
      case "section":
        if (!b.text && !b.fields) p.push(`${w}: text or fields`);
        if (b.text) textObj(b.text, w, 3000);
        if (b.fields) {
          if (!Array.isArray(b.fields) || b.fields.length > 10) p.push(`${w}: at most 10 fields`);
          b.fields.forEach((f: any, j: number) => textObj(f, `${w}.fields[${j}]`, 2000));
        }
        break;
      case "actions":
        if (!Array.isArray(b.elements) || b.elements.length < 1 || b.elements.length > 25) p.push(`${w}: 1 to 25 elements`);
        for (const e of b.elements ?? []) {
          if (e.type !== "button") p.push(`${w}: buttons only here`);
          textObj(e.text, `${w} button`, 75, ["plain_text"]);
          if (typeof e.url !== "string" || e.url.length > 3000 || !/^https?:\/\//.test(e.url)) p.push(`${w}: button url`);
          if (e.style !== undefined && !["primary", "danger"].includes(e.style)) p.push(`${w}: button style`);
          if (e.action_id !== undefined && (typeof e.action_id !== "string" || e.action_id.length > 255)) p.push(`${w}: action_id`);
        }
        break;
      case "context":
        if (!Array.isArray(b.elements) || b.elements.length < 1 || b.elements.length > 10) p.push(`${w}: 1 to 10 elements`);
        for (const e of b.elements ?? []) textObj(e, `${w} element`, 3000);
        break;
      default:
        p.push(`${w}: unexpected block type`);
    }
  });
  return p;
}

const buttonOf = (blocks: any[]) => blocks.find((b) => b.type === "actions")?.elements?.[0];
const allText = (msg: { text: string; blocks: any[] }) => [msg.text, ...mrkdwnTexts(msg.blocks), ...msg.blocks.filter((b) => b.type === "header").map((b) => b.text.text)].join("\n");

describe("Slack messages", () => {
  test("a sample for every event type, valid against the catalog's data schema", () => {
    expect(Object.keys(SAMPLES).sort()).toEqual([...EVENT_TYPES].sort());
    for (const type of EVENT_TYPES) {
      const schema = EVENT_CATALOG[type].data;
      expect(Value.Check(schema, SAMPLES[type]), `${type}: ${JSON.stringify([...Value.Errors(schema, SAMPLES[type])].slice(0, 3))}`).toBe(true);
    }
  });

  test("every type renders valid Block Kit: header, headline section, fields, a button to the console page, context", () => {
    for (const type of EVENT_TYPES) {
      const v = view(type, SAMPLES[type]!);
      const msg = slackMessage(v, PUBLIC) as { text: string; blocks: any[] };
      expect({ type, problems: blockKitProblems(msg) }).toEqual({ type, problems: [] });
      expect(msg.blocks.map((b) => b.type)).toEqual(["header", "section", "section", "actions", "context"]);
      expect(buttonOf(msg.blocks).url).toBe(v.links.console!);
      expect(msg.text).toContain(summarizeEvent(v).title);
      expect(mrkdwnTexts(msg.blocks).at(-1)).toContain(v.id);
      // Round trip through JSON (what is posted) changes nothing.
      expect(JSON.parse(JSON.stringify(msg))).toEqual(msg);
    }
  });

  test("a pending approval: 'Review and approve' (primary) opens the purchase's approval page, with the amounts", () => {
    const data = SAMPLES["purchase.pending_approval"]!;
    const msg = slackMessage(view("purchase.pending_approval", data, `/app/purchases/${data.purchase_id}`), PUBLIC) as { text: string; blocks: any[] };
    const button = buttonOf(msg.blocks);
    expect(button.text.text).toBe("Review and approve");
    expect(button.style).toBe("primary");
    expect(button.url).toBe(`${PUBLIC}/app/purchases/${data.purchase_id}`);
    expect(msg.blocks[0].text.text).toBe("Purchase waiting for approval");
    expect(msg.text).toBe("Purchase waiting for approval: AWS: $12,345.00 upfront, $1,234.50/month net savings, 3 items");
    const texts = mrkdwnTexts(msg.blocks).join("\n");
    expect(texts).toContain("*Upfront*\n$12,345.00");
    expect(texts).toContain("*Monthly net savings*\n$1,234.50");
    expect(texts).toContain("*Approval expires*\n2025-03-10 00:00 UTC");
    // Other purchase events are not urgent.
    expect(buttonOf((slackMessage(view("purchase.confirmed", SAMPLES["purchase.confirmed"]!), PUBLIC) as any).blocks).style).toBeUndefined();
  });

  test("the figures of each family: days left, percent of budget, error text, connection name, amounts with currency", () => {
    const text = (type: string) => allText(slackMessage(view(type, SAMPLES[type]!), PUBLIC) as any);
    expect(text("commitment.expiring")).toContain("Compute SP 2022 ends in 30 days ($9,125.00/month)");
    expect(text("budget.threshold_crossed")).toContain("Production: forecast at 112.3% of $10,000.00 in 2025-03");
    expect(text("budget.threshold_crossed")).toContain("*Threshold*\n100% of the amount (forecast): $10,000.00");
    expect(text("billing_sync.failed")).toContain("Prod CUR: permission (3 failures in a row)");
    expect(text("billing_sync.failed")).toContain("grant s3:GetObject.");
    expect(text("billing_sync.succeeded")).toContain("Prod CUR: 120,345 rows imported (2025-02, 2025-03)");
    expect(text("billing_sync.stale")).toContain("Prod CUR: no new data for 4 days");
    expect(text("anomaly.detected")).toContain("Compute Engine: €4,321.50 on 2025-03-03, expected €1,000.00 (+€3,321.50)");
    expect(text("period.finalized")).toContain("AZURE 2025-02: invoice closed, reports frozen");
    expect(text("catalog.refresh_failed")).toContain("AWS AmazonEC2: HTTP 503 from the price list");
    expect(text("support.ticket_created")).toContain("SUP-42: Export fails");
    expect(text("webhook_endpoint.disabled")).toContain("Ops pager: every delivery failed for 3 days");
    expect(text("webhook_endpoint.disabled")).toContain("*Last answer*\nHTTP 500");
    expect(text("purchase.rejected")).toContain("Purchase approval lapsed");
    expect(text("purchase.failed")).toContain("Purchase partially failed");
  });

  test("data is escaped for mrkdwn: no mention, link or markup gets through; long values are cut within the limits", () => {
    const evil = "<!channel> <https://evil.example|click here> & <@U123>";
    const cases: [string, Record<string, unknown>][] = [
      ["purchase.pending_approval", purchaseData({ message: evil, provider: "<!here>" })],
      ["billing_sync.failed", { ...SAMPLES["billing_sync.failed"], connection: { ...connection, name: evil }, error: { cause: "permission", message: evil } }],
      ["budget.threshold_crossed", { ...SAMPLES["budget.threshold_crossed"], budget_name: evil, currency: "<b>" }],
      ["support.ticket_created", { ...SAMPLES["support.ticket_created"], summary: evil }],
      ["webhook_endpoint.disabled", { ...SAMPLES["webhook_endpoint.disabled"], description: evil, last_error: "x".repeat(10_000) }],
      ["anomaly.detected", { ...SAMPLES["anomaly.detected"], name: evil, key: "&".repeat(5_000) }],
    ];
    for (const [type, data] of cases) {
      const msg = slackMessage(view(type, data), PUBLIC) as { text: string; blocks: any[] };
      expect({ type, problems: blockKitProblems(msg) }).toEqual({ type, problems: [] });
      for (const s of [msg.text, ...mrkdwnTexts(msg.blocks)]) {
        expect(s).not.toMatch(/[<>]/);
        // Every & starts an entity: nothing was cut mid-entity.
        expect(s.replace(/&(amp|lt|gt);/g, "")).not.toContain("&");
      }
      expect(allText(msg)).toContain("&lt;!channel&gt;");
    }
    expect(escapeMrkdwn("a & b < c > d")).toBe("a &amp; b &lt; c &gt; d");
  });

  test("rendered defensively: empty or odd data of every type still makes a valid message; no console link: the console's home", () => {
    for (const type of [...EVENT_TYPES, "some.future_type"]) {
      for (const data of [{}, { connection: "x", error: 5, failures: "no", commitment: null, months_imported: [1, null] }]) {
        const msg = slackMessage(view(type, data, null), PUBLIC) as { text: string; blocks: any[] };
        expect({ type, problems: blockKitProblems(msg) }).toEqual({ type, problems: [] });
        expect(buttonOf(msg.blocks).url).toBe(`${PUBLIC}/app/`);
      }
    }
  });
});

// docs/alerts.yml: the Prometheus alerting rules, checked and unit-tested by promtool
// (docs/alerts.test.yml; scripts/ci-install-promtool.sh installs it in CI), and read here for
// what promtool cannot know: that every metric they read is one this service exports.
import { expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dir, "../..");
const hasPromtool = !spawnSync("promtool", ["--version"]).error;
const missing = " (skipped: promtool is not installed; CI installs it with scripts/ci-install-promtool.sh)";

function promtool(...args: string[]) {
  const r = spawnSync("promtool", args, { cwd: root, encoding: "utf8" });
  return { status: r.status, output: `$ promtool ${args.join(" ")}\n${r.stdout}${r.stderr}${r.error ?? ""}` };
}

test.skipIf(!hasPromtool)(`promtool check rules accepts docs/alerts.yml${hasPromtool ? "" : missing}`, () => {
  const r = promtool("check", "rules", "docs/alerts.yml");
  expect(r.status, r.output).toBe(0);
});

test.skipIf(!hasPromtool)(`each alert fires on its failing series and stays silent on healthy ones (promtool test rules)${hasPromtool ? "" : missing}`, () => {
  const r = promtool("test", "rules", "docs/alerts.test.yml");
  expect(r.status, r.output).toBe(0);
});

interface Rule {
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const rules: Rule[] = (Bun.YAML.parse(readFileSync(join(root, "docs/alerts.yml"), "utf8")) as { groups: { name: string; rules: Rule[] }[] }).groups.flatMap(
  (g) => g.rules,
);

// Functions and aggregations the rules may call; anything else followed by "(" is a typo.
const PROMQL_CALLS = new Set([
  "sum", "min", "max", "avg", "count", "topk", "bottomk", "quantile", "group",
  "rate", "irate", "increase", "delta", "deriv", "time", "timestamp", "absent", "absent_over_time",
  "max_over_time", "min_over_time", "avg_over_time", "last_over_time", "histogram_quantile", "clamp_min", "clamp_max", "vector", "scalar",
]);
const PROMQL_KEYWORDS = new Set(["and", "or", "unless", "bool", "offset"]);

/** Metric names an expression reads (label matchers, strings, ranges and grouping lists removed). */
function metricsOf(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, "")
    .replace(/\{[^}]*\}/g, "")
    .replace(/\[[^\]]*\]/g, "")
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, "");
  const names: string[] = [];
  for (const m of bare.matchAll(/([A-Za-z_:][A-Za-z0-9_:]*)\s*(\()?/g)) {
    const [, name, call] = m;
    if (call) expect(PROMQL_CALLS.has(name!), `unknown function ${name}( in: ${expr}`).toBe(true);
    else if (!PROMQL_KEYWORDS.has(name!)) names.push(name!);
  }
  return names;
}

/** Every string literal of the service's code under lib/ (where the metrics are declared). */
function libSource(): string {
  return readdirSync(join(root, "lib"), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".ts"))
    .map((f) => readFileSync(join(root, "lib", f), "utf8"))
    .join("\n");
}

test("every metric an alert reads is a commitops_ metric the service declares", () => {
  const used = new Set(rules.flatMap((r) => metricsOf(r.expr)));
  expect(used.size).toBeGreaterThanOrEqual(6);
  const source = libSource();
  for (const name of used) {
    expect(name).toStartWith("commitops_");
    // A histogram is declared by its base name; Prometheus adds _count, _sum and _bucket.
    const declared = name.replace(/_(count|sum|bucket)$/, "");
    expect(source.includes(`"${declared}"`), `${name}: no "${declared}" under lib/, so the alert could never fire`).toBe(true);
  }
});

test("every alert waits a while, has a severity and tells what to do in docs/OPERATIONS.md", () => {
  const alerts = rules.filter((r) => r.alert);
  expect(alerts.map((r) => r.alert).sort()).toEqual([
    "CommitopsBillingSyncStale",
    "CommitopsDatabaseDown",
    "CommitopsHigh5xxRatio",
    "CommitopsJobNotSucceeding",
    "CommitopsPriceCatalogStale",
    "CommitopsPurchaseStuckSubmitting",
  ]);
  for (const r of alerts) {
    expect(r.for, r.alert).toMatch(/^\d+[smh]$/);
    expect(r.labels?.severity ?? "", r.alert).toMatch(/^(critical|warning)$/);
    expect(r.annotations?.summary, r.alert).toBeTruthy();
    expect(r.annotations?.description, r.alert).toContain("docs/OPERATIONS.md");
  }
});

test("the docs/OPERATIONS.md sections the alerts name are headings there", () => {
  const headings = new Set(
    readFileSync(join(root, "docs/OPERATIONS.md"), "utf8")
      .split("\n")
      .filter((l) => l.startsWith("#"))
      .map((l) => l.replace(/^#+\s*/, "").replaceAll("`", "")),
  );
  const named = rules.flatMap((r) => {
    const m = /docs\/OPERATIONS\.md,\s+"([^"]+)"(?:\s+\/\s+"([^"]+)")?/.exec(r.annotations?.description ?? "");
    return m ? [m[1]!, m[2]].filter((s): s is string => !!s) : [];
  });
  expect(named.length).toBeGreaterThanOrEqual(5);
  for (const section of named) expect(headings.has(section), `"${section}" is no heading of docs/OPERATIONS.md`).toBe(true);
});

import { expect, test } from "bun:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";

/** Every Beta path of SPEC.md, relative to /beta/v1/org/{org_id}. */
const SPEC_PATHS: [string, string[]][] = [
  ["/allocation-reports", ["get"]],
  ["/allocation-reports/{report_type}", ["get"]],
  ["/allocation-reports/{report_type}/periods", ["get"]],
  ["/commitment-plan-templates", ["get", "post"]],
  ["/commitment-plan-templates/{template_id}", ["get", "put", "delete"]],
  ["/cost-estimates", ["get", "post"]],
  ["/cost-estimates/{estimate_id}", ["get", "patch", "delete"]],
  ["/cost-estimates/{estimate_id}/line-items", ["post"]],
  ["/cost-estimates/{estimate_id}/line-items/{line_item_id}", ["get", "patch", "delete"]],
  ["/support/bug-reports", ["post"]],
  ["/support/feature-requests", ["post"]],
];

describeEachDb("OpenAPI document", (driver) => {
  const t = useTestApp(driver);

  test("/openapi.json is a valid OpenAPI 3.1 document covering every path of the spec", async () => {
    const r = await t.request("GET", "/openapi.json", { key: null });
    expect(r.status).toBe(200);
    const doc = await r.json();
    expect(doc.openapi).toStartWith("3.1");
    const result = await new Validator().validate(doc);
    if (!result.valid) console.error(JSON.stringify(result.errors, null, 1).slice(0, 2000));
    expect(result.valid).toBe(true);
    for (const [path, methods] of SPEC_PATHS) {
      const item = doc.paths[`/beta/v1/org/{org_id}${path}`];
      expect(item, path).toBeDefined();
      for (const m of methods) expect(item[m], `${m} ${path}`).toBeDefined();
    }
  });

  test("/docs serves the documentation page", async () => {
    const r = await t.request("GET", "/docs", { key: null });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("text/html");
  });
});

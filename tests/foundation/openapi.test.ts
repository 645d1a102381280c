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
    // Versioning: the published interface is v1.0.0, labelled Beta, under /beta/v1.
    expect(doc.info.version).toBe("1.0.0");
    expect(doc.info.title).toContain("Beta");
  });

  test("error responses follow the spec's status table (templates list/create/update list 422)", async () => {
    const doc = await (await t.request("GET", "/openapi.json", { key: null })).json();
    const op = (path: string, m: string) => doc.paths[`/beta/v1/org/{org_id}${path}`][m];
    const statuses = (path: string, m: string) => Object.keys(op(path, m).responses).map(Number).filter((n) => n >= 400);
    const reports = [400, 401, 403, 404, 405, 409, 500];
    for (const [p, m] of [["/allocation-reports", "get"], ["/allocation-reports/{report_type}", "get"], ["/commitment-plan-templates/{template_id}", "get"], ["/commitment-plan-templates/{template_id}", "delete"]] as const) {
      expect(statuses(p, m)).toEqual(expect.arrayContaining(reports));
      expect(statuses(p, m)).not.toContain(422);
    }
    for (const [p, m] of [["/commitment-plan-templates", "get"], ["/commitment-plan-templates", "post"], ["/commitment-plan-templates/{template_id}", "put"]] as const)
      expect(statuses(p, m)).toEqual(expect.arrayContaining([...reports, 422]));
    expect(op("/commitment-plan-templates", "post").responses["422"].content["application/json"].schema.$ref).toBe("#/components/schemas/ErrorBody");
    expect(doc.components.schemas.ErrorBody.required).toEqual(["error", "message", "errors", "timestamp", "type"]);
    expect(statuses("/cost-estimates/{estimate_id}", "patch")).toContain(422);
  });

  test("an unknown API version is not served", async () => {
    expect((await t.request("GET", `/beta/v2/org/${t.org.id}`)).status).toBe(404);
  });

  test("/docs serves the documentation page", async () => {
    const r = await t.request("GET", "/docs", { key: null });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("text/html");
    expect(await r.text()).toContain("/openapi.json"); // the page renders the completed document
  });
});

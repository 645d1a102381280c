/**
 * `/openapi.json` lints clean with Redocly's recommended rules and Spectral's `oas` ruleset, the
 * linters as libraries (devDependencies), on the document the real app serves.
 */
import { beforeAll, expect, test } from "bun:test";
import { createConfig, lintFromString } from "@redocly/openapi-core";
import { Spectral, Document } from "@stoplight/spectral-core";
import { Json } from "@stoplight/spectral-parsers";
import { oas } from "@stoplight/spectral-rulesets";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";

/**
 * The one finding kept, and why: the upstream sign-in's callback (RFC 6749's redirection
 * endpoint) only ever redirects or shows an error page; it has no 2xx to document.
 */
const ACCEPTED = [{ rule: "operation-2xx-response", pointer: "#/paths/~1oauth~1upstream~1callback/get/responses" }];

describeEachDb("the OpenAPI document lints clean", (driver) => {
  // A public URL as a deployment has it (the linters flag localhost and example.com).
  const t = useTestApp(driver, { config: { publicUrl: "https://commitops.acme.test" } });
  let text = "";
  beforeAll(async () => {
    text = await (await t.request("GET", "/openapi.json", { key: null })).text();
  });

  test("Redocly, recommended rules: no error, no warning", async () => {
    const config = await createConfig({ extends: ["recommended"] });
    const problems = await lintFromString({ source: text, absoluteRef: "openapi.json", config });
    const found = problems
      .map((p) => ({ rule: p.ruleId, severity: p.severity, message: p.message, pointer: p.location[0]?.pointer }))
      .filter((p) => !ACCEPTED.some((a) => a.rule === p.rule && a.pointer === p.pointer));
    expect(found).toEqual([]);
  });

  test("Spectral, the oas ruleset: no finding", async () => {
    const spectral = new Spectral();
    spectral.setRuleset({ extends: [oas as any] } as any);
    const found = (await spectral.run(new Document(text, Json, "openapi.json"))).map((r) => ({ rule: r.code, message: r.message, path: r.path.join(".") }));
    expect(found).toEqual([]);
  });

  test("public operations say they need no credential; the rest inherit the root's, so the reference page offers a key field", async () => {
    const doc = JSON.parse(text);
    expect(doc.security).toEqual([{ bearer: [] }, { apiKey: [] }]);
    for (const [path, method] of [["/healthz", "get"], ["/readyz", "get"], ["/oauth/token", "post"], ["/oauth/authorize", "get"]]) expect(doc.paths[path][method].security).toEqual([]);
    expect(doc.paths["/mcp"].post.security).toEqual([{ bearer: [] }]);
    const org = doc.paths["/beta/v1/org/{org_id}/budgets"];
    expect(org.get.security).toEqual([{ bearer: [] }, { apiKey: [] }]);
    // Every operation may answer 413; those with a JSON body 415.
    expect(org.post.responses["413"]).toBeDefined();
    expect(org.post.responses["415"]).toBeDefined();
    expect(org.get.responses["415"]).toBeUndefined();
    expect(doc.info.license.name).toBeTruthy();
    expect(doc.info.contact.url).toBe("https://commitops.acme.test/app/support");
  });
});

/**
 * On PostgreSQL a live CSV download comes straight from COPY (parallel workers, no cursor); its
 * bytes must equal the row-by-row writer's (csvChunk): quoting, CRLF record ends with line breaks
 * kept inside fields, spreadsheet-safe text, money with two decimals, the same order.
 */
import { describe, expect, test } from "bun:test";
import { useTestApp } from "../helpers/app.ts";
import { openReport, csvChunk } from "../../lib/reports/service.ts";
import { focusCsv, importCsvText } from "./helpers.ts";

const NOW = new Date("2023-01-20T00:00:00Z");

describe.skipIf(!process.env.TEST_DATABASE_URL)("CSV downloads through COPY [postgres]", () => {
  const t = useTestApp("postgres", { now: () => NOW });

  test("byte for byte what the row writer produces, for every awkward value", async () => {
    const rows: Record<string, string | null>[] = [
      { ResourceId: "=HYPERLINK(\"http://x\")", ServiceName: "+plus", EffectiveCost: "-0.004", BilledCost: "1234567.125", ListCost: "0", ContractedCost: "0" },
      { ResourceId: "line1\nline2, with \"quotes\"", ServiceName: "-minus", EffectiveCost: "10.005", BilledCost: "0.1", ListCost: "0", ContractedCost: "0" },
      { ResourceId: "@at", SubAccountId: "\ttab", ServiceName: "multi\r\nline", EffectiveCost: "3", BilledCost: "3", ListCost: "3", ContractedCost: "3" },
      { ResourceId: null, ServiceName: null, EffectiveCost: "-5.5", BilledCost: "-5.5", ListCost: "0", ContractedCost: "0" },
      { ResourceId: "plain", ServiceName: "Compute Service", EffectiveCost: "99999999.995", BilledCost: "2", ListCost: "2", ContractedCost: "2" },
    ];
    await importCsvText(t, t.org.id, focusCsv(rows.map((r) => ({ ...r, BillingPeriodStart: "2023-01-01T00:00:00Z" }))));
    const queries: Record<string, string>[] = [{}, { account_id: "acct-1" }, { service_name: "-minus" }];
    for (const query of queries) {
      const opened = await openReport(t.s.handle, t.org.id, "cloud_bill_by_resource", { year: "2023", month: "1", format: "csv", ...query }, NOW);
      expect(opened.forEachCsvBytes).toBeDefined();
      let expected = "";
      let first = true;
      await opened.forEachRawBatch((batch) => {
        expected += csvChunk(opened.def, batch, first);
        first = false;
      });
      if (first) expected += csvChunk(opened.def, [], true);
      const params = new URLSearchParams({ year: "2023", month: "1", format: "csv", ...query });
      const r = await t.orgRequest("GET", `/allocation-reports/cloud_bill_by_resource?${params}`);
      expect(r.status).toBe(200);
      const body = await r.text();
      expect(body).toBe(expected);
      expect(body.split("\r\n").length).toBeGreaterThan(1);
    }
  });

  test("a long download splits records across chunks: CRLF record ends stay right", async () => {
    const many = Array.from({ length: 3000 }, (_, i) => ({ ResourceId: `r-${i}\n"x",y`, EffectiveCost: String(i), BilledCost: String(i), ListCost: String(i), ContractedCost: String(i), BillingAccountId: "ba-2" }));
    await importCsvText(t, t.org.id, focusCsv(many));
    const r = await t.orgRequest("GET", "/allocation-reports/cloud_bill_by_resource?year=2023&month=1&format=csv&account_id=acct-1");
    const body = await r.text();
    const opened = await openReport(t.s.handle, t.org.id, "cloud_bill_by_resource", { year: "2023", month: "1", account_id: "acct-1" }, NOW);
    let expected = "";
    let first = true;
    await opened.forEachRawBatch((batch) => {
      expected += csvChunk(opened.def, batch, first);
      first = false;
    });
    expect(body.length).toBeGreaterThan(100_000);
    expect(body).toBe(expected);
  });
});

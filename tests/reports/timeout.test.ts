/**
 * A report whose query cannot finish (here: its table locked by another session) is cancelled
 * after REPORT_QUERY_TIMEOUT_SECONDS and answered with a 503 before any body byte: never a
 * `200` whose body cannot complete. PostgreSQL only (PGlite cannot interrupt a query).
 */
import { describe, expect, test } from "bun:test";
import postgres from "postgres";
import { useTestApp } from "../helpers/app.ts";
import { focusCsv, importCsvText } from "./helpers.ts";

const NOW = new Date("2023-03-10T00:00:00Z");

describe.skipIf(!process.env.TEST_DATABASE_URL)("report query timeout [postgres]", () => {
  const t = useTestApp("postgres", { now: () => NOW, config: { reportQueryTimeoutSeconds: 1, downloadConcurrency: 1 } });

  test("a query past the limit is cancelled: 503 report_timeout with Retry-After, the slot and the server are free again", async () => {
    await importCsvText(t, t.org.id, focusCsv([{ EffectiveCost: 5, BilledCost: 5, ListCost: 5, ContractedCost: 5 }]));
    const other = postgres(t.db.url!, { max: 1, onnotice: () => {} });
    try {
      const locked = other.begin(async (tx) => {
        await tx`LOCK TABLE billing_cost_summaries IN ACCESS EXCLUSIVE MODE`;
        await new Promise((r) => setTimeout(r, 4000));
      });
      await new Promise((r) => setTimeout(r, 200));
      for (const format of ["json", "csv"]) {
        const started = performance.now();
        const r = await t.orgRequest("GET", `/allocation-reports/cloud_bill_by_service?year=2023&month=1&format=${format}`);
        const elapsed = performance.now() - started;
        expect(r.status).toBe(503);
        expect(r.headers.get("retry-after")).toBe("30");
        expect(r.headers.get("content-type")).toContain("application/json");
        const body = (await r.json()) as { code: string; message: string };
        expect(body.code).toBe("report_timeout");
        expect(elapsed).toBeGreaterThanOrEqual(900);
        expect(elapsed).toBeLessThan(3500);
      }
      await locked;
    } finally {
      await other.end();
    }
    // The download slot (only one here) was given back and nothing was left cancelled.
    const r = await t.orgRequest("GET", "/allocation-reports/cloud_bill_by_service?year=2023&month=1");
    expect(r.status).toBe(200);
    const body = (await r.json()) as { rows: { total_cost: number }[] };
    expect(body.rows.map((x) => x.total_cost)).toEqual([5]);
  }, 20_000);
});

describe.skipIf(!process.env.TEST_DATABASE_URL)("a report whose client goes away before its first byte [postgres]", () => {
  const t = useTestApp("postgres", { now: () => NOW, config: { reportQueryTimeoutSeconds: 60, downloadConcurrency: 1 } });

  test("its query is cancelled at the server at once (not at the 60 s limit) and its download slot is free again", async () => {
    await importCsvText(t, t.org.id, focusCsv([{ EffectiveCost: 7, BilledCost: 7, ListCost: 7, ContractedCost: 7 }]));
    const other = postgres(t.db.url!, { max: 1, onnotice: () => {} });
    // Sessions of this database waiting for a lock: the report's query, behind the LOCK below.
    const waitingReports = () => other`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`.then((r) => r[0]!.n as number);
    const lockHolder = postgres(t.db.url!, { max: 1, onnotice: () => {} });
    try {
      let unlock!: () => void;
      const locked = lockHolder.begin(async (tx) => {
        await tx`LOCK TABLE billing_cost_summaries IN ACCESS EXCLUSIVE MODE`;
        await new Promise<void>((r) => (unlock = r));
      });
      await new Promise((r) => setTimeout(r, 200));
      for (const format of ["json", "csv"]) {
        const client = new AbortController();
        const answer = t.app.handle(
          new Request(`http://localhost/beta/v1/org/${t.org.id}/allocation-reports/cloud_bill_by_service?year=2023&month=1&format=${format}`, {
            headers: { authorization: `Bearer ${t.org.key}` },
            signal: client.signal,
          }),
        );
        // The report's query waits on the lock.
        for (let i = 0; i < 50 && (await waitingReports()) === 0; i++) await new Promise((r) => setTimeout(r, 50));
        expect(await waitingReports()).toBe(1);
        const gone = performance.now();
        client.abort();
        const r = await answer;
        expect(r.status).toBe(499);
        expect((await r.json()).code).toBe("client_closed_request");
        expect(performance.now() - gone).toBeLessThan(2000);
        expect(await waitingReports()).toBe(0);
      }
      unlock();
      await locked;
    } finally {
      await lockHolder.end();
      await other.end();
    }
    // The only download slot was given back: the next fetch is served.
    const r = await t.orgRequest("GET", "/allocation-reports/cloud_bill_by_service?year=2023&month=1");
    expect(r.status).toBe(200);
    expect(((await r.json()) as { rows: { total_cost: number }[] }).rows.map((x) => x.total_cost)).toEqual([7]);
  }, 30_000);
});

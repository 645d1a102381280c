/**
 * An import is one COPY for the whole file: it must outlast the sessions' statement timeout
 * (DATABASE_STATEMENT_TIMEOUT_MS), which is meant for requests, not for a 10 M-row month.
 */
import { describe, expect, test } from "bun:test";
import { useTestApp } from "../helpers/app.ts";
import { openDb } from "../../lib/db/index.ts";
import { importFocus } from "../../lib/billing/focus.ts";
import { focusCsv } from "../reports/helpers.ts";

describe.skipIf(!process.env.TEST_DATABASE_URL)("FOCUS import and the statement timeout [postgres]", () => {
  const t = useTestApp("postgres");

  test("a COPY that lasts longer than the sessions' statement timeout completes", async () => {
    const handle = await openDb({ url: t.db.url!, migrate: false, postgres: { statementTimeoutMs: 300 } });
    try {
      // The sessions do time out…
      expect(await handle.query(`SELECT pg_sleep(0.6)`).then(() => "done", (e) => String(e.message))).toContain("statement timeout");
      // …but an import whose file arrives slowly (its COPY spans 0.9 s) goes through.
      const csv = focusCsv(Array.from({ length: 4000 }, (_, i) => ({ ResourceId: `r-${i}`, EffectiveCost: 1, BilledCost: 1, ListCost: 1, ContractedCost: 1 })));
      const lines = csv.split("\n");
      async function* slowly() {
        yield lines.slice(0, 2000).join("\n") + "\n";
        await Bun.sleep(900);
        yield lines.slice(2000).join("\n");
      }
      const r = await importFocus(handle.db, t.org.id, slowly());
      expect(r.rows_imported).toBe(4000);
      const [{ n }] = await handle.query<{ n: number }>(`SELECT count(*)::int AS n FROM billing_line_items WHERE org_id = $1`, [t.org.id]);
      expect(n).toBe(4000);
    } finally {
      await handle.close();
    }
  });
});

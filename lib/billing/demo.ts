import { Readable } from "node:stream";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Services } from "../services.ts";
import type { DemoSeeder } from "../demo/seeders.ts";
import { createOrganization } from "../orgs/service.ts";
import { importFocus, importFocusFile } from "./focus.ts";
import { FOCUS_GENERATOR_COLUMNS, generateFocusRows } from "./generator.ts";
import { queryRows } from "./sql.ts";
import { autoCloseOldPeriods, closeBillingPeriod } from "../reports/periods.ts";
import { stringify } from "csv-stringify/sync";

const DEMO_ROWS_PER_PIECE = 200;

/** Where the real FinOps FOCUS sample lives (repo checkout or the shared data folder). */
const SAMPLE_PATHS = [fileURLToPath(new URL("../../data/focus/focus_sample_1000.csv", import.meta.url)), "data/focus/focus_sample_1000.csv"];

/**
 * Demo billing data: three months (daily grain, small enough for a quick first start) of
 * generated aws/azure/gcp data with commitments, the real FinOps FOCUS sample (its Oracle rows
 * violate the spec and are reported, not summed), two child organizations owning some
 * accounts, and the previous month's invoice closed so finalized reports exist.
 */
export const billingDemoSeeder: DemoSeeder = {
  name: "billing",
  async run(s: Services, orgId: string) {
    const [already] = await queryRows(s.db, `SELECT 1 FROM billing_imports WHERE org_id = $1::uuid LIMIT 1`, [orgId]);
    if (already) return;
    const now = s.now();
    const rows = generateFocusRows({ now, months: 3, grain: "daily", accountsPerProvider: 3, resourcesPerAccount: 3, seed: 7 });
    // Generated and written a few hundred rows at a time with a turn of the event loop between:
    // a synchronous source would be drained 16 pieces at once (Readable.from fills its buffer),
    // and the server answered nothing for up to two seconds of a fresh start.
    const csv = Readable.from(
      (async function* () {
        yield stringify([FOCUS_GENERATOR_COLUMNS as unknown as string[]]);
        let buf: (string | null)[][] = [];
        for (const r of rows) {
          buf.push(r);
          if (buf.length >= DEMO_ROWS_PER_PIECE) {
            yield stringify(buf);
            buf = [];
            await new Promise<void>((resolve) => setImmediate(resolve));
          }
        }
        if (buf.length) yield stringify(buf);
      })(),
      { highWaterMark: 1 },
    );
    await importFocus(s.db, orgId, csv, { fileName: "demo-generated.csv", now });
    const sample = SAMPLE_PATHS.find((p) => existsSync(p));
    if (sample) {
      const r = await importFocusFile(s.db, orgId, sample, { skipInvalid: true, now });
      if (r.rows_rejected) s.log.info("demo FOCUS sample: spec-violating rows skipped", { rejected: r.rows_rejected, lines: r.rejects.map((x) => x.line) });
    }
    // Child organizations own some linked accounts (premiums_and_rebates_by_child_org).
    const children = [];
    for (const name of ["Demo Retail (child)", "Demo Logistics (child)"]) children.push(await createOrganization(s.db, { name, parentId: orgId }));
    await queryRows(
      s.db,
      `UPDATE cloud_accounts ca SET child_org_id = CASE WHEN x.rn % 2 = 0 THEN $2::uuid ELSE $3::uuid END
       FROM (SELECT id, row_number() OVER (ORDER BY provider, account_id) AS rn FROM cloud_accounts WHERE org_id = $1::uuid) x
       WHERE ca.id = x.id`,
      [orgId, children[0]!.id, children[1]!.id],
    );
    const prev = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1));
    for (const p of ["aws", "azure", "gcp"] as const) await closeBillingPeriod(s.db, orgId, p, prev.toISOString().slice(0, 7), now);
    await autoCloseOldPeriods(s.db, now);
    // Frozen by the freeze-periods job (first tick within 10 minutes); until then the closed
    // months read the same rows live, so start-up stays quick.
  },
};

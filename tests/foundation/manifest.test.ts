import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { renderManifest } from "../../scripts/gen-routes.ts";

test("routes/manifest.gen.ts matches the routes/ folder tree (run `npm run routes`)", () => {
  const onDisk = readFileSync(join(import.meta.dir, "../../routes/manifest.gen.ts"), "utf8");
  expect(onDisk).toBe(renderManifest());
});

test("the embedded migrations match drizzle/*.sql (run `npm run db:generate`)", async () => {
  const { migrations } = await import("../../drizzle/migrations.gen.ts");
  const journal = JSON.parse(readFileSync(join(import.meta.dir, "../../drizzle/meta/_journal.json"), "utf8"));
  expect(migrations.map((m) => m.tag)).toEqual(journal.entries.map((e: any) => e.tag));
  for (const m of migrations) {
    const sql = readFileSync(join(import.meta.dir, `../../drizzle/${m.tag}.sql`), "utf8");
    expect(m.statements).toEqual(sql.split("--> statement-breakpoint").map((s) => s.trim()).filter(Boolean));
  }
});

// In-memory databases are copies of one migrated image (lib/db/pglite.ts): each starts migrated
// and empty, and what one writes no other sees.
import { expect, test } from "bun:test";
import { openDb } from "../../lib/db/index.ts";
import { migrations } from "../../drizzle/migrations.gen.ts";

test("each in-memory database starts migrated and empty, and is its own: a write in one is not in another", async () => {
  const a = await openDb({ migrate: true });
  const b = await openDb({ migrate: true });
  try {
    for (const h of [a, b]) {
      expect((await h.query<{ tag: string }>(`SELECT tag FROM commitops_migrations ORDER BY tag`)).map((r) => r.tag)).toEqual(migrations.map((m) => m.tag).sort());
      expect((await h.query<{ n: number }>(`SELECT count(*)::int AS n FROM organizations`))[0]!.n).toBe(0);
    }
    await a.query(`INSERT INTO organizations (id, name) VALUES ('00000000-0000-4000-8000-000000000001', 'Only in a')`);
    expect((await a.query<{ n: number }>(`SELECT count(*)::int AS n FROM organizations`))[0]!.n).toBe(1);
    expect((await b.query<{ n: number }>(`SELECT count(*)::int AS n FROM organizations`))[0]!.n).toBe(0);
    const c = await openDb({ migrate: true });
    try {
      expect((await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM organizations`))[0]!.n).toBe(0);
    } finally {
      await c.close();
    }
  } finally {
    await a.close();
    await b.close();
  }
}, 60_000);

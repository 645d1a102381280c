import { eq } from "drizzle-orm";
import { organizations } from "../db/schema/index.ts";
import { createApiKey } from "../auth/apiKeys.ts";
import type { Services } from "../services.ts";
import { demoSeeders } from "./seeders.ts";

export interface DemoSeedResult {
  orgId: string;
  created: boolean;
  /** Present only when the org was created now: the key is shown once. */
  apiKey?: string;
}

/**
 * Creates the demo organization once (idempotent: it is found by its `is_demo` flag). Its data
 * comes from `seedDemoData`, run after (the server runs it in the background so it answers at
 * once).
 */
export async function seedDemoOrganization(s: Services): Promise<DemoSeedResult> {
  // Every start after the first: one read (the server runs this before it listens).
  const [found] = await s.db.select({ id: organizations.id }).from(organizations).where(eq(organizations.isDemo, true)).limit(1);
  if (found) return { orgId: found.id, created: false };
  const result = await s.db.transaction(async (tx) => {
    await tx.execute(rawLock());
    const [existing] = await tx.select().from(organizations).where(eq(organizations.isDemo, true)).limit(1);
    if (existing) return { orgId: existing.id, created: false } as DemoSeedResult;
    const [org] = await tx.insert(organizations).values({ name: "Demo Org", isDemo: true }).returning();
    const key = await createApiKey(tx, { orgId: org!.id, name: "demo admin key" });
    return { orgId: org!.id, created: true, apiKey: key.key };
  });
  return result;
}

/** Runs every feature's demo seeder (lib/demo/seeders.ts) in order; each is idempotent. */
export async function seedDemoData(s: Services, orgId: string): Promise<void> {
  for (const seeder of demoSeeders) {
    const started = Date.now();
    try {
      await seeder.run(s, orgId);
      s.log.info("demo data seeded", { seeder: seeder.name, duration_ms: Date.now() - started });
    } catch (e) {
      s.log.error("demo seeder failed", { seeder: seeder.name, error: e instanceof Error ? e.message : String(e) });
    }
  }
}

/** The demo organization and all its data. */
export async function seedDemo(s: Services): Promise<DemoSeedResult> {
  const result = await seedDemoOrganization(s);
  await seedDemoData(s, result.orgId);
  return result;
}

import { sql } from "drizzle-orm";
function rawLock() {
  return sql`SELECT pg_advisory_xact_lock(727002)`;
}

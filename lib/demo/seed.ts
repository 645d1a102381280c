import { eq, inArray } from "drizzle-orm";
import { organizations, users } from "../db/schema/index.ts";
import type { DbOrTx } from "../db/index.ts";
import type { Role } from "../auth/scopes.ts";
import { newSecret } from "../auth/tokens.ts";
import { addMember, createUser } from "../orgs/service.ts";
import { createApiKey } from "../auth/apiKeys.ts";
import type { Services } from "../services.ts";
import { demoSeeders } from "./seeders.ts";

export interface DemoSeedResult {
  orgId: string;
  created: boolean;
  /** Present only when the org was created now: the key is shown once. */
  apiKey?: string;
  /** Present only when the demo users were created now: their shared password is shown once. */
  signIn?: { emails: Record<Role, string>; password: string };
}

/** The demo organization's people, one per role, for the console (a random password, printed once). */
export const DEMO_USERS: Record<Role, string> = { admin: "admin@demo.commitops.dev", member: "member@demo.commitops.dev", viewer: "viewer@demo.commitops.dev" };

async function createDemoUsers(tx: DbOrTx, orgId: string): Promise<DemoSeedResult["signIn"]> {
  const existing = await tx.select({ id: users.id }).from(users).where(inArray(users.email, Object.values(DEMO_USERS)));
  if (existing.length > 0) return undefined;
  const password = newSecret("demo", 12).replace(/^demo_/, "");
  for (const [role, email] of Object.entries(DEMO_USERS) as [Role, string][]) {
    const u = await createUser(tx, { email, name: `Demo ${role}`, password, emailVerified: true });
    await addMember(tx, { orgId, userId: u.id, role });
  }
  return { emails: DEMO_USERS, password };
}

/**
 * Creates the demo organization once (idempotent: it is found by its `is_demo` flag). Its data
 * comes from `seedDemoData`, run after (the server runs it in the background so it answers at
 * once).
 */
export async function seedDemoOrganization(s: Services): Promise<DemoSeedResult> {
  // Every start after the first: one read (the server runs this before it listens).
  const [found] = await s.db.select({ id: organizations.id }).from(organizations).where(eq(organizations.isDemo, true)).limit(1);
  if (found) {
    // A data directory from before the console had no demo users: they are added once.
    const signIn = await s.db.transaction(async (tx) => {
      await tx.execute(rawLock());
      return createDemoUsers(tx, found.id);
    });
    return { orgId: found.id, created: false, ...(signIn ? { signIn } : {}) };
  }
  const result = await s.db.transaction(async (tx) => {
    await tx.execute(rawLock());
    const [existing] = await tx.select().from(organizations).where(eq(organizations.isDemo, true)).limit(1);
    if (existing) return { orgId: existing.id, created: false } as DemoSeedResult;
    const [org] = await tx.insert(organizations).values({ name: "Demo Org", isDemo: true }).returning();
    const key = await createApiKey(tx, { orgId: org!.id, name: "demo admin key" });
    const signIn = await createDemoUsers(tx, org!.id);
    return { orgId: org!.id, created: true, apiKey: key.key, ...(signIn ? { signIn } : {}) };
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

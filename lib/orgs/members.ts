import { and, asc, count, eq } from "drizzle-orm";
import { memberships, users } from "../db/schema/index.ts";
import type { Db, DbOrTx } from "../db/index.ts";
import { ConflictError, NotFoundError } from "../errors.ts";
import type { Role } from "../auth/scopes.ts";
import type { Page, PageRequest } from "../http/paging.ts";
import { createUser, findUserByEmail } from "./service.ts";

/** The membership roles, least to most powerful (DESIGN §3). */
export const MEMBER_ROLES = ["viewer", "member", "admin"] as const satisfies readonly Role[];

export interface MemberView {
  user_id: string;
  email: string;
  name: string | null;
  role: Role;
  created_at: string;
}

const memberColumns = {
  userId: memberships.userId,
  email: users.email,
  name: users.name,
  role: memberships.role,
  createdAt: memberships.createdAt,
};

function view(r: { userId: string; email: string; name: string | null; role: Role; createdAt: Date }): MemberView {
  return { user_id: r.userId, email: r.email, name: r.name, role: r.role, created_at: r.createdAt.toISOString() };
}

const ofOrg = (orgId: string, userId: string) => and(eq(memberships.orgId, orgId), eq(memberships.userId, userId));

/** The organization's members, oldest membership first (a page of them, and how many there are). */
export async function pageMembers(db: DbOrTx, orgId: string, p: PageRequest): Promise<Page<MemberView>> {
  const [rows, [total]] = await Promise.all([
    db
      .select(memberColumns)
      .from(memberships)
      .innerJoin(users, eq(users.id, memberships.userId))
      .where(eq(memberships.orgId, orgId))
      .orderBy(asc(memberships.createdAt), asc(memberships.userId))
      .limit(p.limit)
      .offset(p.offset),
    db.select({ n: count() }).from(memberships).where(eq(memberships.orgId, orgId)),
  ]);
  return { items: rows.map(view), total: total?.n ?? 0 };
}

export async function getMember(db: DbOrTx, orgId: string, userId: string): Promise<MemberView> {
  const [r] = await db.select(memberColumns).from(memberships).innerJoin(users, eq(users.id, memberships.userId)).where(ofOrg(orgId, userId)).limit(1);
  if (!r) throw new NotFoundError("No such member of this organization.");
  return view(r);
}

/**
 * Adds a user to the organization by email. An unknown email becomes a new user without a
 * password (as `user create` makes users, minus the password): they sign in by single sign-on
 * (the upstream login links accounts by verified email and never creates them) or once an
 * administrator sets a password. 409 `already_member` when the user is already a member (any
 * role: changing a role is PATCH); concurrent adds of the same user insert one row.
 */
export async function addMemberByEmail(db: Db, orgId: string, input: { email: string; role: Role }): Promise<{ member: MemberView; userCreated: boolean }> {
  let user = await findUserByEmail(db, input.email);
  let userCreated = false;
  if (!user) {
    try {
      await createUser(db, { email: input.email }); // validates the address (422)
      userCreated = true;
    } catch (e) {
      // Created by a concurrent request between the lookup and the insert: use theirs.
      if (!(e instanceof ConflictError && e.code === "user_exists")) throw e;
    }
    user = await findUserByEmail(db, input.email);
    if (!user) throw new NotFoundError("No such user.");
  }
  const [added] = await db
    .insert(memberships)
    .values({ orgId, userId: user.id, role: input.role })
    .onConflictDoNothing({ target: [memberships.orgId, memberships.userId] })
    .returning({ createdAt: memberships.createdAt });
  if (!added) throw new ConflictError(`${user.email} is already a member of this organization (change the role with PATCH /members/${user.id}).`, "already_member");
  return { member: view({ userId: user.id, email: user.email, name: user.name, role: input.role, createdAt: added.createdAt }), userCreated };
}

/**
 * Locks every membership row of the organization (in user id order, so two of these never
 * deadlock) and returns the roles. Every change that could leave the org without an admin runs
 * after it in the same transaction: two concurrent demotions of the last two admins serialize
 * here, and the second one sees (PostgreSQL re-reads a row it waited for) that only one is left.
 */
async function lockMembers(tx: DbOrTx, orgId: string) {
  return tx
    .select({ userId: memberships.userId, role: memberships.role })
    .from(memberships)
    .where(eq(memberships.orgId, orgId))
    .orderBy(asc(memberships.userId))
    .for("update");
}

function refuseLastAdmin(rows: { userId: string; role: Role }[], userId: string, what: string): void {
  const admins = rows.filter((r) => r.role === "admin");
  if (admins.length === 1 && admins[0]!.userId === userId) {
    throw new ConflictError(`The last admin of an organization cannot be ${what}; make another member admin first.`, "last_admin");
  }
}

/** Changes a member's role; the last admin cannot be demoted (409 `last_admin`). */
export async function changeMemberRole(db: Db, orgId: string, userId: string, role: Role): Promise<MemberView> {
  return db.transaction(async (tx) => {
    const rows = await lockMembers(tx, orgId);
    const current = rows.find((r) => r.userId === userId);
    if (!current) throw new NotFoundError("No such member of this organization.");
    if (current.role === "admin" && role !== "admin") refuseLastAdmin(rows, userId, "demoted");
    if (current.role !== role) await tx.update(memberships).set({ role }).where(ofOrg(orgId, userId));
    return getMember(tx, orgId, userId);
  });
}

/**
 * Removes a member; the last admin cannot be removed (409 `last_admin`). The user's OAuth tokens
 * and API keys for this org stop working on their next request: both resolvers read the
 * membership on every request (lib/oauth/resolver.ts, lib/auth/apiKeys.ts), and a refresh is
 * refused without it (lib/oauth/grants.ts).
 */
export async function removeMember(db: Db, orgId: string, userId: string): Promise<void> {
  await db.transaction(async (tx) => {
    const rows = await lockMembers(tx, orgId);
    const current = rows.find((r) => r.userId === userId);
    if (!current) throw new NotFoundError("No such member of this organization.");
    if (current.role === "admin") refuseLastAdmin(rows, userId, "removed");
    await tx.delete(memberships).where(ofOrg(orgId, userId));
  });
}

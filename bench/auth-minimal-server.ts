// The floor of bench/auth.ts: a minimal Bun.serve server doing the same work as the app's
// authenticated `GET /beta/v1/org/{id}` — bearer token → native SHA-256 → the same API-key lookup
// by hash, the org read by id (both prepared statements), the same JSON — and nothing else (no
// router, no logging, no rate limit, no schema check, no connection guard).
// Env: PORT, BENCH_DB_URL (postgres://…: the database the app already set up; empty: an
// in-memory PGlite set up here), ORG_ID, KEY and CREATED_AT (the app's org and key; recreated in
// PGlite).
// Prints "READY" when up.
import { createHash } from "node:crypto";
import postgres from "postgres";
import { PGlite } from "@electric-sql/pglite";
import { drizzle } from "drizzle-orm/pglite";
import * as schema from "../lib/db/schema/index.ts";
import { migrate } from "../lib/db/migrate.ts";

const orgId = process.env.ORG_ID!;
const key = process.env.KEY!;
const hash = (s: string) => createHash("sha256").update(s).digest("hex");

const KEY_SQL = `SELECT k.id, k.org_id, k.scopes, k.created_by, k.revoked_at, m.role AS creator_role
  FROM api_keys k LEFT JOIN memberships m ON m.org_id = k.org_id AND m.user_id = k.created_by
  WHERE k.key_hash = $1 LIMIT 1`;
const ORG_SQL = `SELECT id, name, parent_id, created_at FROM organizations WHERE id = $1`;

let query: (text: string, params: unknown[]) => Promise<any[]>;
if (process.env.BENCH_DB_URL) {
  const sql = postgres(process.env.BENCH_DB_URL, { max: 10, onnotice: () => {} });
  query = (text, params) => sql.unsafe(text, params as any[], { prepare: true }) as unknown as Promise<any[]>;
} else {
  const pg = await PGlite.create();
  await migrate({ db: drizzle(pg, { schema }) } as any);
  await pg.query(`INSERT INTO organizations (id, name, created_at) VALUES ($1, 'bench', $2)`, [orgId, process.env.CREATED_AT]);
  await pg.query(`INSERT INTO api_keys (org_id, name, prefix, key_hash, scopes) VALUES ($1, 'bench', $2, $3, $4)`, [orgId, key.slice(0, 10), hash(key), ["reports:read"]]);
  // Prepared too, as PGlite allows: PREPARE once, EXECUTE with the (hex / uuid) values inlined.
  const names = new Map<string, string>();
  for (const text of [KEY_SQL, ORG_SQL]) {
    names.set(text, `s${names.size}`);
    await pg.exec(`PREPARE s${names.size - 1} AS ${text}`);
  }
  query = async (text, params) => (await pg.query(`EXECUTE ${names.get(text)}(${params.map((p) => `'${String(p).replace(/'/g, "''")}'`).join(", ")})`)).rows;
}

const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

Bun.serve({
  port: Number(process.env.PORT),
  hostname: "127.0.0.1",
  development: false,
  async fetch(req) {
    const url = req.url;
    const m = /\/beta\/v1\/org\/([^/?]+)$/.exec(url.slice(0, url.indexOf("?") >>> 0));
    if (!m) return json(404, { error: "Not Found" });
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.get("authorization") ?? "");
    if (!bearer) return json(401, { error: "Unauthorized" });
    const [k] = await query(KEY_SQL, [hash(bearer[1]!)]);
    if (!k || k.revoked_at) return json(401, { error: "Unauthorized" });
    if (k.org_id !== m[1]!.toLowerCase()) return json(403, { error: "Forbidden" });
    const [o] = await query(ORG_SQL, [k.org_id]);
    if (!o) return json(404, { error: "Not Found" });
    const created = o.created_at instanceof Date ? o.created_at : new Date(o.created_at);
    return json(200, { id: o.id, name: o.name, parent_id: o.parent_id, created_at: created.toISOString() });
  },
});
console.log("READY");

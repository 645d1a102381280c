import postgres from "postgres";
import { drizzle } from "drizzle-orm/postgres-js";
import * as schema from "./schema/index.ts";
import type { DatabaseHandle, Db } from "./types.ts";

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "postgres://(unparsable url)";
  }
}

/** Opens a pooled postgres.js connection to a PostgreSQL server. */
export async function openPostgres(url: string, opts: { max?: number } = {}): Promise<DatabaseHandle> {
  const client = postgres(url, {
    max: opts.max ?? Number(process.env.DATABASE_POOL_SIZE ?? 10),
    onnotice: () => {},
    connect_timeout: 5,
    idle_timeout: 30,
  });
  const db = drizzle(client, { schema }) as unknown as Db;
  return {
    db,
    driver: "postgres",
    description: redact(url),
    async query<T>(text: string, params: unknown[] = []) {
      return (await client.unsafe(text, params as any[])) as unknown as T[];
    },
    async stream<T>(text: string, params: unknown[], onBatch: (rows: T[]) => Promise<void> | void, batchSize = 5000) {
      await client.begin("read only", async (tx) => {
        for await (const rows of tx.unsafe(text, params as any[]).cursor(batchSize)) {
          await onBatch(rows as unknown as T[]);
        }
      });
    },
    async close() {
      await client.end({ timeout: 5 });
    },
  };
}

import type postgres from "postgres";

/**
 * What a serving replica's long report does to a table: an open transaction on `sql` that has
 * read `table` (ACCESS SHARE, held until the transaction ends). Resolves once the lock is held;
 * `release()` ends the transaction.
 */
export async function holdTable(sql: postgres.Sql, table: string): Promise<{ release(): Promise<void> }> {
  let release!: () => void;
  let holding!: () => void;
  const isHolding = new Promise<void>((r) => (holding = r));
  const transaction = sql.begin(async (tx) => {
    await tx.unsafe(`SELECT count(*) FROM ${table}`);
    holding();
    await new Promise<void>((r) => (release = r));
  });
  await Promise.race([isHolding, transaction]);
  return {
    async release() {
      release();
      await transaction;
    },
  };
}

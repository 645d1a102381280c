// npm run migrate: apply pending migrations (under the advisory lock) and exit.
import { loadConfig } from "../lib/config.ts";
import { openDb } from "../lib/db/index.ts";
import { migrate, MigrationLockTimeoutError } from "../lib/db/migrate.ts";

const config = loadConfig();
const handle = await openDb({ url: config.databaseUrl, dataDir: config.dataDir, migrate: false });
try {
  const applied = await migrate(handle, { lockTimeoutMs: config.migrationLockTimeoutMs });
  console.log(applied.length ? `applied: ${applied.join(", ")}` : "database is up to date");
} catch (e) {
  if (!(e instanceof MigrationLockTimeoutError)) throw e;
  console.error(e.message);
  process.exitCode = 1;
} finally {
  await handle.close();
}

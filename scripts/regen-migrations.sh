#!/usr/bin/env bash
# Regenerates the migration from lib/db/schema. Until the first release the schema is one
# baseline migration (0000); after a release, drop the `rm` so drizzle-kit appends a new one.
set -euo pipefail
cd "$(dirname "$0")/.."
exec 9>/tmp/commitops-migrations.lock
flock 9
rm -rf drizzle/*.sql drizzle/meta
npx drizzle-kit generate --name baseline >/dev/null
npx bun scripts/gen-migrations-module.ts

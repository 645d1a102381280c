// Every table of the service. One file per domain; add an export line for a new file, then
// run `npm run db:generate` to regenerate the migration.
export * from "./core.ts";
export * from "./billing.ts";
export * from "./catalog.ts";
export * from "./estimates.ts";
export * from "./oauth.ts";
export * from "./planning.ts";
export * from "./support.ts";
export * from "./reports.ts";
export * from "./connections.ts";
export * from "./purchasing.ts";
export * from "./idempotency.ts";
export * from "./console.ts";
export * from "./events.ts";
export * from "./eventScans.ts";
export * from "./budgets.ts";
export * from "./notifications.ts";
export * from "./summaries.ts";

import { parseLogLevel, type LogLevel } from "./log.ts";

/** Every setting of the service, read once from the environment (docs/OPERATIONS.md lists them). */
export interface Config {
  port: number;
  host: string;
  publicUrl: string;
  databaseUrl?: string;
  /** postgres://… of a read replica of DATABASE_URL for report reads (DATABASE_READ_URL; refused with PGlite). */
  databaseReadUrl?: string;
  dataDir: string;
  logLevel: LogLevel;
  /** Run the cron jobs in this process (every replica may: jobs claim their work in the database). */
  jobsEnabled: boolean;
  /** On SIGTERM/SIGINT: how long requests, downloads and job runs in flight may take to finish before they are cut and the process exits (SHUTDOWN_GRACE_SECONDS, default 25). */
  shutdownGraceSeconds: number;
  /** SO_REUSEPORT on the listening socket (REUSE_PORT, off): only for several processes meant to share a port. */
  reusePort: boolean;
  /** How long one statement of a migration waits for a table lock, in ms (MIGRATION_LOCK_TIMEOUT_SECONDS, default 5 s; 0 = no limit). */
  migrationLockTimeoutMs: number;
  supportDailyCap: number;
  supportFilingEnabled: boolean;
  /** Deprecated (SUPPORT_WEBHOOK_URL): a process-wide webhook endpoint receiving every org's support.ticket_created in the old body (lib/webhooks/legacy.ts). */
  supportWebhookUrl?: string;
  /** Mail server for notification emails (SMTP_URL: smtp://user:pass@host:587, smtps://… for implicit TLS); unset: no email is sent (lib/notifications/mailer.ts). */
  smtpUrl?: string;
  /** Sender of notification emails (SMTP_FROM, default `commitops <commitops@{PUBLIC_URL's host}>`). */
  smtpFrom: string;
  /** Seed the demo organization on start. */
  seedDemo: boolean;
  /** Browser origins allowed to call /mcp besides the public URL's own (MCP_ALLOWED_ORIGINS, comma-separated). */
  mcpAllowedOrigins: string[];
  /** Beta API requests per credential per minute and process (API_RATE_LIMIT_PER_MINUTE; 0 = off). */
  apiRateLimitPerMinute: number;
  /** Bearer token a scraper sends for /metrics on the service's port (METRICS_TOKEN); unset: not served there. */
  metricsToken?: string;
  /** A second port, bound to 127.0.0.1, serving only /metrics without a token (METRICS_PORT); unset: none. */
  metricsPort?: number;
  /** The OpenTelemetry collector's OTLP/HTTP base URL (OTEL_EXPORTER_OTLP_ENDPOINT); unset: no traces. */
  otelEndpoint?: string;
  /** The traces' service.name (OTEL_SERVICE_NAME, default commitops). */
  otelServiceName: string;
  /** Largest request body in bytes (MAX_BODY_BYTES, default 1 MiB); larger → 413. */
  maxBodyBytes: number;
  /** OAuth: access-token lifetime in seconds (OAUTH_ACCESS_TOKEN_TTL, default 3600). */
  oauthAccessTokenTtl: number;
  /** OAuth: refresh-token lifetime in seconds (OAUTH_REFRESH_TOKEN_TTL, default 30 days). */
  oauthRefreshTokenTtl: number;
  /** OAuth: authorization-code lifetime in seconds (OAUTH_CODE_TTL, default 60). */
  oauthCodeTtl: number;
  /** OAuth: browser login session lifetime in seconds (OAUTH_SESSION_TTL, default 12 h). */
  oauthSessionTtl: number;
  /** Trust X-Forwarded-For for the client IP (login throttling) — only behind a proxy that sets it (TRUST_PROXY). */
  trustProxy: boolean;
  /** Upstream OpenID Connect sign-in (all three set → "Sign in with …" on the login page). */
  oidcIssuer?: string;
  oidcClientId?: string;
  oidcClientSecret?: string;
  /** Label of the upstream provider's button (OIDC_NAME, default "single sign-on"). */
  oidcName: string;
  /** Report downloads: abort one whose client has not read for this many seconds (DOWNLOAD_IDLE_TIMEOUT_SECONDS, default 30; 0 = never). */
  downloadIdleTimeoutSeconds: number;
  /** Report downloads streaming from the database at once per process (DOWNLOAD_CONCURRENCY; unset = pool size − 2, at least 1). */
  downloadConcurrency?: number;
  /** How long a download waits for a free slot before answering 503 (DOWNLOAD_QUEUE_TIMEOUT_SECONDS, default 10). */
  downloadQueueTimeoutSeconds: number;
  /** A report query that has not produced its first rows after this many seconds is cancelled: 503 `report_timeout` (REPORT_QUERY_TIMEOUT_SECONDS, default 60; 0 = no limit; PostgreSQL only). */
  reportQueryTimeoutSeconds: number;
  /** Key that encrypts connection secrets at rest (COMMITOPS_SECRET_KEY: 32 bytes as base64 or hex); connections with secrets are refused without it. */
  secretKey?: string;
  /** Earlier keys still accepted for decryption until `secrets rotate` has run (COMMITOPS_SECRET_KEY_PREVIOUS, comma-separated). */
  previousSecretKeys: string[];
  /** Billing connections may point at loopback, private and link-local addresses (CONNECTIONS_ALLOW_PRIVATE_ENDPOINTS; emulators, on-premises S3). Off by default: an org admin must not reach the service's own network. */
  connectionsAllowPrivateEndpoints: boolean;
  /** Minutes between two billing syncs of a connection (BILLING_SYNC_INTERVAL_MINUTES, default 240). */
  billingSyncIntervalMinutes: number;
  /** An enabled billing connection that brought no new data for this many days emits billing_sync.stale, once per episode (BILLING_STALE_DAYS, default 3). */
  billingStaleDays: number;
  /** Days a purchase waits for approval before it lapses and its plan is regenerated (PURCHASE_APPROVAL_TTL_DAYS, default 7). */
  purchaseApprovalTtlDays: number;
  /** Deprecated (PURCHASE_WEBHOOK_URL): a process-wide webhook endpoint receiving every org's purchase.* events in the old body (lib/webhooks/legacy.ts). */
  purchaseWebhookUrl?: string;
  /** Hours between inventory listings of a purchasing connection (PURCHASING_INVENTORY_INTERVAL_HOURS, default 6). */
  purchasingInventoryIntervalHours: number;
  /** How long a worker holds a purchase item while it calls the provider; a crashed worker's item is recovered after it (PURCHASE_LEASE_SECONDS, default 600). */
  purchaseLeaseSeconds: number;
  /** A Pricing whose prices were last confirmed current more than this many days ago says `stale: true` (PRICE_STALE_DAYS, default 35). */
  priceStaleDays: number;
  /** Run the daily catalog refresh job (CATALOG_REFRESH_ENABLED; default on with PostgreSQL, off on the embedded PGlite, where an apply holds the only connection; it needs the jobs and network access to the price APIs). */
  catalogRefreshEnabled: boolean;
  /** When replicas wake to claim the day's refresh, cron in UTC (CATALOG_REFRESH_SCHEDULE, default minute 17 of every hour: the first wake of a UTC day refreshes, once across replicas). */
  catalogRefreshSchedule: string;
  /** Price API base URLs (AWS_PRICING_BASE_URL, AZURE_PRICES_BASE_URL, GCP_BILLING_CATALOG_BASE_URL). */
  awsPricingBaseUrl: string;
  azurePricesBaseUrl: string;
  gcpBillingCatalogBaseUrl: string;
  /** API key for the Cloud Billing Catalog API (GCP_PRICING_API_KEY); GCP prices are not refreshed without one. */
  gcpPricingApiKey?: string;
  /** Regions refreshed per provider (CATALOG_REFRESH_AWS_REGIONS, …_AZURE_REGIONS, …_GCP_REGIONS: comma-separated or `all`; default: the bundled snapshot's regions). */
  catalogRefreshAwsRegions?: string[] | "all";
  catalogRefreshAzureRegions?: string[] | "all";
  catalogRefreshGcpRegions?: string[] | "all";
}

function regionList(v: string | undefined): string[] | "all" | undefined {
  if (v === undefined || v.trim() === "") return undefined;
  if (v.trim().toLowerCase() === "all") return "all";
  return v.split(",").map((r) => r.trim()).filter(Boolean);
}

function hostOf(url: string): string {
  try {
    return new URL(url).hostname || "localhost";
  } catch {
    return "localhost";
  }
}

function bool(v: string | undefined, dflt: boolean): boolean {
  if (v === undefined || v === "") return dflt;
  return !/^(0|false|no|off)$/i.test(v);
}

/** A setting that must be a whole number ≥ 0 (unset or anything else: the default). */
export function nonNegativeInt(v: string | undefined, dflt: number): number {
  const n = Number(v);
  return v !== undefined && v !== "" && Number.isInteger(n) && n >= 0 ? n : dflt;
}

/**
 * COMMITOPS_REPORT_ROWS_MIN_LINE_ITEMS (docs/OPERATIONS.md): a billing month of at least this many
 * raw rows has its daily reports' rows stored by its import. Read when an import stores them, so
 * the CLI, jobs and the server all follow the environment they run in.
 */
export function reportRowsMinLineItems(env: Record<string, string | undefined> = process.env): number {
  return nonNegativeInt(env.COMMITOPS_REPORT_ROWS_MIN_LINE_ITEMS, 100_000);
}

/** A setting that must be a whole number ≥ 1 (unset or anything else: the default). */
export function positiveInt(v: string | undefined, dflt: number): number {
  const n = nonNegativeInt(v, dflt);
  return n > 0 ? n : dflt;
}

/** How long a migration's statement waits for a table lock unless MIGRATION_LOCK_TIMEOUT_SECONDS says otherwise. */
export const DEFAULT_MIGRATION_LOCK_TIMEOUT_MS = 5000;

/**
 * MIGRATION_LOCK_TIMEOUT_SECONDS in milliseconds: seconds ≥ 0, fractions allowed, at most an hour
 * (0 = wait without limit); unset or anything else: 5 s (docs/OPERATIONS.md, "Upgrades").
 */
function migrationLockTimeoutMs(v: string | undefined): number {
  const n = Number(v);
  return v !== undefined && v.trim() !== "" && Number.isFinite(n) && n >= 0 && n <= 3600 ? Math.round(n * 1000) : DEFAULT_MIGRATION_LOCK_TIMEOUT_MS;
}

/** `n` when it is at most `max` (a timer's range), else the default. */
function atMost(n: number, max: number, dflt: number): number {
  return n <= max ? n : dflt;
}

export function loadConfig(env: Record<string, string | undefined> = process.env, overrides: Partial<Config> = {}): Config {
  const port = Number(env.PORT ?? 3000);
  return {
    port,
    host: env.HOST ?? "0.0.0.0",
    publicUrl: (env.PUBLIC_URL ?? `http://localhost:${port}`).replace(/\/+$/, ""),
    databaseUrl: env.DATABASE_URL || undefined,
    databaseReadUrl: env.DATABASE_READ_URL || undefined,
    dataDir: env.DATA_DIR ?? "./.data",
    logLevel: parseLogLevel(env.LOG_LEVEL),
    jobsEnabled: bool(env.JOBS_ENABLED, true),
    reusePort: bool(env.REUSE_PORT, false),
    migrationLockTimeoutMs: migrationLockTimeoutMs(env.MIGRATION_LOCK_TIMEOUT_SECONDS),
    shutdownGraceSeconds: atMost(nonNegativeInt(env.SHUTDOWN_GRACE_SECONDS, 25), 3600, 25),
    supportDailyCap: Number(env.SUPPORT_DAILY_CAP ?? 10),
    supportFilingEnabled: bool(env.SUPPORT_FILING_ENABLED, true),
    supportWebhookUrl: env.SUPPORT_WEBHOOK_URL || undefined,
    smtpUrl: env.SMTP_URL || undefined,
    smtpFrom: env.SMTP_FROM || `commitops <commitops@${hostOf(env.PUBLIC_URL ?? `http://localhost:${port}`)}>`,
    seedDemo: bool(env.SEED_DEMO, true),
    mcpAllowedOrigins: (env.MCP_ALLOWED_ORIGINS ?? "").split(",").map((o) => o.trim().replace(/\/+$/, "")).filter(Boolean),
    apiRateLimitPerMinute: Number(env.API_RATE_LIMIT_PER_MINUTE ?? 1200),
    metricsToken: env.METRICS_TOKEN || undefined,
    metricsPort: positiveInt(env.METRICS_PORT, 0) || undefined,
    otelEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT || undefined,
    otelServiceName: env.OTEL_SERVICE_NAME || "commitops",
    maxBodyBytes: positiveInt(env.MAX_BODY_BYTES, 1024 * 1024),
    oauthAccessTokenTtl: Number(env.OAUTH_ACCESS_TOKEN_TTL ?? 3600),
    oauthRefreshTokenTtl: Number(env.OAUTH_REFRESH_TOKEN_TTL ?? 30 * 86400),
    oauthCodeTtl: Number(env.OAUTH_CODE_TTL ?? 60),
    oauthSessionTtl: Number(env.OAUTH_SESSION_TTL ?? 12 * 3600),
    trustProxy: bool(env.TRUST_PROXY, false),
    oidcIssuer: env.OIDC_ISSUER?.replace(/\/+$/, "") || undefined,
    oidcClientId: env.OIDC_CLIENT_ID || undefined,
    oidcClientSecret: env.OIDC_CLIENT_SECRET || undefined,
    oidcName: env.OIDC_NAME || "single sign-on",
    downloadIdleTimeoutSeconds: nonNegativeInt(env.DOWNLOAD_IDLE_TIMEOUT_SECONDS, 30),
    downloadConcurrency: positiveInt(env.DOWNLOAD_CONCURRENCY, 0) || undefined,
    downloadQueueTimeoutSeconds: nonNegativeInt(env.DOWNLOAD_QUEUE_TIMEOUT_SECONDS, 10),
    reportQueryTimeoutSeconds: nonNegativeInt(env.REPORT_QUERY_TIMEOUT_SECONDS, 60),
    secretKey: env.COMMITOPS_SECRET_KEY || undefined,
    previousSecretKeys: (env.COMMITOPS_SECRET_KEY_PREVIOUS ?? "").split(",").map((k) => k.trim()).filter(Boolean),
    connectionsAllowPrivateEndpoints: bool(env.CONNECTIONS_ALLOW_PRIVATE_ENDPOINTS, false),
    billingSyncIntervalMinutes: positiveInt(env.BILLING_SYNC_INTERVAL_MINUTES, 240),
    billingStaleDays: positiveInt(env.BILLING_STALE_DAYS, 3),
    purchaseApprovalTtlDays: positiveInt(env.PURCHASE_APPROVAL_TTL_DAYS, 7),
    purchaseWebhookUrl: env.PURCHASE_WEBHOOK_URL || undefined,
    purchasingInventoryIntervalHours: positiveInt(env.PURCHASING_INVENTORY_INTERVAL_HOURS, 6),
    purchaseLeaseSeconds: positiveInt(env.PURCHASE_LEASE_SECONDS, 600),
    priceStaleDays: positiveInt(env.PRICE_STALE_DAYS, 35),
    catalogRefreshEnabled: bool(env.CATALOG_REFRESH_ENABLED, !!env.DATABASE_URL),
    catalogRefreshSchedule: env.CATALOG_REFRESH_SCHEDULE || "0 17 * * * *",
    awsPricingBaseUrl: (env.AWS_PRICING_BASE_URL || "https://pricing.us-east-1.amazonaws.com").replace(/\/+$/, ""),
    azurePricesBaseUrl: (env.AZURE_PRICES_BASE_URL || "https://prices.azure.com").replace(/\/+$/, ""),
    gcpBillingCatalogBaseUrl: (env.GCP_BILLING_CATALOG_BASE_URL || "https://cloudbilling.googleapis.com").replace(/\/+$/, ""),
    gcpPricingApiKey: env.GCP_PRICING_API_KEY || undefined,
    catalogRefreshAwsRegions: regionList(env.CATALOG_REFRESH_AWS_REGIONS),
    catalogRefreshAzureRegions: regionList(env.CATALOG_REFRESH_AZURE_REGIONS),
    catalogRefreshGcpRegions: regionList(env.CATALOG_REFRESH_GCP_REGIONS),
    ...overrides,
  };
}

/** Every setting of the service, read once from the environment (docs/OPERATIONS.md lists them). */
export interface Config {
  port: number;
  host: string;
  publicUrl: string;
  databaseUrl?: string;
  dataDir: string;
  logLevel: "debug" | "info" | "warn" | "error" | "silent";
  /** Run the cron jobs in this process (every replica may: jobs claim their work in the database). */
  jobsEnabled: boolean;
  supportDailyCap: number;
  supportFilingEnabled: boolean;
  supportWebhookUrl?: string;
  /** Seed the demo organization on start. */
  seedDemo: boolean;
}

function bool(v: string | undefined, dflt: boolean): boolean {
  if (v === undefined || v === "") return dflt;
  return !/^(0|false|no|off)$/i.test(v);
}

export function loadConfig(env: Record<string, string | undefined> = process.env, overrides: Partial<Config> = {}): Config {
  const port = Number(env.PORT ?? 3000);
  const level = (env.LOG_LEVEL ?? "info").toLowerCase();
  return {
    port,
    host: env.HOST ?? "0.0.0.0",
    publicUrl: (env.PUBLIC_URL ?? `http://localhost:${port}`).replace(/\/+$/, ""),
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: env.DATA_DIR ?? "./.data",
    logLevel: (["debug", "info", "warn", "error", "silent"].includes(level) ? level : "info") as Config["logLevel"],
    jobsEnabled: bool(env.JOBS_ENABLED, true),
    supportDailyCap: Number(env.SUPPORT_DAILY_CAP ?? 10),
    supportFilingEnabled: bool(env.SUPPORT_FILING_ENABLED, true),
    supportWebhookUrl: env.SUPPORT_WEBHOOK_URL || undefined,
    seedDemo: bool(env.SEED_DEMO, true),
    ...overrides,
  };
}

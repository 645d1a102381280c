/**
 * The process's own metrics (prom-client): the runtime's defaults, the jobs it ran and the
 * imports it did. One registry per process, whatever the number of apps in it (tests build many);
 * what depends on one database lives in lib/metrics/service.ts.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { inSpan } from "../tracing/index.ts";

export const processRegistry = new Registry();
collectDefaultMetrics({ register: processRegistry });

export const jobRuns = new Counter({
  name: "commitops_job_runs_total",
  help: "Scheduled job runs by job and outcome (success, failure).",
  labelNames: ["job_name", "outcome"] as const,
  registers: [processRegistry],
});

export const jobDuration = new Histogram({
  name: "commitops_job_duration_seconds",
  help: "Wall time of a scheduled job run.",
  labelNames: ["job_name"] as const,
  buckets: [0.01, 0.05, 0.25, 1, 5, 15, 60, 300, 1800],
  registers: [processRegistry],
});

export const jobLastSuccess = new Gauge({
  name: "commitops_job_last_success_timestamp_seconds",
  help: "Unix time of the job's last successful run in this process.",
  labelNames: ["job_name"] as const,
  registers: [processRegistry],
});

export const importRows = new Counter({
  name: "commitops_import_rows_total",
  help: "FOCUS rows imported (written), by what parsed them (postgresql, row_by_row).",
  labelNames: ["parsed_by"] as const,
  registers: [processRegistry],
});

export const importBytes = new Counter({
  name: "commitops_import_bytes_total",
  help: "Bytes of FOCUS files read by imports (as stored: compressed when the file is).",
  registers: [processRegistry],
});

export const importDuration = new Histogram({
  name: "commitops_import_duration_seconds",
  help: "Wall time of an import that wrote rows, by outcome (imported, unchanged, failed).",
  labelNames: ["outcome"] as const,
  buckets: [0.1, 0.5, 1, 5, 15, 60, 180, 600, 1800],
  registers: [processRegistry],
});

/** Runs a job once with its metrics: runs by outcome, duration, the last success. */
export async function measuredJobRun(job: string, run: () => Promise<void>): Promise<void> {
  // `job_name`, not `job`: Prometheus sets `job` on every scraped series itself.
  const job_name = job;
  const end = jobDuration.startTimer({ job_name });
  try {
    await inSpan(`job ${job}`, { "commitops.job": job }, () => run());
    jobRuns.inc({ job_name, outcome: "success" });
    jobLastSuccess.set({ job_name }, Date.now() / 1000);
  } catch (e) {
    jobRuns.inc({ job_name, outcome: "failure" });
    throw e;
  } finally {
    end();
  }
}

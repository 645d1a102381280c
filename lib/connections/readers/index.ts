import type { ConnectionSettings } from "../kinds.ts";
import type { ExportReader, ReaderOptions } from "../source.ts";

/** The reader of a connection's export (SDKs loaded on first use: most processes never need them). */
export async function readerFor(settings: ConnectionSettings, opts: ReaderOptions): Promise<ExportReader> {
  switch (settings.kind) {
    case "aws_data_exports":
      return (await import("./aws.ts")).awsExportReader(settings.config, settings.secrets, opts);
    case "azure_cost_exports":
      return (await import("./azure.ts")).azureExportReader(settings.config, settings.secrets, opts);
    case "gcp_bigquery_focus":
      return (await import("./bigquery.ts")).bigQueryFocusReader(settings.config, settings.secrets, opts);
  }
}

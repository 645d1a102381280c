/**
 * The fields of each connection kind (DESIGN §13). `config` is shown back to the user; `secrets`
 * are write-only: encrypted at rest, never in a response or a log.
 */
import type { Provider } from "../billing/sql.ts";
import type { ConnectionKind } from "./source.ts";

/** The provider whose billing data each kind brings. */
export const KIND_PROVIDER: Record<ConnectionKind, Provider> = { aws_data_exports: "aws", azure_cost_exports: "azure", gcp_bigquery_focus: "gcp" };

export interface AwsConfig {
  bucket: string;
  /** Prefix the export was configured with ("" for the bucket root). */
  prefix: string;
  export_name: string;
  region: string;
  /** Role assumed through STS from the default AWS credential chain (with external_id). */
  role_arn?: string | null;
  external_id?: string | null;
  /** Access key pair instead of a role (the secret half is in secrets). */
  access_key_id?: string | null;
  endpoint_url?: string | null;
}
export interface AwsSecrets {
  secret_access_key?: string;
}

export interface AzureConfig {
  /** https://<account>.blob.core.windows.net (or an emulator's account URL). */
  storage_account_url: string;
  container: string;
  /** The export's root directory in the container ("" for the root). */
  directory: string;
  /** Service principal (client_secret in secrets); without it, account_key / sas_token or the default credential. */
  tenant_id?: string | null;
  client_id?: string | null;
  endpoint_url?: string | null;
}
export interface AzureSecrets {
  client_secret?: string;
  account_key?: string;
  sas_token?: string;
}

export interface GcpConfig {
  project_id: string;
  dataset: string;
  /** The FOCUS view or table in the dataset. */
  table: string;
  /** BigQuery location of the dataset (e.g. US, EU). */
  location?: string | null;
  endpoint_url?: string | null;
}
export interface GcpSecrets {
  /** A service-account key file (JSON text); without it, application default credentials. */
  service_account_key?: string;
}

export type ConnectionSettings =
  | { kind: "aws_data_exports"; config: AwsConfig; secrets: AwsSecrets }
  | { kind: "azure_cost_exports"; config: AzureConfig; secrets: AzureSecrets }
  | { kind: "gcp_bigquery_focus"; config: GcpConfig; secrets: GcpSecrets };

export type KindOf<K extends ConnectionKind> = Extract<ConnectionSettings, { kind: K }>;

/**
 * The settings of each purchasing connection kind (DESIGN §14): `config` is shown back to the
 * user; `secrets` are write-only, sealed at rest (lib/secrets), never in a response or a log.
 * Purchase credentials are their own connection (least privilege: the billing connection's
 * reader role cannot buy, and this one cannot read billing exports).
 */
export interface AwsPurchasingConfig {
  /** Region of the connection's own calls (Savings Plans is global; EC2 and RDS are called in each item's region). */
  region: string;
  /** Role assumed through STS from the default AWS credential chain (with external_id). */
  role_arn?: string | null;
  external_id?: string | null;
  /** Access key pair instead of a role (the secret half is in secrets). */
  access_key_id?: string | null;
  /** One endpoint for EC2, RDS, Savings Plans and STS (private endpoints, tests). */
  endpoint_url?: string | null;
}
export interface AwsPurchasingSecrets {
  secret_access_key?: string;
}

export interface AzurePurchasingConfig {
  tenant_id: string;
  client_id: string;
  /** Billing scope the reservations and savings plans are charged to: `/subscriptions/{id}` (or a billing account/profile path). */
  billing_scope_id: string;
  /** Subscription whose resources get the benefit when `applied_scope` is `single`; else the benefit is shared. */
  applied_scope_subscription_id?: string | null;
  /** Azure Resource Manager endpoint (default https://management.azure.com). */
  endpoint_url?: string | null;
  /** Entra ID authority (default https://login.microsoftonline.com). */
  authority_host?: string | null;
}
export interface AzurePurchasingSecrets {
  client_secret?: string;
}

export interface GcpPurchasingConfig {
  project_id: string;
  /** Compute Engine API endpoint (default https://compute.googleapis.com). */
  endpoint_url?: string | null;
}
export interface GcpPurchasingSecrets {
  /** A service-account key file (JSON text); without it, application default credentials. */
  service_account_key?: string;
}

export type PurchasingSettings =
  | { kind: "aws_purchasing"; config: AwsPurchasingConfig; secrets: AwsPurchasingSecrets }
  | { kind: "azure_purchasing"; config: AzurePurchasingConfig; secrets: AzurePurchasingSecrets }
  | { kind: "gcp_purchasing"; config: GcpPurchasingConfig; secrets: GcpPurchasingSecrets };

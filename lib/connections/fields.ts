/**
 * What each connection kind needs (DESIGN §13): its fields, which are required, which are secret,
 * and their limits. Used to check input from the API, the CLI and the MCP tools alike.
 */
import { ValidationError, type FieldErrors } from "../errors.ts";
import { ConnectionFailure, type ConnectionKind } from "./source.ts";
import { isPublicUrl } from "../hosts.ts";
import { GOOGLE_TOKEN_URL, parseServiceAccountKey } from "./gcpKey.ts";

export interface FieldSpec {
  required?: boolean;
  max: number;
  pattern?: RegExp;
  hint?: string;
}

export const URL_FIELD: FieldSpec = { max: 2048, pattern: /^https?:\/\/[^\s]+$/i, hint: "an http(s) URL" };

export const CONFIG_FIELDS: Record<ConnectionKind, Record<string, FieldSpec>> = {
  aws_data_exports: {
    bucket: { required: true, max: 63, pattern: /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, hint: "an S3 bucket name" },
    prefix: { max: 1024 },
    export_name: { required: true, max: 128, pattern: /^[A-Za-z0-9_.-]+$/, hint: "the export's name (letters, digits, _ . -)" },
    region: { required: true, max: 32, pattern: /^[a-z]{2}(-[a-z]+)+-\d+$/, hint: "an AWS region such as us-east-1" },
    role_arn: { max: 2048, pattern: /^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]+$/, hint: "an IAM role ARN" },
    external_id: { max: 1224, pattern: /^[\w+=,.@:/-]{2,1224}$/, hint: "2–1224 characters of letters, digits and +=,.@:/-" },
    access_key_id: { max: 128, pattern: /^[A-Z0-9]{16,128}$/, hint: "an access key id" },
    endpoint_url: URL_FIELD,
  },
  azure_cost_exports: {
    storage_account_url: { required: true, ...URL_FIELD },
    container: { required: true, max: 63, pattern: /^[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]$/, hint: "a blob container name" },
    directory: { max: 1024 },
    tenant_id: { max: 64, pattern: /^[0-9a-fA-F-]{36}$|^[a-z0-9.-]+$/, hint: "a tenant id" },
    client_id: { max: 64, pattern: /^[0-9a-fA-F-]{36}$/, hint: "an application (client) id" },
    endpoint_url: URL_FIELD,
  },
  gcp_bigquery_focus: {
    project_id: { required: true, max: 64, pattern: /^[a-z][a-z0-9-]{4,61}[a-z0-9]$|^[a-z0-9.:-]{1,64}$/, hint: "a project id" },
    dataset: { required: true, max: 1024, pattern: /^\w{1,1024}$/, hint: "a dataset id (letters, digits, _)" },
    table: { required: true, max: 1024, pattern: /^[\w-]{1,1024}$/, hint: "a table or view id" },
    location: { max: 64, pattern: /^[A-Za-z0-9-]+$/, hint: "a BigQuery location such as US or europe-west1" },
    endpoint_url: URL_FIELD,
  },
};

export const SECRET_FIELDS: Record<ConnectionKind, Record<string, FieldSpec>> = {
  aws_data_exports: { secret_access_key: { max: 256 } },
  azure_cost_exports: { client_secret: { max: 1024 }, account_key: { max: 256 }, sas_token: { max: 4096 } },
  gcp_bigquery_focus: { service_account_key: { max: 16_384 } },
};

/** Every field name of every kind (the API's body schema lists these). */
export const ALL_CONFIG_FIELDS = [...new Set(Object.values(CONFIG_FIELDS).flatMap((f) => Object.keys(f)))];
export const ALL_SECRET_FIELDS = [...new Set(Object.values(SECRET_FIELDS).flatMap((f) => Object.keys(f)))];

type Values = Record<string, string>;

/** The set fields of a checked object (null and "" remove a field). */
const setFields = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => typeof v === "string" && v !== "")) as Values;

function checkFields(where: string, specs: Record<string, FieldSpec>, values: Record<string, unknown>, errors: FieldErrors, kind: string) {
  for (const [name, v] of Object.entries(values)) {
    const spec = specs[name];
    const key = `${where}.${name}`;
    if (!spec) {
      errors[key] = [`is not a field of a ${kind} connection`];
      continue;
    }
    if (v === null || v === undefined) continue;
    if (typeof v !== "string") errors[key] = ["must be a string"];
    else if (v.length > spec.max) errors[key] = [`must be at most ${spec.max} characters`];
    else if (spec.pattern && !spec.pattern.test(v)) errors[key] = [`must be ${spec.hint}`];
    else if (/[\u0000-\u001f]/.test(v) && name !== "service_account_key") errors[key] = ["must not contain control characters"];
  }
}

const URL_FIELDS = ["endpoint_url", "storage_account_url", "authority_host"];
const PRIVATE_ENDPOINT = "must not point at a loopback, private, link-local or other non-public address (the server allows that only with CONNECTIONS_ALLOW_PRIVATE_ENDPOINTS)";

/**
 * The URL fields given (and a given service-account key's token_uri) whose host is, or resolves
 * to, an address the server may not call (lib/hosts.ts). It may query DNS: run it before any
 * transaction and hand the result to the field checks. Only values given are checked; stored
 * ones were checked when they were set, and every connection checks its host again.
 */
export async function endpointErrors(config: Record<string, unknown>, secrets: Record<string, unknown>, allowPrivateEndpoints: boolean): Promise<FieldErrors> {
  const errors: FieldErrors = {};
  if (allowPrivateEndpoints) return errors;
  // The names are resolved at once, not one after another.
  const checks: Promise<void>[] = [];
  for (const f of URL_FIELDS) {
    const v = config[f];
    if (typeof v === "string" && v) checks.push(isPublicUrl(v, false).then((ok) => void (ok || (errors[`config.${f}`] = [PRIVATE_ENDPOINT]))));
  }
  if (typeof secrets.service_account_key === "string" && secrets.service_account_key) {
    let tokenUri: string | undefined;
    try {
      tokenUri = parseServiceAccountKey(secrets.service_account_key).token_uri;
    } catch {}
    if (tokenUri && tokenUri !== GOOGLE_TOKEN_URL) {
      checks.push(isPublicUrl(tokenUri, false).then((ok) => void (ok || (errors["secrets.service_account_key"] = [`its token_uri ${PRIVATE_ENDPOINT}`]))));
    }
  }
  await Promise.all(checks);
  return errors;
}

export interface CheckOptions {
  /** From endpointErrors(): hosts that may not be called, by field. */
  endpoints: FieldErrors;
  /** The secrets are the stored ones, checked when they were set (only their presence counts). */
  storedSecrets?: boolean;
}

/**
 * The checks every connection kind (billing or purchasing) shares: each field's type, length and
 * pattern, required fields, the hosts endpointErrors() refused, a readable service-account key. Returns the set fields and the errors found; the caller adds its kind's own.
 */
export function checkConnectionFields(
  kind: string,
  specs: { config: Record<string, FieldSpec>; secrets: Record<string, FieldSpec> },
  config: Record<string, unknown>,
  secrets: Record<string, unknown>,
  opts: CheckOptions,
): { config: Values; secrets: Values; errors: FieldErrors } {
  const errors: FieldErrors = {};
  checkFields("config", specs.config, config, errors, kind);
  if (!opts.storedSecrets) checkFields("secrets", specs.secrets, secrets, errors, kind);
  const c = setFields(config);
  const s = setFields(secrets);
  for (const [name, spec] of Object.entries(specs.config)) if (spec.required && !c[name] && !errors[`config.${name}`]) errors[`config.${name}`] = ["is required"];
  // A field's own format error is the one reported.
  for (const [field, messages] of Object.entries(opts.endpoints)) errors[field] ??= messages;
  if (s.service_account_key && !opts.storedSecrets) {
    try {
      parseServiceAccountKey(s.service_account_key);
    } catch (e) {
      if (!(e instanceof ConnectionFailure)) throw e;
      errors["secrets.service_account_key"] = [e.message];
    }
  }
  return { config: c, secrets: s, errors };
}

/** The stored config and secrets of a kind, or a 422 naming each wrong field. Nulls remove a field. */
export function checkSettings(kind: ConnectionKind, config: Record<string, unknown>, secrets: Record<string, unknown>, opts: CheckOptions): { config: Values; secrets: Values } {
  const { config: c, secrets: s, errors } = checkConnectionFields(kind, { config: CONFIG_FIELDS[kind], secrets: SECRET_FIELDS[kind] }, config, secrets, opts);
  if (kind === "aws_data_exports" && !!c.access_key_id !== !!s.secret_access_key) errors["secrets.secret_access_key"] = ["goes with config.access_key_id: give both or neither"];
  if (kind === "azure_cost_exports" && s.client_secret && !(c.tenant_id && c.client_id)) errors["config.client_id"] = ["a client_secret needs config.tenant_id and config.client_id"];
  if (Object.keys(errors).length) throw new ValidationError("The connection's settings are not valid.", errors);
  return { config: c, secrets: s };
}

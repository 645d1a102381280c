/**
 * GCP purchasing: resource-based committed use discounts bought through the Compute Engine API
 * (regionCommitments.insert) on the official @google-cloud/compute clients over REST. A purchase is
 * named after the item's token ("commitops-<token>") and sent with the token as its requestId, so
 * Compute itself refuses a second purchase: a repeated insert returns the first operation, and a
 * name already taken answers 409. The Compute API shows no prices: a quote carries the plan's own
 * hourly figure and no upfront, which is how resource CUDs are billed.
 */
// The four v1 clients by their own modules: the package's index also loads every other Compute
// client (v1 and v1beta) and a 22 MB protobuf module that REST fallback never uses.
import type { protos } from "@google-cloud/compute";
import { MachineTypesClient } from "@google-cloud/compute/build/src/v1/machine_types_client.js";
import { RegionCommitmentsClient } from "@google-cloud/compute/build/src/v1/region_commitments_client.js";
import { RegionOperationsClient } from "@google-cloud/compute/build/src/v1/region_operations_client.js";
import { RegionsClient } from "@google-cloud/compute/build/src/v1/regions_client.js";
import { parseServiceAccountKey, useKeyTokenEndpoint, type ServiceAccountKey } from "../../connections/gcpKey.ts";
import { ConnectionFailure } from "../../connections/source.ts";
import { LOOPBACK_HOSTS } from "../../hosts.ts";
import type { GcpPurchasingConfig, GcpPurchasingSecrets } from "./settings.ts";
import { PurchaseFailure, providerTerm, type OfferQuote, type ProviderCommitment, type ProviderPurchaser, type PurchaseItemSpec, type PurchaseOutcome } from "./types.ts";

type Commitment = protos.google.cloud.compute.v1.ICommitment;
type Operation = protos.google.cloud.compute.v1.IOperation;

export interface GcpPurchaserOptions {
  now?: () => Date;
  /** How long `buy` waits for Compute to finish the insert before leaving it to `findExisting` (default 5 minutes). */
  operationTimeoutMs?: number;
}

/** Scopes asked of the token endpoint, so a key's own token_uri is always the one that vouches for it. */
const COMPUTE_SCOPES = ["https://www.googleapis.com/auth/compute", "https://www.googleapis.com/auth/cloud-platform"];
/**
 * No call is retried here: over REST the SDK does not retry HTTP errors, and the purchase job
 * retries a retryable failure on its next tick (an insert through findExisting and the same requestId).
 */
const READ = { timeout: 60_000 };
const WRITE = { timeout: 60_000 };
/** regionOperations.wait blocks up to two minutes on Compute's side. */
const WAIT = { timeout: 150_000 };
/** Region check() reads: every project has it, whatever regions the connection buys in. */
const CHECK_REGION = "us-central1";
const NAME_PREFIX = "commitops-";

/**
 * Commitment type of each machine family (the SDK's Commitment.Type). C3 commitments are
 * COMPUTE_OPTIMIZED_C3: Compute has no GENERAL_PURPOSE_C3.
 */
const COMMITMENT_TYPE_BY_FAMILY: Record<string, string> = {
  n1: "GENERAL_PURPOSE",
  n2: "GENERAL_PURPOSE_N2",
  n2d: "GENERAL_PURPOSE_N2D",
  e2: "GENERAL_PURPOSE_E2",
  t2d: "GENERAL_PURPOSE_T2D",
  n4: "GENERAL_PURPOSE_N4",
  n4a: "GENERAL_PURPOSE_N4A",
  n4d: "GENERAL_PURPOSE_N4D",
  c4: "GENERAL_PURPOSE_C4",
  c4a: "GENERAL_PURPOSE_C4A",
  c4d: "GENERAL_PURPOSE_C4D",
  c2: "COMPUTE_OPTIMIZED",
  c2d: "COMPUTE_OPTIMIZED_C2D",
  c3: "COMPUTE_OPTIMIZED_C3",
  c3d: "COMPUTE_OPTIMIZED_C3D",
  h3: "COMPUTE_OPTIMIZED_H3",
  h4d: "COMPUTE_OPTIMIZED_H4D",
  m1: "MEMORY_OPTIMIZED",
  m2: "MEMORY_OPTIMIZED",
  m3: "MEMORY_OPTIMIZED_M3",
  z3: "STORAGE_OPTIMIZED_Z3",
};
/** The family a commitment type covers, when exactly one family maps to it (inventory). */
const FAMILY_BY_COMMITMENT_TYPE = new Map(
  Object.entries(COMMITMENT_TYPE_BY_FAMILY)
    .filter(([, type], _, all) => all.filter(([, t]) => t === type).length === 1)
    .map(([family, type]) => [type, family]),
);
/** GPU families: their commitments must cover the GPUs and be attached to a reservation. */
const ACCELERATOR_FAMILIES = new Set(["a2", "a3", "a4", "g2", "g4"]);
const PLAN_BY_YEARS = { 1: "TWELVE_MONTH", 3: "THIRTY_SIX_MONTH" } as const;
const TERM_BY_PLAN: Record<string, string> = { TWELVE_MONTH: "one_year", THIRTY_SIX_MONTH: "three_year" };

/** What Compute would be asked to create for an item. */
interface CommitmentSpec {
  region: string;
  zone: string;
  name: string;
  machineType: string;
  count: number;
  vcpus: number;
  memoryMb: number;
  type: string;
  plan: string;
  offeringId: string;
  durationSeconds: number;
}

interface ComputeClients {
  commitments: RegionCommitmentsClient;
  operations: RegionOperationsClient;
  machineTypes: MachineTypesClient;
  regions: RegionsClient;
}

export function gcpPurchaser(config: GcpPurchasingConfig, secrets: GcpPurchasingSecrets, opts: GcpPurchaserOptions = {}): ProviderPurchaser {
  const now = opts.now ?? (() => new Date());
  const operationTimeoutMs = opts.operationTimeoutMs ?? 300_000;
  const project = config.project_id;
  let clients: Promise<ComputeClients> | undefined;
  const connect = () =>
    (clients ??= openClients(config, secrets).catch((err) => {
      clients = undefined;
      throw failure(err);
    }));

  /** Resolves an item to the commitment Compute would create, looking its machine type up in the region. */
  async function commitmentSpec(item: PurchaseItemSpec): Promise<CommitmentSpec> {
    const shape = itemShape(item);
    const { regions, machineTypes } = await connect();
    let zones: string[];
    try {
      const [region] = await regions.get({ project, region: shape.region }, READ);
      zones = (region.zones ?? []).map((z) => z.slice(z.lastIndexOf("/") + 1)).sort();
    } catch (err) {
      throw failure(err, () => new PurchaseFailure("no_offering", `Compute Engine has no region ${shape.region} in project ${project}.`));
    }
    for (const zone of zones) {
      let machineType: protos.google.cloud.compute.v1.IMachineType;
      try {
        [machineType] = await machineTypes.get({ project, zone, machineType: shape.machineType }, READ);
      } catch (err) {
        if (isNotFound(err)) continue;
        throw failure(err);
      }
      if (machineType.accelerators?.length) throw acceleratorUnsupported(shape.machineType);
      if (machineType.isSharedCpu) {
        throw new PurchaseFailure("unsupported", `${shape.machineType} is a shared-core machine type, which a resource commitment cannot cover by instance; plan a standard ${shape.family} machine type instead.`);
      }
      const vcpus = Number(machineType.guestCpus ?? 0);
      const memoryMb = Number(machineType.memoryMb ?? 0);
      if (!(vcpus > 0) || !(memoryMb > 0)) throw new PurchaseFailure("no_offering", `Compute reports no vCPUs or memory for ${shape.machineType} in ${zone}.`);
      return {
        region: shape.region,
        zone,
        name: commitmentName(item.token),
        machineType: shape.machineType,
        count: shape.count,
        vcpus: vcpus * shape.count,
        memoryMb: memoryMb * shape.count,
        type: shape.type,
        plan: shape.plan,
        offeringId: `${shape.type}/${shape.plan}/${shape.machineType}`,
        durationSeconds: shape.durationSeconds,
      };
    }
    throw new PurchaseFailure("no_offering", `Compute Engine offers no machine type ${shape.machineType} in any zone of ${shape.region}.`);
  }

  /** The commitment of this name in the region, or null. */
  async function commitmentNamed(region: string, name: string): Promise<Commitment | null> {
    const { commitments } = await connect();
    try {
      const [commitment] = await commitments.get({ project, region, commitment: name }, READ);
      return commitment;
    } catch (err) {
      if (isNotFound(err)) return null;
      throw failure(err);
    }
  }

  /** Polls the insert's operation until Compute has finished it, or the wait runs out (asked at least once, however slow the start). */
  async function finished(spec: CommitmentSpec, operation: Operation): Promise<Operation> {
    const { operations } = await connect();
    const deadline = Date.now() + operationTimeoutMs;
    for (let attempt = 0; operation.status !== "DONE"; attempt++) {
      if (attempt > 0 && Date.now() >= deadline) {
        throw new PurchaseFailure("unreachable", `Compute is still creating commitment ${spec.name} in ${spec.region}; a later run finds it by its name.`, true);
      }
      // wait answers early when Compute is busy; back off rather than spin.
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 100 * 2 ** attempt)));
      try {
        [operation] = await operations.wait({ project, region: spec.region, operation: operation.name ?? "" }, WAIT);
      } catch (err) {
        throw failure(err);
      }
    }
    return operation;
  }

  return {
    kind: "gcp_purchasing",

    async quote(item) {
      const spec = await commitmentSpec(item);
      return { offeringId: spec.offeringId, upfront: 0, hourly: item.plannedHourly, currency: "USD", durationSeconds: spec.durationSeconds };
    },

    async dryRun(item, quote) {
      const spec = await commitmentSpec(item);
      assertQuoted(spec, quote);
      const existing = await commitmentNamed(spec.region, spec.name);
      return {
        summary:
          `Compute Engine has no dry run for commitments: found ${spec.machineType} in ${spec.zone}, read project ${project}'s commitments in ${spec.region}` +
          `${existing ? ` (${spec.name} already exists)` : ""}, and would insert ${spec.name}: ${spec.type} ${spec.plan}, ${spec.count} × ${spec.machineType} = ` +
          `${spec.vcpus} vCPUs and ${spec.memoryMb} MB memory, billed monthly at the plan's $${item.plannedHourly}/hour (Compute shows no prices). Nothing was bought.`,
      };
    },

    async findExisting(item) {
      // claimedIds needs no check: the name comes from this item's own token.
      if (item.commitmentType !== "resource_cud" || !item.region) return null;
      const commitment = await commitmentNamed(item.region, commitmentName(item.token));
      return commitment ? outcome(commitment, item) : null;
    },

    async buy(item, quote) {
      const spec = await commitmentSpec(item);
      assertQuoted(spec, quote);
      const { commitments } = await connect();
      let operation: Operation;
      try {
        const [lro] = await commitments.insert(
          {
            project,
            region: spec.region,
            requestId: item.token,
            commitmentResource: {
              name: spec.name,
              description: commitmentDescription(spec),
              category: "MACHINE",
              type: spec.type,
              plan: spec.plan,
              autoRenew: false,
              resources: [
                { type: "VCPU", amount: spec.vcpus },
                { type: "MEMORY", amount: spec.memoryMb },
              ],
            },
          },
          WRITE,
        );
        // The REST client hands the Operation back as the LRO's latestResponse; it has no promise().
        operation = (lro as unknown as { latestResponse: Operation }).latestResponse;
      } catch (err) {
        // Our name is taken only by an earlier insert of this very token whose answer was lost.
        if (isAlreadyExists(err)) return await boughtEarlier(spec, item);
        throw failure(err);
      }
      operation = await finished(spec, operation);
      const error = operation.error?.errors?.[0];
      if (error) {
        if (error.code === "RESOURCE_ALREADY_EXISTS") return await boughtEarlier(spec, item);
        throw operationFailure(spec, operation, error);
      }
      const commitment = await commitmentNamed(spec.region, spec.name);
      if (!commitment) throw new PurchaseFailure("internal", `Compute finished inserting ${spec.name} in ${spec.region} but does not return it.`, true);
      return outcome(commitment, item);
    },

    async listCommitments(regions) {
      const { commitments } = await connect();
      const found: ProviderCommitment[] = [];
      for (const region of [...new Set(regions)]) {
        try {
          for await (const commitment of commitments.listAsync({ project, region, maxResults: 500 }, { ...READ, autoPaginate: false })) {
            found.push(providerCommitment(commitment, region, now()));
          }
        } catch (err) {
          throw failure(err, () => new PurchaseFailure("no_offering", `Compute Engine has no region ${region} in project ${project}.`));
        }
      }
      return found;
    },

    async check() {
      const { commitments } = await connect();
      try {
        await commitments.list({ project, region: CHECK_REGION, maxResults: 1 }, { ...READ, autoPaginate: false });
      } catch (err) {
        throw failure(err, () => new PurchaseFailure("permission", `Project ${project} was not found, or this service account cannot see it.`));
      }
    },

    async close() {
      const open = clients;
      clients = undefined;
      const c = await open?.catch(() => undefined);
      if (c) await Promise.all([c.commitments.close(), c.operations.close(), c.machineTypes.close(), c.regions.close()]);
    },
  };

  async function boughtEarlier(spec: CommitmentSpec, item: PurchaseItemSpec): Promise<PurchaseOutcome> {
    const commitment = await commitmentNamed(spec.region, spec.name);
    if (!commitment) throw new PurchaseFailure("refused", `Compute says ${spec.name} already exists in ${spec.region} but does not return it.`, true);
    return outcome(commitment, item);
  }
}

/** What an item asks for, checked against what a Compute resource commitment can be. */
function itemShape(item: PurchaseItemSpec) {
  if (item.commitmentType === "spend_cud") {
    throw new PurchaseFailure(
      "unsupported",
      "Spend-based (flexible) committed use discounts are bought in Cloud Billing, not through the Compute Engine API; buy this one in the Google Cloud console (Billing > Committed use discounts) and record it there.",
    );
  }
  if (item.commitmentType !== "resource_cud") {
    throw new PurchaseFailure("unsupported", `A GCP purchasing connection buys resource-based committed use discounts, not ${item.commitmentType}.`);
  }
  if (item.paymentOption !== "no_upfront") {
    throw new PurchaseFailure("unsupported", `GCP resource commitments are billed monthly with no upfront payment; plan this item as no_upfront instead of ${item.paymentOption}.`);
  }
  if (!item.region) throw new PurchaseFailure("unsupported", "A GCP resource commitment is bought in one region; give the plan item a region.");
  if (!item.instanceType) throw new PurchaseFailure("unsupported", "A GCP resource commitment is sized from a machine type; give the plan item one (e.g. n2-standard-4).");
  if (!Number.isInteger(item.amount) || item.amount <= 0) {
    throw new PurchaseFailure("unsupported", `A GCP resource commitment covers a whole number of instances, not ${item.amount}.`);
  }
  const machineType = item.instanceType.toLowerCase();
  const family = machineType.split("-")[0]!;
  if (ACCELERATOR_FAMILIES.has(family)) throw acceleratorUnsupported(machineType);
  const type = COMMITMENT_TYPE_BY_FAMILY[family];
  if (!type) throw new PurchaseFailure("no_offering", `Compute Engine has no resource commitment type for the ${family} machine family.`);
  const term = providerTerm(item);
  return { region: item.region, machineType, family, count: item.amount, type, plan: PLAN_BY_YEARS[term.years], durationSeconds: term.seconds };
}

function acceleratorUnsupported(machineType: string) {
  return new PurchaseFailure(
    "unsupported",
    `${machineType} carries GPUs, whose commitments must be attached to a reservation; buy it in the Google Cloud console (Compute Engine > Committed use discounts) with its reservation.`,
  );
}

function assertQuoted(spec: CommitmentSpec, quote: OfferQuote) {
  if (quote.offeringId !== spec.offeringId) {
    throw new PurchaseFailure("price_changed", `The commitment quoted (${quote.offeringId}) is no longer what Compute would be asked for (${spec.offeringId}).`);
  }
}

/** Compute names: [a-z]([-a-z0-9]*[a-z0-9])?, at most 63 characters; a lower-case UUID token fits. */
function commitmentName(token: string): string {
  return NAME_PREFIX + token.toLowerCase();
}

/** The instance count and machine type, kept on the commitment: Compute itself records only vCPUs and memory. */
function commitmentDescription(spec: CommitmentSpec): string {
  return `Bought by commitops: ${spec.count} x ${spec.machineType}`;
}
const DESCRIPTION = /^Bought by commitops: (\d+) x ([a-z0-9-]+)$/;

function outcome(commitment: Commitment, item: PurchaseItemSpec): PurchaseOutcome {
  return {
    providerPurchaseId: commitment.selfLink ?? commitment.name ?? "",
    upfront: 0,
    hourly: item.plannedHourly,
    currency: "USD",
    startsAt: timestamp(commitment.startTimestamp),
    endsAt: timestamp(commitment.endTimestamp),
    providerState: commitment.status ?? "UNKNOWN",
  };
}

/**
 * A commitment as inventory. `amount` is the instance count when the commitment carries our
 * description (bought here), else its vCPUs. Costs are 0: Compute does not show prices.
 */
function providerCommitment(commitment: Commitment, region: string, now: Date): ProviderCommitment {
  const bought = DESCRIPTION.exec(commitment.description ?? "");
  const vcpus = Number(commitment.resources?.find((r) => r.type === "VCPU")?.amount ?? 0);
  const licenses = Number(commitment.licenseResource?.amount ?? 0);
  const startsAt = timestamp(commitment.startTimestamp);
  const endsAt = timestamp(commitment.endTimestamp);
  const instanceType = bought?.[2] ?? null;
  return {
    providerCommitmentId: commitment.selfLink ?? commitment.name ?? "",
    commitmentType: "resource_cud",
    category: "Usage",
    contractTerm: TERM_BY_PLAN[commitment.plan ?? ""] ?? null,
    paymentOption: "no_upfront",
    region,
    instanceType,
    instanceFamily: instanceType ? instanceType.split("-")[0]! : (FAMILY_BY_COMMITMENT_TYPE.get(commitment.type ?? "") ?? null),
    amount: bought ? Number(bought[1]) : commitment.category === "LICENSE" ? licenses : vcpus,
    upfrontCost: 0,
    recurringHourlyCost: 0,
    startsAt,
    endsAt,
    state: commitmentState(commitment.status, startsAt, endsAt, now),
    name: commitment.name ?? null,
  };
}

function commitmentState(status: string | null | undefined, startsAt: Date | null, endsAt: Date | null, now: Date): ProviderCommitment["state"] {
  switch (status) {
    case "ACTIVE":
      return "active";
    case "NOT_YET_ACTIVE":
    case "CREATING":
      return "pending";
    case "EXPIRED":
    case "CANCELLED":
      return "retired";
  }
  if (endsAt && endsAt <= now) return "retired";
  if (startsAt && startsAt > now) return "pending";
  return "active";
}

function timestamp(text: string | null | undefined): Date | null {
  if (!text) return null;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? null : new Date(ms);
}

async function openClients(config: GcpPurchasingConfig, secrets: GcpPurchasingSecrets): Promise<ComputeClients> {
  const key: ServiceAccountKey | undefined = secrets.service_account_key ? parseServiceAccountKey(secrets.service_account_key) : undefined;
  const base = { projectId: config.project_id, fallback: true, scopes: COMPUTE_SCOPES, ...endpointOptions(config.endpoint_url) };
  // Without a key: application default credentials.
  const commitments = new RegionCommitmentsClient({ ...base, ...(key ? { credentials: { client_email: key.client_email, private_key: key.private_key } } : {}) });
  const auth = commitments.auth;
  await useKeyTokenEndpoint(auth.getClient(), key);
  return {
    commitments,
    operations: new RegionOperationsClient({ ...base, auth }),
    machineTypes: new MachineTypesClient({ ...base, auth }),
    regions: new RegionsClient({ ...base, auth }),
  };
}

/** Client options for a non-default Compute endpoint: plain http only on this machine. */
function endpointOptions(endpointUrl: string | null | undefined): { apiEndpoint?: string; port?: number; protocol?: string } {
  if (!endpointUrl) return {};
  let url: URL;
  try {
    url = new URL(endpointUrl);
  } catch {
    throw new PurchaseFailure("unreachable", "The connection's Compute endpoint is not a URL.");
  }
  const loopback = url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname);
  if (url.protocol !== "https:" && !loopback) throw new PurchaseFailure("unreachable", "The connection's Compute endpoint must be an https URL.");
  const protocol = url.protocol.slice(0, -1);
  return { apiEndpoint: url.hostname, port: url.port ? Number(url.port) : protocol === "https" ? 443 : 80, protocol };
}

/**
 * An SDK error as what the provider answered. Over REST the clients throw the HTTP layer's error
 * (status and body of Compute's or the token endpoint's answer); google-gax's own errors (a
 * deadline, an undecodable answer) carry a gRPC status code instead.
 */
interface ProviderAnswer {
  /** HTTP status of Compute's or the token endpoint's answer; null when none came. */
  status: number | null;
  grpcCode: number | null;
  /** Compute's `error.errors[].reason`s. */
  reasons: string[];
  /** Compute's `error.message`: it names resources, never credentials. */
  message: string;
  /** The token endpoint's OAuth2 `error` word. */
  oauthError: string | null;
}

const GRPC_DEADLINE_EXCEEDED = 4;
const GRPC_NOT_FOUND = 5;
const GRPC_ALREADY_EXISTS = 6;
const GRPC_PERMISSION_DENIED = 7;
const GRPC_UNAUTHENTICATED = 16;
const GRPC_TRANSIENT = new Set([1, 2, GRPC_DEADLINE_EXCEEDED, 8, 10, 13, 14]);
const RATE_REASONS = new Set(["rateLimitExceeded", "userRateLimitExceeded", "RATE_LIMIT_EXCEEDED"]);
const QUOTA_REASONS = new Set(["quotaExceeded", "QUOTA_EXCEEDED"]);
/** OAuth2 errors of a token endpoint that refuses the key itself. */
const KEY_REFUSALS = new Set(["invalid_grant", "invalid_client", "unauthorized_client", "invalid_scope", "access_denied"]);

function providerAnswer(err: unknown): ProviderAnswer {
  const e = (err && typeof err === "object" ? err : {}) as Record<string, unknown>;
  const response = e.response as { status?: unknown; data?: unknown } | undefined;
  let data = response?.data;
  if (typeof data === "string") {
    try {
      data = JSON.parse(data);
    } catch {
      data = undefined;
    }
  }
  const error = (data as { error?: unknown } | undefined)?.error;
  const compute = error && typeof error === "object" ? (error as { message?: unknown; errors?: unknown }) : undefined;
  const reasons = (Array.isArray(compute?.errors) ? compute.errors : [])
    .map((x: { reason?: unknown }) => x?.reason)
    .concat(typeof e.reason === "string" ? [e.reason] : [])
    .filter((r): r is string => typeof r === "string");
  const status = typeof response?.status === "number" ? response.status : null;
  const gaxError = status === null && typeof e.code === "number";
  const message = typeof compute?.message === "string" ? compute.message : gaxError && typeof e.message === "string" ? e.message : "";
  return {
    status,
    grpcCode: gaxError ? (e.code as number) : null,
    reasons,
    message: message.replace(/\s+/g, " ").slice(0, 300),
    oauthError: typeof error === "string" ? error : null,
  };
}

function isNotFound(err: unknown): boolean {
  const answer = providerAnswer(err);
  return answer.status === 404 || answer.grpcCode === GRPC_NOT_FOUND;
}

function isAlreadyExists(err: unknown): boolean {
  const answer = providerAnswer(err);
  return answer.status === 409 || answer.grpcCode === GRPC_ALREADY_EXISTS;
}

/** The PurchaseFailure an SDK or token-endpoint error stands for; `notFound` says what a 404 means where it came from. */
function failure(err: unknown, notFound?: () => PurchaseFailure): PurchaseFailure {
  if (err instanceof PurchaseFailure) return err;
  if (err instanceof ConnectionFailure) return new PurchaseFailure("credentials", err.message);
  const { status, grpcCode, reasons, message, oauthError } = providerAnswer(err);
  const said = message ? `: ${message}` : ` (HTTP ${status ?? grpcCode})`;
  if (oauthError !== null) {
    if (status !== null && (status === 429 || status >= 500)) return new PurchaseFailure("unreachable", `Google's token endpoint answered HTTP ${status}; try again later.`, true);
    const word = KEY_REFUSALS.has(oauthError) ? oauthError : "refused";
    return new PurchaseFailure("credentials", `Google's token endpoint refused the service-account key (${word}); upload a current key of a service account that still exists.`);
  }
  if (status !== null) {
    if (reasons.some((r) => RATE_REASONS.has(r)) || status === 429 || status >= 500) {
      return new PurchaseFailure("unreachable", `Compute Engine answered HTTP ${status}${said}`, true);
    }
    if (reasons.some((r) => QUOTA_REASONS.has(r))) return new PurchaseFailure("limit_exceeded", `Compute Engine quota exceeded${said}`);
    if (status === 401) return new PurchaseFailure("credentials", `Compute Engine did not accept the connection's credentials${said}`);
    if (status === 403) {
      return new PurchaseFailure("permission", `The service account may not do this in Compute Engine (it needs compute.commitments.create, get and list, compute.regions.get and compute.machineTypes.get)${said}`);
    }
    if (status === 404 && notFound) return notFound();
    return new PurchaseFailure("refused", `Compute Engine refused the request${said}`);
  }
  if (grpcCode !== null) {
    if (grpcCode === GRPC_UNAUTHENTICATED) return new PurchaseFailure("credentials", `Compute Engine did not accept the connection's credentials${said}`);
    if (grpcCode === GRPC_PERMISSION_DENIED) return new PurchaseFailure("permission", `The service account may not do this in Compute Engine${said}`);
    if (grpcCode === GRPC_NOT_FOUND && notFound) return notFound();
    if (GRPC_TRANSIENT.has(grpcCode)) return new PurchaseFailure("unreachable", `Compute Engine did not answer in time or usably${said}`, true);
    return new PurchaseFailure("refused", `Compute Engine refused the request${said}`);
  }
  // No answer at all: the network, DNS, TLS or a dropped connection.
  return new PurchaseFailure("unreachable", "Compute Engine could not be reached; try again later.", true);
}

/** The failure a finished insert operation reports. */
function operationFailure(spec: CommitmentSpec, operation: Operation, error: protos.google.cloud.compute.v1.IErrors): PurchaseFailure {
  const message = `${error.code ?? "ERROR"}: ${(error.message ?? operation.httpErrorMessage ?? "").replace(/\s+/g, " ").slice(0, 300)}`;
  const status = operation.httpErrorStatusCode ?? 0;
  if (error.code === "QUOTA_EXCEEDED") return new PurchaseFailure("limit_exceeded", `Compute did not create ${spec.name}: ${message}`);
  if (status === 401) return new PurchaseFailure("credentials", `Compute did not create ${spec.name}: ${message}`);
  if (status === 403) return new PurchaseFailure("permission", `Compute did not create ${spec.name}: ${message}`);
  if (status === 429 || status >= 500) return new PurchaseFailure("unreachable", `Compute did not create ${spec.name}: ${message}`, true);
  return new PurchaseFailure("refused", `Compute did not create ${spec.name}: ${message}`);
}

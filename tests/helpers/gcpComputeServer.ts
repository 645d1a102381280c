/**
 * A loopback stand-in for Compute Engine that speaks its v1 REST JSON wire format for the calls a
 * GCP purchasing connection makes — machineTypes.get, regionCommitments insert/get/list and
 * regionOperations get/wait — plus Google's OAuth2 token endpoint for service-account JWT bearer
 * grants. It holds its state (commitments by name, operations, request ids) for as long as it runs,
 * so a purchase process can be killed and restarted against it, and records every request.
 * Faults are queued per call with `failNext`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { randomBytes } from "node:crypto";
import { googleServiceAccount } from "./googleServiceAccount.ts";
import { readBody as body, sendJson as send } from "./httpJson.ts";

export type GcpComputeCall =
  | "oauth2.token"
  | "regions.get"
  | "machineTypes.get"
  | "regionCommitments.insert"
  | "regionCommitments.get"
  | "regionCommitments.list"
  | "regionOperations.get"
  | "regionOperations.wait"
  | "unknown";

export interface GcpComputeRequest {
  call: GcpComputeCall;
  method: string;
  path: string;
  query: Record<string, string>;
  /** Parsed JSON body of API calls; for the token endpoint only its grant_type (the assertion is a credential). */
  body: unknown;
  /** Whether an `Authorization: Bearer` header came with it. */
  bearer: boolean;
}

/**
 * - `status`: answer this HTTP error (Compute's error body) and do nothing;
 * - `operationError`: (insert) accept the call, then end its operation DONE with this error, creating nothing;
 * - `drop`: destroy the connection without an answer, before or after the call took effect;
 * - `hang`: never answer (until reset() or close()), before or after the call took effect.
 */
export type GcpComputeFault =
  | { status: number; reason?: string; message?: string }
  | { operationError: { code: string; message: string; httpStatus?: number } }
  | { drop: "before" | "after" }
  | { hang: "before" | "after" };

export interface GcpMachineType {
  name: string;
  guestCpus: number;
  memoryMb: number;
  /** Zones offering it (default: every zone). */
  zones?: string[];
  /** Shared-core types (e2-micro, e2-small, e2-medium, f1-micro, g1-small) burst on a fraction of their vCPUs. */
  isSharedCpu?: boolean;
  /** GPUs attached to the machine type (accelerator-optimized families). */
  accelerators?: { guestAcceleratorType: string; guestAcceleratorCount: number }[];
}

/** A commitment as Compute returns it (regionCommitments.get), `region` and `selfLink` as full URLs. */
export interface GcpCommitmentResource {
  kind: "compute#commitment";
  id: string;
  creationTimestamp: string;
  name: string;
  description?: string;
  region: string;
  selfLink: string;
  status: string;
  statusMessage?: string;
  plan: string;
  startTimestamp: string;
  endTimestamp: string;
  resources: { type: string; amount: string; acceleratorType?: string }[];
  type: string;
  category: string;
  autoRenew: boolean;
}

export interface GcpComputeServerOptions {
  projectId?: string;
  /** Regions the project may use, with their zones (default: zones -a, -b, -c). */
  regions?: string[] | Record<string, string[]>;
  machineTypes?: GcpMachineType[];
  /** Polls (get or wait) an insert's operation answers RUNNING before it answers DONE (default 1). */
  operationPolls?: number;
  /** Committed vCPUs each region allows; an insert beyond it ends in a QUOTA_EXCEEDED operation error. */
  committedCpuQuota?: number;
}

export interface GcpComputeServer {
  /** Root for the connection's endpoint_url (the client appends /compute/v1). */
  url: string;
  /** Service-account key file (JSON text) whose token_uri is this server's token endpoint. */
  serviceAccountKey: string;
  projectId: string;
  /** Every commitment the project holds, bought or seeded, oldest first. */
  readonly commitments: GcpCommitmentResource[];
  /** Every request received, in order. */
  readonly requests: GcpComputeRequest[];
  /** Polls an insert's operation answers RUNNING before DONE, for inserts from now on. */
  operationPolls: number;
  /** The next `times` calls of `call` meet `fault`. */
  failNext(call: GcpComputeCall, fault: GcpComputeFault, times?: number): void;
  /** Adds a commitment the project already holds (inventory); unset fields get an active 1-year N2 commitment. */
  addCommitment(region: string, commitment: Partial<GcpCommitmentResource> & { name: string }): GcpCommitmentResource;
  /** Access tokens issued so far stop working (401 authError). */
  revokeTokens(): void;
  /** Forgets commitments, operations, requests, faults and held connections; issued tokens stay valid. */
  reset(): void;
  close(): Promise<void>;
}

export const DEFAULT_MACHINE_TYPES: GcpMachineType[] = [
  { name: "n2-standard-2", guestCpus: 2, memoryMb: 8192 },
  { name: "n2-standard-4", guestCpus: 4, memoryMb: 16384 },
  { name: "n2-standard-8", guestCpus: 8, memoryMb: 32768 },
  { name: "n2-highmem-4", guestCpus: 4, memoryMb: 32768 },
  { name: "n2d-standard-4", guestCpus: 4, memoryMb: 16384 },
  { name: "e2-standard-4", guestCpus: 4, memoryMb: 16384 },
  { name: "e2-medium", guestCpus: 2, memoryMb: 4096, isSharedCpu: true },
  { name: "n1-standard-4", guestCpus: 4, memoryMb: 15360 },
  { name: "c2-standard-8", guestCpus: 8, memoryMb: 32768 },
  { name: "c2d-standard-8", guestCpus: 8, memoryMb: 32768 },
  { name: "c3-standard-8", guestCpus: 8, memoryMb: 32768 },
  { name: "m1-ultramem-40", guestCpus: 40, memoryMb: 983040 },
  { name: "t2d-standard-4", guestCpus: 4, memoryMb: 16384 },
  { name: "n4-standard-4", guestCpus: 4, memoryMb: 16384 },
  { name: "a2-highgpu-1g", guestCpus: 12, memoryMb: 87040, accelerators: [{ guestAcceleratorType: "nvidia-tesla-a100", guestAcceleratorCount: 1 }] },
];

/** Commitment types Compute accepts (the SDK's Commitment.Type values). */
const COMMITMENT_TYPES = new Set([
  "ACCELERATOR_OPTIMIZED", "ACCELERATOR_OPTIMIZED_A3", "ACCELERATOR_OPTIMIZED_A3_MEGA", "ACCELERATOR_OPTIMIZED_A3_ULTRA", "ACCELERATOR_OPTIMIZED_A4",
  "COMPUTE_OPTIMIZED", "COMPUTE_OPTIMIZED_C2D", "COMPUTE_OPTIMIZED_C3", "COMPUTE_OPTIMIZED_C3D", "COMPUTE_OPTIMIZED_H3", "COMPUTE_OPTIMIZED_H4D",
  "GENERAL_PURPOSE", "GENERAL_PURPOSE_C4", "GENERAL_PURPOSE_C4A", "GENERAL_PURPOSE_C4D", "GENERAL_PURPOSE_E2", "GENERAL_PURPOSE_N2",
  "GENERAL_PURPOSE_N2D", "GENERAL_PURPOSE_N4", "GENERAL_PURPOSE_N4A", "GENERAL_PURPOSE_N4D", "GENERAL_PURPOSE_T2D", "GRAPHICS_OPTIMIZED",
  "MEMORY_OPTIMIZED", "MEMORY_OPTIMIZED_M3", "MEMORY_OPTIMIZED_M4", "STORAGE_OPTIMIZED_Z3",
]);
const PLANS: Record<string, number> = { TWELVE_MONTH: 1, THIRTY_SIX_MONTH: 3 };
const NAME = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The audience google-auth-library signs service-account assertions for, whatever the key's token_uri. */
const API_PREFIX = "/compute/v1/projects/";

const STATUS: Record<number, string> = {
  400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 409: "ALREADY_EXISTS",
  429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE",
};
const REASON: Record<number, string> = {
  400: "invalid", 401: "authError", 403: "forbidden", 404: "notFound", 409: "alreadyExists", 429: "rateLimitExceeded", 500: "backendError", 503: "backendError",
};

class ComputeError extends Error {
  constructor(readonly status: number, readonly reason: string, message: string) {
    super(message);
  }
}

interface Operation {
  json: Record<string, unknown>;
  region: string;
  pollsLeft: number;
  /** Applied when the operation ends: creates the commitment, or records the error. */
  finish: () => void;
}

export async function startGcpComputeServer(options: GcpComputeServerOptions = {}): Promise<GcpComputeServer> {
  const projectId = options.projectId ?? "commitops-test-project";
  const regionList = options.regions ?? ["us-central1", "us-east1", "europe-west1", "asia-southeast1"];
  const regions = new Map<string, string[]>(
    Array.isArray(regionList) ? regionList.map((r) => [r, ["a", "b", "c"].map((z) => `${r}-${z}`)]) : Object.entries(regionList),
  );
  const machineTypes = new Map((options.machineTypes ?? DEFAULT_MACHINE_TYPES).map((m) => [m.name, m]));
  const account = await googleServiceAccount(`commitops-purchaser@${projectId}.iam.gserviceaccount.com`);
  const clientEmail = account.clientEmail;
  const tokens = account.tokens;
  /** By `region/name`. */
  const commitments = new Map<string, GcpCommitmentResource>();
  const operations = new Map<string, Operation>();
  /** Operation name by `region/requestId`. */
  const requestIds = new Map<string, string>();
  const faults = new Map<GcpComputeCall, GcpComputeFault[]>();
  const held = new Set<ServerResponse>();
  const requests: GcpComputeRequest[] = [];
  let url = "";

  const regionUrl = (region: string) => `${url}/compute/v1/projects/${projectId}/regions/${region}`;
  const notFound = (resource: string) => new ComputeError(404, "notFound", `The resource '${resource}' was not found`);

  function takeFault(call: GcpComputeCall): GcpComputeFault | undefined {
    const queue = faults.get(call);
    return queue?.shift();
  }

  function newCommitment(region: string, fields: Partial<GcpCommitmentResource> & { name: string }): GcpCommitmentResource {
    const now = new Date();
    const plan = fields.plan ?? "TWELVE_MONTH";
    const end = new Date(now);
    end.setUTCFullYear(end.getUTCFullYear() + (PLANS[plan] ?? 1));
    return {
      kind: "compute#commitment",
      id: numericId(),
      creationTimestamp: pacific(now),
      region: regionUrl(region),
      selfLink: `${regionUrl(region)}/commitments/${fields.name}`,
      status: "ACTIVE",
      statusMessage: "The commitment is active, and so will apply to current resource usage.",
      plan,
      startTimestamp: pacific(now),
      endTimestamp: pacific(end),
      resources: [
        { type: "VCPU", amount: "4" },
        { type: "MEMORY", amount: "16384" },
      ],
      type: "GENERAL_PURPOSE_N2",
      category: "MACHINE",
      autoRenew: false,
      ...fields,
    };
  }

  async function token(req: IncomingMessage, res: ServerResponse) {
    const form = new URLSearchParams(await body(req));
    requests.push({ call: "oauth2.token", method: req.method ?? "", path: "/token", query: {}, body: { grant_type: form.get("grant_type") }, bearer: hasBearer(req) });
    const fault = takeFault("oauth2.token");
    if (fault && "status" in fault) {
      const error = fault.status < 500 ? (fault.reason ?? "invalid_grant") : (fault.reason ?? "internal_failure");
      return send(res, fault.status, { error, error_description: fault.message ?? "Refused by the test server." });
    }
    if (fault && ("drop" in fault || "hang" in fault)) return "drop" in fault ? res.destroy() : void held.add(res);
    const answer = await account.grant(form, url);
    send(res, answer.status, answer.body);
  }

  /** The call a request names, with its path parameters, or "unknown". */
  function route(method: string, path: string): { call: GcpComputeCall; params: string[] } {
    const parts = path.slice(API_PREFIX.length).split("/").map(decodeURIComponent);
    const [project, scope, where, collection, name, verb, ...rest] = parts;
    const params = [project ?? "", where ?? "", name ?? ""];
    if (rest.length || !project) return { call: "unknown", params };
    if (scope === "regions" && where && !collection && method === "GET") return { call: "regions.get", params };
    if (scope === "zones" && collection === "machineTypes" && name && !verb && method === "GET") return { call: "machineTypes.get", params };
    if (scope !== "regions") return { call: "unknown", params };
    if (collection === "commitments" && !verb) {
      if (!name && method === "POST") return { call: "regionCommitments.insert", params };
      if (!name && method === "GET") return { call: "regionCommitments.list", params };
      if (name && method === "GET") return { call: "regionCommitments.get", params };
    }
    if (collection === "operations" && name) {
      if (!verb && method === "GET") return { call: "regionOperations.get", params };
      if (verb === "wait" && method === "POST") return { call: "regionOperations.wait", params };
    }
    return { call: "unknown", params };
  }

  function checkAuth(req: IncomingMessage) {
    const auth = req.headers.authorization ?? "";
    if (!auth.startsWith("Bearer ")) {
      throw new ComputeError(401, "required", "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential.");
    }
    if (!tokens.has(auth.slice(7))) {
      throw new ComputeError(401, "authError", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.");
    }
  }

  function checkRegion(project: string, region: string, permission: string) {
    if (project !== projectId) throw new ComputeError(403, "forbidden", `Required '${permission}' permission for 'projects/${project}'`);
    if (!regions.has(region)) throw notFound(`projects/${project}/regions/${region}`);
  }

  /** One poll of an operation: counts down its RUNNING answers, then ends it. */
  function poll(op: Operation) {
    if (op.json.status === "DONE") return op.json;
    if (op.pollsLeft > 0) op.pollsLeft--;
    if (op.pollsLeft <= 0) {
      op.finish();
      Object.assign(op.json, { status: "DONE", progress: 100, endTime: pacific(new Date()) });
    } else {
      op.json.status = "RUNNING";
    }
    return op.json;
  }

  function insert(project: string, region: string, query: URLSearchParams, resource: Record<string, unknown>, fault: GcpComputeFault | undefined) {
    checkRegion(project, region, "compute.commitments.create");
    const requestId = query.get("requestId");
    if (requestId !== null && (!UUID.test(requestId) || /^[0-]+$/.test(requestId))) {
      throw new ComputeError(400, "invalid", `Invalid value for field 'requestId': '${requestId}'. The requestId must be a valid UUID with the exception that zero UUID is not supported.`);
    }
    const previous = requestId === null ? undefined : requestIds.get(`${region}/${requestId}`);
    if (previous) return operations.get(previous)!.json;

    const name = String(resource.name ?? "");
    if (!NAME.test(name)) {
      throw new ComputeError(400, "invalid", `Invalid value for field 'resource.name': '${name}'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?|[1-9][0-9]{0,19})'`);
    }
    const plan = String(resource.plan ?? "");
    if (!(plan in PLANS)) throw new ComputeError(400, "invalid", `Invalid value for field 'resource.plan': '${plan}'. Must be one of [THIRTY_SIX_MONTH, TWELVE_MONTH]`);
    const type = String(resource.type ?? "");
    if (!COMMITMENT_TYPES.has(type)) throw new ComputeError(400, "invalid", `Invalid value for field 'resource.type': '${type}'.`);
    const category = String(resource.category ?? "MACHINE");
    const resources = Array.isArray(resource.resources) ? (resource.resources as { type?: string; amount?: string | number }[]) : [];
    const amount = (t: string) => Number(resources.find((r) => r.type === t)?.amount ?? 0);
    const vcpus = amount("VCPU");
    const memoryMb = amount("MEMORY");
    if (category === "MACHINE" && (!(vcpus > 0) || !(memoryMb > 0) || !Number.isInteger(vcpus) || !Number.isInteger(memoryMb))) {
      throw new ComputeError(400, "invalid", "Invalid value for field 'resource.resources': a commitment needs positive whole VCPU and MEMORY amounts.");
    }
    if (memoryMb % 256 !== 0) throw new ComputeError(400, "invalid", "Invalid value for field 'resource.resources[1].amount': memory must be a multiple of 256 MB.");
    if (commitments.has(`${region}/${name}`)) {
      throw new ComputeError(409, "alreadyExists", `The resource 'projects/${project}/regions/${region}/commitments/${name}' already exists`);
    }

    const now = new Date();
    const commitment = newCommitment(region, {
      name,
      description: typeof resource.description === "string" ? resource.description : undefined,
      plan,
      type,
      category,
      autoRenew: resource.autoRenew === true,
      status: "CREATING",
      statusMessage: undefined,
      resources: resources.map((r) => ({ type: String(r.type), amount: String(r.amount) })),
    });
    const committed = [...commitments.entries()]
      .filter(([key, c]) => key.startsWith(`${region}/`) && ["ACTIVE", "CREATING", "NOT_YET_ACTIVE"].includes(c.status))
      .reduce((sum, [, c]) => sum + Number(c.resources.find((r) => r.type === "VCPU")?.amount ?? 0), 0);
    const quotaError =
      options.committedCpuQuota !== undefined && committed + vcpus > options.committedCpuQuota
        ? { code: "QUOTA_EXCEEDED", message: `Quota 'COMMITTED_CPUS' exceeded.  Limit: ${options.committedCpuQuota}.0 in region ${region}.`, httpStatus: 403 }
        : undefined;
    const failure = fault && "operationError" in fault ? fault.operationError : quotaError;
    const opName = `operation-${now.getTime()}-${randomBytes(7).toString("hex").slice(0, 13)}-${randomBytes(4).toString("hex")}-${randomBytes(4).toString("hex")}`;
    const json: Record<string, unknown> = {
      kind: "compute#operation",
      id: numericId(),
      name: opName,
      operationType: "insert",
      targetLink: commitment.selfLink,
      targetId: commitment.id,
      status: "PENDING",
      user: clientEmail,
      progress: 0,
      insertTime: pacific(now),
      startTime: pacific(now),
      selfLink: `${regionUrl(region)}/operations/${opName}`,
      region: regionUrl(region),
    };
    // Compute creates the commitment whether or not anyone polls the operation.
    if (!failure) commitments.set(`${region}/${name}`, commitment);
    const op: Operation = {
      json,
      region,
      pollsLeft: server.operationPolls,
      finish: () => {
        if (failure) {
          const status = failure.httpStatus ?? 400;
          Object.assign(json, {
            error: { errors: [{ code: failure.code, message: failure.message }] },
            httpErrorStatusCode: status,
            httpErrorMessage: STATUS[status] === "PERMISSION_DENIED" ? "FORBIDDEN" : "BAD REQUEST",
          });
        } else if (commitment.status === "CREATING") {
          commitment.status = "ACTIVE";
          commitment.statusMessage = "The commitment is active, and so will apply to current resource usage.";
        }
      },
    };
    operations.set(opName, op);
    if (requestId !== null) requestIds.set(`${region}/${requestId}`, opName);
    if (op.pollsLeft <= 0) poll(op);
    return json;
  }

  async function api(req: IncomingMessage, call: GcpComputeCall, params: string[], query: URLSearchParams, payload: unknown, fault: GcpComputeFault | undefined) {
    checkAuth(req);
    const [project, where, name] = params as [string, string, string];
    switch (call) {
      case "regions.get": {
        checkRegion(project, where, "compute.regions.get");
        return {
          kind: "compute#region",
          id: String(1000 + [...regions.keys()].indexOf(where)),
          creationTimestamp: "1969-12-31T16:00:00.000-08:00",
          name: where,
          description: where,
          status: "UP",
          zones: regions.get(where)!.map((z) => `${url}/compute/v1/projects/${project}/zones/${z}`),
          selfLink: regionUrl(where),
          supportsPzs: false,
        };
      }
      case "machineTypes.get": {
        if (project !== projectId) throw new ComputeError(403, "forbidden", `Required 'compute.machineTypes.get' permission for 'projects/${project}'`);
        const machineType = machineTypes.get(name);
        if (![...regions.values()].some((zones) => zones.includes(where))) throw notFound(`projects/${project}/zones/${where}`);
        if (!machineType || (machineType.zones && !machineType.zones.includes(where))) throw notFound(`projects/${project}/zones/${where}/machineTypes/${name}`);
        return {
          kind: "compute#machineType",
          id: String(800_000 + [...machineTypes.keys()].indexOf(name)),
          creationTimestamp: "1969-12-31T16:00:00.000-08:00",
          name,
          description: `${machineType.guestCpus} vCPUs, ${machineType.memoryMb / 1024} GB RAM`,
          guestCpus: machineType.guestCpus,
          memoryMb: machineType.memoryMb,
          imageSpaceGb: 0,
          maximumPersistentDisks: 128,
          maximumPersistentDisksSizeGb: "263168",
          zone: where,
          selfLink: `${url}/compute/v1/projects/${project}/zones/${where}/machineTypes/${name}`,
          isSharedCpu: machineType.isSharedCpu === true,
          ...(machineType.accelerators ? { accelerators: machineType.accelerators } : {}),
        };
      }
      case "regionCommitments.insert":
        return insert(project, where, query, (payload ?? {}) as Record<string, unknown>, fault);
      case "regionCommitments.get": {
        checkRegion(project, where, "compute.commitments.get");
        const commitment = commitments.get(`${where}/${name}`);
        if (!commitment) throw notFound(`projects/${project}/regions/${where}/commitments/${name}`);
        return commitment;
      }
      case "regionCommitments.list": {
        checkRegion(project, where, "compute.commitments.list");
        const all = [...commitments.entries()].filter(([key]) => key.startsWith(`${where}/`)).map(([, c]) => c);
        const max = Math.min(Number(query.get("maxResults") || 500), 500);
        const offset = Number(query.get("pageToken") ? Buffer.from(query.get("pageToken")!, "base64url").toString() : 0);
        const page = all.slice(offset, offset + max);
        return {
          kind: "compute#commitmentList",
          id: `projects/${project}/regions/${where}/commitments`,
          items: page,
          ...(offset + max < all.length ? { nextPageToken: Buffer.from(String(offset + max)).toString("base64url") } : {}),
          selfLink: `${regionUrl(where)}/commitments`,
        };
      }
      case "regionOperations.get":
      case "regionOperations.wait": {
        checkRegion(project, where, "compute.regionOperations.get");
        const op = operations.get(name);
        if (!op || op.region !== where) throw notFound(`projects/${project}/regions/${where}/operations/${name}`);
        return poll(op);
      }
      default:
        throw new ComputeError(404, "notFound", `Not Found: ${req.method} ${req.url}`);
    }
  }

  function sendError(res: ServerResponse, err: unknown) {
    if (!(err instanceof ComputeError)) err = new ComputeError(500, "backendError", String(err));
    const { status, reason, message } = err as ComputeError;
    send(res, status, { error: { code: status, message, errors: [{ message, domain: "global", reason }] } });
  }

  const sockets = new Set<Socket>();
  const http = createServer((req, res) => {
    const target = new URL(req.url ?? "/", "http://localhost");
    const handle = async () => {
      if (target.pathname === "/token" && req.method === "POST") return token(req, res);
      const text = await body(req);
      let payload: unknown = undefined;
      try {
        payload = text ? JSON.parse(text) : undefined;
      } catch {
        throw new ComputeError(400, "parseError", "This API does not support parsing form-encoded input.");
      }
      const { call, params } = target.pathname.startsWith(API_PREFIX) ? route(req.method ?? "", target.pathname) : { call: "unknown" as const, params: [] };
      requests.push({ call, method: req.method ?? "", path: target.pathname, query: Object.fromEntries(target.searchParams), body: payload, bearer: hasBearer(req) });
      const fault = call === "unknown" ? undefined : takeFault(call);
      if (fault && "status" in fault) {
        throw new ComputeError(fault.status, fault.reason ?? REASON[fault.status] ?? "backendError", fault.message ?? `The test server refused this ${call} call.`);
      }
      if (fault && "drop" in fault && fault.drop === "before") return void res.destroy();
      if (fault && "hang" in fault && fault.hang === "before") return void held.add(res);
      const result = await api(req, call, params, target.searchParams, payload, fault);
      if (fault && "drop" in fault) return void res.destroy();
      if (fault && "hang" in fault) return void held.add(res);
      send(res, 200, result);
    };
    handle().catch((err) => sendError(res, err));
  });
  http.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;

  const serviceAccountKey = account.keyFile(projectId, url);

  const releaseHeld = () => {
    for (const res of held) res.destroy();
    held.clear();
  };

  const server: GcpComputeServer = {
    url,
    serviceAccountKey,
    projectId,
    get commitments() {
      return [...commitments.values()].map((c) => structuredClone(c));
    },
    requests,
    operationPolls: options.operationPolls ?? 1,
    failNext(call, fault, times = 1) {
      const queue = faults.get(call) ?? [];
      for (let i = 0; i < times; i++) queue.push(fault);
      faults.set(call, queue);
    },
    addCommitment(region, fields) {
      const commitment = newCommitment(region, fields);
      commitments.set(`${region}/${fields.name}`, commitment);
      return structuredClone(commitment);
    },
    revokeTokens() {
      tokens.clear();
    },
    reset() {
      commitments.clear();
      operations.clear();
      requestIds.clear();
      faults.clear();
      requests.length = 0;
      releaseHeld();
    },
    close: () =>
      new Promise<void>((resolve) => {
        releaseHeld();
        for (const socket of sockets) socket.destroy();
        http.close(() => resolve());
      }),
  };
  return server;
}

/** Compute reports times in the Pacific offset its control plane uses. */
function pacific(date: Date): string {
  const shifted = new Date(date.getTime() - 7 * 3_600_000);
  return shifted.toISOString().replace("Z", "-07:00");
}

function numericId(): string {
  return (1_000_000_000_000_000_000n + BigInt(randomBytes(6).readUIntBE(0, 6)) * 1000n).toString();
}

function hasBearer(req: IncomingMessage): boolean {
  return (req.headers.authorization ?? "").startsWith("Bearer ");
}


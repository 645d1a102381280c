import type { Db } from "../db/index.ts";
import { BadRequestError, ConflictError, ValidationError } from "../errors.ts";
import { errorForLog, type Logger } from "../log.ts";
import {
  claimIdempotencyKey,
  commitRecorded,
  completeIdempotencyKey,
  holdIdempotencyKey,
  idempotencyClaimSettled,
  RECORD_COMMIT_SQL,
  releaseIdempotencyKey,
} from "../idempotency/store.ts";
import { currentRequestScope } from "../db/requestScope.ts";
import { isDatabaseUnavailable, whenDatabaseAnswers } from "../db/index.ts";
import { openResponseBody, requestFingerprint, sealResponseBody, storedKeyOf, type KeyScope } from "../idempotency/seal.ts";
import type { Principal } from "../auth/principal.ts";

/** Headers of the first answer that a replay repeats. */
const REPLAYED_HEADERS = ["content-type", "etag", "location"];
/** A key running on another request is waited for this long before answering 409. */
const DEFAULT_WAIT_MS = 10_000;
const POLL_MS = 50;
/** Longer than any Beta POST takes; a claim of a crashed process is taken over after it. */
const LEASE_SECONDS = 300;
/** While the database is down, a failed request's key release is tried again this often. */
const RELEASE_RETRY_MS = 500;

interface Claim {
  /** The client's key and whose it is (in memory only, to seal the answer). */
  scope: KeyScope;
  /** What the database keeps in the key's place. */
  storedKey: string;
  /** Proof that this request holds the claim. */
  token: string;
}

/** Whose key it is: the person (any of their credentials), else the credential. */
const ownerOf = (p: Principal): string => (p.userId ? `user:${p.userId}` : `${p.kind}:${p.credentialId}`);

/**
 * `Idempotency-Key` on every Beta POST (DESIGN §12): the same key with the same body within 24 h
 * replays the first 2xx answer (status, body, ETag), another body answers 422
 * `idempotency_key_reused`, and concurrent duplicates execute once (the others wait for the
 * first and replay it). Keys live in the database, so every replica honours them.
 */
export class IdempotencyKeys {
  private claims = new WeakMap<Request, Claim>();

  constructor(private readonly db: Db, private readonly log: Logger, private readonly waitMs = DEFAULT_WAIT_MS) {}

  /** Before the handler: a Response ends the request (replay or refusal); undefined runs it. */
  async begin(request: Request, principal: Principal, body: unknown): Promise<Response | undefined> {
    if (request.method !== "POST") return;
    const key = request.headers.get("idempotency-key");
    if (key === null) return;
    // Visible ASCII only (0x21–0x7E): no space anywhere, no control character.
    if (!/^[\x21-\x7e]{1,255}$/.test(key)) {
      throw new BadRequestError("Idempotency-Key must be 1 to 255 visible ASCII characters.", { "Idempotency-Key": ["must be 1 to 255 visible ASCII characters"] }, "invalid_idempotency_key");
    }
    const url = new URL(request.url);
    const orgId = principal.orgId;
    const scope: KeyScope = { orgId, owner: ownerOf(principal), key };
    const fingerprint = requestFingerprint(scope, `${request.method} ${url.pathname}${url.search}\n${JSON.stringify(body ?? null)}`);
    const storedKey = storedKeyOf(scope);
    const deadline = Date.now() + this.waitMs;
    for (;;) {
      const claim = await claimIdempotencyKey(this.db, orgId, storedKey, fingerprint, LEASE_SECONDS);
      if (claim.kind === "claimed") {
        this.claims.set(request, { scope, storedKey, token: claim.token });
        // Every transaction of this request marks the claim as its last statement: a COMMIT
        // whose answer is lost in an outage is then known committed or not (lib/db/requestScope.ts).
        const requestScope = currentRequestScope();
        if (requestScope) {
          const token = claim.token;
          requestScope.witness = {
            record: (run, marker) => run(RECORD_COMMIT_SQL, [orgId, storedKey, token, marker]),
            committed: (marker) => commitRecorded(this.db, orgId, storedKey, token, marker),
          };
        }
        return;
      }
      if (claim.kind === "committed_unanswered") {
        throw new ConflictError(
          "The first request with this Idempotency-Key took effect, but its answer was lost; read the resource to see it rather than sending the request again.",
          "idempotency_key_committed",
        );
      }
      if (claim.kind === "reused") {
        throw new ValidationError(
          "This Idempotency-Key was already used with another request (method, path or body); use a new key for a new request.",
          { "Idempotency-Key": ["was used with another request"] },
          "idempotency_key_reused",
        );
      }
      if (claim.kind === "replay") {
        return new Response(claim.response.status === 204 || !claim.response.body ? null : openResponseBody(scope, claim.response.body), {
          status: claim.response.status,
          headers: { ...claim.response.headers, "idempotency-replayed": "true" },
        });
      }
      // Another request holds the key: wait on one light read per poll, then try to claim again.
      do {
        if (Date.now() >= deadline) {
          throw new ConflictError("A request with this Idempotency-Key is still running; retry shortly.", "idempotency_key_in_progress", { "Retry-After": "1" });
        }
        await new Promise((r) => setTimeout(r, POLL_MS));
      } while (!(await idempotencyClaimSettled(this.db, orgId, storedKey)));
    }
  }

  /** After the handler: the answer is stored before it is sent, so a retry right after replays it. */
  async finish(request: Request, response: unknown, set: { status?: unknown; headers: Record<string, unknown> }): Promise<void> {
    const claim = this.claims.get(request);
    if (!claim) return;
    this.claims.delete(request);
    this.endWitness();
    let status: number;
    let body: string;
    const headers: Record<string, string> = {};
    if (response instanceof Response) {
      status = response.status;
      body = response.body ? await response.clone().text() : "";
      for (const h of REPLAYED_HEADERS) {
        const v = response.headers.get(h) ?? set.headers[h];
        if (v != null) headers[h] = String(v);
      }
    } else {
      status = typeof set.status === "number" ? set.status : 200;
      body = response === undefined || response === null ? "" : typeof response === "string" ? response : JSON.stringify(response);
      for (const h of REPLAYED_HEADERS) if (set.headers[h] != null) headers[h] = String(set.headers[h]);
      if (!headers["content-type"] && body) headers["content-type"] = typeof response === "string" ? "text/plain; charset=utf-8" : "application/json";
    }
    if (status < 200 || status >= 300) return this.release(request, claim);
    const { orgId } = claim.scope;
    try {
      const stored = await completeIdempotencyKey(this.db, orgId, claim.storedKey, claim.token, { status, headers, body: body && sealResponseBody(claim.scope, body) });
      if (!stored) this.log.warn("idempotency claim was taken over before its answer was stored", { org_id: orgId });
    } catch (e) {
      // The operation ran: the client still gets its answer, and the key is held (a retry gets 409, never a second run).
      this.log.error("idempotency answer could not be stored", { org_id: orgId, error: errorForLog(e) });
      await holdIdempotencyKey(this.db, orgId, claim.storedKey, claim.token).catch((e2) => this.log.error("idempotency key hold failed", { error: errorForLog(e2) }));
    }
  }

  /** The request failed: nothing was written, so its key may run again. */
  async failed(request: Request): Promise<void> {
    const claim = this.claims.get(request);
    if (!claim) return;
    this.claims.delete(request);
    this.endWitness();
    await this.release(request, claim);
  }

  /** The claim's own statements (its answer, its release) are not the request's writes. */
  private endWitness() {
    const scope = currentRequestScope();
    if (scope) scope.witness = undefined;
  }

  /**
   * Frees the key (unless the request committed something). While the database is unreachable
   * it is retried in the background until the claim's lease would lapse anyway, so a retry
   * after the outage runs at once instead of waiting out the lease.
   */
  private async release(_request: Request, claim: Claim): Promise<void> {
    const attempt = () => releaseIdempotencyKey(this.db, claim.scope.orgId, claim.storedKey, claim.token);
    const failed = (e: unknown) => void this.log.error("idempotency key release failed", { error: errorForLog(e) });
    try {
      await attempt();
    } catch (e) {
      if (!isDatabaseUnavailable(e)) return failed(e);
      void whenDatabaseAnswers(attempt, { everyMs: RELEASE_RETRY_MS, forMs: LEASE_SECONDS * 1000 }).catch(failed);
    }
  }
}

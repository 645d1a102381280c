/**
 * A GCP service-account key file, checked once for both its uses: the API refuses a bad one (422)
 * and the BigQuery reader fails with cause "credentials", neither echoing the key.
 */
import { createPrivateKey } from "node:crypto";
import { LOOPBACK_HOSTS } from "../hosts.ts";
import { ConnectionFailure } from "./source.ts";

export interface ServiceAccountKey {
  client_email: string;
  private_key: string;
  /** Google's token endpoint unless the key names its own (private or emulated endpoints). */
  token_uri?: string;
}

/** The key file's fields the client needs, checked so a bad key fails as "credentials" without echoing it. */
export function parseServiceAccountKey(text: string): ServiceAccountKey {
  let key: Record<string, unknown>;
  try {
    key = JSON.parse(text);
  } catch {
    throw new ConnectionFailure("credentials", "The service-account key is not valid JSON.");
  }
  if (!key || typeof key !== "object" || typeof key.client_email !== "string" || typeof key.private_key !== "string") {
    throw new ConnectionFailure("credentials", "The service-account key has no client_email or private_key; use the JSON key file of a service account.");
  }
  if (key.type !== undefined && key.type !== "service_account") {
    throw new ConnectionFailure("credentials", "The key is not a service-account key; use the JSON key file of a service account.");
  }
  try {
    createPrivateKey(key.private_key);
  } catch {
    throw new ConnectionFailure("credentials", "The service-account key's private_key is not a PEM private key.");
  }
  if (key.token_uri !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(String(key.token_uri));
    } catch {}
    const loopback = url?.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname);
    if (!url || (url.protocol !== "https:" && !loopback)) {
      throw new ConnectionFailure("credentials", "The service-account key's token_uri must be an https URL.");
    }
  }
  return key as unknown as ServiceAccountKey;
}

/** google-auth-library posts every service-account grant here, whatever the key's token_uri says. */
export const GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token";

interface TokenTransport {
  transporter: { interceptors: { request: { add(interceptor: { resolved: (request: { url: string | URL }) => Promise<unknown> }): unknown } } };
}

/**
 * Keys for private or emulated endpoints name their own token endpoint: the auth client's token
 * requests go there instead of Google's (BigQuery reader and Compute purchaser alike), through
 * `fetch` when given (lib/egress.ts: only the token endpoint's checked addresses are called).
 */
export async function useKeyTokenEndpoint(client: Promise<unknown>, key: ServiceAccountKey | undefined, fetch?: (input: string | URL | Request, init?: RequestInit) => Promise<Response>): Promise<void> {
  if (!key?.token_uri || key.token_uri === GOOGLE_TOKEN_URL) return;
  const tokenUrl = new URL(key.token_uri);
  const auth = (await client) as TokenTransport;
  auth.transporter.interceptors.request.add({
    resolved: async (request) => (request.url.toString() === GOOGLE_TOKEN_URL ? { ...request, url: tokenUrl, ...(fetch ? { fetchImplementation: fetch } : {}) } : request),
  });
}

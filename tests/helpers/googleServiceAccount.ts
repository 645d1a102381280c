/**
 * A Google service account for loopback servers: its key file (whose token_uri points at the
 * server) and the OAuth2 token endpoint's answer to the JWT-bearer grant, verifying the
 * assertion's RS256 signature against the key, as Google's token endpoint does.
 */
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { importSPKI, jwtVerify } from "jose";

const GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token";
const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";

export interface GoogleServiceAccount {
  clientEmail: string;
  /** Access tokens issued (a server checks bearer tokens against it; clear() revokes them). */
  tokens: Set<string>;
  /** The key file (JSON text) for `projectId`, its auth and token URIs under `base`. */
  keyFile(projectId: string, base: string): string;
  /** The token endpoint's answer to a form body sent to `${base}/token`. */
  grant(form: URLSearchParams, base: string): Promise<{ status: number; body: Record<string, unknown> }>;
}

export async function googleServiceAccount(clientEmail: string): Promise<GoogleServiceAccount> {
  const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const verifyKey = await importSPKI(publicKey.export({ type: "spki", format: "pem" }).toString(), "RS256");
  const tokens = new Set<string>();
  const oauthError = (error: string, description: string) => ({ status: 400, body: { error, error_description: description } });
  return {
    clientEmail,
    tokens,
    keyFile: (projectId, base) =>
      JSON.stringify({
        type: "service_account",
        project_id: projectId,
        private_key_id: randomBytes(20).toString("hex"),
        private_key: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
        client_email: clientEmail,
        client_id: String(100_000_000_000_000_000_000n + BigInt(randomBytes(6).readUIntBE(0, 6))),
        auth_uri: `${base}/auth`,
        token_uri: `${base}/token`,
      }),
    async grant(form, base) {
      if (form.get("grant_type") !== JWT_BEARER) return oauthError("unsupported_grant_type", "Invalid grant_type: " + form.get("grant_type"));
      let claims: Record<string, unknown>;
      try {
        ({ payload: claims } = await jwtVerify(form.get("assertion") ?? "", verifyKey, { algorithms: ["RS256"], audience: [GOOGLE_TOKEN_AUDIENCE, `${base}/token`] }));
      } catch {
        return oauthError("invalid_grant", "Invalid JWT Signature.");
      }
      if (claims.iss !== clientEmail) return oauthError("invalid_grant", "Invalid grant: account not found");
      if (typeof claims.scope !== "string" || !claims.scope.split(" ").some((s) => s.startsWith("https://www.googleapis.com/auth/"))) {
        return oauthError("invalid_scope", "Invalid OAuth scope or ID token audience provided.");
      }
      const accessToken = `ya29.test-${randomBytes(24).toString("base64url")}`;
      tokens.add(accessToken);
      return { status: 200, body: { access_token: accessToken, expires_in: 3599, token_type: "Bearer" } };
    },
  };
}

/** Prefixes of the service's OAuth secrets (recognisable by secret scanners; all stored hashed). */
export const ACCESS_TOKEN_PREFIX = "cot";
export const REFRESH_TOKEN_PREFIX = "cor";
export const CODE_PREFIX = "coc";
export const SESSION_PREFIX = "cos";
export const CLIENT_ID_PREFIX = "cid";

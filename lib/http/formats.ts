// The OpenAPI plugin's bundled TypeMap replaces TypeBox's `uuid` format, when it loads, with a
// Zod check that builds a Zod schema on every call (~13 % of the CPU of an authenticated GET whose
// response holds two ids). Imported first here, so the cheap check below is the one that stays.
import "@elysiajs/openapi";
import { FormatRegistry } from "@sinclair/typebox";

/**
 * A UUID in its canonical text form, any version or variant (JSON Schema's `uuid` format, RFC
 * 9562 §4): 8-4-4-4-12 hex digits, either case. It is what PostgreSQL's `uuid` type stores and
 * prints, and what `isUuid` (lib/orgs) accepts.
 */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** TypeBox's `format: "uuid"` (path, query and body parameters, and responses). */
export function registerFormats(): void {
  FormatRegistry.Set("uuid", (value) => UUID_PATTERN.test(value));
}

registerFormats();

/**
 * A UUID in its canonical text form, any version or variant (JSON Schema's `uuid` format, RFC
 * 9562 §4): 8-4-4-4-12 hex digits, either case. It is what PostgreSQL's `uuid` type stores and
 * prints. The one definition: path and query checks, TypeBox's `uuid` format and the CLI use it.
 */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (s: string): boolean => UUID_PATTERN.test(s);

import { PreconditionFailedError } from "./errors.ts";

/**
 * The stored version of the row a returned document was built from (estimates, templates):
 * the HTTP layer turns it into the response's ETag. Kept beside the document, not in it, so
 * the spec's response bodies stay as they are.
 */
const versions = new WeakMap<object, number>();

export function withVersion<T extends object>(document: T, version: number): T {
  versions.set(document, version);
  return document;
}

export function versionOf(document: unknown): number | undefined {
  return document && typeof document === "object" ? versions.get(document) : undefined;
}

/**
 * `If-Match` as the versions it accepts: `*` (any) is `undefined` like no header at all. Checked
 * inside the write's transaction against the locked row, so two writers with the same ETag cannot
 * both pass.
 */
export type ExpectedVersions = readonly number[] | undefined;

export function checkVersion(current: number, expected: ExpectedVersions): void {
  if (expected && !expected.includes(current)) throw new PreconditionFailedError();
}

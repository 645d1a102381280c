/**
 * A hint to the garbage collector during long streams (a million-row CSV export allocates far
 * more garbage than it keeps). Bun exposes one; elsewhere this is a no-op.
 */
const bun = (globalThis as any).Bun as undefined | { gc(force: boolean): void };
// A full collection of a heap that holds only the stream's live batch takes milliseconds.

export function collectGarbageHint(): void {
  bun?.gc(true);
}

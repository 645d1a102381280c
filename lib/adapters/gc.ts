/**
 * Hints to the garbage collector during long streams (a million-row CSV export or import
 * allocates far more garbage than it keeps). Bun exposes one; elsewhere these are no-ops.
 */
const bun = (globalThis as any).Bun as undefined | { gc(force: boolean): void };

/** A full collection now: of a heap that holds only the stream's live batch, milliseconds. */
export function collectGarbageHint(): void {
  bun?.gc(true);
}

/**
 * Collects only when the process's resident memory passes `budgetBytes`: a stream then runs
 * between collections as long as memory allows instead of paying for one every few MB. When
 * what is live exceeds the budget, the threshold moves above it rather than collecting per call.
 */
export function memoryBudget(budgetBytes: number): () => void {
  let threshold = budgetBytes;
  return () => {
    if (!bun || process.memoryUsage.rss() < threshold) return;
    bun.gc(true);
    const after = process.memoryUsage.rss();
    threshold = after > budgetBytes - (16 << 20) ? after + (32 << 20) : budgetBytes;
  };
}

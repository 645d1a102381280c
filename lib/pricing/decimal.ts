/** Exact decimal arithmetic on provider prices (they are decimals; binary floating point is not). */

/** A number's shortest decimal representation as an integer and a scale (value = n / 10^s). */
function decimal(x: number): { n: bigint; s: number } {
  const [mantissa, exp] = x.toExponential().split("e") as [string, string];
  const [int, frac = ""] = mantissa.split(".") as [string, string?];
  const digits = BigInt(int + frac);
  const s = frac.length - Number(exp);
  return s >= 0 ? { n: digits, s } : { n: digits * 10n ** BigInt(-s), s: 0 };
}

/**
 * Σ a × b, computed exactly on the decimal values of the numbers: a machine price built from the
 * provider's decimal rates stays the decimal Google would bill (0.194236, not 0.19423600000000002).
 */
export function exactSum(terms: [number, number][]): number {
  const parts = terms.map(([a, b]) => {
    const x = decimal(a);
    const y = decimal(b);
    return { n: x.n * y.n, s: x.s + y.s };
  });
  const s = Math.max(0, ...parts.map((p) => p.s));
  const n = parts.reduce((acc, p) => acc + p.n * 10n ** BigInt(s - p.s), 0n);
  const digits = (n < 0n ? -n : n).toString().padStart(s + 1, "0");
  return Number(`${n < 0n ? "-" : ""}${digits.slice(0, digits.length - s)}.${digits.slice(digits.length - s) || "0"}`);
}

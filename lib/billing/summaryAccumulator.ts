/**
 * The report summaries of an import, added up while its rows stream past (instead of a second
 * pass of PostgreSQL over the rows just written: ~6 s per million rows). Sums are exact: each
 * amount is read as the numeric(30,10) the database stores (10 decimals, half away from zero)
 * and added as a scaled BigInt, so the totals equal SUM() over the stored rows to the last digit
 * (tests/billing/summaries.test.ts compares both on generated data).
 *
 * The money concepts are defined once, in SQL (`SQLX` in queries.ts: on-demand, commitment and
 * other charges, the covered on-demand equivalent); `add` restates them for rows in flight, and
 * the same test fails as soon as the two disagree (summaries.ts builds the SQL side from SQLX).
 */
import type { DbOrTx } from "../db/index.ts";
import { queryRows, type Provider } from "./sql.ts";
import { deleteSummaries, type BillingPeriodKey } from "./summaries.ts";
import { detach } from "./csvReader.ts";

const DECIMALS = 10;
const SCALE = 10n ** BigInt(DECIMALS);
const PLAIN = /^([+-]?)(\d*)(?:\.(\d*))?$/;
const WITH_EXPONENT = /^([+-]?)(\d*)(?:\.(\d*))?[eE]([+-]?\d+)$/;

/** A FOCUS decimal (already validated) as an integer count of 10⁻¹⁰, rounded like numeric(30,10). */
export function scaledDecimal(text: string): bigint {
  let m = PLAIN.exec(text);
  let exponent = 0;
  if (!m) {
    m = WITH_EXPONENT.exec(text);
    if (!m) throw new Error(`not a decimal: ${text}`);
    exponent = Number(m[4]);
  }
  const negative = m[1] === "-";
  const digits = `${m[2] ?? ""}${m[3] ?? ""}` || "0";
  const shift = exponent - (m[3]?.length ?? 0) + DECIMALS;
  let v: bigint;
  if (shift >= 0) v = BigInt(digits) * 10n ** BigInt(shift);
  else {
    const div = 10n ** BigInt(-shift);
    const n = BigInt(digits);
    v = n / div;
    if ((n % div) * 2n >= div) v += 1n;
  }
  return negative ? -v : v;
}

/** A scaled amount as numeric text with 10 decimals. */
export function decimalText(v: bigint): string {
  const negative = v < 0n;
  const a = negative ? -v : v;
  return `${negative ? "-" : ""}${a / SCALE}.${(a % SCALE).toString().padStart(DECIMALS, "0")}`;
}

/** What the summaries need of one imported row (text as stored; amounts as validated). */
export interface SummaryInput {
  provider: Provider;
  billingAccountId: string;
  month: string;
  currency: string;
  accountId: string;
  accountName: string | null;
  serviceCategory: string | null;
  serviceName: string | null;
  /** Charge period start, ISO 8601 UTC. */
  chargeStart: string;
  chargeCategory: string;
  commitmentId: string | null;
  commitmentStatus: string | null;
  effectiveCost: string;
  billedCost: string;
  listCost: string | null;
  contractedCost: string | null;
}

/**
 * Exact sums without a BigInt per addition (those made ~5 KB of garbage per row): each amount
 * is split into its integer part and its 10-decimal fraction as an integer, both exact doubles,
 * added separately and carried before they could leave the exact range.
 */
const FRACTION_UNIT = 1e10;
const CARRY_AT = 1e15;
const MAX_EXACT_INTEGER_DIGITS = 15;
const SIMPLE = /^([+-]?)(\d*)(?:\.(\d*))?$/;

/** Adds `text` to sums[i] (integer part) and sums[i + n] (fraction); false when it cannot be exact. */
function addDecimal(sums: Float64Array, i: number, n: number, text: string, negate = false): boolean {
  let int: number;
  let frac: number;
  const m = SIMPLE.exec(text);
  if (m && (m[2]?.length ?? 0) <= MAX_EXACT_INTEGER_DIGITS) {
    const digits = m[3] ?? "";
    int = m[2] ? Number(m[2]) : 0;
    frac = digits.length <= DECIMALS ? Number(digits.padEnd(DECIMALS, "0")) : Number(digits.slice(0, DECIMALS)) + (digits.charCodeAt(DECIMALS) >= 53 ? 1 : 0);
    if (frac === FRACTION_UNIT) {
      int += 1;
      frac = 0;
    }
    if (m[1] === "-") {
      int = -int;
      frac = -frac;
    }
  } else {
    const v = scaledDecimal(text);
    const whole = v / SCALE;
    if (whole > 10n ** BigInt(MAX_EXACT_INTEGER_DIGITS) || whole < -(10n ** BigInt(MAX_EXACT_INTEGER_DIGITS))) return false;
    int = Number(whole);
    frac = Number(v - whole * SCALE);
  }
  if (negate) {
    int = -int;
    frac = -frac;
  }
  sums[i] += int;
  sums[i + n] += frac;
  if (Math.abs(sums[i + n]!) >= CARRY_AT) {
    const carry = Math.trunc(sums[i + n]! / FRACTION_UNIT);
    sums[i] += carry;
    sums[i + n] -= carry * FRACTION_UNIT;
  }
  return Math.abs(sums[i]!) < Number.MAX_SAFE_INTEGER / 2;
}

/** Sum `i` of `n` as numeric text with 10 decimals. */
function sumText(sums: Float64Array, i: number, n: number): string {
  return decimalText(BigInt(sums[i]!) * SCALE + BigInt(sums[i + n]!));
}

interface Group {
  keys: Record<string, string | null>;
  /** n integer parts, then n fractions */
  sums: Float64Array;
}

const SEP = "\u0000";
const NULL = "\u0001";
const k = (v: string | null) => (v === null ? NULL : v);
const COST_COLUMNS = ["ondemand_cost", "commitment_cost", "other_cost", "total_cost", "billed_cost"] as const;
const COMMITMENT_COLUMNS = ["used_cost", "unused_cost", "covered_ondemand_cost", "savings"] as const;
const COST_SUMS = COST_COLUMNS.length;
const COMMITMENT_SUMS = COMMITMENT_COLUMNS.length;

export class SummaryAccumulator {
  private readonly cost = new Map<string, Group>();
  private readonly commitment = new Map<string, Group>();
  /** False once an amount was too large to add exactly here: the import then sums in SQL. */
  exact = true;

  add(r: SummaryInput): void {
    const day = r.chargeStart.slice(0, 10);
    const base = `${r.provider}${SEP}${r.billingAccountId}${SEP}${r.month}${SEP}${r.currency}${SEP}`;
    const usage = r.chargeCategory === "Usage";
    // Which of ondemand / commitment / other the row's EffectiveCost goes to.
    const bucket = usage ? (r.commitmentId === null ? 0 : 1) : r.chargeCategory === "Purchase" ? 1 : 2;
    this.addCost(this.group(this.cost, `a${SEP}${base}${r.accountId}${SEP}${k(r.accountName)}`, COST_SUMS, r, "account", day), bucket, r);
    this.addCost(this.group(this.cost, `s${SEP}${base}${k(r.serviceCategory)}${SEP}${k(r.serviceName)}`, COST_SUMS, r, "service", day), bucket, r);
    this.addCost(this.group(this.cost, `d${SEP}${base}${day}`, COST_SUMS, r, "day", day), bucket, r);

    if (!usage || r.commitmentId === null || (r.commitmentStatus !== "Used" && r.commitmentStatus !== "Unused")) return;
    const cbase = `${base}${r.commitmentId}${SEP}`;
    this.addCommitment(this.group(this.commitment, `a${SEP}${cbase}${r.accountId}`, COMMITMENT_SUMS, r, "account", day), r);
    this.addCommitment(this.group(this.commitment, `s${SEP}${cbase}${k(r.serviceName)}`, COMMITMENT_SUMS, r, "service", day), r);
    this.addCommitment(this.group(this.commitment, `d${SEP}${cbase}${day}${SEP}${r.accountId}`, COMMITMENT_SUMS, r, "day_account", day), r);
  }

  private group(map: Map<string, Group>, key: string, n: number, r: SummaryInput, grain: string, day: string): Group {
    let g = map.get(key);
    if (g) return g;
    // Kept until the import ends: copies, not substrings of the reader's buffer (see detach).
    const keys: Record<string, string | null> = { provider: r.provider, billing_account_id: detach(r.billingAccountId), month: r.month, currency: detach(r.currency), grain };
    const commitment = map === this.commitment;
    if (commitment) keys.commitment_id = detach(r.commitmentId);
    if (grain === "account") {
      keys.account_id = detach(r.accountId);
      if (!commitment) keys.account_name = detach(r.accountName);
    } else if (grain === "service") {
      if (!commitment) keys.service_category = detach(r.serviceCategory);
      keys.service_name = detach(r.serviceName);
    } else {
      keys.day = day;
      if (grain === "day_account") keys.account_id = detach(r.accountId);
    }
    g = { keys, sums: new Float64Array(2 * n) };
    map.set(key, g);
    return g;
  }

  private addCost(g: Group, bucket: number, r: SummaryInput) {
    const ok = addDecimal(g.sums, bucket, COST_SUMS, r.effectiveCost) && addDecimal(g.sums, 3, COST_SUMS, r.effectiveCost) && addDecimal(g.sums, 4, COST_SUMS, r.billedCost);
    if (!ok) this.exact = false;
  }

  private addCommitment(g: Group, r: SummaryInput) {
    let ok: boolean;
    if (r.commitmentStatus === "Used") {
      // Covered on-demand: ListCost, else a non-zero ContractedCost, else EffectiveCost.
      const covered = r.listCost ?? (r.contractedCost !== null && scaledDecimal(r.contractedCost) !== 0n ? r.contractedCost : r.effectiveCost);
      ok =
        addDecimal(g.sums, 0, COMMITMENT_SUMS, r.effectiveCost) &&
        addDecimal(g.sums, 2, COMMITMENT_SUMS, covered) &&
        addDecimal(g.sums, 3, COMMITMENT_SUMS, covered) &&
        addDecimal(g.sums, 3, COMMITMENT_SUMS, r.effectiveCost, true);
    } else ok = addDecimal(g.sums, 1, COMMITMENT_SUMS, r.effectiveCost);
    if (!ok) this.exact = false;
  }

  /** Groups held (memory grows with these, not with the rows). */
  get size(): number {
    return this.cost.size + this.commitment.size;
  }

  /**
   * Writes the groups of `periods` (the import's: their earlier summaries are deleted first)
   * inside the caller's transaction, a few thousand rows per statement.
   */
  async write(tx: DbOrTx, orgId: string, periods: BillingPeriodKey[], batch = 5000): Promise<void> {
    if (!periods.length) return;
    await deleteSummaries(tx, orgId, periods);
    const rowsOf = (groups: Map<string, Group>, columns: readonly string[]) =>
      [...groups.values()].map((g) => ({ ...g.keys, ...Object.fromEntries(columns.map((c, i) => [c, sumText(g.sums, i, columns.length)])) }));
    const inBatches = async (sql: string, rows: object[]) => {
      for (let i = 0; i < rows.length; i += batch) await queryRows(tx, sql, [orgId, JSON.stringify(rows.slice(i, i + batch))]);
    };
    // The account grain arrives split by name: GROUP BY folds it back, max() picks the name.
    await inBatches(
      `INSERT INTO billing_cost_summaries (org_id, provider, billing_account_id, month, grain, currency, account_id, account_name, service_category, service_name, day,
         ondemand_cost, commitment_cost, other_cost, total_cost, billed_cost)
       SELECT $1::uuid, r.provider, r.billing_account_id, r.month, r.grain, r.currency, r.account_id, max(r.account_name), r.service_category, r.service_name, r.day,
         SUM(r.ondemand_cost), SUM(r.commitment_cost), SUM(r.other_cost), SUM(r.total_cost), SUM(r.billed_cost)
       FROM json_to_recordset($2::json) AS r(provider text, billing_account_id text, month date, grain text, currency text, account_id text, account_name text,
         service_category text, service_name text, day date, ondemand_cost numeric, commitment_cost numeric, other_cost numeric, total_cost numeric, billed_cost numeric)
       GROUP BY r.provider, r.billing_account_id, r.month, r.grain, r.currency, r.account_id, r.service_category, r.service_name, r.day`,
      rowsOf(this.cost, COST_COLUMNS),
    );
    await inBatches(
      `INSERT INTO commitment_usage_summaries (org_id, provider, billing_account_id, month, grain, currency, commitment_id, account_id, service_name, day,
         used_cost, unused_cost, covered_ondemand_cost, savings)
       SELECT $1::uuid, r.provider, r.billing_account_id, r.month, r.grain, r.currency, r.commitment_id, r.account_id, r.service_name, r.day,
         r.used_cost, r.unused_cost, r.covered_ondemand_cost, r.savings
       FROM json_to_recordset($2::json) AS r(provider text, billing_account_id text, month date, grain text, currency text, commitment_id text, account_id text,
         service_name text, day date, used_cost numeric, unused_cost numeric, covered_ondemand_cost numeric, savings numeric)`,
      rowsOf(this.commitment, COMMITMENT_COLUMNS),
    );
  }
}

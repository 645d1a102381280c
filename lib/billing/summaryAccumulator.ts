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
const POW10 = Array.from({ length: DECIMALS + 1 }, (_, i) => 10 ** i);

/** The last amount read by `readAmount`: integer part and 10-decimal fraction, same sign. */
let amountInt = 0;
let amountFrac = 0;

/** Reads a validated FOCUS decimal into amountInt/amountFrac; false when it cannot be exact here. */
function readAmount(text: string): boolean {
  const len = text.length;
  let start = 0;
  const c0 = text.charCodeAt(0);
  if (c0 === 45 || c0 === 43) start = 1;
  if (text.indexOf("e", start) < 0 && text.indexOf("E", start) < 0) {
    const dot = text.indexOf(".", start);
    const intEnd = dot < 0 ? len : dot;
    if (intEnd - start <= MAX_EXACT_INTEGER_DIGITS) {
      let int = intEnd > start ? Number(text.slice(start, intEnd)) : 0;
      let frac = 0;
      const fracLen = dot < 0 ? 0 : len - dot - 1;
      if (fracLen > 0) {
        if (fracLen <= DECIMALS) frac = Number(text.slice(dot + 1)) * POW10[DECIMALS - fracLen]!;
        else {
          // Rounded half away from zero at 10 decimals, like numeric(30,10).
          frac = Number(text.slice(dot + 1, dot + 1 + DECIMALS)) + (text.charCodeAt(dot + 1 + DECIMALS) >= 53 ? 1 : 0);
          if (frac === FRACTION_UNIT) {
            int += 1;
            frac = 0;
          }
        }
      }
      if (c0 === 45) {
        int = -int;
        frac = -frac;
      }
      amountInt = int;
      amountFrac = frac;
      return true;
    }
  }
  const v = scaledDecimal(text);
  const whole = v / SCALE;
  if (whole > 10n ** BigInt(MAX_EXACT_INTEGER_DIGITS) || whole < -(10n ** BigInt(MAX_EXACT_INTEGER_DIGITS))) return false;
  amountInt = Number(whole);
  amountFrac = Number(v - whole * SCALE);
  return true;
}

/** Adds (int, frac) to sums[i] (integer part) and sums[i + n] (fraction); false when the sum leaves the exact range. */
function addAmount(sums: Float64Array, i: number, n: number, int: number, frac: number): boolean {
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

/** The groups of one (provider, billing account, month, currency), by the rest of their key. */
interface PeriodGroups {
  provider: Provider;
  billingAccountId: string;
  month: string;
  currency: string;
  costByAccount: Map<string, Group>;
  costByService: Map<string, Group>;
  costByDay: Map<string, Group>;
  commitmentByAccount: Map<string, Group>;
  commitmentByService: Map<string, Group>;
  commitmentByDayAccount: Map<string, Group>;
  lastAccount: Group | null;
  lastAccountId: string | null;
  lastAccountName: string | null;
  lastService: Group | null;
  lastServiceName: string | null;
  lastServiceCategory: string | null;
  lastDay: Group | null;
  lastDayKey: string | null;
}

const SEP = "\u0000";
const NULL = "\u0001";
const k = (v: string | null) => (v === null ? NULL : v);
const COST_COLUMNS = ["ondemand_cost", "commitment_cost", "other_cost", "total_cost", "billed_cost"] as const;
const COMMITMENT_COLUMNS = ["used_cost", "unused_cost", "covered_ondemand_cost", "savings"] as const;
const COST_SUMS = COST_COLUMNS.length;
const COMMITMENT_SUMS = COMMITMENT_COLUMNS.length;

export class SummaryAccumulator {
  private readonly periods = new Map<string, PeriodGroups>();
  /** The period of the previous row: consecutive rows nearly always share it. */
  private last: PeriodGroups | null = null;
  private groups = 0;
  /** False once an amount was too large to add exactly here: the import then sums in SQL. */
  exact = true;

  add(r: SummaryInput): void {
    if (!this.exact) return;
    const p = this.periodOf(r);
    const day = r.chargeStart.slice(0, 10);
    const usage = r.chargeCategory === "Usage";
    // Which of ondemand / commitment / other the row's EffectiveCost goes to.
    const bucket = usage ? (r.commitmentId === null ? 0 : 1) : r.chargeCategory === "Purchase" ? 1 : 2;
    if (!readAmount(r.effectiveCost)) return void (this.exact = false);
    const effInt = amountInt;
    const effFrac = amountFrac;
    if (!readAmount(r.billedCost)) return void (this.exact = false);
    const billedInt = amountInt;
    const billedFrac = amountFrac;
    const costGroups = [
      p.lastAccount && p.lastAccountId === r.accountId && p.lastAccountName === r.accountName
        ? p.lastAccount
        : this.group(p.costByAccount, `${r.accountId}${SEP}${k(r.accountName)}`, COST_SUMS, p, r, "account", day, false),
      p.lastService && p.lastServiceName === r.serviceName && p.lastServiceCategory === r.serviceCategory
        ? p.lastService
        : this.group(p.costByService, `${k(r.serviceCategory)}${SEP}${k(r.serviceName)}`, COST_SUMS, p, r, "service", day, false),
      p.lastDay && p.lastDayKey === day ? p.lastDay : this.group(p.costByDay, day, COST_SUMS, p, r, "day", day, false),
    ];
    // Consecutive rows often share an account, service or day: the same groups without a key built.
    p.lastAccount = costGroups[0]!;
    p.lastAccountId = r.accountId;
    p.lastAccountName = r.accountName;
    p.lastService = costGroups[1]!;
    p.lastServiceName = r.serviceName;
    p.lastServiceCategory = r.serviceCategory;
    p.lastDay = costGroups[2]!;
    p.lastDayKey = day;
    for (const g of costGroups) {
      const ok = addAmount(g.sums, bucket, COST_SUMS, effInt, effFrac) && addAmount(g.sums, 3, COST_SUMS, effInt, effFrac) && addAmount(g.sums, 4, COST_SUMS, billedInt, billedFrac);
      if (!ok) return void (this.exact = false);
    }

    if (!usage || r.commitmentId === null || (r.commitmentStatus !== "Used" && r.commitmentStatus !== "Unused")) return;
    const commitmentGroups = [
      this.group(p.commitmentByAccount, `${r.commitmentId}${SEP}${r.accountId}`, COMMITMENT_SUMS, p, r, "account", day, true),
      this.group(p.commitmentByService, `${r.commitmentId}${SEP}${k(r.serviceName)}`, COMMITMENT_SUMS, p, r, "service", day, true),
      this.group(p.commitmentByDayAccount, `${r.commitmentId}${SEP}${day}${SEP}${r.accountId}`, COMMITMENT_SUMS, p, r, "day_account", day, true),
    ];
    if (r.commitmentStatus === "Used") {
      // Covered on-demand: ListCost, else a non-zero ContractedCost, else EffectiveCost.
      const covered = r.listCost ?? (r.contractedCost !== null && scaledDecimal(r.contractedCost) !== 0n ? r.contractedCost : r.effectiveCost);
      if (!readAmount(covered)) return void (this.exact = false);
      for (const g of commitmentGroups) {
        const ok =
          addAmount(g.sums, 0, COMMITMENT_SUMS, effInt, effFrac) &&
          addAmount(g.sums, 2, COMMITMENT_SUMS, amountInt, amountFrac) &&
          addAmount(g.sums, 3, COMMITMENT_SUMS, amountInt, amountFrac) &&
          addAmount(g.sums, 3, COMMITMENT_SUMS, -effInt, -effFrac);
        if (!ok) return void (this.exact = false);
      }
    } else {
      for (const g of commitmentGroups) if (!addAmount(g.sums, 1, COMMITMENT_SUMS, effInt, effFrac)) return void (this.exact = false);
    }
  }

  private periodOf(r: SummaryInput): PeriodGroups {
    const last = this.last;
    if (last && last.billingAccountId === r.billingAccountId && last.month === r.month && last.currency === r.currency && last.provider === r.provider) return last;
    const key = `${r.provider}${SEP}${r.billingAccountId}${SEP}${r.month}${SEP}${r.currency}`;
    let p = this.periods.get(key);
    if (!p) {
      // Kept until the import ends: copies, not substrings of the reader's buffer (see detach).
      p = {
        provider: r.provider,
        billingAccountId: detach(r.billingAccountId),
        month: r.month,
        currency: detach(r.currency),
        costByAccount: new Map(),
        costByService: new Map(),
        costByDay: new Map(),
        commitmentByAccount: new Map(),
        commitmentByService: new Map(),
        commitmentByDayAccount: new Map(),
        lastAccount: null,
        lastAccountId: null,
        lastAccountName: null,
        lastService: null,
        lastServiceName: null,
        lastServiceCategory: null,
        lastDay: null,
        lastDayKey: null,
      };
      this.periods.set(detach(key), p);
    }
    return (this.last = p);
  }

  private group(map: Map<string, Group>, key: string, n: number, p: PeriodGroups, r: SummaryInput, grain: string, day: string, commitment: boolean): Group {
    let g = map.get(key);
    if (g) return g;
    const keys: Record<string, string | null> = { provider: p.provider, billing_account_id: p.billingAccountId, month: p.month, currency: p.currency, grain };
    if (commitment) keys.commitment_id = detach(r.commitmentId);
    if (grain === "account") {
      keys.account_id = detach(r.accountId);
      if (!commitment) keys.account_name = detach(r.accountName);
    } else if (grain === "service") {
      if (!commitment) keys.service_category = detach(r.serviceCategory);
      keys.service_name = detach(r.serviceName);
    } else {
      keys.day = detach(day);
      if (grain === "day_account") keys.account_id = detach(r.accountId);
    }
    g = { keys, sums: new Float64Array(2 * n) };
    map.set(detach(key), g);
    this.groups++;
    return g;
  }

  /** Groups held (memory grows with these, not with the rows). */
  get size(): number {
    return this.groups;
  }

  /**
   * Writes the groups of `periods` (the import's: their earlier summaries are deleted first)
   * inside the caller's transaction, a few thousand rows per statement.
   */
  async write(tx: DbOrTx, orgId: string, periods: BillingPeriodKey[], batch = 5000): Promise<void> {
    if (!periods.length) return;
    await deleteSummaries(tx, orgId, periods);
    const all = [...this.periods.values()];
    const cost = all.flatMap((p) => [...p.costByAccount.values(), ...p.costByService.values(), ...p.costByDay.values()]);
    const commitment = all.flatMap((p) => [...p.commitmentByAccount.values(), ...p.commitmentByService.values(), ...p.commitmentByDayAccount.values()]);
    const rowsOf = (groups: Group[], columns: readonly string[]) =>
      groups.map((g) => ({ ...g.keys, ...Object.fromEntries(columns.map((c, i) => [c, sumText(g.sums, i, columns.length)])) }));
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
      rowsOf(cost, COST_COLUMNS),
    );
    await inBatches(
      `INSERT INTO commitment_usage_summaries (org_id, provider, billing_account_id, month, grain, currency, commitment_id, account_id, service_name, day,
         used_cost, unused_cost, covered_ondemand_cost, savings)
       SELECT $1::uuid, r.provider, r.billing_account_id, r.month, r.grain, r.currency, r.commitment_id, r.account_id, r.service_name, r.day,
         r.used_cost, r.unused_cost, r.covered_ondemand_cost, r.savings
       FROM json_to_recordset($2::json) AS r(provider text, billing_account_id text, month date, grain text, currency text, commitment_id text, account_id text,
         service_name text, day date, used_cost numeric, unused_cost numeric, covered_ondemand_cost numeric, savings numeric)`,
      rowsOf(commitment, COMMITMENT_COLUMNS),
    );
  }
}

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

/**
 * The groups of one grain, compact: the group's key (the rest of its summary row's key, fields
 * joined by SEP) → its slot; the sums of every group in one growable array (n integer parts,
 * then n fractions, per slot). About 250 bytes of heap a group (up to twice that resident).
 */
class GroupTable {
  readonly slots = new Map<string, number>();
  sums: Float64Array;

  constructor(readonly n: number) {
    this.sums = new Float64Array(2 * n * 16);
  }

  /** Offset of the group's sums in `sums` (a new group starts at zero). */
  slot(key: string): number {
    let slot = this.slots.get(key);
    if (slot === undefined) {
      slot = this.slots.size * 2 * this.n;
      if (slot + 2 * this.n > this.sums.length) {
        const bigger = new Float64Array(this.sums.length * 2);
        bigger.set(this.sums);
        this.sums = bigger;
      }
      // Kept until the import ends: a copy, not a substring of the reader's buffer (see detach).
      this.slots.set(detach(key), slot);
    }
    return slot;
  }
}

const COST_GRAINS = ["account", "service", "day"] as const;
const COMMITMENT_GRAINS = ["account", "service", "day_account"] as const;

/** The groups of one (provider, billing account, month, currency), by grain. */
interface PeriodGroups {
  provider: Provider;
  billingAccountId: string;
  month: string;
  currency: string;
  cost: [GroupTable, GroupTable, GroupTable];
  commitment: [GroupTable, GroupTable, GroupTable];
  /** Consecutive rows often share an account, service or day: their cost slots, without a key built. */
  lastAccountSlot: number;
  lastAccountId: string | null;
  lastAccountName: string | null;
  lastServiceSlot: number;
  lastServiceName: string | null;
  lastServiceCategory: string | null;
  lastDaySlot: number;
  lastDay: string | null;
}

function forgetLastGroups(p: PeriodGroups) {
  p.lastAccountSlot = p.lastServiceSlot = p.lastDaySlot = -1;
  p.lastAccountId = p.lastAccountName = p.lastServiceName = p.lastServiceCategory = p.lastDay = null;
}

const SEP = "\u0000";
const NULL = "\u0001";
const k = (v: string | null) => (v === null ? NULL : v);
const unk = (v: string | undefined) => (v === undefined || v === NULL ? null : v);
const COST_COLUMNS = ["ondemand_cost", "commitment_cost", "other_cost", "total_cost", "billed_cost"] as const;
const COMMITMENT_COLUMNS = ["used_cost", "unused_cost", "covered_ondemand_cost", "savings"] as const;
const COST_SUMS = COST_COLUMNS.length;
const COMMITMENT_SUMS = COMMITMENT_COLUMNS.length;

/** Groups of one table held in memory at most; past it that table is summed in SQL after the COPY. */
export const SUMMARY_GROUP_LIMIT = 60_000;

export class SummaryAccumulator {
  private readonly periods = new Map<string, PeriodGroups>();
  /** The period of the previous row: consecutive rows nearly always share it. */
  private last: PeriodGroups | null = null;
  private costGroups = 0;
  private commitmentGroups = 0;
  /** False once an amount was too large to add exactly here: the import then sums in SQL. */
  exact = true;
  /** The table had more groups than the limit: PostgreSQL sums it after the COPY (memory stays bounded). */
  costInSql = false;
  commitmentInSql = false;

  constructor(private readonly groupLimit = SUMMARY_GROUP_LIMIT) {}

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

    if (!this.costInSql) {
      if (!readAmount(r.billedCost)) return void (this.exact = false);
      const billedInt = amountInt;
      const billedFrac = amountFrac;
      const [byAccount, byService, byDay] = p.cost;
      const before = byAccount.slots.size + byService.slots.size + byDay.slots.size;
      if (p.lastAccountSlot < 0 || p.lastAccountId !== r.accountId || p.lastAccountName !== r.accountName) {
        p.lastAccountSlot = byAccount.slot(`${r.accountId}${SEP}${k(r.accountName)}`);
        p.lastAccountId = r.accountId;
        p.lastAccountName = r.accountName;
      }
      if (p.lastServiceSlot < 0 || p.lastServiceName !== r.serviceName || p.lastServiceCategory !== r.serviceCategory) {
        p.lastServiceSlot = byService.slot(`${k(r.serviceCategory)}${SEP}${k(r.serviceName)}`);
        p.lastServiceName = r.serviceName;
        p.lastServiceCategory = r.serviceCategory;
      }
      if (p.lastDaySlot < 0 || p.lastDay !== day) {
        p.lastDaySlot = byDay.slot(day);
        p.lastDay = day;
      }
      this.costGroups += byAccount.slots.size + byService.slots.size + byDay.slots.size - before;
      const slots = [p.lastAccountSlot, p.lastServiceSlot, p.lastDaySlot];
      for (let t = 0; t < 3; t++) {
        const sums = p.cost[t]!.sums;
        const at = slots[t]!;
        const ok = addAmount(sums, at + bucket, COST_SUMS, effInt, effFrac) && addAmount(sums, at + 3, COST_SUMS, effInt, effFrac) && addAmount(sums, at + 4, COST_SUMS, billedInt, billedFrac);
        if (!ok) return void (this.exact = false);
      }
      if (this.costGroups > this.groupLimit) this.dropCost();
    }

    if (this.commitmentInSql || !usage || r.commitmentId === null || (r.commitmentStatus !== "Used" && r.commitmentStatus !== "Unused")) return;
    const [byAccount, byService, byDayAccount] = p.commitment;
    const before = byAccount.slots.size + byService.slots.size + byDayAccount.slots.size;
    const slots = [
      byAccount.slot(`${r.commitmentId}${SEP}${r.accountId}`),
      byService.slot(`${r.commitmentId}${SEP}${k(r.serviceName)}`),
      byDayAccount.slot(`${r.commitmentId}${SEP}${day}${SEP}${r.accountId}`),
    ];
    this.commitmentGroups += byAccount.slots.size + byService.slots.size + byDayAccount.slots.size - before;
    if (r.commitmentStatus === "Used") {
      // Covered on-demand: ListCost, else a non-zero ContractedCost, else EffectiveCost.
      const covered = r.listCost ?? (r.contractedCost !== null && scaledDecimal(r.contractedCost) !== 0n ? r.contractedCost : r.effectiveCost);
      if (!readAmount(covered)) return void (this.exact = false);
      for (let t = 0; t < 3; t++) {
        const sums = p.commitment[t]!.sums;
        const at = slots[t]!;
        const ok =
          addAmount(sums, at, COMMITMENT_SUMS, effInt, effFrac) &&
          addAmount(sums, at + 2, COMMITMENT_SUMS, amountInt, amountFrac) &&
          addAmount(sums, at + 3, COMMITMENT_SUMS, amountInt, amountFrac) &&
          addAmount(sums, at + 3, COMMITMENT_SUMS, -effInt, -effFrac);
        if (!ok) return void (this.exact = false);
      }
    } else {
      for (let t = 0; t < 3; t++) if (!addAmount(p.commitment[t]!.sums, slots[t]! + 1, COMMITMENT_SUMS, effInt, effFrac)) return void (this.exact = false);
    }
    if (this.commitmentGroups > this.groupLimit) this.dropCommitment();
  }

  private dropCost() {
    this.costInSql = true;
    for (const p of this.periods.values()) {
      p.cost = [new GroupTable(COST_SUMS), new GroupTable(COST_SUMS), new GroupTable(COST_SUMS)];
      forgetLastGroups(p);
    }
  }

  private dropCommitment() {
    this.commitmentInSql = true;
    for (const p of this.periods.values()) p.commitment = [new GroupTable(COMMITMENT_SUMS), new GroupTable(COMMITMENT_SUMS), new GroupTable(COMMITMENT_SUMS)];
  }

  private periodOf(r: SummaryInput): PeriodGroups {
    const last = this.last;
    if (last && last.billingAccountId === r.billingAccountId && last.month === r.month && last.currency === r.currency && last.provider === r.provider) return last;
    // The remembered account and service are substrings of the reader's buffer: only the current
    // period may hold them (one per period would pin a 1 MB buffer each, see detach).
    if (last) forgetLastGroups(last);
    const key = `${r.provider}${SEP}${r.billingAccountId}${SEP}${r.month}${SEP}${r.currency}`;
    let p = this.periods.get(key);
    if (!p) {
      // Kept until the import ends: copies, not substrings of the reader's buffer (see detach).
      p = {
        provider: r.provider,
        billingAccountId: detach(r.billingAccountId),
        month: r.month,
        currency: detach(r.currency),
        cost: [new GroupTable(COST_SUMS), new GroupTable(COST_SUMS), new GroupTable(COST_SUMS)],
        commitment: [new GroupTable(COMMITMENT_SUMS), new GroupTable(COMMITMENT_SUMS), new GroupTable(COMMITMENT_SUMS)],
        lastAccountSlot: -1,
        lastAccountId: null,
        lastAccountName: null,
        lastServiceSlot: -1,
        lastServiceName: null,
        lastServiceCategory: null,
        lastDaySlot: -1,
        lastDay: null,
      };
      this.periods.set(detach(key), p);
    }
    return (this.last = p);
  }

  /** Groups held (memory grows with these, not with the rows; bounded by the group limit). */
  get size(): number {
    return this.costGroups + this.commitmentGroups;
  }

  /**
   * Writes the groups of `periods` (the import's: their earlier summaries are deleted first)
   * inside the caller's transaction, a few thousand rows per statement; a table summed in SQL
   * (costInSql, commitmentInSql) is left to rebuildBillingSummaries.
   */
  async write(tx: DbOrTx, orgId: string, periods: BillingPeriodKey[], batch = 5000): Promise<void> {
    if (!periods.length) return;
    await deleteSummaries(tx, orgId, periods, { cost: !this.costInSql, commitment: !this.commitmentInSql });
    const inBatches = async (sql: string, rows: object[]) => {
      for (let i = 0; i < rows.length; i += batch) await queryRows(tx, sql, [orgId, JSON.stringify(rows.slice(i, i + batch))]);
    };
    const sumsOf = (t: GroupTable, slot: number, columns: readonly string[]) => Object.fromEntries(columns.map((c, i) => [c, sumText(t.sums, slot + i, columns.length)]));
    const cost: object[] = [];
    const commitment: object[] = [];
    for (const p of this.periods.values()) {
      const period = { provider: p.provider, billing_account_id: p.billingAccountId, month: p.month, currency: p.currency };
      if (!this.costInSql)
        COST_GRAINS.forEach((grain, t) => {
          for (const [key, slot] of p.cost[t]!.slots) {
            const f = key.split(SEP);
            const keys =
              grain === "account" ? { account_id: f[0], account_name: unk(f[1]) } : grain === "service" ? { service_category: unk(f[0]), service_name: unk(f[1]) } : { day: f[0] };
            cost.push({ ...period, grain, ...keys, ...sumsOf(p.cost[t]!, slot, COST_COLUMNS) });
          }
        });
      if (!this.commitmentInSql)
        COMMITMENT_GRAINS.forEach((grain, t) => {
          for (const [key, slot] of p.commitment[t]!.slots) {
            const f = key.split(SEP);
            const keys =
              grain === "account"
                ? { commitment_id: f[0], account_id: f[1] }
                : grain === "service"
                  ? { commitment_id: f[0], service_name: unk(f[1]) }
                  : { commitment_id: f[0], day: f[1], account_id: f[2] };
            commitment.push({ ...period, grain, ...keys, ...sumsOf(p.commitment[t]!, slot, COMMITMENT_COLUMNS) });
          }
        });
    }
    // The account grain arrives split by name: GROUP BY folds it back, max() picks the name.
    await inBatches(
      `INSERT INTO billing_cost_summaries (org_id, provider, billing_account_id, month, grain, currency, account_id, account_name, service_category, service_name, day,
         ondemand_cost, commitment_cost, other_cost, total_cost, billed_cost)
       SELECT $1::uuid, r.provider, r.billing_account_id, r.month, r.grain, r.currency, r.account_id, max(r.account_name), r.service_category, r.service_name, r.day,
         SUM(r.ondemand_cost), SUM(r.commitment_cost), SUM(r.other_cost), SUM(r.total_cost), SUM(r.billed_cost)
       FROM json_to_recordset($2::json) AS r(provider text, billing_account_id text, month date, grain text, currency text, account_id text, account_name text,
         service_category text, service_name text, day date, ondemand_cost numeric, commitment_cost numeric, other_cost numeric, total_cost numeric, billed_cost numeric)
       GROUP BY r.provider, r.billing_account_id, r.month, r.grain, r.currency, r.account_id, r.service_category, r.service_name, r.day`,
      cost,
    );
    await inBatches(
      `INSERT INTO commitment_usage_summaries (org_id, provider, billing_account_id, month, grain, currency, commitment_id, account_id, service_name, day,
         used_cost, unused_cost, covered_ondemand_cost, savings)
       SELECT $1::uuid, r.provider, r.billing_account_id, r.month, r.grain, r.currency, r.commitment_id, r.account_id, r.service_name, r.day,
         r.used_cost, r.unused_cost, r.covered_ondemand_cost, r.savings
       FROM json_to_recordset($2::json) AS r(provider text, billing_account_id text, month date, grain text, currency text, commitment_id text, account_id text,
         service_name text, day date, used_cost numeric, unused_cost numeric, covered_ondemand_cost numeric, savings numeric)`,
      commitment,
    );
  }
}
